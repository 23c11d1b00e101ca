// Element-wise schedules (inner merge, transpose-then-merge, search) forced through the C
// API, bit-identical to the reference schedule on random inputs (all semirings, f32/f64/bool,
// i32/i64, A o B, A + B, A o B^T, A + B^T) and on every real matrix in ../shared/data/matrices
// (B o A^T with B = A); the transposed operand is kept on its handle and reused.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <utility>

#include "src/operation.hpp"
#include "src/plan.hpp"
#include "tests/schedule_test_util.hpp"

namespace {

using namespace sj::test;

// Every applicable schedule (and auto) of `op` against the reference.
void check_ewise(sj_context* c, sj_op op, const sj_tensor* A, const sj_tensor* B, sj_semiring s, bool tb,
                 const std::string& where) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.semiring = s;
  o.transpose_b = tb;
  o.schedule = SJ_SCHEDULE_REFERENCE;
  auto call = [&](sj_tensor** out) {
    return op == SJ_OP_EWISE_MULT ? sj_ewise_mult(c, A, B, &o, out) : sj_ewise_add(c, A, B, &o, out);
  };
  H ref;
  ASSERT_EQ(call(&ref.t), SJ_OK) << where << ": " << msg();
  std::vector<sj_schedule> scheds = {SJ_SCHEDULE_AUTO};
  if (!tb) scheds.push_back(SJ_SCHEDULE_INNER);
  else {
    scheds.push_back(SJ_SCHEDULE_TRANSPOSE);
    if (op == SJ_OP_EWISE_MULT) scheds.push_back(SJ_SCHEDULE_SEARCH);
  }
  for (sj_schedule sc : scheds) {
    o.schedule = sc;
    H got;
    ASSERT_EQ(call(&got.t), SJ_OK) << where << " schedule " << sc << ": " << msg();
    EXPECT_TRUE(same_bits(ref.t->t, got.t->t)) << where << " schedule " << sc << " op " << op;
  }
}

template <class I, class V> void ewise_round(Rng& rng, int round) {
  Ctx ctx;
  std::vector<sj_semiring> semirings;
  if (std::is_same_v<V, uint8_t>) semirings = {SJ_SEMIRING_OR_AND};
  else semirings = {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_OR_AND, SJ_SEMIRING_PLUS_PAIR};
  const int64_t sizes[][2] = {{0, 0}, {0, 4}, {1, 1}, {6, 6}, {9, 13}, {50, 50}, {150, 120}};
  for (auto& sz : sizes) {
    const int64_t m = sz[0], n = sz[1];
    for (int kind = 0; kind < 4; ++kind) {
      const auto vals = rng.bernoulli(0.5) ? sj::test::Values::SmallInt : sj::test::Values::Real;
      auto gen = [&](int64_t r, int64_t c) {
        if (kind == 0) return sj::test::random_matrix<I, V>(rng, r, c, vals);
        if (kind == 1) return sj::test::random_power_law<I, V>(rng, r, c, 6.0, 1.3, {0.2, 0.1, vals});
        if (kind == 2) return sj::test::random_uniform<I, V>(rng, r, c, 0.9, {0.1, 0, vals});  // long rows: gallop
        return sj::test::random_banded<I, V>(rng, r, c, 2, 3, 0.8, {0, 0, vals});
      };
      auto a = gen(m, n), b = gen(m, n), bt = gen(n, m);
      H A, B, BT;
      A.t = csr_handle(ctx.c, a);
      B.t = csr_handle(ctx.c, b);
      BT.t = csr_handle(ctx.c, bt);
      const sj_semiring s = semirings[(round + kind) % semirings.size()];
      const std::string where = "round " + std::to_string(round) + " " + std::to_string(m) + "x" + std::to_string(n) +
                                " kind " + std::to_string(kind) + " semiring " + std::to_string(s);
      for (sj_op op : {SJ_OP_EWISE_MULT, SJ_OP_EWISE_ADD}) {
        check_ewise(ctx.c, op, A.t, B.t, s, false, where);
        check_ewise(ctx.c, op, A.t, BT.t, s, true, where + " B^T");
      }
      if (m == n) check_ewise(ctx.c, SJ_OP_EWISE_MULT, A.t, A.t, s, true, where + " A o A^T");
      // B^T given column-wise, and A^T o B^T.
      H BTc;
      ASSERT_EQ(sj_tensor_convert(ctx.c, BT.t, SJ_FORMAT_CSC, nullptr, itype<I>(), &BTc.t), SJ_OK) << msg();
      check_ewise(ctx.c, SJ_OP_EWISE_MULT, A.t, BTc.t, s, true, where + " B^T from CSC");
    }
  }
}

TEST(EwiseSchedules, EveryScheduleMatchesReferenceOnRandomInputs) {
  Rng rng(4242);
  for (int round = 0; round < 2; ++round) {
    ewise_round<int32_t, double>(rng, round);
    ewise_round<int64_t, double>(rng, round);
    ewise_round<int32_t, float>(rng, round);
    ewise_round<int64_t, float>(rng, round);
    ewise_round<int32_t, uint8_t>(rng, round);
    ewise_round<int64_t, uint8_t>(rng, round);
  }
}

// One forced schedule of A o B (o B^T when tb) against the reference, for every forced
// coiteration config.
struct MultCase {
  const sj_tensor* a;
  const sj_tensor* b;
  bool tb;
  sj_schedule sc;
};
void mult_cases_every_config(sj_context* c, sj_semiring s, std::initializer_list<MultCase> cases) {
  for (const MultCase& k : cases) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.semiring = s;
    o.transpose_b = k.tb;
    o.schedule = SJ_SCHEDULE_REFERENCE;
    H ref;
    ASSERT_EQ(sj_ewise_mult(c, k.a, k.b, &o, &ref.t), SJ_OK) << msg();
    o.schedule = k.sc;
    for (const auto& f : coiter_forces()) {
      f.apply(o);
      H got;
      ASSERT_EQ(sj_ewise_mult(c, k.a, k.b, &o, &got.t), SJ_OK) << f.name() << ": " << msg();
      EXPECT_TRUE(same_bits(ref.t->t, got.t->t)) << f.name() << " schedule " << k.sc << " tb " << k.tb;
    }
  }
}

// The element-wise multiply merges (inner, transpose) run the coiteration emit kernels:
// bit-identical to the reference for every forced coiteration config, on rows whose lengths
// spread from 0 to ~250 (every width's fast lane and every per-pair tier runs), with B given
// and with B^T, and on banded operands (disjoint and trimmed pairs).
template <class I, class V> void mult_every_config(sj_semiring s, uint64_t seed) {
  Ctx ctx;
  Rng rng(seed);
  const auto vals = std::is_same_v<V, float> ? sj::test::Values::SmallInt : sj::test::Values::Real;
  H A, B, BT, D;
  A.t = csr_handle(ctx.c, sj::test::random_power_law<I, V>(rng, 40, 400, 80.0, 1.3, {0.1, 0, vals}));
  B.t = csr_handle(ctx.c, sj::test::random_power_law<I, V>(rng, 40, 400, 80.0, 1.3, {0.1, 0, vals}));
  BT.t = csr_handle(ctx.c, sj::test::random_uniform<I, V>(rng, 400, 40, 0.5, {0.1, 0, vals}));
  D.t = csr_handle(ctx.c, sj::test::random_banded<I, V>(rng, 40, 400, 0, 300, 0.7, {0, 0, vals}));
  mult_cases_every_config(ctx.c, s,
                          {MultCase{A.t, B.t, false, SJ_SCHEDULE_INNER}, MultCase{A.t, BT.t, true, SJ_SCHEDULE_TRANSPOSE},
                           MultCase{A.t, D.t, false, SJ_SCHEDULE_INNER}, MultCase{D.t, B.t, false, SJ_SCHEDULE_INNER}});
}

// A structurally symmetric matrix S (the pattern of P + P^T, values not symmetric) and S with
// the last coordinate of every row moved one column right where it can be: rows of equal
// length that agree up to their last entry.
template <class I, class V> std::pair<sj::CsResult<I, V>, sj::CsResult<I, V>> symmetric_and_shifted(Rng& rng, int64_t n) {
  const auto vals = std::is_same_v<V, float> ? sj::test::Values::SmallInt : sj::test::Values::Real;
  auto p = sj::test::random_power_law<I, V>(rng, n, n, 40.0, 1.3, {0.1, 0, vals});
  std::vector<std::vector<I>> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t q = p.pos[i]; q < p.pos[i + 1]; ++q) {
      rows[static_cast<size_t>(i)].push_back(p.crd[q]);
      rows[static_cast<size_t>(p.crd[q])].push_back(static_cast<I>(i));
    }
  sj::CsResult<I, V> S, T;
  S.outer = T.outer = S.inner = T.inner = n;
  S.pos.push_back(0);
  T.pos.push_back(0);
  for (auto& r : rows) {
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    for (I c : r) {
      S.crd.push_back(c);
      S.val.push_back(static_cast<V>(1 + rng.uniform_int(0, 6)));
    }
    if (!r.empty() && r.back() + 1 < n) r.back() += 1;
    for (I c : r) {
      T.crd.push_back(c);
      T.val.push_back(static_cast<V>(1 + rng.uniform_int(0, 6)));
    }
    S.pos.push_back(static_cast<int64_t>(S.crd.size()));
    T.pos.push_back(static_cast<int64_t>(T.crd.size()));
  }
  return {S, T};
}

// Rows with the same coordinates skip the merge (S o S^T, S .* S) and rows that differ only at
// their end must not (T .* S): bit-identical to the reference for every coiteration config,
// on row lengths from 0 to ~200 (the short scalar rows, the memcmp test from 16, every tier).
template <class I, class V> void mult_same_coordinates(sj_semiring s, uint64_t seed) {
  Ctx ctx;
  Rng rng(seed);
  auto [sym, shifted] = symmetric_and_shifted<I, V>(rng, 120);
  H S, T;
  S.t = csr_handle(ctx.c, sym);
  T.t = csr_handle(ctx.c, shifted);
  mult_cases_every_config(ctx.c, s,
                          {MultCase{S.t, S.t, true, SJ_SCHEDULE_TRANSPOSE}, MultCase{S.t, S.t, false, SJ_SCHEDULE_INNER},
                           MultCase{T.t, S.t, false, SJ_SCHEDULE_INNER}, MultCase{S.t, T.t, false, SJ_SCHEDULE_INNER},
                           MultCase{T.t, S.t, true, SJ_SCHEDULE_TRANSPOSE}});
}

TEST(EwiseSchedules, RowsWithTheSameCoordinates) {
  mult_same_coordinates<int32_t, double>(SJ_SEMIRING_PLUS_TIMES, 31);
  mult_same_coordinates<int32_t, float>(SJ_SEMIRING_MIN_PLUS, 32);
  mult_same_coordinates<int64_t, double>(SJ_SEMIRING_MAX_TIMES, 33);
  mult_same_coordinates<int64_t, float>(SJ_SEMIRING_PLUS_TIMES, 34);
}

TEST(EwiseSchedules, MultEveryCoiterConfig) {
  mult_every_config<int32_t, double>(SJ_SEMIRING_PLUS_TIMES, 21);
  mult_every_config<int32_t, float>(SJ_SEMIRING_MIN_PLUS, 22);
  mult_every_config<int64_t, double>(SJ_SEMIRING_MAX_TIMES, 23);
  mult_every_config<int64_t, float>(SJ_SEMIRING_PLUS_TIMES, 24);
}

TEST(EwiseSchedules, TransposedOperandIsKeptOnTheHandle) {
  Ctx ctx;
  Rng rng(8);
  auto a = sj::test::random_uniform<int32_t, double>(rng, 200, 200, 0.05);
  H A;
  A.t = csr_handle(ctx.c, a);
  auto forms = [&] {
    std::lock_guard lock(A.t->t.derived->mutex);
    return A.t->t.derived->forms.size();
  };
  sj_op_options o;
  sj_op_options_init(&o);
  o.transpose_b = 1;
  H r1, r2, r3, r4;
  o.schedule = SJ_SCHEDULE_TRANSPOSE;
  ASSERT_EQ(sj_ewise_mult(ctx.c, A.t, A.t, &o, &r1.t), SJ_OK) << msg();
  const size_t after_first = forms();
  EXPECT_GE(after_first, 1u);
  ASSERT_EQ(sj_ewise_mult(ctx.c, A.t, A.t, &o, &r2.t), SJ_OK) << msg();
  o.schedule = SJ_SCHEDULE_SEARCH;
  ASSERT_EQ(sj_ewise_mult(ctx.c, A.t, A.t, &o, &r3.t), SJ_OK) << msg();
  o.schedule = SJ_SCHEDULE_AUTO;
  ASSERT_EQ(sj_ewise_mult(ctx.c, A.t, A.t, &o, &r4.t), SJ_OK) << msg();
  EXPECT_EQ(forms(), after_first);
  EXPECT_TRUE(same_bits(r1.t->t, r2.t->t));
  EXPECT_TRUE(same_bits(r1.t->t, r3.t->t));
  EXPECT_TRUE(same_bits(r1.t->t, r4.t->t));
}

// B^T is made only by a schedule that merges with it: a search (or the planner costing the
// candidates) leaves B's handle without it; the transpose schedule makes it once and keeps it.
TEST(EwiseSchedules, TransposeIsDeferredUntilAScheduleNeedsIt) {
  Ctx ctx;
  Rng rng(9);
  H A, B;
  A.t = csr_handle(ctx.c, sj::test::random_uniform<int32_t, double>(rng, 150, 150, 0.05));
  B.t = csr_handle(ctx.c, sj::test::random_uniform<int32_t, double>(rng, 150, 150, 0.05));
  auto has_transpose = [&] {
    std::lock_guard lock(B.t->t.derived->mutex);
    for (auto& [k, t] : B.t->t.derived->forms)
      if (k.rfind("csr-of-transpose/", 0) == 0) return true;
    return false;
  };
  sj_op_options o;
  sj_op_options_init(&o);
  o.transpose_b = 1;
  H ref, r1, r2;
  o.schedule = SJ_SCHEDULE_REFERENCE;
  ASSERT_EQ(sj_ewise_mult(ctx.c, A.t, B.t, &o, &ref.t), SJ_OK) << msg();
  EXPECT_TRUE(has_transpose());  // the reference merges with B^T
  H B2;
  B2.t = csr_handle(ctx.c, sj::test::random_uniform<int32_t, double>(rng, 150, 150, 0.05));
  o.schedule = SJ_SCHEDULE_SEARCH;
  ASSERT_EQ(sj_ewise_mult(ctx.c, A.t, B2.t, &o, &r1.t), SJ_OK) << msg();
  {
    std::lock_guard lock(B2.t->t.derived->mutex);
    for (auto& [k, t] : B2.t->t.derived->forms) EXPECT_NE(k.rfind("csr-of-transpose/", 0), 0u) << k;
  }
  o.schedule = SJ_SCHEDULE_TRANSPOSE;
  ASSERT_EQ(sj_ewise_mult(ctx.c, A.t, B2.t, &o, &r2.t), SJ_OK) << msg();
  EXPECT_TRUE(same_bits(r1.t->t, r2.t->t));
  bool kept = false;
  {
    std::lock_guard lock(B2.t->t.derived->mutex);
    for (auto& [k, t] : B2.t->t.derived->forms) kept |= k.rfind("csr-of-transpose/", 0) == 0;
  }
  EXPECT_TRUE(kept);
}

// An explicit plan is executed many times, so the B^T it would build (and keep on B's handle)
// is costed amortised from the start; a first drop-in call on fresh handles pays it in full.
// The transpose candidate's cost is what the note says it is in both cases.
TEST(EwiseSchedules, PlansCostTheKeptTransposeAmortised) {
  Ctx ctx;
  Rng rng(10);
  auto a = sj::test::random_uniform<int32_t, double>(rng, 400, 400, 0.1);
  H A1, A2;
  A1.t = csr_handle(ctx.c, a);
  A2.t = csr_handle(ctx.c, a);
  sj_op_options o;
  sj_op_options_init(&o);
  o.transpose_b = 1;
  // The explain line of the transpose candidate ("    [*] transpose   <cost> ns  <note>").
  auto candidate_line = [](const std::string& text) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string w;
      words >> w;
      if (w == "*") words >> w;
      if (w == "transpose") return line;
    }
    return std::string();
  };
  auto transpose_candidate = [&](sj_plan* p) {
    const char* ex = nullptr;
    EXPECT_EQ(sj_plan_explain_text(p, &ex), SJ_OK) << msg();
    return candidate_line(ex ? ex : "");
  };
  const sj_tensor* ops1[2] = {A1.t, A1.t};
  sj_plan* plan = nullptr;
  ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_EWISE_MULT, ops1, 2, &o, &plan), SJ_OK) << msg();
  const std::string planned = transpose_candidate(plan);
  EXPECT_NE(planned.find("builds B^T and keeps it (a plan: amortised)"), std::string::npos) << planned;
  H r1, r2;
  ASSERT_EQ(sj_plan_execute(plan, ops1, 2, &r1.t), SJ_OK) << msg();
  sj_plan_destroy(plan);
  // The same product through the transpose schedule on other handles: the same bits.
  o.schedule = SJ_SCHEDULE_TRANSPOSE;
  ASSERT_EQ(sj_ewise_mult(ctx.c, A2.t, A2.t, &o, &r2.t), SJ_OK) << msg();
  EXPECT_TRUE(same_bits(r1.t->t, r2.t->t));
  H A3;
  A3.t = csr_handle(ctx.c, a);
  sj_op_options one = o;
  one.schedule = SJ_SCHEDULE_AUTO;
  const std::string once = [&] {
    sj::OpRequest req;
    req.op = SJ_OP_EWISE_MULT;
    req.operands = {A3.t->t, A3.t->t};
    req.options = one;
    sj::Plan p(*ctx.c->impl, req);
    return candidate_line(p.explain_text());
  }();
  EXPECT_NE(once.find("; builds B^T;"), std::string::npos) << once;  // a drop-in's first plan
}

// A + B's branch-free merge picks each entry's value by index (kernels/ewise_kernels.hpp,
// merge_row_add): NaN, infinities and signed zeros, alone or summed with the other side, come
// out bit for bit as the reference's, for every semiring over f32 and f64, on rows where the
// coordinates interleave, match, and run out on either side first.
template <class V> void add_special_values(sj_semiring s, uint64_t seed) {
  Ctx ctx;
  Rng rng(seed);
  const V specials[] = {std::numeric_limits<V>::quiet_NaN(), std::numeric_limits<V>::infinity(),
                        -std::numeric_limits<V>::infinity(), V(0), -V(0), V(1.5), V(-2.25)};
  auto gen = [&] {
    sj::CsResult<int32_t, V> m;
    m.outer = 60;
    m.inner = 40;
    m.pos.push_back(0);
    for (int64_t i = 0; i < m.outer; ++i) {
      for (int32_t j = 0; j < m.inner; ++j)
        if (rng.bernoulli(i % 3 == 0 ? 0.1 : 0.5)) {
          m.crd.push_back(j);
          m.val.push_back(specials[rng.uniform_int(0, 6)]);
        }
      m.pos.push_back(static_cast<int64_t>(m.crd.size()));
    }
    return m;
  };
  H A, B, BT;
  A.t = csr_handle(ctx.c, gen());
  B.t = csr_handle(ctx.c, gen());
  check_ewise(ctx.c, SJ_OP_EWISE_ADD, A.t, B.t, s, false, "special values");
  check_ewise(ctx.c, SJ_OP_EWISE_ADD, B.t, A.t, s, false, "special values, swapped");
  check_ewise(ctx.c, SJ_OP_EWISE_ADD, A.t, A.t, s, false, "special values, A + A");
}

TEST(EwiseSchedules, AddKeepsSpecialValuesBitForBit) {
  for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_PLUS_PAIR}) {
    add_special_values<double>(s, 51 + s);
    add_special_values<float>(s, 61 + s);
  }
}

TEST(EwiseSchedules, EveryRealMatrix) {
  auto files = sj::test::shared_matrices();
  if (files.empty()) GTEST_SKIP() << "no ../shared/data/matrices";
  Ctx ctx;
  for (auto& f : files) {
    H A;
    ASSERT_EQ(sj_tensor_read_file(ctx.c, f.c_str(), &A.t), SJ_OK) << f << ": " << msg();
    const sj::Tensor& t = A.t->t;
    if (t.order != 2) continue;
    const sj_semiring s = t.value_type == sj::ValueType::Bool ? SJ_SEMIRING_OR_AND : SJ_SEMIRING_PLUS_TIMES;
    const std::string name = f.filename().string();
    check_ewise(ctx.c, SJ_OP_EWISE_MULT, A.t, A.t, s, false, name + " A o A");
    if (t.dims[0] == t.dims[1]) {
      check_ewise(ctx.c, SJ_OP_EWISE_MULT, A.t, A.t, s, true, name + " A o A^T");
      check_ewise(ctx.c, SJ_OP_EWISE_ADD, A.t, A.t, s, true, name + " A + A^T");
    }
  }
}

}  // namespace

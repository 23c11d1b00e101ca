// SpMSpV and SpMV schedules, each forced through the C API, bit-identical to the reference
// schedule on random inputs (all semirings, f32/f64/bool, i32/i64, sparse and dense output,
// A given as CSR or CSC, transposed A) and on every real matrix in ../shared/data/matrices;
// the CSC copy the push schedule makes is kept on A's handle and reused. Each schedule also
// through a plan executed into the caller's buffers (sj_plan_execute_into), exactly sized and
// with room for every row (the push's direct route).
#include <gtest/gtest.h>

#include "tests/schedule_test_util.hpp"

namespace {

using namespace sj::test;
const sj_schedule kSpmspv[] = {SJ_SCHEDULE_PUSH, SJ_SCHEDULE_DENSIFY, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_INNER};
int direct_taken = 0;  // executions that took the push's direct route (check_spmspv)

// Every SpMSpV schedule (and auto) against the reference, sparse and dense output.
void check_spmspv(sj_context* c, const sj_tensor* A, const sj_tensor* x, sj_semiring s, const std::string& where,
                  bool transpose_a = false, bool with_inner = true) {
  for (int dense = 0; dense < 2; ++dense) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.semiring = s;
    o.dense_output = dense;
    o.transpose_a = transpose_a;
    o.schedule = SJ_SCHEDULE_REFERENCE;
    H ref;
    ASSERT_EQ(sj_spmspv(c, A, x, &o, &ref.t), SJ_OK) << where << ": " << msg();
    for (sj_schedule sc : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_PUSH, SJ_SCHEDULE_DENSIFY, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_INNER}) {
      if (sc == SJ_SCHEDULE_INNER && !with_inner) continue;
      o.schedule = sc;
      H got;
      ASSERT_EQ(sj_spmspv(c, A, x, &o, &got.t), SJ_OK) << where << ": " << msg();
      EXPECT_TRUE(same_bits(ref.t->t, got.t->t)) << where << " schedule " << sc << " dense " << dense;
      // The same schedule through a plan, straight into the caller's buffers (twice: the
      // second execution runs with the workspaces and kept forms of the first).
      const sj_tensor* ops[2] = {A, x};
      sj_plan* plan = nullptr;
      ASSERT_EQ(sj_plan_create(c, SJ_OP_SPMSPV, ops, 2, &o, &plan), SJ_OK) << where << ": " << msg();
      for (int k = 0; k < 2; ++k)
        EXPECT_TRUE(into_matches(plan, ops, 2, ref.t->t)) << where << " schedule " << sc << " dense " << dense << " into";
      // Buffers for every row (a dense y's always are): the push's direct route where offered.
      if (!dense)
        EXPECT_TRUE(into_every_row_matches(plan, ops, 2, ref.t->t)) << where << " schedule " << sc << " into every row";
      if (sc == SJ_SCHEDULE_PUSH && ref.t->t.dims[0] < 1000) {  // small: serial whatever the threads
        const DirectRoute r = direct_route(plan);
        EXPECT_EQ(r.offered, r.taken) << where << " dense " << dense;
        direct_taken += r.taken;
        // The same route into a new result (sj_plan_execute), twice.
        for (int k = 0; k < 2; ++k) {
          H y;
          ASSERT_EQ(sj_plan_execute(plan, ops, 2, &y.t), SJ_OK) << where << ": " << msg();
          EXPECT_TRUE(same_bits(ref.t->t, y.t->t)) << where << " dense " << dense << " plan execute";
          EXPECT_EQ(last_execution_direct(plan), r.offered) << where << " dense " << dense << " plan execute";
        }
      }
      sj_plan_destroy(plan);
    }
  }
}

template <class I, class V> void random_round(Rng& rng, int round) {
  Ctx ctx;
  std::vector<sj_semiring> semirings;
  if (std::is_same_v<V, uint8_t>) semirings = {SJ_SEMIRING_OR_AND};
  else semirings = {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_OR_AND, SJ_SEMIRING_PLUS_PAIR};
  struct Shape {
    int64_t m, n;
  };
  const Shape shapes[] = {{0, 5}, {5, 0}, {1, 1}, {7, 9}, {40, 33}, {120, 200}};
  for (const Shape& sh : shapes) {
    for (int kind = 0; kind < 3; ++kind) {
      sj::CsResult<I, V> a;
      const auto vals = rng.bernoulli(0.5) ? sj::test::Values::SmallInt : sj::test::Values::Real;
      if (kind == 0) a = sj::test::random_matrix<I, V>(rng, sh.m, sh.n, vals);
      else if (kind == 1) a = sj::test::random_power_law<I, V>(rng, sh.m, sh.n, 4.0, 1.3, {0.2, 0.1, vals});
      else a = sj::test::random_uniform<I, V>(rng, sh.m, sh.n, 0.3, {0.4, 0, vals});
      H A;
      A.t = csr_handle(ctx.c, a);
      for (double d : {0.0, 0.01, 0.2, 0.6, 1.0}) {
        auto xv = sj::test::random_sparse_vector<I, V>(rng, sh.n, d, vals);
        H x;
        x.t = vec_handle(ctx.c, xv);
        sj_semiring s = semirings[(round + kind) % semirings.size()];
        std::string where = "round " + std::to_string(round) + " " + std::to_string(sh.m) + "x" +
                            std::to_string(sh.n) + " kind " + std::to_string(kind) + " density " + std::to_string(d) +
                            " semiring " + std::to_string(s);
        check_spmspv(ctx.c, A.t, x.t, s, where);
      }
      // A given column-wise (the push reads it in place), and A^T from a CSR handle.
      H Acsc;
      ASSERT_EQ(sj_tensor_convert(ctx.c, A.t, SJ_FORMAT_CSC, nullptr, itype<I>(), &Acsc.t), SJ_OK) << msg();
      auto xv = sj::test::random_sparse_vector<I, V>(rng, sh.n, 0.3, vals);
      H x;
      x.t = vec_handle(ctx.c, xv);
      check_spmspv(ctx.c, Acsc.t, x.t, semirings[round % semirings.size()], "csc A");
      auto xt = sj::test::random_sparse_vector<I, V>(rng, sh.m, 0.3, vals);
      H xT;
      xT.t = vec_handle(ctx.c, xt);
      check_spmspv(ctx.c, A.t, xT.t, semirings[round % semirings.size()], "A^T", /*transpose_a=*/true);
      check_spmspv(ctx.c, Acsc.t, xT.t, semirings[round % semirings.size()], "A^T from CSC", true);
    }
  }
}

TEST(SpmspvSchedules, EveryScheduleMatchesReferenceOnRandomInputs) {
  Rng rng(77);
  direct_taken = 0;
  for (int round = 0; round < 3; ++round) {
    random_round<int32_t, double>(rng, round);
    random_round<int64_t, double>(rng, round);
    random_round<int32_t, float>(rng, round);
    random_round<int64_t, float>(rng, round);
    random_round<int32_t, uint8_t>(rng, round);
    random_round<int64_t, uint8_t>(rng, round);
  }
  // Offered where the plan reads A in CSR as given (not transposed, no conversion).
  EXPECT_GT(direct_taken, 500);
}

// SpMSpV `inner` runs the coiteration kernels: bit-identical to the reference for every
// forced coiteration config, sparse and dense y, on rows whose lengths spread from 0 to ~250
// against a long x (every width's fast lane and every per-pair tier runs) and a short x.
template <class I, class V> void inner_every_config(sj_semiring s, uint64_t seed) {
  Ctx ctx;
  Rng rng(seed);
  const auto vals = std::is_same_v<V, float> ? sj::test::Values::SmallInt : sj::test::Values::Real;
  H A, xl, xs;
  A.t = csr_handle(ctx.c, sj::test::random_power_law<I, V>(rng, 40, 500, 60.0, 1.3, {0.1, 0, vals}));
  xl.t = vec_handle(ctx.c, sj::test::random_sparse_vector<I, V>(rng, 500, 0.6, vals));
  xs.t = vec_handle(ctx.c, sj::test::random_sparse_vector<I, V>(rng, 500, 0.03, vals));
  for (const sj_tensor* x : {xl.t, xs.t})
    for (int dense = 0; dense < 2; ++dense) {
      sj_op_options o;
      sj_op_options_init(&o);
      o.semiring = s;
      o.dense_output = dense;
      o.schedule = SJ_SCHEDULE_REFERENCE;
      H ref;
      ASSERT_EQ(sj_spmspv(ctx.c, A.t, x, &o, &ref.t), SJ_OK) << msg();
      o.schedule = SJ_SCHEDULE_INNER;
      for (const auto& f : coiter_forces()) {
        f.apply(o);
        H got;
        ASSERT_EQ(sj_spmspv(ctx.c, A.t, x, &o, &got.t), SJ_OK) << f.name() << ": " << msg();
        EXPECT_TRUE(same_bits(ref.t->t, got.t->t)) << f.name() << " dense " << dense;
      }
    }
}

TEST(SpmspvSchedules, InnerEveryCoiterConfig) {
  inner_every_config<int32_t, double>(SJ_SEMIRING_PLUS_TIMES, 11);
  inner_every_config<int32_t, float>(SJ_SEMIRING_MAX_TIMES, 12);
  inner_every_config<int64_t, double>(SJ_SEMIRING_MIN_PLUS, 13);
  inner_every_config<int64_t, float>(SJ_SEMIRING_PLUS_PAIR, 14);
}

TEST(SpmspvSchedules, MixedIndexTypesAndOutputIndexType) {
  Ctx ctx;
  Rng rng(5);
  auto a = sj::test::random_uniform<int32_t, double>(rng, 50, 60, 0.1);
  auto xv = sj::test::random_sparse_vector<int64_t, double>(rng, 60, 0.3);
  H A, x;
  A.t = csr_handle(ctx.c, a);
  x.t = vec_handle(ctx.c, xv);
  check_spmspv(ctx.c, A.t, x.t, SJ_SEMIRING_PLUS_TIMES, "i32 A, i64 x");
  sj_op_options o;
  sj_op_options_init(&o);
  // Computed in i32 (A has most coordinates), returned in i64 by default: any operand has it.
  for (int dense = 0; dense < 2; ++dense) {
    o.dense_output = dense;
    H def;
    ASSERT_EQ(sj_spmspv(ctx.c, A.t, x.t, &o, &def.t), SJ_OK) << msg();
    sj_tensor_info info;
    ASSERT_EQ(sj_tensor_get_info(def.t, &info), SJ_OK);
    EXPECT_EQ(info.index_type, SJ_INDEX_INT64) << "dense " << dense;
  }
  o.dense_output = 0;
  o.output_index_type = SJ_INDEX_INT32;
  o.schedule = SJ_SCHEDULE_REFERENCE;
  H ref;
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, x.t, &o, &ref.t), SJ_OK) << msg();
  for (sj_schedule sc : kSpmspv) {
    o.schedule = sc;
    H got;
    ASSERT_EQ(sj_spmspv(ctx.c, A.t, x.t, &o, &got.t), SJ_OK) << msg();
    EXPECT_TRUE(same_bits(ref.t->t, got.t->t)) << "schedule " << sc;
  }
}

TEST(SpmspvSchedules, SpmvGatherMatchesReference) {
  Ctx ctx;
  Rng rng(11);
  for (int round = 0; round < 12; ++round) {
    int64_t m = rng.uniform_int(0, 80), n = rng.uniform_int(0, 80);
    auto a = sj::test::random_matrix<int32_t, double>(rng, m, n, sj::test::Values::SmallInt);
    auto xd = sj::test::random_dense_vector<double>(rng, n, sj::test::Values::SmallInt);
    H A, x;
    A.t = csr_handle(ctx.c, a);
    ASSERT_EQ(sj_tensor_create_dense(ctx.c, 1, &n, SJ_VALUE_F64, xd.data(), SJ_TENSOR_COPY, &x.t), SJ_OK) << msg();
    for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_PLUS_PAIR}) {
      sj_op_options o;
      sj_op_options_init(&o);
      o.semiring = s;
      o.schedule = SJ_SCHEDULE_REFERENCE;
      H ref, got, aut;
      ASSERT_EQ(sj_spmv(ctx.c, A.t, x.t, &o, &ref.t), SJ_OK) << msg();
      o.schedule = SJ_SCHEDULE_DENSIFY;
      ASSERT_EQ(sj_spmv(ctx.c, A.t, x.t, &o, &got.t), SJ_OK) << msg();
      EXPECT_TRUE(same_bits(ref.t->t, got.t->t));
      o.schedule = SJ_SCHEDULE_AUTO;
      ASSERT_EQ(sj_spmv(ctx.c, A.t, x.t, &o, &aut.t), SJ_OK) << msg();
      EXPECT_TRUE(same_bits(ref.t->t, aut.t->t));
    }
  }
}

TEST(SpmspvSchedules, PushKeepsTheCscCopyOnTheHandle) {
  Ctx ctx;
  Rng rng(3);
  auto a = sj::test::random_uniform<int32_t, double>(rng, 300, 200, 0.05);
  auto xv = sj::test::random_sparse_vector<int32_t, double>(rng, 200, 0.1);
  H A, x;
  A.t = csr_handle(ctx.c, a);
  x.t = vec_handle(ctx.c, xv);
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_PUSH;
  auto forms = [&] {
    std::lock_guard lock(A.t->t.derived->mutex);
    return A.t->t.derived->forms.size();
  };
  auto csc_of = [&]() -> const void* {
    std::lock_guard lock(A.t->t.derived->mutex);
    for (auto& [k, t] : A.t->t.derived->forms)
      if (k.rfind("csc-of-matrix/", 0) == 0) return t.levels[1].crd.data();
    return nullptr;
  };
  // The handle's store of kept forms is made at its first use as an operand.
  EXPECT_FALSE(A.t->t.derived);
  H y1, y2, y3;
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, x.t, &o, &y1.t), SJ_OK) << msg();
  ASSERT_TRUE(A.t->t.derived);
  const size_t after_first = forms();
  const void* copy = csc_of();
  ASSERT_NE(copy, nullptr);
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, x.t, &o, &y2.t), SJ_OK) << msg();
  o.schedule = SJ_SCHEDULE_AUTO;
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, x.t, &o, &y3.t), SJ_OK) << msg();
  EXPECT_EQ(forms(), after_first);
  EXPECT_EQ(csc_of(), copy);  // the same arrays: converted once
  EXPECT_TRUE(same_bits(y1.t->t, y2.t->t));
  EXPECT_TRUE(same_bits(y1.t->t, y3.t->t));
  // Once cached (a repeated operand), auto chooses the push for a sparse x.
  const sj_tensor* ops[2] = {A.t, x.t};
  sj_plan* plan = nullptr;
  ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPMSPV, ops, 2, &o, &plan), SJ_OK) << msg();
  const char* ex = nullptr;
  ASSERT_EQ(sj_plan_explain(plan, &ex), SJ_OK) << msg();
  EXPECT_NE(std::string(ex).find("\"chosen\":\"push\""), std::string::npos) << ex;
  sj_plan_destroy(plan);
}

// Explain names the push's accumulator for the plan's x: dense for a large output with about a
// product per row or more, sparse below that, and sparse where the semiring's add has no
// exact identity (floating min-plus); each plan's result equals the reference.
TEST(SpmspvSchedules, ExplainNamesThePushAccumulator) {
  Ctx ctx;
  Rng rng(8);
  H A, xd, xs;
  A.t = csr_handle(ctx.c, sj::test::random_uniform<int32_t, double>(rng, 6000, 300, 0.01));  // 3 per column
  xd.t = vec_handle(ctx.c, sj::test::random_sparse_vector<int32_t, double>(rng, 300, 0.8));  // ~1.2 per row
  xs.t = vec_handle(ctx.c, sj::test::random_sparse_vector<int32_t, double>(rng, 300, 0.1));  // ~0.15 per row
  struct Want {
    const sj_tensor* x;
    sj_semiring s;
    const char* text;
  };
  for (const Want& w : {Want{xd.t, SJ_SEMIRING_PLUS_TIMES, "dense accumulator for this x"},
                        Want{xs.t, SJ_SEMIRING_PLUS_TIMES, "sparse accumulator for this x"},
                        Want{xd.t, SJ_SEMIRING_MIN_PLUS,
                             "sparse accumulator (the semiring's add has no exact identity)"}}) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = SJ_SCHEDULE_PUSH;
    o.semiring = w.s;
    const sj_tensor* ops[2] = {A.t, w.x};
    sj_plan* plan = nullptr;
    ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPMSPV, ops, 2, &o, &plan), SJ_OK) << msg();
    const char* text = nullptr;
    ASSERT_EQ(sj_plan_explain_text(plan, &text), SJ_OK) << msg();
    EXPECT_NE(std::string(text).find(w.text), std::string::npos) << text;
    sj_plan_destroy(plan);
    check_spmspv(ctx.c, A.t, w.x, w.s, w.text, false, /*with_inner=*/false);
  }
}

// The push puts each call's touched rows in order by reading back its marks (when it touched
// a good part of the rows), an AVX2 sorting network (up to 256 int32 rows), std::sort or a
// bitmap, by cost. Every touched count from 0 to 300 over a tall A (many bitmap words, so the
// network wins where it applies) and a short one (the read-back, with rows past the last
// 32), x over three columns that share some rows: every way bit-identical to the reference.
TEST(SpmspvSchedules, PushOrdersEveryTouchedCount) {
  Ctx ctx;
  Rng rng(41);
  const int64_t n = 3;
  for (const int64_t m : {int64_t{40000}, int64_t{701}}) {
    for (int64_t touched = 0; touched <= 300; touched += touched < 40 ? 1 : 7) {
      std::vector<std::vector<int32_t>> cols_of_row(static_cast<size_t>(m));
      for (int64_t k = 0; k < touched; ++k) {
        const int64_t i = rng.uniform_int(0, m - 1);
        const int32_t j = static_cast<int32_t>(k % n);
        auto& r = cols_of_row[static_cast<size_t>(i)];
        if (std::find(r.begin(), r.end(), j) == r.end()) r.push_back(j);
      }
      sj::CsResult<int32_t, double> a;
      a.outer = m;
      a.inner = n;
      a.pos.push_back(0);
      for (auto& r : cols_of_row) {
        std::sort(r.begin(), r.end());
        for (int32_t j : r) {
          a.crd.push_back(j);
          a.val.push_back(1.0 + 0.25 * static_cast<double>(a.crd.size() % 7));
        }
        a.pos.push_back(static_cast<int64_t>(a.crd.size()));
      }
      sj::SpVecResult<int32_t, double> xv;
      xv.n = n;
      xv.idx = {0, 1, 2};
      xv.val = {1.5, -0.5, 3.0};
      H A, x;
      A.t = csr_handle(ctx.c, a);
      x.t = vec_handle(ctx.c, xv);
      check_spmspv(ctx.c, A.t, x.t, SJ_SEMIRING_PLUS_TIMES, std::to_string(m) + " rows, touched " + std::to_string(touched));
    }
  }
}

TEST(SpmspvSchedules, EveryRealMatrix) {
  auto files = sj::test::shared_matrices();
  if (files.empty()) GTEST_SKIP() << "no ../shared/data/matrices";
  Ctx ctx;
  Rng rng(99);
  for (auto& f : files) {
    H A;
    ASSERT_EQ(sj_tensor_read_file(ctx.c, f.c_str(), &A.t), SJ_OK) << f << ": " << msg();
    const sj::Tensor& t = A.t->t;
    if (t.order != 2) continue;
    const int64_t n = t.dims[1], m = t.dims[0];
    for (double d : {0.01, 0.1}) {
      H x;
      int64_t nx = 0;
      // x typed like A (pattern matrices may read as bool).
      auto make = [&](auto v) {
        using V = decltype(v);
        auto xv = sj::test::random_sparse_vector<int32_t, V>(rng, n, d);
        nx = static_cast<int64_t>(xv.idx.size());
        x.t = vec_handle(ctx.c, xv);
      };
      if (t.value_type == sj::ValueType::F64) make(double{});
      else if (t.value_type == sj::ValueType::F32) make(float{});
      else make(uint8_t{});
      const bool with_inner = static_cast<double>(m) * static_cast<double>(nx) < 2e7;
      const sj_semiring s = t.value_type == sj::ValueType::Bool ? SJ_SEMIRING_OR_AND : SJ_SEMIRING_PLUS_TIMES;
      check_spmspv(ctx.c, A.t, x.t, s, f.filename().string(), false, with_inner);
    }
  }
}

}  // namespace

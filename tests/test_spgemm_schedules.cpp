// The SpGEMM and masked-SpGEMM schedules (kernels/spgemm_schedules.cpp): every schedule,
// forced through the C API or through sj::Plan, gives results bit-identical to the reference
// schedule (same structure, same value bits) on random and real inputs; auto picks ours.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "kernels/spgemm_gustavson.hpp"
#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/plan.hpp"
#include "src/tensor_file.hpp"
#include "tests/random_matrices.hpp"
#include "tests/schedule_test_util.hpp"
#include "tests/test_util.hpp"

namespace {

using sj::Tensor;
using sj::test::Rng;
using sj::test::Values;

sj::Context make_context(int threads) {
  sj_config c;
  sj_config_init(&c);
  c.threads = threads;
  c.disable_disk_cache = 1;
  return sj::Context(c);
}

const sj::Context& context() {
  static const sj::Context ctx = make_context(1);
  return ctx;
}

sj_op_options options(sj_semiring s = SJ_SEMIRING_PLUS_TIMES, bool dense = false) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.semiring = s;
  o.dense_output = dense ? 1 : 0;
  return o;
}

Tensor run_plan(sj_op op, const std::vector<Tensor>& operands, sj_op_options o, sj_schedule s) {
  o.schedule = s;
  sj::Plan plan(context(), sj::OpRequest{op, operands, o});
  EXPECT_EQ(plan.schedule(), s);
  return plan.execute(operands);
}

// Same shape, format, structure and value bits.
::testing::AssertionResult identical(const Tensor& want, const Tensor& got) {
  if (want.order != got.order || want.dims != got.dims) return ::testing::AssertionFailure() << "shapes differ";
  if (sj::is_dense(want) != sj::is_dense(got)) return ::testing::AssertionFailure() << "formats differ";
  if (want.value_type != got.value_type) return ::testing::AssertionFailure() << "value types differ";
  const int vs = sj::value_size(want.value_type);
  if (sj::is_dense(want)) {
    const int64_t n = want.dims[0] * want.dims[1];
    if (n && std::memcmp(want.values.data(), got.values.data(), static_cast<size_t>(n) * vs) != 0)
      return ::testing::AssertionFailure() << "dense values differ";
    return ::testing::AssertionSuccess();
  }
  if (!sj::is_csr(got)) return ::testing::AssertionFailure() << "result is not CSR: " << got.describe();
  if (want.index_type != got.index_type) return ::testing::AssertionFailure() << "index types differ";
  const int64_t rows = want.dims[0];
  const int64_t* wp = want.levels[1].pos.as<int64_t>();
  const int64_t* gp = got.levels[1].pos.as<int64_t>();
  for (int64_t i = 0; i <= rows; ++i)
    if (wp[i] != gp[i]) return ::testing::AssertionFailure() << "row pointer " << i << ": " << wp[i] << " vs " << gp[i];
  const int64_t nnz = wp[rows];
  for (int64_t p = 0; p < nnz; ++p) {
    if (sj::crd_at(want.levels[1], want.index_type, p) != sj::crd_at(got.levels[1], got.index_type, p))
      return ::testing::AssertionFailure() << "column at position " << p << " differs";
    if (std::memcmp(static_cast<const char*>(want.values.data()) + p * vs,
                    static_cast<const char*>(got.values.data()) + p * vs, vs) != 0)
      return ::testing::AssertionFailure() << "value at position " << p << " differs";
  }
  sj::validate(got);
  return ::testing::AssertionSuccess();
}

const sj_schedule kSpgemm[] = {SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH};
const sj_schedule kMasked[] = {SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_INNER};

void check_spgemm(const Tensor& A, const Tensor& B, sj_op_options o, const std::string& what) {
  Tensor want = run_plan(SJ_OP_SPGEMM, {A, B}, o, SJ_SCHEDULE_REFERENCE);
  for (sj_schedule s : kSpgemm)
    EXPECT_TRUE(identical(want, run_plan(SJ_OP_SPGEMM, {A, B}, o, s)))
        << what << " schedule " << sj::to_string(s) << (o.dense_output ? " dense" : "");
}

void check_masked(const Tensor& M, const Tensor& A, const Tensor& B, sj_op_options o, const std::string& what) {
  Tensor want = run_plan(SJ_OP_SPGEMM_MASKED, {M, A, B}, o, SJ_SCHEDULE_REFERENCE);
  for (sj_schedule s : kMasked)
    EXPECT_TRUE(identical(want, run_plan(SJ_OP_SPGEMM_MASKED, {M, A, B}, o, s)))
        << what << " masked schedule " << sj::to_string(s);
}

// The entries of C whose (i,j) M stores (keep_masked) or does not store, in C's order: a mask
// applied to an unmasked product, to check the masked kernels against.
Tensor filtered(const Tensor& C, const Tensor& M, bool keep_masked) {
  const int64_t rows = C.dims[0];
  const int64_t* cp = C.levels[1].pos.as<int64_t>();
  const int64_t* mp = M.levels[1].pos.as<int64_t>();
  std::vector<int64_t> keep;
  std::vector<int64_t> pos(static_cast<size_t>(rows) + 1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t q = mp[i];
    for (int64_t p = cp[i]; p < cp[i + 1]; ++p) {
      const int64_t j = sj::crd_at(C.levels[1], C.index_type, p);
      while (q < mp[i + 1] && sj::crd_at(M.levels[1], M.index_type, q) < j) ++q;
      const bool in_mask = q < mp[i + 1] && sj::crd_at(M.levels[1], M.index_type, q) == j;
      if (in_mask == keep_masked) keep.push_back(p);
    }
    pos[static_cast<size_t>(i) + 1] = static_cast<int64_t>(keep.size());
  }
  const int64_t n = static_cast<int64_t>(keep.size());
  Tensor E = sj::make_compressed_matrix(sj::default_allocator(), true, rows, C.dims[1], n, C.index_type, C.value_type);
  std::memcpy(E.levels[1].pos.mutable_data(), pos.data(), sizeof(int64_t) * pos.size());
  const int is = C.index_type == sj::IndexType::I32 ? 4 : 8, vs = sj::value_size(C.value_type);
  for (int64_t t = 0; t < n; ++t) {
    std::memcpy(static_cast<char*>(E.levels[1].crd.mutable_data()) + t * is,
                static_cast<const char*>(C.levels[1].crd.data()) + keep[static_cast<size_t>(t)] * is, is);
    std::memcpy(static_cast<char*>(E.values.mutable_data()) + t * vs,
                static_cast<const char*>(C.values.data()) + keep[static_cast<size_t>(t)] * vs, vs);
  }
  return E;
}

// C<!M> = A*B (mask_complement): the saxpy schedule and the reference agree bit for bit, and
// both are A*B's entries off the mask (and C<M> its entries on it).
void check_complement(const Tensor& M, const Tensor& A, const Tensor& B, sj_op_options o, const std::string& what) {
  const Tensor full = run_plan(SJ_OP_SPGEMM, {A, B}, o, SJ_SCHEDULE_REFERENCE);
  EXPECT_TRUE(identical(filtered(full, M, true), run_plan(SJ_OP_SPGEMM_MASKED, {M, A, B}, o, SJ_SCHEDULE_REFERENCE)))
      << what << " masked reference";
  o.mask_complement = 1;
  const Tensor want = filtered(full, M, false);
  EXPECT_TRUE(identical(want, run_plan(SJ_OP_SPGEMM_MASKED, {M, A, B}, o, SJ_SCHEDULE_REFERENCE)))
      << what << " complemented reference";
  EXPECT_TRUE(identical(want, run_plan(SJ_OP_SPGEMM_MASKED, {M, A, B}, o, SJ_SCHEDULE_GUSTAVSON_DENSE)))
      << what << " complemented saxpy";
  o.schedule = SJ_SCHEDULE_AUTO;
  sj::Plan plan(context(), sj::OpRequest{SJ_OP_SPGEMM_MASKED, {M, A, B}, o});
  EXPECT_TRUE(plan.schedule() == SJ_SCHEDULE_GUSTAVSON_DENSE || plan.schedule() == SJ_SCHEDULE_REFERENCE)
      << plan.explain_text();
  EXPECT_TRUE(identical(want, plan.execute({M, A, B}))) << what << " complemented, auto";
}

template <class I, class V> Tensor tensor(const sj::CsResult<I, V>& r) {
  sj::ValueType vt = std::is_same_v<V, float> ? sj::ValueType::F32
                     : std::is_same_v<V, double> ? sj::ValueType::F64
                                                 : sj::ValueType::Bool;
  return sj::to_tensor(sj::default_allocator(), true, r, vt);
}

// Random operand pairs of many shapes and families for one index/value type.
template <class I, class V> void random_round(Rng& rng, int round, const std::vector<sj_semiring>& semirings) {
  const Values kinds[] = {Values::Real, Values::SmallInt, Values::Positive, Values::Ones};
  const Values vals = kinds[round % 4];
  int64_t m, k, n;
  switch (round % 6) {
    case 0: m = 0; k = rng.uniform_int(0, 5); n = rng.uniform_int(0, 5); break;  // 0 x n
    case 1: m = k = n = 1; break;
    case 2: m = rng.uniform_int(1, 40); k = rng.uniform_int(0, 3); n = rng.uniform_int(1, 60); break;
    default: m = rng.uniform_int(1, 120); k = rng.uniform_int(1, 120); n = rng.uniform_int(1, 120); break;
  }
  sj::CsResult<I, V> ra, rb, rm;
  if (round % 5 == 4) {  // power-law rows, some long
    ra = sj::test::random_power_law<I, V>(rng, m, k, 6.0, 1.5, {0.2, 0, vals});
    rb = sj::test::random_power_law<I, V>(rng, k, n, 8.0, 1.5, {0.1, 0, vals});
  } else {
    ra = sj::test::random_matrix<I, V>(rng, m, k, vals);
    rb = sj::test::random_matrix<I, V>(rng, k, n, vals);
  }
  rm = sj::test::random_matrix<I, V>(rng, m, n, vals);
  Tensor A = tensor(ra), B = tensor(rb), M = tensor(rm);
  const std::string what = "round " + std::to_string(round) + " " + A.describe() + " * " + B.describe();
  for (sj_semiring s : semirings) {
    check_spgemm(A, B, options(s), what + " " + std::string(sj::to_string(s)));
    if (round % 3 == 0) check_spgemm(A, B, options(s, true), what + " " + std::string(sj::to_string(s)));
    check_masked(M, A, B, options(s), what + " " + std::string(sj::to_string(s)));
    check_complement(M, A, B, options(s), what + " " + std::string(sj::to_string(s)));
    if (round % 4 == 0 && A.dims[1] == B.dims[1]) check_complement(A, A, B, options(s), what + " mask A");
  }
}

const std::vector<sj_semiring> kAllSemirings = {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES,
                                                SJ_SEMIRING_OR_AND, SJ_SEMIRING_PLUS_PAIR};

TEST(SpgemmSchedules, RandomF64I32AllSemirings) {
  Rng rng(101);
  for (int round = 0; round < 60; ++round) random_round<int32_t, double>(rng, round, kAllSemirings);
}

TEST(SpgemmSchedules, RandomF32I64AllSemirings) {
  Rng rng(202);
  for (int round = 0; round < 60; ++round) random_round<int64_t, float>(rng, round, kAllSemirings);
}

TEST(SpgemmSchedules, RandomF32I32AndF64I64) {
  Rng rng(303);
  for (int round = 0; round < 30; ++round) {
    random_round<int32_t, float>(rng, round, {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MAX_TIMES});
    random_round<int64_t, double>(rng, round, {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS});
  }
}

TEST(SpgemmSchedules, RandomBoolOrAnd) {
  Rng rng(404);
  for (int round = 0; round < 40; ++round) {
    random_round<int32_t, uint8_t>(rng, round, {SJ_SEMIRING_OR_AND});
    random_round<int64_t, uint8_t>(rng, round, {SJ_SEMIRING_OR_AND});
  }
}

// Rows long enough for every per-row path: sorting, scanning the accumulator range (banded,
// dense rows), big hash tables, and wide matrices whose accumulator is large.
TEST(SpgemmSchedules, LongRowsBandedAndWide) {
  Rng rng(505);
  auto banded = sj::test::random_banded<int32_t, double>(rng, 600, 600, 40, 40, 0.6);
  auto dense_ish = sj::test::random_uniform<int32_t, double>(rng, 80, 300, 0.5);
  auto wide = sj::test::random_uniform<int32_t, double>(rng, 50, 60000, 0.0015);
  auto wideT = sj::test::random_uniform<int32_t, double>(rng, 60000, 50, 0.0015);
  auto pl = sj::test::random_power_law<int32_t, double>(rng, 1000, 1000, 8.0, 1.5);
  Tensor Bd = tensor(banded), D = tensor(dense_ish), W = tensor(wide), Wt = tensor(wideT), P = tensor(pl);
  Tensor Dt = sj::transpose(D, sj::default_allocator());
  check_spgemm(Bd, Bd, options(), "banded");
  check_spgemm(D, Dt, options(), "dense-ish D*D^T");
  check_spgemm(Dt, D, options(), "dense-ish D^T*D");
  check_spgemm(Wt, W, options(), "tall*wide");
  check_spgemm(W, Wt, options(), "wide*tall");
  check_spgemm(P, P, options(), "power-law");
  check_spgemm(P, P, options(SJ_SEMIRING_MIN_PLUS, true), "power-law dense");
  check_masked(P, P, P, options(), "power-law masked by itself");
  check_masked(Bd, Bd, Bd, options(SJ_SEMIRING_MAX_TIMES), "banded masked");
}

// Every way a Gustavson row is put in order (kernels/spgemm_gustavson_impl.hpp), with both
// index types: short rows (insertion sort), short scattered rows (AVX2 sorting networks for
// 32-bit columns up to 256 per row, rank sort otherwise), rows dense in
// their column span (the dense accumulator reads its marks: the AVX2 decode writes eight at a
// time, so rows end at every offset within a block), moderately sparse rows (bitmap) and very
// sparse long rows (std::sort, and the hash accumulator's paths).
template <class I> void every_row_order() {
  Rng rng(sizeof(I) == 4 ? 515 : 525);
  std::vector<std::pair<Tensor, Tensor>> cases;
  auto add = [&](sj::CsResult<I, double> a, sj::CsResult<I, double> b) { cases.emplace_back(tensor(a), tensor(b)); };
  add(sj::test::random_banded<I, double>(rng, 300, 300, 9, 13, 0.7), sj::test::random_banded<I, double>(rng, 300, 300, 5, 3, 0.8));
  add(sj::test::random_uniform<I, double>(rng, 60, 90, 0.2), sj::test::random_uniform<I, double>(rng, 90, 203, 0.3));
  add(sj::test::random_uniform<I, double>(rng, 100, 400, 0.01), sj::test::random_uniform<I, double>(rng, 400, 5000, 0.004));
  add(sj::test::random_uniform<I, double>(rng, 100, 300, 0.05), sj::test::random_uniform<I, double>(rng, 300, 3000, 0.02));
  add(sj::test::random_uniform<I, double>(rng, 80, 200, 0.15), sj::test::random_uniform<I, double>(rng, 200, 100000, 0.0004));
  add(sj::test::random_power_law<I, double>(rng, 500, 500, 10.0, 1.4), sj::test::random_power_law<I, double>(rng, 500, 700, 10.0, 1.4));
  // One entry per row of A (some rows empty): each row of C is a scaled row of B, copied
  // without an accumulator; B's rows have 0-9 entries (the spelled-out copies of 1-4 and the
  // memcpy beyond).
  sj::CsResult<I, double> one{60, 50, {0}, {}, {}}, b{50, 40, {0}, {}, {}};
  for (int64_t i = 0; i < 60; ++i) {
    if (i % 7 != 3) {
      one.crd.push_back(static_cast<I>((i * 13) % 50));
      one.val.push_back(1.0 + 0.25 * static_cast<double>(i % 5));
    }
    one.pos.push_back(static_cast<int64_t>(one.crd.size()));
  }
  for (int64_t k = 0; k < 50; ++k) {
    for (int64_t t = 0; t < k % 10; ++t) {
      b.crd.push_back(static_cast<I>(t * 4 + k % 4));
      b.val.push_back(0.5 + static_cast<double>(t));
    }
    b.pos.push_back(static_cast<int64_t>(b.crd.size()));
  }
  add(one, b);
  for (size_t c = 0; c < cases.size(); ++c) {
    check_spgemm(cases[c].first, cases[c].second, options(), "row order case " + std::to_string(c));
    check_spgemm(cases[c].first, cases[c].second, options(SJ_SEMIRING_MIN_PLUS), "row order case " + std::to_string(c));
  }
}

TEST(SpgemmSchedules, EveryRowOrderBothIndexTypes) {
  every_row_order<int32_t>();
  every_row_order<int64_t>();
}

// The dense accumulator's two row loops (kernels/spgemm_gustavson.hpp, DenseRowLoop), each
// pinned for whole products (left to the timing, a one-off product runs only the branchy one):
// every semiring, value and index type, and every row shape above.
class PinnedDenseRowLoop {
 public:
  explicit PinnedDenseRowLoop(sj::DenseRowLoop loop) { sj::set_dense_row_loop(loop); }
  ~PinnedDenseRowLoop() { sj::set_dense_row_loop(sj::DenseRowLoop::Timed); }
};

// Rows dense in their column span, each after another such row, run the dense accumulator's
// span rows (DenseAcc::span_row: sums kept at the semiring's identity, no test per product):
// the same bits as the reference, also where a column's only products are -0.0 (an identity
// of +0.0 would give +0.0), where NaN and infinity enter a sum, where a span row follows a
// row whose span is far too wide for one (the list loops run it), and where a row's products
// are all empty, and on 3 threads. Full bands of 41 (every row fills its span, of 41-81
// columns), so every row after the first of a run takes the span path. (Min-plus on floating
// point has no exact identity: it runs the list loops, for comparison.)
template <class I, class V> void rows_dense_in_their_span(sj_semiring s) {
  const int64_t m = 300, inner = 304, cols = 20000, half = 20;
  const V nan = std::is_same_v<V, uint8_t> ? V(1) : std::numeric_limits<V>::quiet_NaN();
  const V inf = std::is_same_v<V, uint8_t> ? V(1) : std::numeric_limits<V>::infinity();
  const bool boolean = std::is_same_v<V, uint8_t>;
  sj::CsResult<I, V> a{m, inner, {0}, {}, {}}, b{inner, cols, {0}, {}, {}};
  for (int64_t i = 0; i < m; ++i) {
    auto put = [&](int64_t k, V v) {
      a.crd.push_back(static_cast<I>(k));
      a.val.push_back(v);
    };
    if (i == 120) {  // span [0, cols - 1] for ~41 multiplies: too wide, after dense rows
      put(0, V(1));
      put(1, V(1));
      put(300, V(1));
    } else if (i == 200) {  // B's rows 301-303 are empty: no products
      put(301, V(1));
      put(302, V(1));
      put(303, V(1));
    } else {
      for (int64_t k = std::max<int64_t>(0, i - half); k <= std::min<int64_t>(299, i + half); ++k)
        put(k, boolean ? V((i + k) % 3 != 0) : i == 150 ? V(-1) : V(static_cast<double>((i * 7 + k) % 5) - 2));
    }
    a.pos.push_back(static_cast<int64_t>(a.crd.size()));
  }
  for (int64_t k = 0; k < inner; ++k) {
    if (k < 300) {
      for (int64_t j = std::max<int64_t>(0, k - half); j <= std::min<int64_t>(cols - 1, k + half); ++j) {
        b.crd.push_back(static_cast<I>(j));
        // Column 150 holds zeros only: row 150 (all -1) gets -0.0 there.
        b.val.push_back(boolean ? V((k + j) % 4 != 0)
                        : j == 150 ? V(0)
                        : k == 40 && j == 45 ? nan
                        : k == 60 && j == 61 ? inf
                                              : V(static_cast<double>((k * 3 + j) % 7) * 0.5 - 1.25));
      }
    } else if (k == 300) {
      b.crd.push_back(static_cast<I>(cols - 1));
      b.val.push_back(V(1));
    }
    b.pos.push_back(static_cast<int64_t>(b.crd.size()));
  }
  const Tensor A = tensor(a), B = tensor(b);
  check_spgemm(A, B, options(s), "dense span rows " + std::string(sj::to_string(s)) + " " + A.describe());
  // On 3 threads each chunk starts from its thread's last row (a hint only): the same bits.
  static const sj::Context three = make_context(3);
  sj_op_options o = options(s);
  o.schedule = SJ_SCHEDULE_GUSTAVSON_DENSE;
  sj::Plan parallel(three, sj::OpRequest{SJ_OP_SPGEMM, {A, B}, o});
  EXPECT_TRUE(identical(run_plan(SJ_OP_SPGEMM, {A, B}, options(s), SJ_SCHEDULE_REFERENCE), parallel.execute({A, B})))
      << "dense span rows on 3 threads " << sj::to_string(s);
  EXPECT_EQ(parallel.explain_text().find("last execution: 1 chunk(s)"), std::string::npos) << parallel.explain_text();
  if (!boolean && s == SJ_SEMIRING_PLUS_TIMES) {  // the -0.0 is there to be kept
    const Tensor C = run_plan(SJ_OP_SPGEMM, {A, B}, options(s), SJ_SCHEDULE_GUSTAVSON_DENSE);
    const int64_t* cp = C.levels[1].pos.as<int64_t>();
    bool found = false;
    for (int64_t p = cp[150]; p < cp[151]; ++p)
      if (sj::crd_at(C.levels[1], C.index_type, p) == 150) {
        const V v = C.values.as<V>()[p];
        found = v == V(0) && std::signbit(v);
      }
    EXPECT_TRUE(found) << "C(150, 150) should be -0.0";
  }
}

TEST(SpgemmSchedules, RowsDenseInTheirSpanMatchTheReference) {
  for (sj::DenseRowLoop loop : {sj::DenseRowLoop::Branching, sj::DenseRowLoop::BranchFree}) {
    PinnedDenseRowLoop pin(loop);
    for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_PLUS_PAIR, SJ_SEMIRING_MIN_PLUS}) {
      rows_dense_in_their_span<int32_t, double>(s);
      rows_dense_in_their_span<int64_t, float>(s);
    }
    rows_dense_in_their_span<int32_t, uint8_t>(SJ_SEMIRING_OR_AND);
  }
}


// Left to the timing, a plan's executions run both loops (warm-up, trials, then the faster):
// each execution's result is the reference's, bit for bit.
TEST(SpgemmSchedules, TimedRowLoopEveryExecutionMatches) {
  Rng rng(607);
  Tensor A = tensor(sj::test::random_power_law<int32_t, double>(rng, 400, 400, 12.0, 1.4));
  Tensor B = tensor(sj::test::random_uniform<int32_t, double>(rng, 400, 300, 0.03));
  const Tensor want = run_plan(SJ_OP_SPGEMM, {A, B}, options(), SJ_SCHEDULE_REFERENCE);
  sj_op_options o = options();
  o.schedule = SJ_SCHEDULE_GUSTAVSON_DENSE;
  o.recompute_structure = 1;  // every execution runs a row loop (no kept structure)
  sj::Plan plan(context(), sj::OpRequest{SJ_OP_SPGEMM, {A, B}, o});
  // Explain says where the choice stands: untimed, being timed, then settled by the trials.
  auto mentions = [](const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; };
  EXPECT_PRED2(mentions, plan.explain_text(), "row loop: branchy until timed");
  for (int e = 0; e < 2 * (sj::TimedChoice::kTrials + 1); ++e) {
    EXPECT_TRUE(identical(want, plan.execute({A, B}))) << "execution " << e;
    if (e == 2) EXPECT_PRED2(mentions, plan.explain_text(), "being timed, 2 of 4 timed executions done");
  }
  EXPECT_PRED2(mentions, plan.explain_text(), "the faster over 4 timed executions");
  EXPECT_PRED2(mentions, plan.explain(), "\"variant\":\"dense accumulator row loop: ");

  // A product under the floor settles on the branchy loop untimed, and says why.
  Tensor S = tensor(sj::test::random_uniform<int32_t, double>(rng, 30, 30, 0.1));
  sj::Plan small(context(), sj::OpRequest{SJ_OP_SPGEMM, {S, S}, o});
  EXPECT_TRUE(identical(run_plan(SJ_OP_SPGEMM, {S, S}, options(), SJ_SCHEDULE_REFERENCE), small.execute({S, S})));
  EXPECT_PRED2(mentions, small.explain_text(), "row loop: branchy (product under 16384 multiplies");

  // A product whose rows repeat their columns many times (a full band of 21: ~10 multiplies
  // per result entry) settles on the branchy loop after its warm-up, untimed, and says why.
  Tensor D = tensor(sj::test::random_banded<int32_t, double>(rng, 400, 400, 10, 10, 1.0));
  const Tensor want_d = run_plan(SJ_OP_SPGEMM, {D, D}, options(), SJ_SCHEDULE_REFERENCE);
  sj::Plan banded(context(), sj::OpRequest{SJ_OP_SPGEMM, {D, D}, o});
  for (int e = 0; e < 3; ++e) EXPECT_TRUE(identical(want_d, banded.execute({D, D}))) << "execution " << e;
  EXPECT_PRED2(mentions, banded.explain_text(), "row loop: branchy (the first execution found >= 4 multiplies");
  // The random product above (~1.2 multiplies per entry) was timed instead.
  EXPECT_EQ(plan.explain_text().find("the first execution found"), std::string::npos);
}

TEST(SpgemmSchedules, DenseAccumulatorBothRowLoops) {
  for (sj::DenseRowLoop loop : {sj::DenseRowLoop::Branching, sj::DenseRowLoop::BranchFree}) {
    SCOPED_TRACE(loop == sj::DenseRowLoop::Branching ? "branching loop" : "branch-free loop");
    PinnedDenseRowLoop pin(loop);
    Rng rng(606);
    for (int round = 0; round < 24; ++round) {
      random_round<int32_t, double>(rng, round, kAllSemirings);
      random_round<int64_t, float>(rng, round, kAllSemirings);
      random_round<int32_t, uint8_t>(rng, round, {SJ_SEMIRING_OR_AND});
    }
    every_row_order<int32_t>();
    every_row_order<int64_t>();
  }
}

// Masked `inner` runs the coiteration kernels (kernels/coiter_drivers.hpp): bit-identical to
// the reference for every forced coiteration config (tests/schedule_test_util.hpp) and every
// value/index type, on rows and columns whose lengths spread from 0 to ~200 (each width's
// fast lane and each per-pair tier runs) and on a banded pair (disjoint and trimmed pairs).
template <class I, class V> void masked_inner_every_config(Rng& rng, sj_semiring s) {
  const auto vals = std::is_same_v<V, float> ? Values::SmallInt : Values::Real;
  Tensor A = tensor(sj::test::random_power_law<I, V>(rng, 24, 320, 60.0, 1.3, {0.1, 0, vals}));
  Tensor Bt = tensor(sj::test::random_power_law<I, V>(rng, 28, 320, 60.0, 1.3, {0.1, 0, vals}));
  Tensor B = sj::transpose(Bt, sj::default_allocator());
  Tensor M = tensor(sj::test::random_uniform<I, V>(rng, 24, 28, 0.6, {0, 0, vals}));
  Tensor Band = tensor(sj::test::random_banded<I, V>(rng, 60, 60, 12, 12, 0.9, {0, 0, vals}));
  sj_op_options o = options(s);
  const Tensor want = run_plan(SJ_OP_SPGEMM_MASKED, {M, A, B}, o, SJ_SCHEDULE_REFERENCE);
  const Tensor want_band = run_plan(SJ_OP_SPGEMM_MASKED, {Band, Band, Band}, o, SJ_SCHEDULE_REFERENCE);
  for (const auto& f : sj::test::coiter_forces()) {
    f.apply(o);
    EXPECT_TRUE(identical(want, run_plan(SJ_OP_SPGEMM_MASKED, {M, A, B}, o, SJ_SCHEDULE_INNER))) << f.name();
    EXPECT_TRUE(identical(want_band, run_plan(SJ_OP_SPGEMM_MASKED, {Band, Band, Band}, o, SJ_SCHEDULE_INNER)))
        << "banded " << f.name();
  }
}

TEST(SpgemmSchedules, MaskedInnerEveryCoiterConfig) {
  Rng rng(707);
  masked_inner_every_config<int32_t, double>(rng, SJ_SEMIRING_PLUS_TIMES);
  masked_inner_every_config<int32_t, float>(rng, SJ_SEMIRING_MIN_PLUS);
  masked_inner_every_config<int64_t, double>(rng, SJ_SEMIRING_MAX_TIMES);
  masked_inner_every_config<int64_t, float>(rng, SJ_SEMIRING_PLUS_PAIR);
}

// Through the public C API, with caller formats (CSC operands, transposes) and the output
// index type option.
TEST(SpgemmSchedules, ForcedThroughCApi) {
  sj_context* ctx = nullptr;
  ASSERT_EQ(sj_context_create(nullptr, &ctx), SJ_OK);
  Rng rng(606);
  for (int round = 0; round < 12; ++round) {
    const int64_t m = rng.uniform_int(1, 60), k = rng.uniform_int(1, 60), n = rng.uniform_int(1, 60);
    Tensor A = tensor(sj::test::random_matrix<int32_t, double>(rng, m, k));
    Tensor B = tensor(sj::test::random_matrix<int32_t, double>(rng, k, n));
    Tensor M = tensor(sj::test::random_matrix<int32_t, double>(rng, m, n));
    const bool csc = round % 2 == 1;
    auto handle = [&](const Tensor& t) {
      Tensor x = csc ? sj::convert(t, sj::format_spec(SJ_FORMAT_CSC, 2), t.index_type, sj::default_allocator()) : t;
      return sj::capi::new_tensor_handle(ctx, std::move(x));
    };
    sj_tensor *a = handle(A), *b = handle(B), *mk = handle(M);
    sj_op_options o = options(round % 4 == 2 ? SJ_SEMIRING_MIN_PLUS : SJ_SEMIRING_PLUS_TIMES, round % 3 == 0);
    if (round % 4 == 3) o.output_index_type = SJ_INDEX_INT64;
    o.schedule = SJ_SCHEDULE_REFERENCE;
    sj_tensor* want = nullptr;
    ASSERT_EQ(sj_spgemm(ctx, a, b, &o, &want), SJ_OK) << sj_last_error_message();
    for (sj_schedule s : kSpgemm) {
      o.schedule = s;
      sj_tensor* got = nullptr;
      ASSERT_EQ(sj_spgemm(ctx, a, b, &o, &got), SJ_OK) << sj_last_error_message();
      EXPECT_TRUE(identical(want->t, got->t)) << "round " << round << " " << sj::to_string(s);
      sj_tensor_destroy(got);
    }
    sj_tensor_destroy(want);
    o.dense_output = 0;
    o.schedule = SJ_SCHEDULE_REFERENCE;
    ASSERT_EQ(sj_spgemm_masked(ctx, mk, a, b, &o, &want), SJ_OK) << sj_last_error_message();
    for (int rep = 0; rep < 2; ++rep)  // the second call may use B's cached CSC form
      for (sj_schedule s : kMasked) {
        o.schedule = s;
        sj_tensor* got = nullptr;
        ASSERT_EQ(sj_spgemm_masked(ctx, mk, a, b, &o, &got), SJ_OK) << sj_last_error_message();
        EXPECT_TRUE(identical(want->t, got->t)) << "round " << round << " masked " << sj::to_string(s);
        sj_tensor_destroy(got);
      }
    sj_tensor_destroy(want);
    // A^T * B^T: transposed operands (A is m x k, so use B^T (n x k) and A^T (k x m) shapes).
    o.transpose_a = 1;
    o.transpose_b = 1;
    o.schedule = SJ_SCHEDULE_REFERENCE;
    ASSERT_EQ(sj_spgemm(ctx, b, a, &o, &want), SJ_OK) << sj_last_error_message();
    for (sj_schedule s : kSpgemm) {
      o.schedule = s;
      sj_tensor* got = nullptr;
      ASSERT_EQ(sj_spgemm(ctx, b, a, &o, &got), SJ_OK) << sj_last_error_message();
      EXPECT_TRUE(identical(want->t, got->t)) << "round " << round << " transposed " << sj::to_string(s);
      sj_tensor_destroy(got);
    }
    sj_tensor_destroy(want);
    sj_tensor_destroy(a);
    sj_tensor_destroy(b);
    sj_tensor_destroy(mk);
  }
  EXPECT_EQ(sj_context_destroy(ctx), SJ_OK) << sj_last_error_message();
}

// Plans re-executed on new values of the same structure.
TEST(SpgemmSchedules, PlanReuseWithNewValues) {
  Rng rng(707);
  auto ra = sj::test::random_uniform<int32_t, double>(rng, 200, 200, 0.05);
  Tensor A1 = tensor(ra);
  for (auto& v : ra.val) v = v * 0.5 + 1;
  Tensor A2 = tensor(ra);
  for (sj_schedule s : kSpgemm) {
    sj_op_options o = options();
    o.schedule = s;
    sj::Plan plan(context(), sj::OpRequest{SJ_OP_SPGEMM, {A1, A1}, o});
    EXPECT_TRUE(identical(run_plan(SJ_OP_SPGEMM, {A1, A1}, options(), SJ_SCHEDULE_REFERENCE), plan.execute({A1, A1})));
    EXPECT_TRUE(identical(run_plan(SJ_OP_SPGEMM, {A2, A2}, options(), SJ_SCHEDULE_REFERENCE), plan.execute({A2, A2})));
  }
  for (sj_schedule s : kMasked) {
    sj_op_options o = options();
    o.schedule = s;
    sj::Plan plan(context(), sj::OpRequest{SJ_OP_SPGEMM_MASKED, {A1, A1, A1}, o});
    EXPECT_TRUE(identical(run_plan(SJ_OP_SPGEMM_MASKED, {A2, A2, A2}, options(), SJ_SCHEDULE_REFERENCE),
                          plan.execute({A2, A2, A2})));
  }
}

// Every real matrix: C = A*A (A*A^T when rectangular), and masked by A (by A*A^T's own
// pattern stand-in: A when square, else skipped).
TEST(SpgemmSchedules, RealMatrices) {
  auto files = sj::test::shared_matrices();
  if (files.empty()) GTEST_SKIP() << "no ../shared/data/matrices";
  for (auto& f : files) {
    Tensor A = sj::read_tensor_file(f.string(), sj::default_allocator());
    A = sj::convert(A, sj::format_spec(SJ_FORMAT_CSR, 2), sj::IndexType::I32, sj::default_allocator());
    if (A.value_type != sj::ValueType::F64) A = sj::with_value_type(A, sj::ValueType::F64, sj::default_allocator());
    const bool square = A.dims[0] == A.dims[1];
    Tensor B = square ? A : sj::transpose(A, sj::default_allocator());
    check_spgemm(A, B, options(), f.filename().string());
    if (square) check_masked(A, A, A, options(), f.filename().string());
  }
}

TEST(SpgemmSchedules, AutoChoosesOursOnMidSizeMatrix) {
  Rng rng(808);
  Tensor A = tensor(sj::test::random_uniform<int32_t, double>(rng, 3000, 3000, 0.003));
  sj::Plan plan(context(), sj::OpRequest{SJ_OP_SPGEMM, {A, A}, options()});
  EXPECT_TRUE(plan.schedule() == SJ_SCHEDULE_GUSTAVSON_DENSE || plan.schedule() == SJ_SCHEDULE_GUSTAVSON_HASH)
      << plan.explain();
  sj::Plan masked(context(), sj::OpRequest{SJ_OP_SPGEMM_MASKED, {A, A, A}, options()});
  EXPECT_TRUE(masked.schedule() == SJ_SCHEDULE_GUSTAVSON_DENSE || masked.schedule() == SJ_SCHEDULE_INNER)
      << masked.explain();
}

}  // namespace

// The complemented mask (sj_op_options.mask_complement) through the C API: the dot schedule
// cannot serve it, other operations refuse the option, and a drop-in call with and without it
// on the same handles gives each its own result (the plan memo tells the options apart).
TEST(SpgemmSchedules, MaskComplementThroughCApi) {
  Rng rng(77);
  const auto ra = sj::test::random_uniform<int32_t, double>(rng, 60, 50, 0.1);
  const auto rb = sj::test::random_uniform<int32_t, double>(rng, 50, 70, 0.1);
  const auto rm = sj::test::random_uniform<int32_t, double>(rng, 60, 70, 0.3);
  sj_context* ctx = nullptr;
  ASSERT_EQ(sj_context_create(nullptr, &ctx), SJ_OK);
  auto handle = [&](const sj::CsResult<int32_t, double>& r) {
    sj_tensor* t = nullptr;
    EXPECT_EQ(sj_tensor_create_csr(ctx, r.outer, r.inner, SJ_INDEX_INT32, SJ_VALUE_F64, r.pos.data(), r.crd.data(),
                                   r.val.data(), 0, &t), SJ_OK) << sj_last_error_message();
    return t;
  };
  sj_tensor *a = handle(ra), *b = handle(rb), *m = handle(rm);
  const Tensor A = tensor(ra), B = tensor(rb), M = tensor(rm);
  const Tensor full = run_plan(SJ_OP_SPGEMM, {A, B}, options(), SJ_SCHEDULE_REFERENCE);
  sj_op_options o = options();
  for (int round = 0; round < 3; ++round) {  // alternating: each call must find its own plan
    for (int comp : {0, 1}) {
      o.mask_complement = comp;
      sj_tensor* c = nullptr;
      ASSERT_EQ(sj_spgemm_masked(ctx, m, a, b, &o, &c), SJ_OK) << sj_last_error_message();
      EXPECT_TRUE(identical(filtered(full, M, comp == 0), c->t)) << "round " << round << " complement " << comp;
      sj_tensor_destroy(c);
    }
  }
  o.mask_complement = 1;
  o.schedule = SJ_SCHEDULE_INNER;
  sj_tensor* c = nullptr;
  EXPECT_EQ(sj_spgemm_masked(ctx, m, a, b, &o, &c), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sj_last_error_message()).find("complemented mask"), std::string::npos) << sj_last_error_message();
  EXPECT_EQ(c, nullptr);
  o.schedule = SJ_SCHEDULE_AUTO;
  EXPECT_EQ(sj_spgemm(ctx, a, b, &o, &c), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sj_last_error_message()).find("mask_complement applies to spgemm-masked only"),
            std::string::npos) << sj_last_error_message();
  sj_plan* plan = nullptr;
  const sj_tensor* ops[3] = {m, a, b};
  ASSERT_EQ(sj_plan_create(ctx, SJ_OP_SPGEMM_MASKED, ops, 3, &o, &plan), SJ_OK) << sj_last_error_message();
  const char* text = nullptr;
  ASSERT_EQ(sj_plan_explain(plan, &text), SJ_OK);
  EXPECT_NE(std::string(text).find("\"mask_complement\":true"), std::string::npos) << text;
  sj_plan_destroy(plan);
  for (sj_tensor* t : {a, b, m}) sj_tensor_destroy(t);
  sj_context_destroy(ctx);
}

// Products too wide for a dense workspace of B's columns (2^22 of them) take the hash
// accumulator, each product's column searched in the mask row.
TEST(SpgemmSchedules, MaskComplementWideProduct) {
  Rng rng(78);
  constexpr int64_t kCols = int64_t(1) << 22;
  auto a = sj::test::random_uniform<int64_t, double>(rng, 40, 30, 0.2);
  sj::CsResult<int64_t, double> b, m;
  b.outer = 30, b.inner = kCols, m.outer = 40, m.inner = kCols;
  b.pos.push_back(0);
  for (int64_t k = 0; k < 30; ++k) {  // each row of B: a few of 64 shared columns, spread over the width
    for (int64_t s = 0; s < 64; ++s)
      if (rng.uniform_int(0, 5) == 0) {
        b.crd.push_back(s * (kCols / 64) + 7);
        b.val.push_back(static_cast<double>(rng.uniform_int(1, 9)));
      }
    b.pos.push_back(static_cast<int64_t>(b.crd.size()));
  }
  m.pos.push_back(0);
  for (int64_t i = 0; i < 40; ++i) {  // the mask blocks some of those columns and some others
    for (int64_t s = 0; s < 64; ++s)
      if (rng.uniform_int(0, 2) == 0) {
        m.crd.push_back(s * (kCols / 64) + (s % 2 ? 7 : 8));
        m.val.push_back(1);
      }
    m.pos.push_back(static_cast<int64_t>(m.crd.size()));
  }
  const Tensor A = tensor(a), B = tensor(b), M = tensor(m);
  check_complement(M, A, B, options(), "wide");
  check_complement(M, A, B, options(SJ_SEMIRING_MIN_PLUS), "wide min-plus");
}

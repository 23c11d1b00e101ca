// SpGEMM plans that keep their product's structure (kernels/spgemm_structure.hpp): executions
// on operands of the same structure compute only the values, and must give exactly what the
// reference schedule gives on those operands; any other operand structure is recomputed.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "tests/random_matrices.hpp"
#include "tests/schedule_test_util.hpp"

namespace {

using sj::test::Ctx;
using sj::test::csr_handle;
using sj::test::H;
using sj::test::msg;
using sj::test::Rng;
using sj::test::same_bits;

sj_op_options options(sj_semiring s = SJ_SEMIRING_PLUS_TIMES, sj_schedule sc = SJ_SCHEDULE_AUTO, int threads = 0) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.semiring = s;
  o.schedule = sc;
  o.threads = threads;
  return o;
}

// The reference schedule's result on these operands, made by a fresh plan.
void reference(sj_context* c, const sj_tensor* A, const sj_tensor* B, sj_semiring s, H& out) {
  sj_op_options o = options(s, SJ_SCHEDULE_REFERENCE);
  ASSERT_EQ(sj_spgemm(c, A, B, &o, &out.t), SJ_OK) << msg();
}

// A CSR f64 handle over these arrays (borrowed, or copied with SJ_TENSOR_COPY).
sj_tensor* csr_f64(sj_context* c, int64_t rows, int64_t cols, const std::vector<int64_t>& pos,
                   const std::vector<int32_t>& crd, const std::vector<double>& val, uint32_t flags = 0) {
  sj_tensor* t = nullptr;
  EXPECT_EQ(sj_tensor_create_csr(c, rows, cols, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), flags,
                                 &t),
            SJ_OK)
      << msg();
  return t;
}

std::string explain(sj_plan* p) {
  const char* text = nullptr;
  EXPECT_EQ(sj_plan_explain_text(p, &text), SJ_OK);
  return text ? text : "";
}

// How many executions of the plan computed only the values (from its explain text).
int64_t values_only_count(sj_plan* p) {
  const std::string t = explain(p);
  const std::string tail = " execution(s) on operands of the same structure computed only the values";
  const size_t at = t.find(tail);
  if (at == std::string::npos) return 0;
  size_t b = at;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(t[b - 1]))) --b;
  return std::stoll(t.substr(b, at - b));
}

// A plan executed `n` times on (A, B) gives the reference every time.
::testing::AssertionResult repeated_matches(sj_context* c, sj_plan* p, const sj_tensor* A, const sj_tensor* B,
                                            sj_semiring s, int n) {
  H want;
  reference(c, A, B, s, want);
  const sj_tensor* ops[2] = {A, B};
  for (int e = 0; e < n; ++e) {
    H got;
    if (sj_plan_execute(p, ops, 2, &got.t) != SJ_OK) return ::testing::AssertionFailure() << msg();
    if (auto r = same_bits(want.t->t, got.t->t); !r) return r << " (execution " << e << ")";
  }
  return ::testing::AssertionSuccess();
}

template <class I, class V>
void every_semiring_round(Rng& rng, int round, const std::vector<sj_semiring>& semirings) {
  Ctx ctx;
  const int64_t m = rng.uniform_int(0, 40), k = rng.uniform_int(1, 40), n = rng.uniform_int(1, 40);
  const auto values = std::is_same_v<V, uint8_t> ? sj::test::Values::Ones : sj::test::Values::Real;
  const auto a = sj::test::random_matrix<I, V>(rng, m, k, values);
  const auto b = sj::test::random_matrix<I, V>(rng, k, n, values);
  H A, B;
  A.t = csr_handle(ctx.c, a);
  B.t = csr_handle(ctx.c, b);
  for (sj_semiring s : semirings) {
    for (sj_schedule sc : {SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH}) {
      SCOPED_TRACE(::testing::Message() << "round " << round << " " << m << "x" << k << "x" << n << " semiring " << s
                                        << " schedule " << sc);
      const sj_tensor* ops[2] = {A.t, B.t};
      sj_op_options o = options(s, sc);
      sj_plan* p = nullptr;
      ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, &o, &p), SJ_OK) << msg();
      EXPECT_TRUE(repeated_matches(ctx.c, p, A.t, B.t, s, 4));
      EXPECT_EQ(values_only_count(p), 2);  // executions 3 and 4
      sj_plan_destroy(p);
    }
  }
}

TEST(SpgemmStructure, ValuesOnlyExecutionsMatchTheReference) {
  Rng rng(9101);
  const std::vector<sj_semiring> all = {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES,
                                        SJ_SEMIRING_OR_AND, SJ_SEMIRING_PLUS_PAIR};
  for (int round = 0; round < 12; ++round) {
    every_semiring_round<int32_t, double>(rng, round, all);
    every_semiring_round<int64_t, float>(rng, round, all);
    every_semiring_round<int32_t, uint8_t>(rng, round, {SJ_SEMIRING_OR_AND});
  }
}

// Rows of A with one entry (B's row copied), with two, and long rows; an empty A row, an
// empty B row; -0.0, NaN and infinities among the values. Sums (PlusTimes from -0.0) and
// floating-point min (which marks first products instead) give the reference's bits.
TEST(SpgemmStructure, SignedZerosNaNsAndShortRows) {
  Ctx ctx;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // A: 5x4. Row 0: one entry; row 1: two; row 2: four; row 3: empty; row 4: reads B's empty row 2.
  const std::vector<int64_t> ap = {0, 1, 3, 7, 7, 8};
  const std::vector<int32_t> ac = {1, 0, 1, 0, 1, 2, 3, 2};
  const std::vector<double> av = {-0.0, 1.0, 2.0, nan, -0.0, 2.0, inf, 1.0};
  // B: 4x6. C's row 1 has columns whose only products are -0.0 (one, and two), which sum to -0.0.
  const std::vector<int64_t> bp = {0, 3, 6, 6, 10};
  const std::vector<int32_t> bc = {0, 2, 5, 1, 2, 4, 0, 1, 2, 5};
  // No sum meets two NaNs: which NaN's bits a + b returns then depends on the operand order
  // the compiler picked (addition commutes), in every kernel alike.
  const std::vector<double> bv = {0.0, -0.0, 3.0, -2.0, -0.0, -0.0, 2.0, -0.0, -inf, 1.0};
  H A, B;
  A.t = csr_f64(ctx.c, 5, 4, ap, ac, av);
  B.t = csr_f64(ctx.c, 4, 6, bp, bc, bv);
  for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES}) {
    SCOPED_TRACE(::testing::Message() << "semiring " << s);
    const sj_tensor* ops[2] = {A.t, B.t};
    sj_op_options o = options(s, SJ_SCHEDULE_GUSTAVSON_DENSE);
    sj_plan* p = nullptr;
    ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, &o, &p), SJ_OK) << msg();
    EXPECT_TRUE(repeated_matches(ctx.c, p, A.t, B.t, s, 4));
    EXPECT_EQ(values_only_count(p), 2);
    sj_plan_destroy(p);
  }
}

// New handles with the same structure and new values (the use the kept structure is for),
// over borrowed and over copied arrays; then handles of another structure with the same
// shape and entry count, which must be recomputed.
TEST(SpgemmStructure, NewValuesSameStructureAndAnotherStructure) {
  Ctx ctx;
  Rng rng(9102);
  auto a = sj::test::random_uniform<int32_t, double>(rng, 120, 90, 0.06);
  auto b = sj::test::random_uniform<int32_t, double>(rng, 90, 110, 0.06);
  H A, B;
  A.t = csr_handle(ctx.c, a);
  B.t = csr_handle(ctx.c, b);
  const sj_tensor* ops[2] = {A.t, B.t};
  sj_op_options o = options(SJ_SEMIRING_PLUS_TIMES, SJ_SCHEDULE_GUSTAVSON_DENSE);
  sj_plan* p = nullptr;
  ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, &o, &p), SJ_OK) << msg();
  EXPECT_TRUE(repeated_matches(ctx.c, p, A.t, B.t, SJ_SEMIRING_PLUS_TIMES, 2));
  EXPECT_EQ(values_only_count(p), 0);
  int64_t served = 0;
  for (uint32_t flags : {0u, static_cast<uint32_t>(SJ_TENSOR_COPY)}) {
    SCOPED_TRACE(flags ? "copied arrays" : "borrowed arrays");
    for (auto& v : a.val) v = 3.0 * v - 1.0;
    for (auto& v : b.val) v = v * v + 0.5;
    H A2, B2;
    A2.t = csr_f64(ctx.c, a.outer, a.inner, a.pos, a.crd, a.val, flags);
    B2.t = csr_f64(ctx.c, b.outer, b.inner, b.pos, b.crd, b.val, flags);
    EXPECT_TRUE(repeated_matches(ctx.c, p, A2.t, B2.t, SJ_SEMIRING_PLUS_TIMES, 2));
    served += 2;
    EXPECT_EQ(values_only_count(p), served);
  }
  // Another structure, same shape and entry count: one column of one row of A moved.
  auto a3 = a;
  int64_t row = 0;
  while (a3.pos[row + 1] - a3.pos[row] == 0 || a3.pos[row + 1] - a3.pos[row] == a3.inner) ++row;
  {
    // Move the row's last column to the first free column after it, or before its first.
    const int64_t last = a3.pos[row + 1] - 1;
    std::vector<int32_t> cols(a3.crd.begin() + a3.pos[row], a3.crd.begin() + a3.pos[row + 1]);
    int32_t free_col = 0;
    while (std::find(cols.begin(), cols.end(), free_col) != cols.end()) ++free_col;
    a3.crd[last] = free_col;
    std::sort(a3.crd.begin() + a3.pos[row], a3.crd.begin() + a3.pos[row + 1]);
  }
  H A3;
  A3.t = csr_handle(ctx.c, a3);
  H B2;
  B2.t = csr_handle(ctx.c, b);
  EXPECT_TRUE(repeated_matches(ctx.c, p, A3.t, B2.t, SJ_SEMIRING_PLUS_TIMES, 1));
  EXPECT_EQ(values_only_count(p), served);  // recomputed, and kept in turn
  EXPECT_TRUE(repeated_matches(ctx.c, p, A3.t, B2.t, SJ_SEMIRING_PLUS_TIMES, 2));
  EXPECT_EQ(values_only_count(p), served + 2);
  // Back on the first structure: recomputed (the kept one is now A3's).
  EXPECT_TRUE(repeated_matches(ctx.c, p, A.t, B.t, SJ_SEMIRING_PLUS_TIMES, 1));
  EXPECT_EQ(values_only_count(p), served + 2);
  sj_plan_destroy(p);
}

// A caller's arrays, borrowed by a tensor that is then destroyed and rewritten with another
// structure of the same size for a new tensor at the same addresses: the kept structure's
// copy tells them apart.
TEST(SpgemmStructure, BorrowedArraysRewrittenAfterTheirTensorIsDestroyed) {
  Ctx ctx;
  Rng rng(9103);
  auto a = sj::test::random_uniform<int32_t, double>(rng, 60, 60, 0.1);
  auto a2 = a;
  for (int64_t i = 0; i < a2.outer; ++i)  // each row's columns shifted by one (same counts)
    for (int64_t q = a2.pos[i]; q < a2.pos[i + 1]; ++q) a2.crd[q] = static_cast<int32_t>((a2.crd[q] + 1) % 60);
  for (int64_t i = 0; i < a2.outer; ++i) std::sort(a2.crd.begin() + a2.pos[i], a2.crd.begin() + a2.pos[i + 1]);
  std::vector<int64_t> pos = a.pos;
  std::vector<int32_t> crd = a.crd;
  std::vector<double> val = a.val;
  sj_plan* p = nullptr;
  {
    H A;
    A.t = csr_f64(ctx.c, 60, 60, pos, crd, val);
    const sj_tensor* ops[2] = {A.t, A.t};
    sj_op_options o = options();
    ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, &o, &p), SJ_OK) << msg();
    EXPECT_TRUE(repeated_matches(ctx.c, p, A.t, A.t, SJ_SEMIRING_PLUS_TIMES, 3));
    EXPECT_EQ(values_only_count(p), 1);
  }
  std::copy(a2.crd.begin(), a2.crd.end(), crd.begin());
  H A2;
  A2.t = csr_f64(ctx.c, 60, 60, pos, crd, val);
  EXPECT_TRUE(repeated_matches(ctx.c, p, A2.t, A2.t, SJ_SEMIRING_PLUS_TIMES, 1));
  EXPECT_EQ(values_only_count(p), 1);
  sj_plan_destroy(p);
}

// Results share the kept arrays (read-only) and stay valid after the plan and the operands
// are gone; recompute_structure keeps nothing; dense output keeps nothing.
TEST(SpgemmStructure, SharedArraysOutliveThePlanAndTheOptionsThatKeepNothing) {
  Ctx ctx;
  Rng rng(9104);
  const auto a = sj::test::random_uniform<int64_t, float>(rng, 80, 70, 0.08);
  const auto b = sj::test::random_uniform<int64_t, float>(rng, 70, 50, 0.08);
  H want, r3, r4;
  {
    H A, B;
    A.t = csr_handle(ctx.c, a);
    B.t = csr_handle(ctx.c, b);
    reference(ctx.c, A.t, B.t, SJ_SEMIRING_PLUS_TIMES, want);
    const sj_tensor* ops[2] = {A.t, B.t};
    sj_op_options o = options();
    sj_plan* p = nullptr;
    ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, &o, &p), SJ_OK) << msg();
    for (int e = 0; e < 2; ++e) {
      H r;
      ASSERT_EQ(sj_plan_execute(p, ops, 2, &r.t), SJ_OK) << msg();
    }
    ASSERT_EQ(sj_plan_execute(p, ops, 2, &r3.t), SJ_OK) << msg();
    ASSERT_EQ(sj_plan_execute(p, ops, 2, &r4.t), SJ_OK) << msg();
    EXPECT_NE(explain(p).find("structure kept from execution 2"), std::string::npos) << explain(p);
    sj_plan_destroy(p);

    for (int dense = 0; dense < 2; ++dense) {
      sj_op_options q = options();
      q.recompute_structure = dense ? 0 : 1;
      q.dense_output = dense;
      sj_plan* p2 = nullptr;
      ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, &q, &p2), SJ_OK) << msg();
      for (int e = 0; e < 4; ++e) {
        H r;
        ASSERT_EQ(sj_plan_execute(p2, ops, 2, &r.t), SJ_OK) << msg();
      }
      EXPECT_EQ(explain(p2).find("structure kept"), std::string::npos) << explain(p2);
      sj_plan_destroy(p2);
    }
  }
  // The plan and the operands are gone; both results still read (ASan checks) and hold the
  // reference's bits, over the same position and coordinate arrays.
  EXPECT_TRUE(same_bits(want.t->t, r3.t->t));
  EXPECT_TRUE(same_bits(want.t->t, r4.t->t));
  EXPECT_EQ(r3.t->t.levels[1].crd.data(), r4.t->t.levels[1].crd.data());
  EXPECT_EQ(r3.t->t.levels[1].pos.data(), r4.t->t.levels[1].pos.data());
  EXPECT_NE(r3.t->t.values.data(), r4.t->t.values.data());
}

// Values-only executions split rows among threads: bit-identical for 1, 2, 3 and 7 threads,
// also on a product with long, skewed rows; a plan shared by threads executing at once.
TEST(SpgemmStructure, ThreadCountsAndConcurrentExecutions) {
  Ctx ctx;
  Rng rng(9105);
  const auto a = sj::test::random_power_law<int32_t, double>(rng, 3000, 3000, 12.0, 1.3);
  H A;
  A.t = csr_handle(ctx.c, a);
  H want;
  reference(ctx.c, A.t, A.t, SJ_SEMIRING_PLUS_TIMES, want);
  const sj_tensor* ops[2] = {A.t, A.t};
  for (int threads : {1, 2, 3, 7}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    sj_op_options o = options(SJ_SEMIRING_PLUS_TIMES, SJ_SCHEDULE_AUTO, threads);
    sj_plan* p = nullptr;
    ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, &o, &p), SJ_OK) << msg();
    for (int e = 0; e < 4; ++e) {
      H got;
      ASSERT_EQ(sj_plan_execute(p, ops, 2, &got.t), SJ_OK) << msg();
      EXPECT_TRUE(same_bits(want.t->t, got.t->t)) << "execution " << e;
    }
    EXPECT_EQ(values_only_count(p), 2);
    sj_plan_destroy(p);
  }
  sj_op_options o = options();
  sj_plan* p = nullptr;
  ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, &o, &p), SJ_OK) << msg();
  std::vector<std::thread> pool;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      for (int e = 0; e < 6; ++e) {
        H got;
        if (sj_plan_execute(p, ops, 2, &got.t) != SJ_OK || !same_bits(want.t->t, got.t->t)) ++bad;
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(values_only_count(p), 0);
  sj_plan_destroy(p);
}

// The drop-in call keeps its plan with the operands (src/plan_memo.hpp): repeated calls on
// the same handles come to compute only the values, with the same results.
TEST(SpgemmStructure, RepeatedDropInCalls) {
  Ctx ctx;
  Rng rng(9106);
  const auto a = sj::test::random_uniform<int32_t, double>(rng, 200, 200, 0.04);
  H A;
  A.t = csr_handle(ctx.c, a);
  H want;
  reference(ctx.c, A.t, A.t, SJ_SEMIRING_PLUS_TIMES, want);
  for (int e = 0; e < 6; ++e) {
    H got;
    ASSERT_EQ(sj_spgemm(ctx.c, A.t, A.t, nullptr, &got.t), SJ_OK) << msg();
    EXPECT_TRUE(same_bits(want.t->t, got.t->t)) << "call " << e;
  }
}

}  // namespace

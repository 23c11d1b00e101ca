// Element-wise schedules (inner merge, transpose-then-merge, search) forced through the C
// API, bit-identical to the reference schedule on random inputs (all semirings, f32/f64/bool,
// i32/i64, A o B, A + B, A o B^T, A + B^T) and on every real matrix in ../shared/data/matrices
// (B o A^T with B = A); the transposed operand is kept on its handle and reused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "capi/handles.hpp"
#include "sparsejit/sparsejit.h"
#include "src/derived_forms.hpp"
#include "tests/random_matrices.hpp"
#include "tests/test_util.hpp"

namespace {

using sj::test::Rng;

struct Ctx {
  sj_context* c = nullptr;
  Ctx() { EXPECT_EQ(sj_context_create(nullptr, &c), SJ_OK); }
  ~Ctx() { EXPECT_EQ(sj_context_destroy(c), SJ_OK) << sj_last_error_message(); }
};
struct H {
  sj_tensor* t = nullptr;
  H() = default;
  H(const H&) = delete;
  ~H() { sj_tensor_destroy(t); }
};

std::string msg() { return sj_last_error_message(); }

template <class I> constexpr sj_index_type itype() { return sizeof(I) == 4 ? SJ_INDEX_INT32 : SJ_INDEX_INT64; }
template <class V> constexpr sj_value_type vtype() {
  return std::is_same_v<V, float> ? SJ_VALUE_F32 : std::is_same_v<V, double> ? SJ_VALUE_F64 : SJ_VALUE_BOOL;
}

// Bitwise equality of two results (structure, coordinates, value bits).
::testing::AssertionResult same_bits(const sj::Tensor& a, const sj::Tensor& b) {
  if (a.order != b.order || a.dims != b.dims || a.index_type != b.index_type || a.value_type != b.value_type)
    return ::testing::AssertionFailure() << "shape/type: " << a.describe() << " vs " << b.describe();
  const bool da = sj::is_dense(a), db = sj::is_dense(b);
  if (da != db) return ::testing::AssertionFailure() << "dense vs sparse";
  const size_t vs = sj::value_size(a.value_type);
  if (da) {
    int64_t n = 1;
    for (int k = 0; k < a.order; ++k) n *= a.dims[k];
    if (n && std::memcmp(a.values.data(), b.values.data(), vs * n) != 0)
      return ::testing::AssertionFailure() << "dense values differ";
    return ::testing::AssertionSuccess();
  }
  if (a.nnz() != b.nnz()) return ::testing::AssertionFailure() << "nnz " << a.nnz() << " vs " << b.nnz();
  const int last = a.order - 1;
  if (a.order == 2) {
    const int64_t outer = a.level_dim(0) + 1;
    if (std::memcmp(a.levels[1].pos.data(), b.levels[1].pos.data(), 8 * outer) != 0)
      return ::testing::AssertionFailure() << "positions differ";
  }
  const size_t is = sj::index_size(a.index_type);
  if (a.nnz() && std::memcmp(a.levels[last].crd.data(), b.levels[last].crd.data(), is * a.nnz()) != 0)
    return ::testing::AssertionFailure() << "coordinates differ";
  if (a.nnz() && std::memcmp(a.values.data(), b.values.data(), vs * a.nnz()) != 0)
    return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

template <class I, class V> sj_tensor* csr_handle(sj_context* c, const sj::CsResult<I, V>& m) {
  sj_tensor* h = nullptr;
  EXPECT_EQ(sj_tensor_create_csr(c, m.outer, m.inner, itype<I>(), vtype<V>(), m.pos.data(), m.crd.data(), m.val.data(),
                                 SJ_TENSOR_COPY, &h),
            SJ_OK)
      << msg();
  return h;
}
template <class I, class V> sj_tensor* vec_handle(sj_context* c, const sj::SpVecResult<I, V>& x) {
  sj_tensor* h = nullptr;
  EXPECT_EQ(sj_tensor_create_sparse_vector(c, x.n, x.idx.size(), itype<I>(), vtype<V>(), x.idx.data(), x.val.data(),
                                           SJ_TENSOR_COPY, &h),
            SJ_OK)
      << msg();
  return h;
}


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

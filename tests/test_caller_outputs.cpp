// Caller-owned outputs (sj_plan_execute_sizes + sj_pending_fill, or per level with
// sj_pending_get_levels + sj_pending_fill_levels): for every operation with a sparse (or dense)
// result, index-notation results of order 0 to 3 included, the arrays filled into the caller's
// buffers equal the result of sj_plan_execute on the same plan; bad buffers are refused before
// anything is written.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "tests/random_matrices.hpp"
#include "tests/schedule_test_util.hpp"
#include "tests/test_util.hpp"

namespace {

using sj::test::Rng;

using sj::test::Ctx;
using T = sj::test::H;  // a tensor handle that is destroyed with the guard
struct P {
  sj_plan* p = nullptr;
  ~P() { sj_plan_destroy(p); }
};
struct Pending {
  sj_pending* p = nullptr;
  ~Pending() { sj_pending_destroy(p); }
};

// A random CSR matrix (sorted unique columns) with the given index type, copied into a handle.
void random_csr(sj_context* ctx, Rng& rng, int64_t rows, int64_t cols, double density, sj_index_type it,
                sj_tensor** out) {
  std::vector<int64_t> pos{0};
  std::vector<int64_t> crd;
  std::vector<double> val;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      if (rng.bernoulli(density)) {
        crd.push_back(j);
        val.push_back(static_cast<double>(rng.uniform_int(-3, 3)) + 0.5);
      }
    pos.push_back(static_cast<int64_t>(crd.size()));
  }
  std::vector<int32_t> crd32(crd.begin(), crd.end());
  const void* c = it == SJ_INDEX_INT32 ? static_cast<const void*>(crd32.data()) : crd.data();
  ASSERT_EQ(sj_tensor_create_csr(ctx, rows, cols, it, SJ_VALUE_F64, pos.data(), c, val.data(), SJ_TENSOR_COPY, out),
            SJ_OK)
      << sj_last_error_message();
}

void random_vector(sj_context* ctx, Rng& rng, int64_t n, double density, sj_index_type it, sj_tensor** out) {
  std::vector<int64_t> idx;
  std::vector<double> val;
  for (int64_t i = 0; i < n; ++i)
    if (rng.bernoulli(density)) {
      idx.push_back(i);
      val.push_back(static_cast<double>(rng.uniform_int(1, 5)));
    }
  std::vector<int32_t> idx32(idx.begin(), idx.end());
  const void* c = it == SJ_INDEX_INT32 ? static_cast<const void*>(idx32.data()) : idx.data();
  ASSERT_EQ(sj_tensor_create_sparse_vector(ctx, n, static_cast<int64_t>(idx.size()), it, SJ_VALUE_F64, c,
                                           val.data(), SJ_TENSOR_COPY, out),
            SJ_OK)
      << sj_last_error_message();
}

// Caller buffers sized from the layout, with a sentinel byte pattern in the spare room.
struct Buffers {
  std::vector<int64_t> pos;
  std::vector<unsigned char> crd, values;
  sj_output_buffers b{};
  Buffers(const sj_output_sizes& s, int64_t spare = 0) {
    const int isz = s.index_type == SJ_INDEX_INT32 ? 4 : 8;
    const int vsz = s.value_type == SJ_VALUE_F32 ? 4 : s.value_type == SJ_VALUE_F64 ? 8 : 1;
    pos.assign(s.pos_len + spare, -7);
    crd.assign((s.crd_len + spare) * isz, 0xAB);
    values.assign((s.values_len + spare) * vsz, 0xCD);
    b.struct_size = sizeof b;
    b.pos = pos.empty() ? nullptr : pos.data();
    b.pos_capacity = static_cast<int64_t>(pos.size());
    b.crd = crd.empty() ? nullptr : crd.data();
    b.crd_capacity = s.crd_len + spare;
    b.values = values.empty() ? nullptr : values.data();
    b.values_capacity = s.values_len + spare;
  }
};

// The layout and arrays of a library-owned result, read through the C API.
void expect_same_as_tensor(const sj_tensor* t, const sj_output_sizes& s, const Buffers& buf) {
  sj_tensor_info info;
  ASSERT_EQ(sj_tensor_get_info(t, &info), SJ_OK);
  ASSERT_EQ(s.order, info.order);
  EXPECT_EQ(s.dims[0], info.dims[0]);
  if (info.order == 2) {
    EXPECT_EQ(s.dims[1], info.dims[1]);
  }
  EXPECT_EQ(s.value_type, info.value_type);
  EXPECT_EQ(s.values_len, info.nnz);
  ASSERT_EQ(static_cast<int>(s.format), static_cast<int>(info.format));
  if (s.format != SJ_FORMAT_DENSE) {
    EXPECT_EQ(s.index_type, info.index_type);
  }
  const int isz = s.index_type == SJ_INDEX_INT32 ? 4 : 8;
  const int vsz = s.value_type == SJ_VALUE_F32 ? 4 : s.value_type == SJ_VALUE_F64 ? 8 : 1;
  const void* values = nullptr;
  int64_t n = 0;
  ASSERT_EQ(sj_tensor_get_values(t, &values, &n), SJ_OK);
  if (s.values_len) {
    EXPECT_EQ(std::memcmp(values, buf.values.data(), s.values_len * vsz), 0);
  }
  if (s.format == SJ_FORMAT_DENSE) return;
  const int64_t* pos = nullptr;
  const void* crd = nullptr;
  int64_t pos_len = 0, crd_len = 0;
  ASSERT_EQ(sj_tensor_get_level(t, info.order - 1, &pos, &pos_len, &crd, &crd_len), SJ_OK);
  EXPECT_EQ(s.crd_len, crd_len);
  if (s.crd_len) {
    EXPECT_EQ(std::memcmp(crd, buf.crd.data(), s.crd_len * isz), 0);
  }
  if (s.format == SJ_FORMAT_CSR || s.format == SJ_FORMAT_CSC) {
    ASSERT_EQ(s.pos_len, pos_len);
    EXPECT_EQ(std::memcmp(pos, buf.pos.data(), s.pos_len * 8), 0);
  } else {
    EXPECT_EQ(s.pos_len, 0);
  }
}

// Runs the plan both ways and compares; spare room past the lengths must stay untouched.
void check_two_pass_equals_execute(sj_plan* plan, const std::vector<sj_tensor*>& ops) {
  T normal;
  ASSERT_EQ(sj_plan_execute(plan, ops.data(), static_cast<int>(ops.size()), &normal.t), SJ_OK)
      << sj_last_error_message();
  sj_output_sizes s{};
  s.struct_size = sizeof s;
  Pending pending;
  ASSERT_EQ(sj_plan_execute_sizes(plan, ops.data(), static_cast<int>(ops.size()), &s, &pending.p), SJ_OK)
      << sj_last_error_message();
  Buffers buf(s, /*spare=*/2);
  ASSERT_EQ(sj_pending_fill(pending.p, &buf.b), SJ_OK) << sj_last_error_message();
  expect_same_as_tensor(normal.t, s, buf);
  EXPECT_EQ(buf.pos[buf.pos.size() - 1], -7) << "nothing written past pos_len";
  EXPECT_EQ(buf.crd.back(), 0xAB) << "nothing written past crd_len";
  EXPECT_EQ(buf.values.back(), 0xCD) << "nothing written past values_len";
  // And in one pass, straight into the caller's buffers.
  EXPECT_TRUE(sj::test::into_matches(plan, ops.data(), static_cast<int>(ops.size()), normal.t->t));
}

void plan_for(sj_context* ctx, sj_op op, const std::vector<sj_tensor*>& ops, const sj_op_options* o, sj_plan** p) {
  ASSERT_EQ(sj_plan_create(ctx, op, ops.data(), static_cast<int>(ops.size()), o, p), SJ_OK)
      << sj_last_error_message();
}

class CallerOutputs : public ::testing::TestWithParam<sj_index_type> {};

TEST_P(CallerOutputs, EveryOperationMatchesPlanExecute) {
  const sj_index_type it = GetParam();
  Ctx ctx;
  Rng rng(it == SJ_INDEX_INT32 ? 11 : 12);
  T A, B, M, x, C;
  random_csr(ctx.c, rng, 40, 30, 0.15, it, &A.t);
  random_csr(ctx.c, rng, 30, 50, 0.12, it, &B.t);
  random_csr(ctx.c, rng, 40, 50, 0.3, it, &M.t);
  random_csr(ctx.c, rng, 40, 30, 0.2, it, &C.t);
  random_vector(ctx.c, rng, 30, 0.3, it, &x.t);
  sj_op_options dense;
  sj_op_options_init(&dense);
  dense.dense_output = 1;
  struct Case {
    const char* name;
    sj_op op;
    std::vector<sj_tensor*> ops;
    const sj_op_options* options;
  } cases[] = {
      {"spgemm", SJ_OP_SPGEMM, {A.t, B.t}, nullptr},
      {"spgemm dense", SJ_OP_SPGEMM, {A.t, B.t}, &dense},
      {"masked spgemm", SJ_OP_SPGEMM_MASKED, {M.t, A.t, B.t}, nullptr},
      {"spmspv", SJ_OP_SPMSPV, {A.t, x.t}, nullptr},
      {"spmspv dense", SJ_OP_SPMSPV, {A.t, x.t}, &dense},
      {"ewise mult", SJ_OP_EWISE_MULT, {A.t, C.t}, nullptr},
      {"ewise add", SJ_OP_EWISE_ADD, {A.t, C.t}, nullptr},
      {"transpose", SJ_OP_TRANSPOSE, {A.t}, nullptr},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    P plan;
    plan_for(ctx.c, c.op, c.ops, c.options, &plan.p);
    check_two_pass_equals_execute(plan.p, c.ops);
  }
}

TEST_P(CallerOutputs, OutputIndexTypeAndOtherFormats) {
  Ctx ctx;
  Rng rng(5);
  T A, Acsc, Acoo;
  random_csr(ctx.c, rng, 25, 35, 0.2, GetParam(), &A.t);
  ASSERT_EQ(sj_tensor_convert(ctx.c, A.t, SJ_FORMAT_CSC, nullptr, GetParam(), &Acsc.t), SJ_OK);
  ASSERT_EQ(sj_tensor_convert(ctx.c, A.t, SJ_FORMAT_COO, nullptr, GetParam(), &Acoo.t), SJ_OK);
  // The caller picks the coordinate type of the result.
  sj_op_options o;
  sj_op_options_init(&o);
  o.output_index_type = GetParam() == SJ_INDEX_INT32 ? SJ_INDEX_INT64 : SJ_INDEX_INT32;
  o.transpose_b = 1;  // A * A^T
  P plan;
  plan_for(ctx.c, SJ_OP_SPGEMM, {A.t, A.t}, &o, &plan.p);
  sj_output_sizes s{};
  s.struct_size = sizeof s;
  Pending pending;
  std::vector<sj_tensor*> ops{A.t, A.t};
  ASSERT_EQ(sj_plan_execute_sizes(plan.p, ops.data(), 2, &s, &pending.p), SJ_OK) << sj_last_error_message();
  EXPECT_EQ(s.index_type, o.output_index_type);
  check_two_pass_equals_execute(plan.p, ops);
  // A transposed CSC stays CSC; a transposed COO is handed out as CSR.
  {
    P tp;
    std::vector<sj_tensor*> t_ops{Acsc.t};
    plan_for(ctx.c, SJ_OP_TRANSPOSE, t_ops, nullptr, &tp.p);
    check_two_pass_equals_execute(tp.p, t_ops);
  }
  {
    P tp;
    std::vector<sj_tensor*> t_ops{Acoo.t};
    plan_for(ctx.c, SJ_OP_TRANSPOSE, t_ops, nullptr, &tp.p);
    sj_output_sizes ts{};
    ts.struct_size = sizeof ts;
    Pending tpend;
    ASSERT_EQ(sj_plan_execute_sizes(tp.p, t_ops.data(), 1, &ts, &tpend.p), SJ_OK) << sj_last_error_message();
    EXPECT_EQ(ts.format, SJ_FORMAT_CSR);
    EXPECT_EQ(ts.dims[0], 35);
    EXPECT_EQ(ts.dims[1], 25);
    Buffers buf(ts);
    ASSERT_EQ(sj_pending_fill(tpend.p, &buf.b), SJ_OK) << sj_last_error_message();
    // Against the CSR transpose of the CSR operand.
    T ref;
    ASSERT_EQ(sj_transpose(ctx.c, A.t, &ref.t), SJ_OK);
    expect_same_as_tensor(ref.t, ts, buf);
  }
}

INSTANTIATE_TEST_SUITE_P(IndexTypes, CallerOutputs, ::testing::Values(SJ_INDEX_INT32, SJ_INDEX_INT64),
                         [](const auto& info) { return info.param == SJ_INDEX_INT32 ? "Int32" : "Int64"; });

// Bad buffers: refused before any byte is written, and the pending result stays fillable.
TEST(CallerOutputsErrors, BadCapacitiesAndNullBuffersWriteNothing) {
  Ctx ctx;
  Rng rng(3);
  T A;
  random_csr(ctx.c, rng, 20, 20, 0.2, SJ_INDEX_INT32, &A.t);
  std::vector<sj_tensor*> ops{A.t, A.t};
  P plan;
  plan_for(ctx.c, SJ_OP_SPGEMM, ops, nullptr, &plan.p);
  sj_output_sizes s{};
  s.struct_size = sizeof s;
  Pending pending;
  ASSERT_EQ(sj_plan_execute_sizes(plan.p, ops.data(), 2, &s, &pending.p), SJ_OK);
  ASSERT_GT(s.crd_len, 0);
  EXPECT_EQ(s.pos_len, 21);
  EXPECT_EQ(s.format, SJ_FORMAT_CSR);

  auto untouched = [](const Buffers& b) {
    for (int64_t v : b.pos)
      if (v != -7) return false;
    for (unsigned char v : b.crd)
      if (v != 0xAB) return false;
    for (unsigned char v : b.values)
      if (v != 0xCD) return false;
    return true;
  };
  {  // each array one element short
    for (int which = 0; which < 3; ++which) {
      Buffers buf(s);
      int64_t* cap = which == 0 ? &buf.b.pos_capacity : which == 1 ? &buf.b.crd_capacity : &buf.b.values_capacity;
      *cap -= 1;
      EXPECT_EQ(sj_pending_fill(pending.p, &buf.b), SJ_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(sj_last_error_message()).find("_capacity is"), std::string::npos) << sj_last_error_message();
      EXPECT_TRUE(untouched(buf)) << "array " << which;
    }
  }
  {  // a NULL array where the result has entries
    Buffers buf(s);
    buf.b.values = nullptr;
    EXPECT_EQ(sj_pending_fill(pending.p, &buf.b), SJ_ERR_NULL_POINTER);
    EXPECT_NE(std::string(sj_last_error_message()).find("buffers.values is NULL"), std::string::npos);
    EXPECT_TRUE(untouched(buf));
  }
  {  // a negative capacity
    Buffers buf(s);
    buf.b.crd_capacity = -1;
    EXPECT_EQ(sj_pending_fill(pending.p, &buf.b), SJ_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(untouched(buf));
  }
  {  // a wrong struct_size
    Buffers buf(s);
    buf.b.struct_size = 4;
    EXPECT_EQ(sj_pending_fill(pending.p, &buf.b), SJ_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(untouched(buf));
  }
  EXPECT_EQ(sj_pending_fill(pending.p, nullptr), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_pending_fill(nullptr, nullptr), SJ_ERR_NULL_POINTER);
  // After all the refusals, the result is still there; a second fill is refused.
  Buffers good(s);
  ASSERT_EQ(sj_pending_fill(pending.p, &good.b), SJ_OK) << sj_last_error_message();
  EXPECT_EQ(good.pos[0], 0);
  EXPECT_EQ(good.pos[20], s.crd_len);
  Buffers again(s);
  EXPECT_EQ(sj_pending_fill(pending.p, &again.b), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(untouched(again));
}

TEST(CallerOutputsErrors, SizesPassRefusesBadArgumentsAndWritesNothing) {
  Ctx ctx;
  Rng rng(4);
  T A, B;
  random_csr(ctx.c, rng, 10, 10, 0.3, SJ_INDEX_INT32, &A.t);
  random_csr(ctx.c, rng, 12, 12, 0.3, SJ_INDEX_INT32, &B.t);
  std::vector<sj_tensor*> ops{A.t, A.t};
  P plan;
  plan_for(ctx.c, SJ_OP_SPGEMM, ops, nullptr, &plan.p);
  sj_output_sizes s{};
  s.struct_size = sizeof s;
  sj_pending* pending = reinterpret_cast<sj_pending*>(0x1234);
  EXPECT_EQ(sj_plan_execute_sizes(nullptr, ops.data(), 2, &s, &pending), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_plan_execute_sizes(plan.p, ops.data(), 2, nullptr, &pending), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_plan_execute_sizes(plan.p, ops.data(), 2, &s, nullptr), SJ_ERR_NULL_POINTER);
  s.struct_size = 3;
  EXPECT_EQ(sj_plan_execute_sizes(plan.p, ops.data(), 2, &s, &pending), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(sj_last_error_message()).find("sizes.struct_size is 3, expected"), std::string::npos)
      << sj_last_error_message();
  s.struct_size = sizeof s;
  std::vector<sj_tensor*> wrong{B.t, B.t};  // not the planned shape
  EXPECT_EQ(sj_plan_execute_sizes(plan.p, wrong.data(), 2, &s, &pending), SJ_ERR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(sj_last_error_message()).find("does not match the planned one"), std::string::npos);
  EXPECT_EQ(sj_plan_execute_sizes(plan.p, ops.data(), 1, &s, &pending), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(pending, reinterpret_cast<sj_pending*>(0x1234)) << "a failed call must not touch the output";
  EXPECT_EQ(s.crd_len, 0);
  EXPECT_EQ(sj_pending_destroy(nullptr), SJ_OK);
}

TEST(CallerOutputsErrors, PendingKeepsTheContextAliveAndEmptyResultsNeedNoArrays) {
  sj_context* c = nullptr;
  ASSERT_EQ(sj_context_create(nullptr, &c), SJ_OK);
  // Two matrices with disjoint patterns: their element-wise product is empty.
  std::vector<int64_t> pos{0, 1, 1};
  std::vector<int32_t> c1{0}, c2{1};
  std::vector<double> v{1.0};
  sj_tensor *a = nullptr, *b = nullptr;
  ASSERT_EQ(sj_tensor_create_csr(c, 2, 2, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), c1.data(), v.data(), 0, &a), SJ_OK);
  ASSERT_EQ(sj_tensor_create_csr(c, 2, 2, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), c2.data(), v.data(), 0, &b), SJ_OK);
  sj_tensor* ops[] = {a, b};
  sj_plan* plan = nullptr;
  ASSERT_EQ(sj_plan_create(c, SJ_OP_EWISE_MULT, ops, 2, nullptr, &plan), SJ_OK);
  sj_output_sizes s{};
  s.struct_size = sizeof s;
  sj_pending* pending = nullptr;
  ASSERT_EQ(sj_plan_execute_sizes(plan, ops, 2, &s, &pending), SJ_OK) << sj_last_error_message();
  EXPECT_EQ(s.crd_len, 0);
  EXPECT_EQ(s.values_len, 0);
  EXPECT_EQ(s.pos_len, 3);
  int64_t out_pos[3] = {9, 9, 9};
  sj_output_buffers buf{};
  buf.struct_size = sizeof buf;
  buf.pos = out_pos;
  buf.pos_capacity = 3;
  ASSERT_EQ(sj_pending_fill(pending, &buf), SJ_OK) << sj_last_error_message();  // crd, values NULL: fine
  EXPECT_EQ(out_pos[0], 0);
  EXPECT_EQ(out_pos[2], 0);
  sj_plan_destroy(plan);
  sj_tensor_destroy(a);
  sj_tensor_destroy(b);
  EXPECT_EQ(sj_context_destroy(c), SJ_ERR_INVALID_ARGUMENT) << "a pending result is still alive";
  EXPECT_EQ(sj_pending_destroy(pending), SJ_OK);
  EXPECT_EQ(sj_context_destroy(c), SJ_OK) << sj_last_error_message();
}

// A random 3-D tensor stored dense(i), compressed(j), compressed(k), copied into a handle.
void random_csf(sj_context* ctx, Rng& rng, const int64_t (&dims)[3], double density, sj_index_type it,
                sj_tensor** out) {
  std::vector<int64_t> pos1{0}, pos2{0}, crd1, crd2;
  std::vector<double> val;
  for (int64_t i = 0; i < dims[0]; ++i) {
    for (int64_t j = 0; j < dims[1]; ++j) {
      const size_t before = crd2.size();
      for (int64_t k = 0; k < dims[2]; ++k)
        if (rng.bernoulli(density)) {
          crd2.push_back(k);
          val.push_back(static_cast<double>(rng.uniform_int(-3, 3)) + 0.25);
        }
      if (crd2.size() == before) continue;
      crd1.push_back(j);
      pos2.push_back(static_cast<int64_t>(crd2.size()));
    }
    pos1.push_back(static_cast<int64_t>(crd1.size()));
  }
  std::vector<int32_t> c1(crd1.begin(), crd1.end()), c2(crd2.begin(), crd2.end());
  const bool narrow = it == SJ_INDEX_INT32;
  const sj_level_kind levels[3] = {SJ_LEVEL_DENSE, SJ_LEVEL_COMPRESSED, SJ_LEVEL_COMPRESSED};
  const int64_t* pos[3] = {nullptr, pos1.data(), pos2.data()};
  const void* crd[3] = {nullptr, narrow ? static_cast<const void*>(c1.data()) : crd1.data(),
                        narrow ? static_cast<const void*>(c2.data()) : crd2.data()};
  sj_tensor_desc d{};
  d.order = 3;
  d.dims = dims;
  d.levels = levels;
  d.index_type = it;
  d.value_type = SJ_VALUE_F64;
  d.pos = pos;
  d.crd = crd;
  d.values = val.data();
  ASSERT_EQ(sj_tensor_create(ctx, &d, SJ_TENSOR_COPY, out), SJ_OK) << sj_last_error_message();
}

// Per-level caller buffers sized from the layout, with a sentinel in `spare` extra elements.
struct LevelBuffers {
  std::vector<int64_t> pos[4];
  std::vector<unsigned char> crd[4], values;
  sj_output_level_buffers b{};
  LevelBuffers(const sj_output_levels& s, int64_t spare = 0) {
    const int isz = s.index_type == SJ_INDEX_INT32 ? 4 : 8;
    const int vsz = s.value_type == SJ_VALUE_F32 ? 4 : s.value_type == SJ_VALUE_F64 ? 8 : 1;
    b.struct_size = sizeof b;
    for (int l = 0; l < s.order; ++l) {
      if (s.pos_len[l]) pos[l].assign(s.pos_len[l] + spare, -7);
      if (s.crd_len[l]) crd[l].assign((s.crd_len[l] + spare) * isz, 0xAB);
      b.pos[l] = pos[l].empty() ? nullptr : pos[l].data();
      b.pos_capacity[l] = static_cast<int64_t>(pos[l].size());
      b.crd[l] = crd[l].empty() ? nullptr : crd[l].data();
      b.crd_capacity[l] = static_cast<int64_t>(crd[l].size()) / isz;
    }
    values.assign((s.values_len + spare) * vsz, 0xCD);
    b.values = values.data();
    b.values_capacity = s.values_len + spare;
  }
  bool untouched() const {
    for (auto& p : pos)
      for (int64_t v : p)
        if (v != -7) return false;
    for (auto& c : crd)
      for (unsigned char v : c)
        if (v != 0xAB) return false;
    for (unsigned char v : values)
      if (v != 0xCD) return false;
    return true;
  }
};

// Runs the plan with sj_plan_execute and with the per-level two-pass form; every level's
// kind, arrays and the values must be the same, and spare room stays untouched. Returns the
// layout in *out_levels and the flat sizes in *out_sizes.
void check_levels_equal_execute(sj_plan* plan, const std::vector<sj_tensor*>& ops, sj_output_levels* out_levels,
                                sj_output_sizes* out_sizes) {
  T normal;
  ASSERT_EQ(sj_plan_execute(plan, ops.data(), static_cast<int>(ops.size()), &normal.t), SJ_OK)
      << sj_last_error_message();
  sj_output_sizes s{};
  s.struct_size = sizeof s;
  Pending pending;
  ASSERT_EQ(sj_plan_execute_sizes(plan, ops.data(), static_cast<int>(ops.size()), &s, &pending.p), SJ_OK)
      << sj_last_error_message();
  sj_output_levels lv{};
  lv.struct_size = sizeof lv;
  ASSERT_EQ(sj_pending_get_levels(pending.p, &lv), SJ_OK) << sj_last_error_message();
  sj_tensor_info info;
  ASSERT_EQ(sj_tensor_get_info(normal.t, &info), SJ_OK);
  ASSERT_EQ(lv.order, info.order);
  EXPECT_EQ(s.order, info.order);
  EXPECT_EQ(lv.values_len, info.nnz);
  EXPECT_EQ(s.values_len, info.nnz);
  EXPECT_EQ(lv.index_type, info.index_type);
  EXPECT_EQ(lv.value_type, info.value_type);
  for (int l = 0; l < info.order; ++l) {
    EXPECT_EQ(lv.dims[l], info.dims[l]) << "mode " << l;
    EXPECT_EQ(lv.mode_order[l], info.mode_order[l]) << "level " << l;
    EXPECT_EQ(lv.levels[l], info.levels[l]) << "level " << l;
  }
  LevelBuffers buf(lv, /*spare=*/1);
  ASSERT_EQ(sj_pending_fill_levels(pending.p, &buf.b), SJ_OK) << sj_last_error_message();
  const int isz = lv.index_type == SJ_INDEX_INT32 ? 4 : 8;
  const int vsz = lv.value_type == SJ_VALUE_F32 ? 4 : lv.value_type == SJ_VALUE_F64 ? 8 : 1;
  for (int l = 0; l < info.order; ++l) {
    SCOPED_TRACE("level " + std::to_string(l));
    const int64_t* pos = nullptr;
    const void* crd = nullptr;
    int64_t pos_len = 0, crd_len = 0;
    ASSERT_EQ(sj_tensor_get_level(normal.t, l, &pos, &pos_len, &crd, &crd_len), SJ_OK);
    ASSERT_EQ(lv.pos_len[l], pos_len);
    ASSERT_EQ(lv.crd_len[l], crd_len);
    if (pos_len) {
      EXPECT_EQ(std::memcmp(pos, buf.pos[l].data(), pos_len * 8), 0);
      EXPECT_EQ(buf.pos[l].back(), -7) << "nothing written past pos_len";
    }
    if (crd_len) {
      EXPECT_EQ(std::memcmp(crd, buf.crd[l].data(), crd_len * isz), 0);
      EXPECT_EQ(buf.crd[l].back(), 0xAB) << "nothing written past crd_len";
    }
  }
  const void* values = nullptr;
  ASSERT_EQ(sj_tensor_get_values(normal.t, &values, nullptr), SJ_OK);
  if (lv.values_len) {
    EXPECT_EQ(std::memcmp(values, buf.values.data(), lv.values_len * vsz), 0);
  }
  EXPECT_EQ(buf.values.back(), 0xCD) << "nothing written past values_len";
  // The layout stays readable after the fill; a second fill by either call is refused.
  sj_output_levels after{};
  after.struct_size = sizeof after;
  EXPECT_EQ(sj_pending_get_levels(pending.p, &after), SJ_OK);
  EXPECT_EQ(std::memcmp(&after, &lv, sizeof lv), 0);
  LevelBuffers again(lv);
  EXPECT_EQ(sj_pending_fill_levels(pending.p, &again.b), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(again.untouched());
  if (out_levels) *out_levels = lv;
  if (out_sizes) *out_sizes = s;
}

void einsum_plan(sj_context* ctx, const char* expr, const std::vector<sj_tensor*>& ops, const char* out_format,
                 sj_plan** p) {
  ASSERT_EQ(sj_einsum_plan(ctx, expr, ops.data(), static_cast<int>(ops.size()), nullptr, out_format, nullptr, p),
            SJ_OK)
      << expr << ": " << sj_last_error_message();
}

// Index-notation results of every order have a two-pass form: order 0 to 2 through the flat
// sj_output_sizes (and per level), order 3 and 4 per level only (sj_pending_fill says which to
// use).
TEST_P(CallerOutputs, EinsumResultsOfEveryOrderMatchPlanExecute) {
  const sj_index_type it = GetParam();
  Ctx ctx;
  Rng rng(it == SJ_INDEX_INT32 ? 21 : 22);
  T A, B, X;
  random_csr(ctx.c, rng, 12, 9, 0.3, it, &A.t);
  random_csr(ctx.c, rng, 9, 11, 0.3, it, &B.t);
  random_csf(ctx.c, rng, {6, 7, 9}, 0.25, it, &X.t);
  struct Case {
    const char* expr;
    std::vector<sj_tensor*> ops;
    const char* out_format;
    int order;
  } cases[] = {
      {"C(i,j) = A(i,k) * B(k,j)", {A.t, B.t}, nullptr, 2},
      {"y(i) = A(i,j) * A(i,j)", {A.t}, nullptr, 1},
      {"s = A(i,j) * A(i,j)", {A.t}, nullptr, 0},
      {"Y(i,j,k) = X(i,j,k) * X(i,j,k)", {X.t}, nullptr, 3},
      {"Y(i,j,r) = X(i,j,k) * B(k,r)", {X.t, B.t}, "csf", 3},
      {"Y(i,j,k) = X(i,j,k)", {X.t}, "dense", 3},
      {"Y(i,j,k) = X(i,j,k)", {X.t}, "dense(i),compressed(k),compressed(j)", 3},
      {"Y(k,i,j) = X(i,j,k)", {X.t}, nullptr, 3},
      {"W(i,j,k,r) = X(i,j,k) * B(k,r)", {X.t, B.t}, nullptr, 4},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(std::string(c.expr) + " as " + (c.out_format ? c.out_format : "default"));
    P plan;
    einsum_plan(ctx.c, c.expr, c.ops, c.out_format, &plan.p);
    sj_output_levels lv{};
    sj_output_sizes s{};
    check_levels_equal_execute(plan.p, c.ops, &lv, &s);
    ASSERT_EQ(lv.order, c.order);
    if (c.order >= 1 && c.order <= 2) {  // the flat form works too and gives the same arrays
      check_two_pass_equals_execute(plan.p, c.ops);
      continue;
    }
    if (c.order == 0) {  // a scalar: one dense value through the flat form as well
      Pending pending;
      sj_output_sizes s0{};
      s0.struct_size = sizeof s0;
      ASSERT_EQ(sj_plan_execute_sizes(plan.p, c.ops.data(), static_cast<int>(c.ops.size()), &s0, &pending.p), SJ_OK);
      EXPECT_EQ(s0.format, SJ_FORMAT_DENSE);
      ASSERT_EQ(s0.values_len, 1);
      double v = 0;
      sj_output_buffers b{};
      b.struct_size = sizeof b;
      b.values = &v;
      b.values_capacity = 1;
      ASSERT_EQ(sj_pending_fill(pending.p, &b), SJ_OK) << sj_last_error_message();
      T normal;
      ASSERT_EQ(sj_plan_execute(plan.p, c.ops.data(), static_cast<int>(c.ops.size()), &normal.t), SJ_OK);
      const void* want = nullptr;
      ASSERT_EQ(sj_tensor_get_values(normal.t, &want, nullptr), SJ_OK);
      EXPECT_EQ(v, *static_cast<const double*>(want));
      v = -1;
      sj_output_sizes s1{};
      s1.struct_size = sizeof s1;
      ASSERT_EQ(sj_plan_execute_into(plan.p, c.ops.data(), static_cast<int>(c.ops.size()), &b, &s1), SJ_OK)
          << sj_last_error_message();
      EXPECT_EQ(s1.values_len, 1);
      EXPECT_EQ(v, *static_cast<const double*>(want));
      continue;
    }
    {  // no flat layout: the one-pass call refuses it, with the sizes that say so
      std::vector<unsigned char> big(1 << 16, 0xEE);
      sj_output_buffers b{};
      b.struct_size = sizeof b;
      b.crd = b.values = big.data();
      b.crd_capacity = b.values_capacity = 1 << 12;
      sj_output_sizes s1{};
      s1.struct_size = sizeof s1;
      EXPECT_EQ(sj_plan_execute_into(plan.p, c.ops.data(), static_cast<int>(c.ops.size()), &b, &s1), SJ_ERR_FORMAT);
      EXPECT_EQ(s1.order, c.order);
      EXPECT_EQ(big[0], 0xEE) << "nothing written";
    }
    // Order 3 and 4: the flat sizes say so and carry no arrays; sj_pending_fill refuses it.
    EXPECT_EQ(s.order, c.order);
    EXPECT_EQ(s.dims[0], lv.dims[0]);
    EXPECT_EQ(s.dims[1], lv.dims[1]);
    EXPECT_EQ(s.pos_len, 0);
    EXPECT_EQ(s.crd_len, 0);
    EXPECT_GT(lv.values_len, 0);
    Pending pending;
    sj_output_sizes s2{};
    s2.struct_size = sizeof s2;
    ASSERT_EQ(sj_plan_execute_sizes(plan.p, c.ops.data(), static_cast<int>(c.ops.size()), &s2, &pending.p), SJ_OK);
    Buffers flat(s2, 1);
    EXPECT_EQ(sj_pending_fill(pending.p, &flat.b), SJ_ERR_FORMAT);
    EXPECT_NE(std::string(sj_last_error_message()).find("sj_pending_fill_levels"), std::string::npos)
        << sj_last_error_message();
    LevelBuffers buf(lv);
    EXPECT_EQ(sj_pending_fill_levels(pending.p, &buf.b), SJ_OK) << "a refused flat fill leaves it fillable";
  }
  // The formats the cases asked for: CSF, all dense, and a permuted level order.
  P dense, perm;
  einsum_plan(ctx.c, "Y(i,j,k) = X(i,j,k)", {X.t}, "dense", &dense.p);
  einsum_plan(ctx.c, "Y(i,j,k) = X(i,j,k)", {X.t}, "dense(i),compressed(k),compressed(j)", &perm.p);
  sj_output_levels d{}, q{};
  check_levels_equal_execute(dense.p, {X.t}, &d, nullptr);
  check_levels_equal_execute(perm.p, {X.t}, &q, nullptr);
  EXPECT_EQ(d.levels[2], SJ_LEVEL_DENSE);
  EXPECT_EQ(d.values_len, 6 * 7 * 9);
  EXPECT_EQ(q.mode_order[1], 2);
  EXPECT_EQ(q.mode_order[2], 1);
}

// Bad per-level buffers: refused (naming the level) before any byte is written.
TEST(CallerOutputsErrors, BadLevelBuffersWriteNothing) {
  Ctx ctx;
  Rng rng(8);
  T X;
  random_csf(ctx.c, rng, {5, 6, 7}, 0.3, SJ_INDEX_INT32, &X.t);
  std::vector<sj_tensor*> ops{X.t};
  P plan;
  einsum_plan(ctx.c, "Y(i,j,k) = X(i,j,k) * X(i,j,k)", ops, "csf", &plan.p);
  sj_output_sizes s{};
  s.struct_size = sizeof s;
  Pending pending;
  ASSERT_EQ(sj_plan_execute_sizes(plan.p, ops.data(), 1, &s, &pending.p), SJ_OK) << sj_last_error_message();
  sj_output_levels lv{};
  EXPECT_EQ(sj_pending_get_levels(pending.p, &lv), SJ_ERR_INVALID_ARGUMENT) << "struct_size not set";
  EXPECT_EQ(sj_pending_get_levels(pending.p, nullptr), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_pending_get_levels(nullptr, &lv), SJ_ERR_NULL_POINTER);
  lv.struct_size = sizeof lv;
  ASSERT_EQ(sj_pending_get_levels(pending.p, &lv), SJ_OK);
  ASSERT_EQ(lv.order, 3);
  EXPECT_EQ(lv.levels[0], SJ_LEVEL_DENSE);
  EXPECT_EQ(lv.pos_len[0], 0);
  EXPECT_EQ(lv.crd_len[0], 0);
  EXPECT_EQ(lv.pos_len[1], 5 + 1);
  EXPECT_EQ(lv.pos_len[2], lv.crd_len[1] + 1);
  EXPECT_EQ(lv.crd_len[2], lv.values_len);
  for (int l = 1; l < 3; ++l) {
    SCOPED_TRACE("level " + std::to_string(l));
    {
      LevelBuffers buf(lv);
      buf.b.pos_capacity[l] -= 1;
      EXPECT_EQ(sj_pending_fill_levels(pending.p, &buf.b), SJ_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(sj_last_error_message()).find("pos_capacity[" + std::to_string(l) + "] is"),
                std::string::npos)
          << sj_last_error_message();
      EXPECT_TRUE(buf.untouched());
    }
    {
      LevelBuffers buf(lv);
      buf.b.crd[l] = nullptr;
      EXPECT_EQ(sj_pending_fill_levels(pending.p, &buf.b), SJ_ERR_NULL_POINTER);
      EXPECT_NE(std::string(sj_last_error_message()).find("buffers.crd[" + std::to_string(l) + "] is NULL"),
                std::string::npos)
          << sj_last_error_message();
      EXPECT_TRUE(buf.untouched());
    }
  }
  {
    LevelBuffers buf(lv);
    buf.b.values_capacity = lv.values_len - 1;
    EXPECT_EQ(sj_pending_fill_levels(pending.p, &buf.b), SJ_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(buf.untouched());
  }
  {
    LevelBuffers buf(lv);
    buf.b.struct_size = 8;
    EXPECT_EQ(sj_pending_fill_levels(pending.p, &buf.b), SJ_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(buf.untouched());
  }
  EXPECT_EQ(sj_pending_fill_levels(pending.p, nullptr), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_pending_fill_levels(nullptr, nullptr), SJ_ERR_NULL_POINTER);
  LevelBuffers good(lv);
  ASSERT_EQ(sj_pending_fill_levels(pending.p, &good.b), SJ_OK) << sj_last_error_message();
  EXPECT_EQ(good.pos[1][0], 0);
  EXPECT_EQ(good.pos[2].back(), lv.values_len);
  // The flat fill of a filled pending is refused as "already filled" or by its order.
  Buffers flat(s);
  EXPECT_NE(sj_pending_fill(pending.p, &flat.b), SJ_OK);
}

// The real FROSTT tensors (skipped when ../shared/data/tensors is absent): a 3-D result filled
// per level equals sj_plan_execute.
TEST(CallerOutputsReal, ThreeWayEinsumOnRealTensorsMatchesPlanExecute) {
  const auto files = sj::test::shared_tensors();
  if (files.empty()) GTEST_SKIP() << "no shared tensors";
  Ctx ctx;
  for (auto& f : files) {
    SCOPED_TRACE(f.string());
    T X;
    ASSERT_EQ(sj_tensor_read_file(ctx.c, f.c_str(), &X.t), SJ_OK) << sj_last_error_message();
    std::vector<sj_tensor*> ops{X.t};
    P plan;
    einsum_plan(ctx.c, "Y(i,j,k) = X(i,j,k) * X(i,j,k)", ops, nullptr, &plan.p);
    sj_output_levels lv{};
    check_levels_equal_execute(plan.p, ops, &lv, nullptr);
    EXPECT_EQ(lv.order, 3);
    EXPECT_GT(lv.values_len, 0);
  }
}

TEST(CallerOutputsReal, SpgemmOnRealMatricesMatchesPlanExecute) {
  std::vector<std::filesystem::path> files{sj::test::repo_data("karate.mtx")};
  for (auto& f : sj::test::shared_matrices())
    if (f.filename() == "494_bus.mtx" || f.filename() == "bcsstk06.mtx") files.push_back(f);
  Ctx ctx;
  for (auto& f : files) {
    SCOPED_TRACE(f.string());
    T A;
    ASSERT_EQ(sj_tensor_read_file(ctx.c, f.c_str(), &A.t), SJ_OK) << sj_last_error_message();
    std::vector<sj_tensor*> ops{A.t, A.t};
    P plan;
    plan_for(ctx.c, SJ_OP_SPGEMM, ops, nullptr, &plan.p);
    check_two_pass_equals_execute(plan.p, ops);
  }
}

}  // namespace

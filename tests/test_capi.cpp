// The C API: misuse gives clear statuses (never a crash), failed calls leave outputs
// untouched, and every operation, whatever the input formats, matches a dense brute force.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <tuple>

#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "capi/handles.hpp"
#include "src/semiring.hpp"
#include "src/tensor_file.hpp"
#include "tests/random_matrices.hpp"
#include "tests/test_util.hpp"

namespace {

using sj::test::Rng;

struct Ctx {
  sj_context* c = nullptr;
  Ctx() { EXPECT_EQ(sj_context_create(nullptr, &c), SJ_OK); }
  ~Ctx() { EXPECT_EQ(sj_context_destroy(c), SJ_OK) << sj_last_error_message(); }
};

struct T {
  sj_tensor* t = nullptr;
  ~T() { sj_tensor_destroy(t); }
};

std::string msg() { return sj_last_error_message(); }

// A small CSR matrix owned by the test.
struct Csr {
  int64_t rows, cols;
  std::vector<int64_t> pos;
  std::vector<int32_t> crd;
  std::vector<double> val;
};
Csr small() { return {2, 3, {0, 2, 3}, {0, 2, 1}, {1.0, 2.0, 3.0}}; }

TEST(CApi, NullArgumentsAreErrorsNotCrashes) {
  EXPECT_EQ(sj_context_create(nullptr, nullptr), SJ_ERR_NULL_POINTER);
  EXPECT_NE(msg().find("out is NULL"), std::string::npos);
  Ctx ctx;
  sj_tensor* out = reinterpret_cast<sj_tensor*>(0x1234);
  EXPECT_EQ(sj_spgemm(ctx.c, nullptr, nullptr, nullptr, &out), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x1234)) << "a failed call must not touch the output";
  EXPECT_EQ(sj_spgemm(nullptr, nullptr, nullptr, nullptr, &out), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_tensor_read_file(ctx.c, nullptr, &out), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, 2, 2, SJ_INDEX_INT32, SJ_VALUE_F64, nullptr, nullptr, nullptr, 0, &out),
            SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_tensor_get_info(nullptr, nullptr), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_plan_execute(nullptr, nullptr, 0, &out), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_plan_explain(nullptr, nullptr), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_tensor_destroy(nullptr), SJ_OK);
  EXPECT_EQ(sj_plan_destroy(nullptr), SJ_OK);
  EXPECT_EQ(sj_context_destroy(nullptr), SJ_OK);
  EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x1234));
}

TEST(CApi, StatusStringsAndVersion) {
  for (int s = 0; s <= SJ_ERR_INTERNAL; ++s) EXPECT_NE(std::string(sj_status_string(static_cast<sj_status>(s))), "");
  int ma = -1, mi = -1, pa = -1;
  std::string v = sj_version(&ma, &mi, &pa);
  EXPECT_EQ(v.rfind(std::to_string(ma) + "." + std::to_string(mi) + "." + std::to_string(pa), 0), 0u) << v;
  EXPECT_NE(v.find('+'), std::string::npos) << "the version carries the build id";
}

TEST(CApi, ValidationMessageSaysWhere) {
  Ctx ctx;
  std::vector<int64_t> pos{0, 2};
  std::vector<int32_t> crd{9, 5};
  std::vector<double> val{1, 2};
  T t;
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, 1, 10, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), 0, &t.t),
            SJ_ERR_INVALID_TENSOR);
  EXPECT_EQ(msg(), "row 0: column 5 follows 9 (coordinates must be sorted)");
  EXPECT_EQ(t.t, nullptr);
  // A trusted caller skips validation (and owns the consequences).
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, 1, 10, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(),
                                 SJ_TENSOR_TRUSTED, &t.t),
            SJ_OK);
  // Bad enums and flags.
  T u;
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, 1, 10, static_cast<sj_index_type>(7), SJ_VALUE_F64, pos.data(), crd.data(),
                                 val.data(), 0, &u.t),
            SJ_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, 1, 10, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), 64, &u.t),
            SJ_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, -1, 10, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), 0, &u.t),
            SJ_ERR_INVALID_ARGUMENT);
  std::vector<uint8_t> bad_bool{0, 2};
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, 1, 10, SJ_INDEX_INT32, SJ_VALUE_BOOL, pos.data(), std::vector<int32_t>{1, 5}.data(),
                                 bad_bool.data(), SJ_TENSOR_COPY, &u.t),
            SJ_ERR_INVALID_TENSOR);
  EXPECT_NE(msg().find("bool values must be 0 or 1"), std::string::npos) << msg();
}

// Operands belong to the call's context: what a call keeps on an operand (converted forms,
// drop-in plans) comes from that context's allocator and must not outlive it on a handle of
// another. Every entry point refuses a foreign handle; sj_tensor_convert copies it over.
TEST(CApi, OperandsOfAnotherContextAreRefused) {
  Ctx mine, other;
  Csr m = small();
  T a, sq, x;
  ASSERT_EQ(sj_tensor_create_csr(other.c, m.rows, m.cols, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), 0, &a.t),
            SJ_OK);
  ASSERT_EQ(sj_tensor_create_csr(mine.c, 2, 2, SJ_INDEX_INT32, SJ_VALUE_F64, std::vector<int64_t>{0, 1, 2}.data(),
                                 std::vector<int32_t>{0, 1}.data(), std::vector<double>{1, 2}.data(), SJ_TENSOR_COPY,
                                 &sq.t),
            SJ_OK);
  sj_tensor* out = reinterpret_cast<sj_tensor*>(0x1);  // must stay untouched
  auto refused = [&](sj_status st, const char* what) {
    EXPECT_EQ(st, SJ_ERR_INVALID_ARGUMENT) << what;
    EXPECT_NE(msg().find("belongs to another context"), std::string::npos) << what << ": " << msg();
    EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x1)) << what;
  };
  refused(sj_transpose(mine.c, a.t, &out), "transpose");
  refused(sj_ewise_mult(mine.c, a.t, a.t, nullptr, &out), "ewise_mult");
  refused(sj_spgemm(mine.c, sq.t, a.t, nullptr, &out), "spgemm, second operand");
  const sj_tensor* ops[] = {a.t};
  sj_plan* plan = nullptr;
  refused(sj_plan_create(mine.c, SJ_OP_TRANSPOSE, ops, 1, nullptr, &plan), "plan_create");
  EXPECT_EQ(plan, nullptr);
  refused(sj_einsum(mine.c, "C(i,j) = A(i,j)", ops, 1, nullptr, nullptr, nullptr, &out), "einsum");
  // A plan of this context, executed on a foreign operand.
  const sj_tensor* own[] = {sq.t};
  ASSERT_EQ(sj_plan_create(mine.c, SJ_OP_TRANSPOSE, own, 1, nullptr, &plan), SJ_OK) << msg();
  const sj_tensor* foreign[] = {a.t};
  refused(sj_plan_execute(plan, foreign, 1, &out), "plan_execute");
  EXPECT_EQ(sj_plan_destroy(plan), SJ_OK);
  // Copied into this context, it is an operand like any other.
  ASSERT_EQ(sj_tensor_convert(mine.c, a.t, SJ_FORMAT_CSR, nullptr, SJ_INDEX_INT32, &x.t), SJ_OK) << msg();
  T t;
  ASSERT_EQ(sj_transpose(mine.c, x.t, &t.t), SJ_OK) << msg();
  sj_tensor_info info;
  ASSERT_EQ(sj_tensor_get_info(t.t, &info), SJ_OK);
  EXPECT_EQ(info.dims[0], 3);
  EXPECT_EQ(info.nnz, 3);
}

// Under a non-unique level equal coordinates are allowed there, so duplicates and disorder
// show only in whole entries: every layout with such a level is checked entry by entry, not
// only COO (index notation silently dropped duplicates of {dense, nonunique} before).
TEST(CApi, DuplicateEntriesUnderANonUniqueLevelAreRefused) {
  Ctx ctx;
  const int64_t dims[2] = {2, 3};
  auto create = [&](std::array<sj_level_kind, 2> kinds, std::vector<int64_t> pos0, std::vector<int64_t> crd0,
                    std::vector<int64_t> pos1, std::vector<int64_t> crd1) {
    const std::vector<double> v(8, 1.0);
    const int64_t* pos[2] = {pos0.empty() ? nullptr : pos0.data(), pos1.empty() ? nullptr : pos1.data()};
    const void* crd[2] = {crd0.empty() ? nullptr : crd0.data(), crd1.empty() ? nullptr : crd1.data()};
    sj_tensor_desc d{2, dims, nullptr, kinds.data(), SJ_INDEX_INT64, SJ_VALUE_F64, pos, crd, v.data()};
    T t;
    const sj_status st = sj_tensor_create(ctx.c, &d, SJ_TENSOR_COPY, &t.t);  // (before the message is read)
    return std::make_pair(st, msg());
  };
  const auto D = SJ_LEVEL_DENSE, C = SJ_LEVEL_COMPRESSED, N = SJ_LEVEL_COMPRESSED_NONUNIQUE;
  // {dense, nonunique}: row 0 holds column 1 twice.
  auto [st, m] = create({D, N}, {}, {}, {0, 2, 2}, {1, 1});
  EXPECT_EQ(st, SJ_ERR_INVALID_TENSOR);
  EXPECT_NE(m.find("entry 1 (row 0, column 1) appears twice"), std::string::npos) << m;
  // {nonunique, compressed}: row 0 twice, each with column 1; then with column 2 before 1.
  std::tie(st, m) = create({N, C}, {0, 2}, {0, 0}, {0, 1, 2}, {1, 1});
  EXPECT_EQ(st, SJ_ERR_INVALID_TENSOR);
  EXPECT_NE(m.find("appears twice"), std::string::npos) << m;
  std::tie(st, m) = create({N, C}, {0, 2}, {0, 0}, {0, 1, 2}, {2, 1});
  EXPECT_EQ(st, SJ_ERR_INVALID_TENSOR);
  EXPECT_NE(m.find("entry 1 (row 0, column 1) comes after a greater one"), std::string::npos) << m;
  // The same layouts with distinct, ordered entries are fine.
  std::tie(st, m) = create({N, C}, {0, 3}, {0, 0, 1}, {0, 1, 2, 3}, {1, 2, 0});
  EXPECT_EQ(st, SJ_OK) << m;
  std::tie(st, m) = create({D, N}, {}, {}, {0, 2, 3}, {0, 1, 2});
  EXPECT_EQ(st, SJ_OK) << m;
  // Deeper layouts with a singleton: equal coordinates one level up may have different parents
  // or differ further down (3-D COO; {dense, nonunique, singleton}), and are fine.
  const int64_t dims3[3] = {2, 2, 2};
  auto create3 = [&](std::array<sj_level_kind, 3> kinds, std::vector<int64_t> pos0, std::vector<int64_t> pos1,
                     std::vector<int64_t> crd0, std::vector<int64_t> crd1, std::vector<int64_t> crd2) {
    const std::vector<double> v(8, 1.0);
    const int64_t* pos[3] = {pos0.empty() ? nullptr : pos0.data(), pos1.empty() ? nullptr : pos1.data(), nullptr};
    const void* crd[3] = {crd0.empty() ? nullptr : crd0.data(), crd1.empty() ? nullptr : crd1.data(), crd2.data()};
    sj_tensor_desc d{3, dims3, nullptr, kinds.data(), SJ_INDEX_INT64, SJ_VALUE_F64, pos, crd, v.data()};
    T t;
    const sj_status s = sj_tensor_create(ctx.c, &d, SJ_TENSOR_COPY, &t.t);
    return std::make_pair(s, msg());
  };
  const auto S = SJ_LEVEL_SINGLETON;
  std::tie(st, m) = create3({N, S, S}, {0, 2}, {}, {0, 0}, {0, 0}, {0, 1});  // (0,0,0), (0,0,1)
  EXPECT_EQ(st, SJ_OK) << m;
  std::tie(st, m) = create3({N, S, S}, {0, 2}, {}, {0, 0}, {0, 0}, {1, 1});  // (0,0,1) twice
  EXPECT_EQ(st, SJ_ERR_INVALID_TENSOR);
  EXPECT_NE(m.find("appears twice"), std::string::npos) << m;
  std::tie(st, m) = create3({D, N, S}, {}, {0, 1, 2}, {}, {0, 0}, {0, 0});  // (0,0,0), (1,0,0)
  EXPECT_EQ(st, SJ_OK) << m;
}

// Index notation refuses the option values the operations refuse (it accepted them silently).
TEST(CApi, EinsumRefusesBadOptionsAsTheOperationsDo) {
  Ctx ctx;
  Csr m = small();
  T a;
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, m.rows, m.cols, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), 0, &a.t),
            SJ_OK);
  const sj_tensor* ops[] = {a.t};
  const std::pair<std::function<void(sj_op_options&)>, const char*> bad[] = {
      {[](sj_op_options& o) { o.isa = static_cast<sj_isa>(77); }, "unknown ISA 77"},
      {[](sj_op_options& o) { o.method = static_cast<sj_coiter_method>(42); }, "unknown coiteration method 42"},
      {[](sj_op_options& o) { o.semiring = static_cast<sj_semiring>(9); }, "unknown semiring 9"},
      {[](sj_op_options& o) { o.vector_width = -3; }, "vector_width is negative"},
      {[](sj_op_options& o) { o.vector_width = 5; }, "vector width 5 is not 4, 8 or 16"},
      {[](sj_op_options& o) { std::strcpy(o.phases, "2x"); }, "phase mask '2x'"},
  };
  for (const auto& [set, expected] : bad) {
    sj_op_options o;
    ASSERT_EQ(sj_op_options_init(&o), SJ_OK);
    set(o);
    sj_tensor* out = nullptr;
    EXPECT_EQ(sj_einsum(ctx.c, "C(i,j) = A(i,j)", ops, 1, nullptr, nullptr, &o, &out), SJ_ERR_INVALID_ARGUMENT) << expected;
    EXPECT_NE(msg().find(expected), std::string::npos) << msg();
    EXPECT_EQ(out, nullptr);
  }
}

TEST(CApi, ZeroCopyBorrowsAndCopyOwns) {
  Ctx ctx;
  Csr m = small();
  T a, b;
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, m.rows, m.cols, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), 0, &a.t),
            SJ_OK);
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, m.rows, m.cols, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), SJ_TENSOR_COPY, &b.t),
            SJ_OK);
  const void* va;
  const void* vb;
  int64_t n;
  ASSERT_EQ(sj_tensor_get_values(a.t, &va, &n), SJ_OK);
  EXPECT_EQ(va, m.val.data());
  EXPECT_EQ(n, 3);
  ASSERT_EQ(sj_tensor_get_values(b.t, &vb, &n), SJ_OK);
  EXPECT_NE(vb, m.val.data());
  sj_tensor_info ia, ib;
  ASSERT_EQ(sj_tensor_get_info(a.t, &ia), SJ_OK);
  ASSERT_EQ(sj_tensor_get_info(b.t, &ib), SJ_OK);
  EXPECT_EQ(ia.owns_arrays, 0);
  EXPECT_EQ(ib.owns_arrays, 1);
  EXPECT_EQ(ia.format, SJ_FORMAT_CSR);
  const int64_t* pos;
  const void* crd;
  int64_t pl, cl;
  ASSERT_EQ(sj_tensor_get_level(a.t, 1, &pos, &pl, &crd, &cl), SJ_OK);
  EXPECT_EQ(pos, m.pos.data());
  EXPECT_EQ(pl, 3);
  EXPECT_EQ(cl, 3);
  EXPECT_EQ(sj_tensor_get_level(a.t, 2, &pos, &pl, &crd, &cl), SJ_ERR_INVALID_ARGUMENT);
}

// Zero-copy for both coordinate types and every creation call that borrows (CSR, CSC, sparse
// vector, a general CSF description): the handle reads the caller's very arrays, operations
// on it give the same result as on a copy, and the caller's arrays are not written.
template <class I> void zero_copy_case(sj_index_type it) {
  SCOPED_TRACE(it == SJ_INDEX_INT32 ? "int32" : "int64");
  Ctx ctx;
  std::vector<int64_t> pos{0, 2, 3, 5};
  std::vector<I> crd{0, 3, 1, 0, 2};
  std::vector<double> val{1, 2, 3, 4, 5};
  const std::vector<I> crd_before = crd;
  const std::vector<double> val_before = val;
  auto expect_borrowed = [&](sj_tensor* t, int level, const void* want_crd) {
    sj_tensor_info info;
    ASSERT_EQ(sj_tensor_get_info(t, &info), SJ_OK);
    EXPECT_EQ(info.owns_arrays, 0);
    EXPECT_EQ(info.index_type, it);
    const int64_t* p = nullptr;
    const void* c = nullptr;
    ASSERT_EQ(sj_tensor_get_level(t, level, &p, nullptr, &c, nullptr), SJ_OK);
    EXPECT_EQ(c, want_crd);
    const void* v = nullptr;
    ASSERT_EQ(sj_tensor_get_values(t, &v, nullptr), SJ_OK);
    EXPECT_EQ(v, val.data());
  };
  T csr, csc, copy, vec;
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, 3, 4, it, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), 0, &csr.t), SJ_OK)
      << msg();
  expect_borrowed(csr.t, 1, crd.data());
  ASSERT_EQ(sj_tensor_create_csc(ctx.c, 4, 3, it, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), 0, &csc.t), SJ_OK)
      << msg();
  expect_borrowed(csc.t, 1, crd.data());
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, 3, 4, it, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), SJ_TENSOR_COPY,
                                 &copy.t),
            SJ_OK);
  std::vector<I> idx{1, 3};
  std::vector<double> xv{2, 5};
  ASSERT_EQ(sj_tensor_create_sparse_vector(ctx.c, 4, 2, it, SJ_VALUE_F64, idx.data(), xv.data(), 0, &vec.t), SJ_OK);
  const void* got_idx = nullptr;
  ASSERT_EQ(sj_tensor_get_level(vec.t, 0, nullptr, nullptr, &got_idx, nullptr), SJ_OK);
  EXPECT_EQ(got_idx, idx.data());
  {  // a general description: 3-D CSF over the caller's arrays
    const int64_t dims[] = {2, 3, 4};
    const sj_level_kind kinds[] = {SJ_LEVEL_DENSE, SJ_LEVEL_COMPRESSED, SJ_LEVEL_COMPRESSED};
    std::vector<int64_t> p1{0, 2, 3}, p2{0, 2, 3, 5};
    std::vector<I> c1{0, 2, 1}, c2{1, 3, 0, 0, 2};
    const int64_t* ps[] = {nullptr, p1.data(), p2.data()};
    const void* cs[] = {nullptr, c1.data(), c2.data()};
    sj_tensor_desc d{};
    d.order = 3;
    d.dims = dims;
    d.levels = kinds;
    d.index_type = it;
    d.value_type = SJ_VALUE_F64;
    d.pos = ps;
    d.crd = cs;
    d.values = val.data();
    T csf;
    ASSERT_EQ(sj_tensor_create(ctx.c, &d, 0, &csf.t), SJ_OK) << msg();
    expect_borrowed(csf.t, 2, c2.data());
    T sq;
    const sj_tensor* ops[] = {csf.t};
    ASSERT_EQ(sj_einsum(ctx.c, "Y(i,j,k) = X(i,j,k) * X(i,j,k)", ops, 1, nullptr, nullptr, nullptr, &sq.t), SJ_OK)
        << msg();
    const void* v = nullptr;
    ASSERT_EQ(sj_tensor_get_values(sq.t, &v, nullptr), SJ_OK);
    EXPECT_EQ(static_cast<const double*>(v)[4], 25.0);
  }
  // Operations on the borrowed handles equal those on the copy.
  sj_op_options o;
  sj_op_options_init(&o);
  o.transpose_b = 1;
  T r1, r2, y;
  ASSERT_EQ(sj_spgemm(ctx.c, csr.t, csr.t, &o, &r1.t), SJ_OK) << msg();
  ASSERT_EQ(sj_spgemm(ctx.c, copy.t, copy.t, &o, &r2.t), SJ_OK) << msg();
  {
    const int64_t *p1, *p2;
    const void *c1, *c2, *v1, *v2;
    int64_t pl1, pl2, cl1, cl2, n1, n2;
    ASSERT_EQ(sj_tensor_get_level(r1.t, 1, &p1, &pl1, &c1, &cl1), SJ_OK);
    ASSERT_EQ(sj_tensor_get_level(r2.t, 1, &p2, &pl2, &c2, &cl2), SJ_OK);
    ASSERT_EQ(sj_tensor_get_values(r1.t, &v1, &n1), SJ_OK);
    ASSERT_EQ(sj_tensor_get_values(r2.t, &v2, &n2), SJ_OK);
    ASSERT_EQ(pl1, pl2);
    ASSERT_EQ(cl1, cl2);
    ASSERT_EQ(n1, n2);
    EXPECT_EQ(std::memcmp(p1, p2, 8 * pl1), 0);
    EXPECT_EQ(std::memcmp(c1, c2, sizeof(I) * cl1), 0);
    EXPECT_EQ(std::memcmp(v1, v2, 8 * n1), 0);
  }
  ASSERT_EQ(sj_spmspv(ctx.c, csr.t, vec.t, nullptr, &y.t), SJ_OK) << msg();
  EXPECT_EQ(crd, crd_before);
  EXPECT_EQ(val, val_before);
}

TEST(CApi, ZeroCopyForInt32AndInt64Coordinates) {
  zero_copy_case<int32_t>(SJ_INDEX_INT32);
  zero_copy_case<int64_t>(SJ_INDEX_INT64);
}

TEST(CApi, ShapeTypeAndScheduleErrors) {
  Ctx ctx;
  Csr m = small();  // 2x3
  T a, c, f;
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, m.rows, m.cols, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), 0, &a.t),
            SJ_OK);
  std::vector<float> fv{1, 2, 3};
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, m.rows, m.cols, SJ_INDEX_INT32, SJ_VALUE_F32, m.pos.data(), m.crd.data(),
                                 fv.data(), 0, &f.t),
            SJ_OK);
  EXPECT_EQ(sj_spgemm(ctx.c, a.t, a.t, nullptr, &c.t), SJ_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(msg(), "spgemm: A is 2x3 but B is 2x3 (columns of A must equal rows of B)");
  sj_op_options o;
  sj_op_options_init(&o);
  o.transpose_b = 1;
  EXPECT_EQ(sj_spgemm(ctx.c, a.t, a.t, &o, &c.t), SJ_OK) << msg();
  EXPECT_EQ(sj_ewise_mult(ctx.c, a.t, f.t, nullptr, &c.t), SJ_ERR_TYPE_MISMATCH);
  EXPECT_EQ(sj_ewise_add(ctx.c, a.t, a.t, &o, &c.t), SJ_ERR_SHAPE_MISMATCH);
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_PUSH;  // a SpMSpV schedule cannot serve an element-wise product
  T d;
  EXPECT_EQ(sj_ewise_mult(ctx.c, a.t, a.t, &o, &d.t), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("schedule 'push' cannot serve ewise-mult"), std::string::npos) << msg();
  o.schedule = static_cast<sj_schedule>(99);
  EXPECT_EQ(sj_ewise_mult(ctx.c, a.t, a.t, &o, &d.t), SJ_ERR_INVALID_ARGUMENT);
  sj_op_options_init(&o);
  o.struct_size = 0;
  EXPECT_EQ(sj_ewise_mult(ctx.c, a.t, a.t, &o, &d.t), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("sj_op_options_init"), std::string::npos);
  // A vector where a matrix belongs.
  T x;
  std::vector<int64_t> xi{0};
  std::vector<double> xv{1};
  ASSERT_EQ(sj_tensor_create_sparse_vector(ctx.c, 3, 1, SJ_INDEX_INT64, SJ_VALUE_F64, xi.data(), xv.data(), 0, &x.t), SJ_OK);
  EXPECT_EQ(sj_spgemm(ctx.c, a.t, x.t, nullptr, &d.t), SJ_ERR_FORMAT);
  EXPECT_EQ(sj_spmspv(ctx.c, a.t, a.t, nullptr, &d.t), SJ_ERR_FORMAT);
  EXPECT_EQ(d.t, nullptr);
}

TEST(CApi, ContextRefusesDestroyWhileTensorsLive) {
  sj_context* c = nullptr;
  ASSERT_EQ(sj_context_create(nullptr, &c), SJ_OK);
  Csr m = small();
  sj_tensor* t = nullptr;
  ASSERT_EQ(sj_tensor_create_csr(c, m.rows, m.cols, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), 0, &t),
            SJ_OK);
  EXPECT_EQ(sj_context_destroy(c), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg().find("1 tensors"), std::string::npos);
  sj_tensor_destroy(t);
  EXPECT_EQ(sj_context_destroy(c), SJ_OK);
}

// Counting allocator hooks, and one that fails after a number of allocations.
struct Counting {
  std::atomic<int64_t> live{0}, total{0};
  int64_t fail_after = -1;
};
void* counting_alloc(size_t size, size_t align, void* user) {
  auto* c = static_cast<Counting*>(user);
  if (c->fail_after >= 0 && c->total >= c->fail_after) return nullptr;
  ++c->total;
  ++c->live;
  return std::aligned_alloc(align, size);
}
void counting_free(void* p, size_t, void* user) {
  --static_cast<Counting*>(user)->live;
  std::free(p);
}

TEST(CApi, AllocatorHooksServeResultsAndFailuresAreClean) {
  Counting counts;
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.allocator = {counting_alloc, counting_free, &counts};
  sj_context* c = nullptr;
  ASSERT_EQ(sj_context_create(&cfg, &c), SJ_OK);
  {
    Csr m = small();
    T a, r;
    ASSERT_EQ(sj_tensor_create_csr(c, m.rows, m.cols, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                   m.val.data(), 0, &a.t),
              SJ_OK);
    sj_op_options o;
    sj_op_options_init(&o);
    o.transpose_b = 1;
    ASSERT_EQ(sj_spgemm(c, a.t, a.t, &o, &r.t), SJ_OK);
    EXPECT_GT(counts.live.load(), 0);
    // Every allocation site failing in turn: a clean SJ_ERR_OUT_OF_MEMORY, no output, no leak.
    for (int64_t k = 0; k < 12; ++k) {
      int64_t before = counts.live;
      counts.total = 0;
      counts.fail_after = k;
      sj_tensor* out = reinterpret_cast<sj_tensor*>(0x99);
      sj_status s = sj_spgemm(c, a.t, a.t, &o, &out);
      counts.fail_after = -1;
      if (s == SJ_OK) {
        sj_tensor_destroy(out);
        continue;
      }
      EXPECT_EQ(s, SJ_ERR_OUT_OF_MEMORY) << msg();
      EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x99));
      EXPECT_EQ(counts.live.load(), before);
    }
  }
  EXPECT_EQ(counts.live.load(), 0);
  EXPECT_EQ(sj_context_destroy(c), SJ_OK);
}

TEST(CApi, FilesReadWriteAndErrors) {
  Ctx ctx;
  T t;
  EXPECT_EQ(sj_tensor_read_file(ctx.c, "/nonexistent/x.mtx", &t.t), SJ_ERR_IO);
  EXPECT_NE(msg().find("/nonexistent/x.mtx"), std::string::npos) << msg();
  EXPECT_EQ(sj_tensor_read_file(ctx.c, "/etc/hostname.csv", &t.t), SJ_ERR_INVALID_ARGUMENT);
  auto dir = std::filesystem::temp_directory_path() / ("sj_capi_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "bad.mtx") << "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n";
  }
  EXPECT_EQ(sj_tensor_read_file(ctx.c, (dir / "bad.mtx").c_str(), &t.t), SJ_ERR_PARSE);
  EXPECT_NE(msg().find(":3:"), std::string::npos) << msg();
  ASSERT_EQ(sj_tensor_read_file(ctx.c, sj::test::repo_data("lp_afiro.mtx").c_str(), &t.t), SJ_OK) << msg();
  ASSERT_EQ(sj_tensor_write_file(ctx.c, t.t, (dir / "out.mtx").c_str()), SJ_OK) << msg();
  T back;
  ASSERT_EQ(sj_tensor_read_file(ctx.c, (dir / "out.mtx").c_str(), &back.t), SJ_OK) << msg();
  const void *v1, *v2;
  int64_t n1, n2;
  sj_tensor_get_values(t.t, &v1, &n1);
  sj_tensor_get_values(back.t, &v2, &n2);
  ASSERT_EQ(n1, n2);
  EXPECT_EQ(std::memcmp(v1, v2, n1 * sizeof(double)), 0);
  std::filesystem::remove_all(dir);
}

struct LogSink {
  std::vector<std::pair<sj_log_level, std::string>> messages;
};
void collect_log(sj_log_level level, const char* message, void* user) {
  static_cast<LogSink*>(user)->messages.push_back({level, message});
}

TEST(CApi, LogCallbackReceivesMessagesAtTheConfiguredLevel) {
  for (sj_log_level level : {SJ_LOG_DEBUG, SJ_LOG_ERROR}) {
    LogSink sink;
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.log_level = level;
    cfg.log_callback = collect_log;
    cfg.log_user = &sink;
    sj_context* c = nullptr;
    ASSERT_EQ(sj_context_create(&cfg, &c), SJ_OK);
    {
      T a, r;
      ASSERT_EQ(sj_tensor_read_file(c, sj::test::repo_data("karate.mtx").c_str(), &a.t), SJ_OK);
      ASSERT_EQ(sj_spgemm(c, a.t, a.t, nullptr, &r.t), SJ_OK);
    }
    sj_context_destroy(c);
    if (std::getenv("SPARSEJIT_LOG")) continue;  // the environment overrides the config
    if (level == SJ_LOG_DEBUG) {
      ASSERT_FALSE(sink.messages.empty());
      EXPECT_NE(sink.messages[0].second.find("plan spgemm: chose"), std::string::npos) << sink.messages[0].second;
      EXPECT_EQ(sink.messages[0].first, SJ_LOG_DEBUG);
    } else {
      EXPECT_TRUE(sink.messages.empty()) << "by default only errors are logged";
    }
  }
}

// ---------------------------------------------------------------------------------------
// Every operation through the C API, inputs in every format, against a dense brute force.

// A dense image that keeps its shape even with zero rows; NaN = not stored.
struct Dense {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Dense(int64_t r, int64_t c, double fill = NAN) : rows(r), cols(c), v(r * c, fill) {}
  double& at(int64_t i, int64_t j) { return v[i * cols + j]; }
  double at(int64_t i, int64_t j) const { return v[i * cols + j]; }
};

Dense dense_of(const sj::Tensor& t) {
  Dense d(t.dims[0], t.order == 2 ? t.dims[1] : 1);
  sj::CooTensor c = sj::to_coo(t);
  for (int64_t e = 0; e < c.nnz(); ++e) d.at(c.coords[0][e], t.order == 2 ? c.coords[1][e] : 0) = c.values[e];
  return d;
}

Dense transpose_dense(const Dense& a) {
  Dense t(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) t.at(j, i) = a.at(i, j);
  return t;
}

// The product over a semiring, summing in increasing k from the first product.
template <class S> Dense multiply(const Dense& a, const Dense& b, const Dense* mask) {
  Dense c(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < b.cols; ++j) {
      if (mask && std::isnan(mask->at(i, j))) continue;
      bool any = false;
      double acc = 0;
      for (int64_t k = 0; k < a.cols; ++k) {
        if (std::isnan(a.at(i, k)) || std::isnan(b.at(k, j))) continue;
        double p = S::mul(a.at(i, k), b.at(k, j));
        acc = any ? S::add(acc, p) : p;
        any = true;
      }
      if (any) c.at(i, j) = acc;
    }
  return c;
}

sj_tensor* handle_in_format(sj_context* ctx, const sj::Tensor& csr, sj_format f) {
  sj_tensor* h = nullptr;
  auto pos = csr.levels[1].pos.as<int64_t>();
  EXPECT_EQ(sj_tensor_create_csr(ctx, csr.dims[0], csr.dims[1], SJ_INDEX_INT32, SJ_VALUE_F64, pos,
                                 csr.levels[1].crd.data(), csr.values.data(), SJ_TENSOR_COPY, &h),
            SJ_OK)
      << msg();
  if (f == SJ_FORMAT_CSR) return h;
  sj_tensor* c = nullptr;
  EXPECT_EQ(sj_tensor_convert(ctx, h, f, nullptr, f == SJ_FORMAT_COO ? SJ_INDEX_INT64 : SJ_INDEX_INT32, &c), SJ_OK) << msg();
  sj_tensor_destroy(h);
  return c;
}

void expect_same(const Dense& want, const sj::Tensor& got, const std::string& what) {
  Dense g = dense_of(got);
  ASSERT_EQ(g.rows, want.rows) << what;
  ASSERT_EQ(g.cols, want.cols) << what;
  for (int64_t i = 0; i < want.rows; ++i)
    for (int64_t j = 0; j < want.cols; ++j) {
      if (std::isnan(want.at(i, j))) EXPECT_TRUE(std::isnan(g.at(i, j))) << what << " (" << i << "," << j << ") should be empty";
      else EXPECT_EQ(g.at(i, j), want.at(i, j)) << what << " (" << i << "," << j << ")";
    }
}

TEST(CApi, EveryOperationAndInputFormatMatchesBruteForce) {
  Ctx ctx;
  Rng rng(2024);
  const sj_format formats[] = {SJ_FORMAT_CSR, SJ_FORMAT_CSC, SJ_FORMAT_DCSR, SJ_FORMAT_COO};
  for (int round = 0; round < 24; ++round) {
    int64_t m = rng.uniform_int(0, 7), k = rng.uniform_int(0, 7), n = rng.uniform_int(0, 7);
    auto ra = sj::test::random_matrix<int32_t, double>(rng, m, k);
    auto rb = sj::test::random_matrix<int32_t, double>(rng, k, n);
    auto rc = sj::test::random_matrix<int32_t, double>(rng, m, k);
    auto rmask = sj::test::random_matrix<int32_t, double>(rng, m, n);
    sj::Tensor A = sj::to_tensor(sj::default_allocator(), true, ra, sj::ValueType::F64);
    sj::Tensor B = sj::to_tensor(sj::default_allocator(), true, rb, sj::ValueType::F64);
    sj::Tensor C = sj::to_tensor(sj::default_allocator(), true, rc, sj::ValueType::F64);
    sj::Tensor M = sj::to_tensor(sj::default_allocator(), true, rmask, sj::ValueType::F64);
    Dense da = dense_of(A), db = dense_of(B), dc = dense_of(C), dm = dense_of(M);
    sj_format fa = formats[round % 4], fb = formats[(round / 4) % 4];
    T a{handle_in_format(ctx.c, A, fa)}, b{handle_in_format(ctx.c, B, fb)}, c{handle_in_format(ctx.c, C, fb)},
        mk{handle_in_format(ctx.c, M, fa)};
    std::string where = "round " + std::to_string(round);
    sj_op_options o;
    sj_op_options_init(&o);
    for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES}) {
      o.semiring = s;
      T r;
      ASSERT_EQ(sj_spgemm(ctx.c, a.t, b.t, &o, &r.t), SJ_OK) << msg();
      sj::with_semiring<double>(s, [&](auto sr) {
        expect_same(multiply<decltype(sr)>(da, db, nullptr), r.t->t, where + " spgemm");
      });
      T rm;
      ASSERT_EQ(sj_spgemm_masked(ctx.c, mk.t, a.t, b.t, &o, &rm.t), SJ_OK) << msg();
      sj::with_semiring<double>(s, [&](auto sr) {
        expect_same(multiply<decltype(sr)>(da, db, &dm), rm.t->t, where + " masked");
      });
    }
    o.semiring = SJ_SEMIRING_PLUS_TIMES;
    // A^T * C (both m x k): transposed operand.
    o.transpose_a = 1;
    T rt;
    ASSERT_EQ(sj_spgemm(ctx.c, a.t, c.t, &o, &rt.t), SJ_OK) << msg();
    expect_same(multiply<sj::PlusTimes<double>>(transpose_dense(da), dc, nullptr), rt.t->t, where + " A^T C");
    o.transpose_a = 0;
    // Element-wise products and sums, B = C (same shape as A), and with a transposed operand.
    T em, ea;
    ASSERT_EQ(sj_ewise_mult(ctx.c, a.t, c.t, &o, &em.t), SJ_OK) << msg();
    ASSERT_EQ(sj_ewise_add(ctx.c, a.t, c.t, &o, &ea.t), SJ_OK) << msg();
    Dense want_m(m, k), want_a(m, k);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j) {
        double x = da.at(i, j), y = dc.at(i, j);
        if (!std::isnan(x) && !std::isnan(y)) want_m.at(i, j) = x * y;
        want_a.at(i, j) = !std::isnan(x) && !std::isnan(y) ? x + y : !std::isnan(x) ? x : y;
      }
    expect_same(want_m, em.t->t, where + " ewise-mult");
    expect_same(want_a, ea.t->t, where + " ewise-add");
    if (m == k) {
      o.transpose_b = 1;
      T et;
      ASSERT_EQ(sj_ewise_mult(ctx.c, a.t, a.t, &o, &et.t), SJ_OK) << msg();
      Dense want_t(m, k);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j)
          if (!std::isnan(da.at(i, j)) && !std::isnan(da.at(j, i))) want_t.at(i, j) = da.at(i, j) * da.at(j, i);
      expect_same(want_t, et.t->t, where + " A o A^T");
      o.transpose_b = 0;
    }
    // SpMSpV and SpMV with x the first column of B (length k), sparse and dense results.
    if (n > 0) {
      std::vector<int64_t> xi;
      std::vector<double> xv;
      for (int64_t j = 0; j < k; ++j)
        if (!std::isnan(db.at(j, 0))) xi.push_back(j), xv.push_back(db.at(j, 0));
      T x, y, yd, xd, ymv;
      ASSERT_EQ(sj_tensor_create_sparse_vector(ctx.c, k, xi.size(), SJ_INDEX_INT64, SJ_VALUE_F64, xi.data(), xv.data(), 0, &x.t), SJ_OK);
      ASSERT_EQ(sj_spmspv(ctx.c, a.t, x.t, &o, &y.t), SJ_OK) << msg();
      Dense col(k, 1);
      for (size_t p = 0; p < xi.size(); ++p) col.at(xi[p], 0) = xv[p];
      Dense want_y = multiply<sj::PlusTimes<double>>(da, col, nullptr);
      expect_same(want_y, y.t->t, where + " spmspv");
      o.dense_output = 1;
      ASSERT_EQ(sj_spmspv(ctx.c, a.t, x.t, &o, &yd.t), SJ_OK) << msg();
      o.dense_output = 0;
      Dense want_yd = want_y;
      for (auto& r : want_yd.v) if (std::isnan(r)) r = 0;
      expect_same(want_yd, yd.t->t, where + " spmspv dense");
      ASSERT_EQ(sj_tensor_convert(ctx.c, x.t, SJ_FORMAT_DENSE, nullptr, SJ_INDEX_INT32, &xd.t), SJ_OK) << msg();
      ASSERT_EQ(sj_spmv(ctx.c, a.t, xd.t, &o, &ymv.t), SJ_OK) << msg();
      Dense colz(k, 1, 0.0);
      for (size_t p = 0; p < xi.size(); ++p) colz.at(xi[p], 0) = xv[p];
      Dense want_mv = multiply<sj::PlusTimes<double>>(da, colz, nullptr);
      for (auto& r : want_mv.v) if (std::isnan(r)) r = 0;
      expect_same(want_mv, ymv.t->t, where + " spmv");
    }
    // Transpose keeps the named format.
    T at;
    ASSERT_EQ(sj_transpose(ctx.c, a.t, &at.t), SJ_OK) << msg();
    sj_tensor_info ti;
    sj_tensor_get_info(at.t, &ti);
    EXPECT_EQ(ti.format, fa);
    expect_same(transpose_dense(da), at.t->t, where + " transpose");
  }
}

TEST(CApi, PlansExecuteRepeatedlyAndExplain) {
  Ctx ctx;
  T a;
  ASSERT_EQ(sj_tensor_read_file(ctx.c, sj::test::repo_data("cage8.mtx").c_str(), &a.t), SJ_OK) << msg();
  const sj_tensor* ops[2] = {a.t, a.t};
  sj_plan* plan = nullptr;
  ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, ops, 2, nullptr, &plan), SJ_OK) << msg();
  T r1, r2;
  ASSERT_EQ(sj_plan_execute(plan, ops, 2, &r1.t), SJ_OK) << msg();
  ASSERT_EQ(sj_plan_execute(plan, ops, 2, &r2.t), SJ_OK) << msg();
  const void *v1, *v2;
  int64_t n1, n2;
  sj_tensor_get_values(r1.t, &v1, &n1);
  sj_tensor_get_values(r2.t, &v2, &n2);
  ASSERT_EQ(n1, n2);
  EXPECT_EQ(std::memcmp(v1, v2, n1 * 8), 0);
  const char* json = nullptr;
  ASSERT_EQ(sj_plan_explain(plan, &json), SJ_OK);
  std::string j = json;
  EXPECT_NE(j.find("\"chosen\":"), std::string::npos) << j;
  EXPECT_NE(j.find("\"candidates\":"), std::string::npos) << j;
  EXPECT_NE(j.find("\"executions\":2"), std::string::npos) << j;
  const char* text = nullptr;
  ASSERT_EQ(sj_plan_explain_text(plan, &text), SJ_OK);
  std::string tx = text;
  EXPECT_NE(tx.find("plan for spgemm"), std::string::npos) << tx;
  EXPECT_NE(tx.find("chosen: "), std::string::npos) << tx;
  EXPECT_NE(tx.find("multiplies (flops): 129443"), std::string::npos) << tx;
  // An operand of another shape is refused.
  T other;
  ASSERT_EQ(sj_tensor_read_file(ctx.c, sj::test::repo_data("west0479.mtx").c_str(), &other.t), SJ_OK);
  const sj_tensor* wrong[2] = {other.t, other.t};
  T r3;
  EXPECT_EQ(sj_plan_execute(plan, wrong, 2, &r3.t), SJ_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(sj_plan_execute(plan, ops, 1, &r3.t), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(r3.t, nullptr);
  EXPECT_EQ(sj_plan_destroy(plan), SJ_OK);
}

// SpGEMM on every real matrix against an independent map-based product.
TEST(CApi, SpgemmOnEveryRealMatrixMatchesIndependentProduct) {
  auto files = sj::test::shared_matrices();
  if (files.empty()) GTEST_SKIP() << "../shared/data/matrices not present";
  Ctx ctx;
  for (auto& f : files) {
    sj::Tensor A = sj::read_tensor_file(f.string(), sj::default_allocator());
    if (A.nnz() > 120000) continue;  // keep the suite quick; the CLI test covers the biggest
    bool square = A.dims[0] == A.dims[1];
    sj::CooTensor c = sj::to_coo(A);
    // rows of B = A (square) or A^T: map k -> list of (j, v)
    std::vector<std::vector<std::pair<int64_t, double>>> brow(A.dims[square ? 0 : 1]);
    for (int64_t e = 0; e < c.nnz(); ++e) {
      if (square) brow[c.coords[0][e]].push_back({c.coords[1][e], c.values[e]});
      else brow[c.coords[1][e]].push_back({c.coords[0][e], c.values[e]});
    }
    std::vector<std::map<int64_t, double>> want(A.dims[0]);
    for (int64_t e = 0; e < c.nnz(); ++e)  // entries come row by row, k increasing
      for (auto [j, v] : brow[c.coords[1][e]]) {
        auto [it, fresh] = want[c.coords[0][e]].try_emplace(j, c.values[e] * v);
        if (!fresh) it->second += c.values[e] * v;
      }
    T a, r;
    ASSERT_EQ(sj_tensor_read_file(ctx.c, f.c_str(), &a.t), SJ_OK) << msg();
    sj_op_options o;
    sj_op_options_init(&o);
    o.transpose_b = !square;
    ASSERT_EQ(sj_spgemm(ctx.c, a.t, a.t, &o, &r.t), SJ_OK) << msg();
    sj::CooTensor got = sj::to_coo(r.t->t);
    int64_t expected_nnz = 0;
    for (auto& row : want) expected_nnz += row.size();
    ASSERT_EQ(got.nnz(), expected_nnz) << f;
    for (int64_t e = 0; e < got.nnz(); ++e) {
      double w = want[got.coords[0][e]].at(got.coords[1][e]);
      EXPECT_NEAR(got.values[e], w, 1e-12 * (1 + std::abs(w))) << f << " entry " << e;
    }
  }
}

}  // namespace

namespace {

TEST(CApi, UnsafeCacheFolderIsRefusedAtContextCreation) {
  auto dir = std::filesystem::temp_directory_path() / ("sj_cache_unsafe_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::all);  // 0777: anyone may plant entries
  sj_config cfg;
  sj_config_init(&cfg);
  std::string d = dir.string();
  cfg.cache_dir = d.c_str();
  sj_context* c = reinterpret_cast<sj_context*>(0x77);
  EXPECT_EQ(sj_context_create(&cfg, &c), SJ_ERR_CACHE);
  EXPECT_NE(msg().find("writable by"), std::string::npos) << msg();
  EXPECT_EQ(c, reinterpret_cast<sj_context*>(0x77));
  // The same folder made private is accepted; disabling the disk cache skips the check.
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  ASSERT_EQ(sj_context_create(&cfg, &c), SJ_OK) << msg();
  sj_context_destroy(c);
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  cfg.disable_disk_cache = 1;
  ASSERT_EQ(sj_context_create(&cfg, &c), SJ_OK) << msg();
  sj_context_destroy(c);
  std::filesystem::remove_all(dir);
}

}  // namespace

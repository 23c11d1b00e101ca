// The operand list of one call (src/operand_list.hpp): borrowed operands are never copied,
// owned ones survive copies and moves of the list, and prepare() borrows what needs no
// conversion (the reason a repeated drop-in call copies no tensor).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "src/allocator.hpp"
#include "src/derived_forms.hpp"
#include "src/error.hpp"
#include "src/operand_list.hpp"
#include "src/operation.hpp"
#include "src/tensor.hpp"

namespace {

using sj::OperandList;
using sj::Tensor;

// A sparse vector with entries at 1 and 3 whose handle-like forms let a test count copies:
// every Tensor copy shares `derived`, so its use count is the number of live copies.
Tensor vector_with_forms(double v) {
  Tensor t = sj::make_sparse_vector(sj::default_allocator(), 5, 2, sj::IndexType::I32, sj::ValueType::F64);
  t.levels[0].crd.as_mut<int32_t>()[0] = 1;
  t.levels[0].crd.as_mut<int32_t>()[1] = 3;
  t.values.as_mut<double>()[0] = v;
  t.values.as_mut<double>()[1] = 2 * v;
  t.derived = std::make_shared<sj::DerivedForms>();
  return t;
}

// A 2 x 5 CSR matrix (i32) over the caller's arrays (borrowed).
Tensor borrowed_csr_2x5(const int64_t (&pos)[3], const int32_t* crd, const double* val) {
  Tensor A;
  A.order = 2;
  A.dims = {2, 5, 0, 0};
  A.levels.resize(2);
  A.levels[0].kind = sj::LevelKind::Dense;
  A.levels[1].kind = sj::LevelKind::Compressed;
  A.levels[1].pos = sj::Buffer::borrow(pos, sizeof pos);
  A.levels[1].crd = sj::Buffer::borrow(crd, sizeof(int32_t) * pos[2]);
  A.values = sj::Buffer::borrow(val, sizeof(double) * pos[2]);
  return A;
}

// An SpMSpV request with default options that borrows A and x.
sj::OpRequest spmspv_request(const Tensor& A, const Tensor& x) {
  sj::OpRequest req;
  req.op = SJ_OP_SPMSPV;
  req.options = sj::default_options();
  req.operands.borrow(A);
  req.operands.borrow(x);
  return req;
}

TEST(OperandList, BorrowingCopiesNothingAndKeepsTheAddress) {
  Tensor a = vector_with_forms(1), b = vector_with_forms(2);
  OperandList l;
  l.borrow(a);
  l.borrow(b);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(&l[0], &a);
  EXPECT_EQ(&l[1], &b);
  EXPECT_EQ(a.derived.use_count(), 1);
  OperandList copy = l;  // a copy keeps borrowing
  EXPECT_EQ(&copy[0], &a);
  EXPECT_EQ(a.derived.use_count(), 1);
  size_t n = 0;
  for (const Tensor& t : copy) EXPECT_EQ(&t, n++ == 0 ? &a : &b);
  EXPECT_EQ(n, 2u);
}

TEST(OperandList, OwnedOperandsSurviveCopiesAndMovesOfTheList) {
  Tensor a = vector_with_forms(1);
  OperandList l;
  l.push_back(a);  // one owned copy
  l.borrow(a);
  EXPECT_EQ(a.derived.use_count(), 2);
  EXPECT_NE(&l[0], &a);
  EXPECT_EQ(&l[1], &a);
  {
    OperandList copy = l;
    EXPECT_EQ(a.derived.use_count(), 3);
    EXPECT_NE(&copy[0], &l[0]);  // its own copy, not the source's storage
    EXPECT_EQ(copy[0].values.as<double>()[1], 2.0);
    OperandList moved = std::move(copy);
    EXPECT_EQ(a.derived.use_count(), 3);
    EXPECT_EQ(copy.size(), 0u);
    // The moved list's owned operand lives in the moved list: reading it after the source
    // is gone is what a dangling pointer into the source would break.
    const Tensor* inside = &moved[0];
    EXPECT_TRUE(reinterpret_cast<const char*>(inside) >= reinterpret_cast<const char*>(&moved) &&
                reinterpret_cast<const char*>(inside) < reinterpret_cast<const char*>(&moved + 1));
    EXPECT_EQ(&moved[1], &a);
  }
  EXPECT_EQ(a.derived.use_count(), 2);
  l.set(1, vector_with_forms(7));  // replaces a borrowed operand with an owned one
  EXPECT_EQ(l[1].values.as<double>()[0], 7.0);
  l.set(0, vector_with_forms(9));  // replaces an owned one: its copy of `a` is released
  EXPECT_EQ(a.derived.use_count(), 1);
  l.clear();
  EXPECT_TRUE(l.empty());
}

TEST(OperandList, AFourthOperandIsRefused) {
  Tensor a = vector_with_forms(1);
  OperandList l{a, a, a};
  try {
    l.borrow(a);
    FAIL() << "a fourth operand was accepted";
  } catch (const sj::Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(l.size(), 3u);
}

TEST(OperandList, PrepareBorrowsOperandsThatNeedNoConversion) {
  // A as CSR (i32) and x as a sparse vector (i32): nothing to convert, both borrowed.
  const int64_t pos[3] = {0, 1, 2};
  const int32_t crd[2] = {0, 4};
  const double val[2] = {1, 2};
  Tensor A = borrowed_csr_2x5(pos, crd, val);
  Tensor x = vector_with_forms(1);
  sj::OpRequest req = spmspv_request(A, x);
  sj::PreparedOperands p = sj::prepare(req, sj::default_allocator());
  EXPECT_EQ(&p.operands[0], &A);
  EXPECT_EQ(&p.operands[1], &x);
  EXPECT_EQ(x.derived.use_count(), 1);
  // With transpose_a, A^T is made for the call (owned); the request's tensors are untouched.
  req.options.transpose_a = 1;
  sj::PreparedOperands q = sj::prepare(req, sj::default_allocator());
  EXPECT_NE(&q.operands[0], &A);
  EXPECT_EQ(q.operands[0].dims[0], 5);
  EXPECT_EQ(q.operands[0].dims[1], 2);
}

// Mixed coordinate types: kernels run in the type that most stored coordinates already have,
// so an i32 matrix with an i64 vector converts the vector (O(nnz x) per call), not the matrix
// (a kept copy of A, which took 55 ms for 2M entries on a first call); the result keeps the
// documented default type, i64 when any operand has it.
TEST(OperandList, PrepareConvertsTheSmallerOperandOfMixedIndexTypes) {
  const int64_t pos[3] = {0, 2, 3};
  const int32_t crd[3] = {0, 4, 2};
  const double val[3] = {1, 2, 3};
  Tensor A = borrowed_csr_2x5(pos, crd, val);
  A.derived = std::make_shared<sj::DerivedForms>();
  Tensor x = sj::make_sparse_vector(sj::default_allocator(), 5, 1, sj::IndexType::I64, sj::ValueType::F64);
  x.levels[0].crd.as_mut<int64_t>()[0] = 4;
  x.values.as_mut<double>()[0] = 0.5;
  sj::OpRequest req = spmspv_request(A, x);
  sj::PreparedOperands p = sj::prepare(req, sj::default_allocator());
  EXPECT_EQ(p.index_type, sj::IndexType::I32);
  EXPECT_EQ(p.result_index_type, sj::IndexType::I64);
  EXPECT_EQ(&p.operands[0], &A);  // A borrowed, no copy kept on its handle
  EXPECT_TRUE(A.derived->forms.empty());
  EXPECT_EQ(p.operands[1].index_type, sj::IndexType::I32);
  EXPECT_EQ(p.operands[1].levels[0].crd.as<int32_t>()[0], 4);

  // A vector with more coordinates than the matrix wins the vote.
  Tensor big = sj::make_sparse_vector(sj::default_allocator(), 5, 4, sj::IndexType::I64, sj::ValueType::F64);
  sj::OperandList ops;
  ops.borrow(A);
  ops.borrow(big);
  EXPECT_EQ(sj::compute_index_type(ops), sj::IndexType::I64);
  // A dense operand stores no coordinates and does not vote.
  const int64_t n = 5;
  Tensor dense = sj::make_dense(sj::default_allocator(), 1, &n, sj::ValueType::F64);
  dense.index_type = sj::IndexType::I64;
  sj::OperandList with_dense;
  with_dense.borrow(A);
  with_dense.borrow(dense);
  EXPECT_EQ(sj::compute_index_type(with_dense), sj::IndexType::I32);
  // A dimension of 2^31 or more needs i64 whatever the vote; 2^31 - 1 fits i32.
  Tensor wide = sj::make_sparse_vector(sj::default_allocator(), INT32_MAX, 0, sj::IndexType::I32,
                                       sj::ValueType::F64);
  sj::OperandList at_limit;
  at_limit.borrow(A);
  at_limit.borrow(wide);
  EXPECT_EQ(sj::compute_index_type(at_limit), sj::IndexType::I32);
  wide.dims[0] = int64_t{1} << 31;
  EXPECT_EQ(sj::compute_index_type(at_limit), sj::IndexType::I64);
}

}  // namespace

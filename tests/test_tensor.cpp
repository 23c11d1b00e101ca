// Formats, validation messages and conversions between every format.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <map>

#include "src/convert.hpp"
#include "src/error.hpp"
#include "src/tensor_file.hpp"
#include "tests/random_matrices.hpp"
#include "tests/test_util.hpp"

namespace sj {
namespace {

Tensor csr_over(int64_t rows, int64_t cols, std::vector<int64_t>& pos, std::vector<int32_t>& crd,
                std::vector<double>& val) {
  Tensor t;
  t.order = 2;
  t.dims = {rows, cols};
  t.levels.resize(2);
  t.levels[0].kind = LevelKind::Dense;
  t.levels[1].kind = LevelKind::Compressed;
  t.levels[1].pos = Buffer::borrow(pos.data(), pos.size() * 8);
  t.levels[1].crd = Buffer::borrow(crd.data(), crd.size() * 4);
  t.values = Buffer::borrow(val.data(), val.size() * 8);
  return t;
}

// A 3-D coordinate list with each position stored with probability 0.3 (values 1..9), in
// lexicographic order.
CooTensor random_coo3(test::Rng& rng, const std::array<int64_t, 3>& dims) {
  CooTensor c;
  c.order = 3;
  c.dims = {dims[0], dims[1], dims[2]};
  for (int64_t i = 0; i < dims[0]; ++i)
    for (int64_t j = 0; j < dims[1]; ++j)
      for (int64_t k = 0; k < dims[2]; ++k)
        if (rng.bernoulli(0.3)) {
          c.coords[0].push_back(i);
          c.coords[1].push_back(j);
          c.coords[2].push_back(k);
          c.values.push_back(static_cast<double>(rng.uniform_int(1, 9)));
        }
  return c;
}

// The same entries, in the same order (coordinates of every mode and values).
void expect_same_entries(const CooTensor& got, const CooTensor& want) {
  ASSERT_EQ(got.order, want.order);
  for (int m = 0; m < got.order; ++m) EXPECT_EQ(got.coords[m], want.coords[m]) << "mode " << m;
  EXPECT_EQ(got.values, want.values);
}

std::string validation_message(const Tensor& t) {
  try {
    validate(t);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_INVALID_TENSOR) << e.what();
    return e.what();
  }
  return "";
}

TEST(Tensor, ValidCsrPasses) {
  std::vector<int64_t> pos{0, 2, 2, 3};
  std::vector<int32_t> crd{0, 3, 1};
  std::vector<double> val{1, 2, 3};
  Tensor t = csr_over(3, 4, pos, crd, val);
  EXPECT_NO_THROW(validate(t));
  EXPECT_EQ(t.nnz(), 3);
  EXPECT_EQ(t.named_format(), SJ_FORMAT_CSR);
  EXPECT_FALSE(t.owns_arrays());
}

TEST(Tensor, UnsortedColumnNamesRowAndColumns) {
  std::vector<int64_t> pos(19, 0);
  for (int i = 0; i < 17; ++i) pos[i + 1] = 0;
  pos[18] = 2;  // row 17 holds two entries
  std::vector<int32_t> crd{9, 5};
  std::vector<double> val{1, 2};
  Tensor t = csr_over(18, 20, pos, crd, val);
  EXPECT_EQ(validation_message(t), "row 17: column 5 follows 9 (coordinates must be sorted)");
}

TEST(Tensor, DuplicateColumn) {
  std::vector<int64_t> pos{0, 2};
  std::vector<int32_t> crd{4, 4};
  std::vector<double> val{1, 2};
  EXPECT_EQ(validation_message(csr_over(1, 5, pos, crd, val)), "row 0: column 4 appears twice (coordinates must be unique)");
}

TEST(Tensor, OutOfRangeAndNegativeColumn) {
  std::vector<int64_t> pos{0, 1, 2};
  std::vector<int32_t> crd{1, 7};
  std::vector<double> val{1, 2};
  EXPECT_EQ(validation_message(csr_over(2, 5, pos, crd, val)), "row 1: column 7 out of range [0, 5)");
  crd[1] = -1;
  EXPECT_EQ(validation_message(csr_over(2, 5, pos, crd, val)), "row 1: column -1 out of range [0, 5)");
}

TEST(Tensor, NonMonotonePositions) {
  std::vector<int64_t> pos{0, 2, 1, 2};
  std::vector<int32_t> crd{0, 1};
  std::vector<double> val{1, 2};
  EXPECT_EQ(validation_message(csr_over(3, 5, pos, crd, val)),
            "row 1: position 1 is less than 2 (positions must be non-decreasing)");
  pos = {1, 2, 2, 2};
  EXPECT_NE(validation_message(csr_over(3, 5, pos, crd, val)).find("positions must start at 0"), std::string::npos);
}

TEST(Tensor, CscMessagesSayColumnThenRow) {
  Tensor t;
  std::vector<int64_t> pos{0, 0, 2};
  std::vector<int32_t> crd{3, 1};
  std::vector<double> val{1, 2};
  t = csr_over(5, 2, pos, crd, val);
  t.mode_order = {1, 0, 2, 3};
  EXPECT_EQ(validation_message(t), "column 1: row 1 follows 3 (coordinates must be sorted)");
}

TEST(Tensor, DimensionTooLargeForI32) {
  std::vector<int64_t> pos{0, 0};
  std::vector<int32_t> crd;
  std::vector<double> val;
  Tensor t = csr_over(1, int64_t{1} << 32, pos, crd, val);
  try {
    validate(t);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_OVERFLOW);
  }
}

TEST(Tensor, CoordinatesAtTheInt32Limit) {
  std::vector<int64_t> pos{0, 2};
  std::vector<int32_t> crd{INT32_MAX - 1, INT32_MAX};
  std::vector<double> val{1, 2};
  Tensor t = csr_over(1, int64_t{INT32_MAX} + 1, pos, crd, val);
  EXPECT_NO_THROW(validate(t));
  // DCSR has no dense level over the 2^31 columns, so this converts in O(nnz).
  Tensor d = convert(t, format_spec(SJ_FORMAT_DCSR, 2), IndexType::I32, default_allocator());
  EXPECT_NO_THROW(validate(d));
  EXPECT_EQ(to_coo(d).coords[1], (std::vector<int64_t>{INT32_MAX - 1, INT32_MAX}));
}

TEST(Tensor, CooAndCsfMessages) {
  // COO: rows non-decreasing (non-unique level), columns sorted within a row (singleton level).
  std::vector<int64_t> pos{0, 3};
  std::vector<int64_t> rows{0, 1, 1}, cols{2, 4, 3};
  std::vector<double> val{1, 2, 3};
  Tensor coo;
  coo.order = 2;
  coo.dims = {2, 5};
  coo.index_type = IndexType::I64;
  coo.levels.resize(2);
  coo.levels[0].kind = LevelKind::Compressed;
  coo.levels[0].unique = false;
  coo.levels[0].pos = Buffer::borrow(pos.data(), 16);
  coo.levels[0].crd = Buffer::borrow(rows.data(), 24);
  coo.levels[1].kind = LevelKind::Singleton;
  coo.levels[1].crd = Buffer::borrow(cols.data(), 24);
  coo.values = Buffer::borrow(val.data(), 24);
  EXPECT_EQ(coo.named_format(), SJ_FORMAT_COO);
  EXPECT_EQ(validation_message(coo), "row 1: column 3 follows 4 (coordinates must be sorted)");
  cols = {2, 3, 3};
  EXPECT_EQ(validation_message(coo), "row 1: column 3 appears twice (coordinates must be unique)");
  cols = {2, 3, 4};
  rows = {1, 0, 1};
  EXPECT_EQ(validation_message(coo), "top level: row 0 follows 1 (coordinates must be sorted)");
  rows = {0, 1, 1};
  EXPECT_NO_THROW(validate(coo));

  // CSF (dense i, compressed j, compressed k): the message names the path to the segment.
  std::vector<int64_t> p1{0, 1, 2}, p2{0, 2, 3};
  std::vector<int32_t> j{3, 1}, k{4, 2, 0};
  std::vector<double> v{1, 2, 3};
  Tensor csf;
  csf.order = 3;
  csf.dims = {2, 5, 6};
  csf.levels.resize(3);
  csf.levels[1].kind = csf.levels[2].kind = LevelKind::Compressed;
  csf.levels[1].pos = Buffer::borrow(p1.data(), 24);
  csf.levels[1].crd = Buffer::borrow(j.data(), 8);
  csf.levels[2].pos = Buffer::borrow(p2.data(), 24);
  csf.levels[2].crd = Buffer::borrow(k.data(), 12);
  csf.values = Buffer::borrow(v.data(), 24);
  EXPECT_EQ(validation_message(csf), "mode-0 coordinate 0, mode-1 coordinate 3: mode-2 coordinate 2 follows 4 (coordinates must be sorted)");
  k = {2, 4, 7};
  EXPECT_EQ(validation_message(csf), "mode-0 coordinate 1, mode-1 coordinate 1: mode-2 coordinate 7 out of range [0, 6)");
}

TEST(Tensor, OverflowingDenseLevelsAreRefused) {
  Tensor t;
  t.order = 2;
  t.dims = {int64_t{1} << 40, int64_t{1} << 40};
  t.index_type = IndexType::I64;
  t.levels.resize(2);
  try {
    validate(t);
    FAIL() << "2^80 dense entries must overflow";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_OVERFLOW) << e.what();
  }
  try {
    make_dense(default_allocator(), 2, t.dims.data(), ValueType::F64);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_OVERFLOW) << e.what();
  }
}

// Every named format, both index types: A -> format -> CSR gives A back exactly.
TEST(Tensor, ConversionRoundTripsThroughEveryFormat) {
  test::Rng rng(7);
  for (int seed = 0; seed < 40; ++seed) {
    int64_t rows = rng.uniform_int(0, 9), cols = rng.uniform_int(0, 9);
    auto m = test::random_matrix<int32_t, double>(rng, rows, cols);
    Tensor a = to_tensor(default_allocator(), true, m, ValueType::F64);
    ASSERT_NO_THROW(validate(a));
    CooTensor ref = to_coo(a);
    for (sj_format f : {SJ_FORMAT_CSR, SJ_FORMAT_CSC, SJ_FORMAT_DCSR, SJ_FORMAT_COO, SJ_FORMAT_DENSE,
                        SJ_FORMAT_DENSE_COL_MAJOR}) {
      for (IndexType it : {IndexType::I32, IndexType::I64}) {
        Tensor c = convert(a, format_spec(f, 2), it, default_allocator());
        ASSERT_NO_THROW(validate(c)) << c.describe();
        EXPECT_EQ(c.named_format(), f) << c.describe();
        Tensor back = convert(c, format_spec(SJ_FORMAT_CSR, 2), IndexType::I32, default_allocator());
        CooTensor got = to_coo(back);
        if (f == SJ_FORMAT_DENSE || f == SJ_FORMAT_DENSE_COL_MAJOR) {
          // Dense forms store zeros; compare the dense images instead.
          Tensor dense_ref = convert(a, format_spec(SJ_FORMAT_DENSE, 2), IndexType::I32, default_allocator());
          Tensor dense_got = convert(c, format_spec(SJ_FORMAT_DENSE, 2), IndexType::I32, default_allocator());
          EXPECT_EQ(to_coo(dense_ref).values, to_coo(dense_got).values);
          continue;
        }
        EXPECT_EQ(got.coords[0], ref.coords[0]);
        EXPECT_EQ(got.coords[1], ref.coords[1]);
        EXPECT_EQ(got.values, ref.values);
      }
    }
  }
}

// A change of coordinate type alone keeps the levels, shares positions and values, and gives
// what the general (sorting) path gives; CSR <-> CSC with a type change flips the retyped
// matrix. Every sparse format, both directions, and a 3-D CSF.
TEST(Tensor, IndexTypeChangeMatchesTheGeneralPath) {
  test::Rng rng(19);
  for (int seed = 0; seed < 30; ++seed) {
    int64_t rows = rng.uniform_int(0, 9), cols = rng.uniform_int(0, 9);
    auto m = test::random_matrix<int32_t, double>(rng, rows, cols);
    Tensor a = to_tensor(default_allocator(), true, m, ValueType::F64);
    for (sj_format f : {SJ_FORMAT_CSR, SJ_FORMAT_CSC, SJ_FORMAT_DCSR, SJ_FORMAT_COO}) {
      for (IndexType from : {IndexType::I32, IndexType::I64}) {
        const IndexType to = from == IndexType::I32 ? IndexType::I64 : IndexType::I32;
        Tensor src = convert(a, format_spec(f, 2), from, default_allocator());
        Tensor got = convert(src, format_spec(f, 2), to, default_allocator());
        Tensor want = from_coo(to_coo(src), format_spec(f, 2), to, ValueType::F64, default_allocator());
        ASSERT_NO_THROW(validate(got)) << got.describe();
        EXPECT_EQ(got.index_type, to);
        EXPECT_EQ(format_spec_of(got), format_spec_of(want));
        EXPECT_EQ(got.values.data(), src.values.data()) << "values are shared";
        expect_same_entries(to_coo(got), to_coo(want));
      }
    }
    for (IndexType from : {IndexType::I32, IndexType::I64}) {
      const IndexType to = from == IndexType::I32 ? IndexType::I64 : IndexType::I32;
      Tensor csc = convert(a, format_spec(SJ_FORMAT_CSC, 2), from, default_allocator());
      Tensor got = convert(csc, format_spec(SJ_FORMAT_CSR, 2), to, default_allocator());
      ASSERT_NO_THROW(validate(got));
      EXPECT_TRUE(is_csr(got));
      EXPECT_EQ(got.index_type, to);
      expect_same_entries(to_coo(got), to_coo(a));
    }
  }
  CooTensor c = random_coo3(rng, {3, 4, 5});
  Tensor t = from_coo(c, format_spec(SJ_FORMAT_CSF, 3), IndexType::I64, ValueType::F64, default_allocator());
  Tensor narrow = convert(t, format_spec(SJ_FORMAT_CSF, 3), IndexType::I32, default_allocator());
  ASSERT_NO_THROW(validate(narrow));
  EXPECT_EQ(narrow.index_type, IndexType::I32);
  expect_same_entries(to_coo(narrow), c);
}

// At the i32 limit: coordinates up to 2^31 - 1 narrow; a dimension past 2^31 cannot be i32
// and is refused with a message (the general path's check), not truncated.
TEST(Tensor, IndexTypeChangeAtTheInt32Limit) {
  std::vector<int64_t> pos{0, 2};
  std::vector<int64_t> crd{INT32_MAX - 1, INT32_MAX};
  std::vector<double> val{1, 2};
  Tensor t;
  t.order = 2;
  t.dims = {1, int64_t{INT32_MAX} + 1};
  t.levels.resize(2);
  t.levels[0].kind = LevelKind::Dense;
  t.levels[1].kind = LevelKind::Compressed;
  t.levels[1].pos = Buffer::borrow(pos.data(), pos.size() * 8);
  t.levels[1].crd = Buffer::borrow(crd.data(), crd.size() * 8);
  t.values = Buffer::borrow(val.data(), val.size() * 8);
  t.index_type = IndexType::I64;
  ASSERT_NO_THROW(validate(t));
  Tensor n = convert(t, format_spec(SJ_FORMAT_CSR, 2), IndexType::I32, default_allocator());
  ASSERT_NO_THROW(validate(n));
  EXPECT_EQ(to_coo(n).coords[1], (std::vector<int64_t>{INT32_MAX - 1, INT32_MAX}));
  t.dims[1] = int64_t{INT32_MAX} + 2;
  try {
    convert(t, format_spec(SJ_FORMAT_CSR, 2), IndexType::I32, default_allocator());
    FAIL() << "a dimension past 2^31 was narrowed to i32";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_OVERFLOW) << e.what();
  }
}

TEST(Tensor, TransposeIsAnInvolutionAndMatchesCoordinates) {
  test::Rng rng(11);
  for (int seed = 0; seed < 30; ++seed) {
    auto m = test::random_matrix<int64_t, float>(rng, rng.uniform_int(0, 12), rng.uniform_int(0, 12));
    Tensor a = to_tensor(default_allocator(), true, m, ValueType::F32);
    Tensor t = transpose(a, default_allocator());
    ASSERT_TRUE(is_csr(t));
    EXPECT_EQ(t.dims[0], a.dims[1]);
    EXPECT_EQ(t.dims[1], a.dims[0]);
    ASSERT_NO_THROW(validate(t));
    CooTensor ca = to_coo(a), ct = to_coo(t);
    // Every (i, j, v) of A appears as (j, i, v) in A^T.
    std::map<std::pair<int64_t, int64_t>, double> entries;
    for (int64_t e = 0; e < ca.nnz(); ++e) entries[{ca.coords[1][e], ca.coords[0][e]}] = ca.values[e];
    ASSERT_EQ(entries.size(), static_cast<size_t>(ct.nnz()));
    for (int64_t e = 0; e < ct.nnz(); ++e) EXPECT_EQ((entries[{ct.coords[0][e], ct.coords[1][e]}]), ct.values[e]);
    Tensor tt = transpose(t, default_allocator());
    EXPECT_EQ(to_coo(tt).values, ca.values);
    EXPECT_EQ(to_coo(tt).coords[1], ca.coords[1]);
  }
}

TEST(Tensor, CooSortingAndDuplicates) {
  CooTensor c;
  c.order = 2;
  c.dims = {3, 3};
  c.coords[0] = {2, 0, 2, 0};
  c.coords[1] = {1, 2, 1, 0};
  c.values = {1, 2, 3, 4};
  Tensor summed = from_coo(c, format_spec(SJ_FORMAT_CSR, 2), IndexType::I32, ValueType::F64, default_allocator(),
                           Duplicates::Sum);
  CooTensor s = to_coo(summed);
  EXPECT_EQ(s.coords[0], (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(s.coords[1], (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(s.values, (std::vector<double>{4, 2, 4}));
  try {
    from_coo(c, format_spec(SJ_FORMAT_CSR, 2), IndexType::I32, ValueType::F64, default_allocator(), Duplicates::Refuse);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_INVALID_TENSOR);
    EXPECT_NE(std::string(e.what()).find("duplicate entry at (2, 1)"), std::string::npos) << e.what();
  }
}

// 3-D CSF in every level order holds the same entries.
TEST(Tensor, CsfInEveryModeOrder) {
  test::Rng rng(3);
  CooTensor c = random_coo3(rng, {4, 5, 3});
  int orders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (auto& o : orders) {
    Tensor t = from_coo(c, format_spec(SJ_FORMAT_CSF, 3, o), IndexType::I32, ValueType::F64, default_allocator());
    ASSERT_NO_THROW(validate(t));
    EXPECT_EQ(t.named_format(), SJ_FORMAT_CSF);
    EXPECT_EQ(t.nnz(), c.nnz());
    Tensor back = convert(t, format_spec(SJ_FORMAT_CSF, 3), IndexType::I64, default_allocator());
    CooTensor got = to_coo(back);
    EXPECT_EQ(got.coords[0], c.coords[0]);
    EXPECT_EQ(got.coords[1], c.coords[1]);
    EXPECT_EQ(got.coords[2], c.coords[2]);
    EXPECT_EQ(got.values, c.values);
  }
}

TEST(Tensor, RealTensorsLoadAsCsf) {
  auto files = test::shared_tensors();
  if (files.empty()) GTEST_SKIP() << "../shared/data/tensors not present";
  for (auto& f : files) {
    Tensor t = read_tensor_file(f.string(), default_allocator());
    EXPECT_EQ(t.named_format(), SJ_FORMAT_CSF) << f;
    EXPECT_NO_THROW(validate(t));
    Tensor kij = convert(t, format_spec(SJ_FORMAT_CSF, 3, std::array<int, 3>{2, 0, 1}.data()), IndexType::I32,
                         default_allocator());
    EXPECT_NO_THROW(validate(kij));
    EXPECT_EQ(kij.nnz(), t.nnz());
  }
}

TEST(Tensor, RealMatricesValidateAndFlip) {
  auto files = test::shared_matrices();
  if (files.empty()) GTEST_SKIP() << "../shared/data/matrices not present";
  for (auto& f : files) {
    Tensor a = read_tensor_file(f.string(), default_allocator());
    ASSERT_NO_THROW(validate(a)) << f;
    Tensor c = flip_orientation(a, default_allocator());
    ASSERT_NO_THROW(validate(c)) << f;
    Tensor generic = from_coo(to_coo(a), format_spec(SJ_FORMAT_CSC, 2), IndexType::I32, ValueType::F64,
                              default_allocator());
    // The counting-sort fast path and the generic path agree exactly.
    EXPECT_EQ(to_coo(c).values, to_coo(generic).values) << f;
    EXPECT_EQ(to_coo(c).coords[0], to_coo(generic).coords[0]) << f;
  }
}

// A result shrunk to its first nnz entries keeps them and its positions, in CSR and CSC, both
// where the positions share the result's one block (few rows: copied) and where they are an
// array of their own (shared with the larger result, not copied).
TEST(Tensor, ShrinkingAResultKeepsItsEntries) {
  for (const int64_t outer : {int64_t{5}, int64_t{20000}})
    for (const bool csr : {true, false}) {
      const int64_t rows = csr ? outer : 7, cols = csr ? 7 : outer;
      Tensor c = make_compressed_matrix(default_allocator(), csr, rows, cols, 4 * outer, IndexType::I32, ValueType::F64);
      int64_t* pos = c.levels[1].pos.as_mut<int64_t>();
      int32_t* crd = c.levels[1].crd.as_mut<int32_t>();
      double* val = c.values.as_mut<double>();
      int64_t nnz = 0;
      pos[0] = 0;
      for (int64_t r = 0; r < outer; ++r) {  // row r holds column r % 7 when r is odd
        if (r % 2) crd[nnz] = static_cast<int32_t>(r % 7), val[nnz++] = 0.5 * static_cast<double>(r);
        pos[r + 1] = nnz;
      }
      const Tensor e = shrink_compressed_matrix(c, nnz, default_allocator());
      ASSERT_EQ(e.nnz(), nnz);
      EXPECT_EQ(e.dims, c.dims);
      EXPECT_EQ(e.mode_order, c.mode_order);
      EXPECT_EQ(e.levels[1].crd.bytes(), static_cast<size_t>(nnz) * 4);
      EXPECT_EQ(e.values.bytes(), static_cast<size_t>(nnz) * 8);
      EXPECT_EQ(std::memcmp(e.levels[1].pos.data(), pos, 8 * static_cast<size_t>(outer + 1)), 0);
      EXPECT_EQ(std::memcmp(e.levels[1].crd.data(), crd, 4 * static_cast<size_t>(nnz)), 0);
      EXPECT_EQ(std::memcmp(e.values.data(), val, 8 * static_cast<size_t>(nnz)), 0);
      EXPECT_NO_THROW(validate(e));
      if (outer > 10000) EXPECT_EQ(e.levels[1].pos.data(), pos) << "positions of their own are shared";
    }
}

}  // namespace
}  // namespace sj

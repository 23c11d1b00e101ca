// File readers and writers: Matrix Market and FROSTT. Small handwritten inputs for each
// feature, every error case with its status and line, bitwise round trips, every real file in
// ../shared/data against the README's table, and byte-level fuzzing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "src/error.hpp"
#include "src/frostt.hpp"
#include "src/matrix_market.hpp"
#include "tests/test_util.hpp"

namespace fs = std::filesystem;

namespace {

// --- helpers -------------------------------------------------------------------------------

using sj::test::failure_of;

// Parses `text` as "t.mtx" and expects an sj::Error with `status`, the message starting with
// "t.mtx:<line>: " and containing `needle`.
void expect_mtx_error(const std::string& text, sj_status status, int64_t line, const std::string& needle) {
  SCOPED_TRACE("input:\n" + text);
  auto f = failure_of([&] { sj::parse_matrix_market(text, "t.mtx"); });
  ASSERT_TRUE(f.has_value()) << "parsed without error";
  EXPECT_EQ(f->status, status) << f->message;
  std::string prefix = "t.mtx:" + std::to_string(line) + ": ";
  EXPECT_EQ(f->message.rfind(prefix, 0), 0u) << "message: " << f->message << "\nexpected prefix: " << prefix;
  EXPECT_NE(f->message.find(needle), std::string::npos) << "message: " << f->message << "\nexpected: " << needle;
}

void expect_tns_error(const std::string& text, sj_status status, int64_t line, const std::string& needle) {
  SCOPED_TRACE("input:\n" + text);
  auto f = failure_of([&] { sj::parse_frostt(text, "t.tns"); });
  ASSERT_TRUE(f.has_value()) << "parsed without error";
  EXPECT_EQ(f->status, status) << f->message;
  std::string prefix = "t.tns:" + std::to_string(line) + ": ";
  EXPECT_EQ(f->message.rfind(prefix, 0), 0u) << "message: " << f->message << "\nexpected prefix: " << prefix;
  EXPECT_NE(f->message.find(needle), std::string::npos) << "message: " << f->message << "\nexpected: " << needle;
}

using Entry = std::tuple<int64_t, int64_t, double>;
std::vector<Entry> entries(const sj::CooTensor& t) {
  std::vector<Entry> out;
  for (int64_t k = 0; k < t.nnz(); ++k) out.emplace_back(t.coords[0][k], t.coords[1][k], t.values[k]);
  return out;
}

// A private folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("sj_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Bitwise equality of two coordinate tensors (values compared as bit patterns).
void expect_identical(const sj::CooTensor& a, const sj::CooTensor& b) {
  ASSERT_EQ(a.order, b.order);
  ASSERT_EQ(a.nnz(), b.nnz());
  for (int m = 0; m < a.order; ++m) {
    EXPECT_EQ(a.dims[m], b.dims[m]) << "mode " << m;
    EXPECT_EQ(a.coords[m], b.coords[m]) << "mode " << m;
  }
  for (int64_t k = 0; k < a.nnz(); ++k) {
    if (std::isnan(a.values[k])) {
      EXPECT_TRUE(std::isnan(b.values[k])) << "entry " << k;
    } else {
      ASSERT_EQ(std::bit_cast<uint64_t>(a.values[k]), std::bit_cast<uint64_t>(b.values[k]))
          << "entry " << k << ": " << a.values[k] << " read back as " << b.values[k];
    }
  }
}

// Doubles that are hard to print and read back exactly.
std::vector<double> awkward_doubles() {
  return {0.1,
          1.0 / 3.0,
          -2.0 / 3.0,
          0.0,
          -0.0,
          1.0,
          std::numeric_limits<double>::denorm_min(),
          -std::numeric_limits<double>::denorm_min(),
          DBL_MIN,
          std::nextafter(DBL_MIN, 0.0),
          DBL_MAX,
          -DBL_MAX,
          std::nextafter(1.0, 2.0),
          std::nextafter(1.0, 0.0),
          1e-300,
          1e300,
          123456789012345678.0,
          9007199254740993.0,  // 2^53 + 1 rounds; the printed form must still read back
          static_cast<double>(0.1f),
          static_cast<double>(std::numeric_limits<float>::max()),
          static_cast<double>(std::numeric_limits<float>::denorm_min()),
          static_cast<double>(16777217.0f),
          5e-324,
          2.2250738585072011e-308,
          std::numeric_limits<double>::infinity(),
          -std::numeric_limits<double>::infinity()};
}

// Random finite doubles from random bit patterns, and f32-representable ones.
double random_value(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: {
      double d;
      do d = std::bit_cast<double>(static_cast<uint64_t>(rng()));
      while (!std::isfinite(d));
      return d;
    }
    case 1: {
      float f;
      do f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
      while (!std::isfinite(f));
      return f;
    }
    case 2:
      return static_cast<double>(static_cast<int64_t>(rng() % 2001) - 1000) / 7.0;
    default: {
      auto a = awkward_doubles();
      return a[rng() % a.size()];
    }
  }
}

sj::CooTensor random_tensor(std::mt19937_64& rng, int order, int64_t nnz) {
  sj::CooTensor t;
  t.order = order;
  for (int m = 0; m < order; ++m) t.dims[m] = 1 + static_cast<int64_t>(rng() % 50);
  for (int64_t k = 0; k < nnz; ++k) {
    for (int m = 0; m < order; ++m) t.coords[m].push_back(static_cast<int64_t>(rng() % t.dims[m]));
    t.values.push_back(random_value(rng));
  }
  // Make the largest coordinate reach each dim, so formats that infer dims agree.
  if (nnz > 0)
    for (int m = 0; m < order; ++m) t.coords[m][0] = t.dims[m] - 1;
  return t;
}

// Structural invariants every successfully parsed tensor must satisfy.
void expect_consistent(const sj::CooTensor& t) {
  ASSERT_GE(t.order, 1);
  ASSERT_LE(t.order, 4);
  for (int m = 0; m < t.order; ++m) {
    ASSERT_EQ(static_cast<int64_t>(t.coords[m].size()), t.nnz());
    for (int64_t c : t.coords[m]) {
      ASSERT_GE(c, 0);
      ASSERT_LT(c, t.dims[m]);
    }
  }
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Rows of the README's markdown tables whose first cell ends with `suffix`, as trimmed cells.
std::map<std::string, std::vector<std::string>> readme_rows(const std::string& suffix) {
  std::map<std::string, std::vector<std::string>> rows;
  auto dir = sj::test::shared_data_dir();
  if (!dir) return rows;
  std::istringstream in(read_all(*dir / "README.md"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '|') continue;
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream ls(line.substr(1));
    while (std::getline(ls, cell, '|')) cells.push_back(trim(cell));
    if (cells.empty() || cells[0].size() < suffix.size() ||
        cells[0].compare(cells[0].size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    rows[cells[0]] = cells;
  }
  return rows;
}

// --- Matrix Market: features ---------------------------------------------------------------

TEST(IO, MatrixMarketGeneralReal) {
  sj::MatrixMarketInfo info;
  auto t = sj::parse_matrix_market(
      "%%MatrixMarket matrix coordinate real general\n"
      "% a comment\n"
      "3 4 4\n"
      "1 1 1.5\n"
      "3 4 -2\n"
      "2 2 1e3\n"
      "1 1 0.25\n",  // duplicates are kept, in file order
      "t.mtx", &info);
  EXPECT_EQ(t.order, 2);
  EXPECT_EQ(t.dims[0], 3);
  EXPECT_EQ(t.dims[1], 4);
  EXPECT_FALSE(t.pattern);
  EXPECT_EQ(entries(t), (std::vector<Entry>{{0, 0, 1.5}, {2, 3, -2}, {1, 1, 1000}, {0, 0, 0.25}}));
  EXPECT_TRUE(info.coordinate);
  EXPECT_EQ(info.field, "real");
  EXPECT_EQ(info.symmetry, "general");
  EXPECT_EQ(info.stored_entries, 4);
}

TEST(IO, MatrixMarketSymmetricMirrorsEitherTriangle) {
  sj::MatrixMarketInfo info;
  auto t = sj::parse_matrix_market(
      "%%MatrixMarket matrix coordinate real symmetric\n"
      "3 3 3\n"
      "1 1 4\n"
      "3 1 2\n"   // lower triangle, as the format stores it
      "2 3 7\n",  // upper triangle: accepted and mirrored the same way
      "t.mtx", &info);
  EXPECT_EQ(entries(t), (std::vector<Entry>{{0, 0, 4}, {2, 0, 2}, {0, 2, 2}, {1, 2, 7}, {2, 1, 7}}));
  EXPECT_EQ(info.symmetry, "symmetric");
  EXPECT_EQ(info.stored_entries, 3);
}

TEST(IO, MatrixMarketSkewSymmetricNegatesMirror) {
  sj::MatrixMarketInfo info;
  auto t = sj::parse_matrix_market(
      "%%MatrixMarket matrix coordinate real skew-symmetric\n"
      "3 3 3\n"
      "2 1 5\n"
      "1 3 -1.5\n"
      "2 2 0\n",  // an explicit zero on the diagonal is allowed and kept once
      "t.mtx", &info);
  EXPECT_EQ(entries(t), (std::vector<Entry>{{1, 0, 5}, {0, 1, -5}, {0, 2, -1.5}, {2, 0, 1.5}, {1, 1, 0}}));
  EXPECT_EQ(info.symmetry, "skew-symmetric");
}

TEST(IO, MatrixMarketPattern) {
  sj::MatrixMarketInfo info;
  auto t = sj::parse_matrix_market(
      "%%MatrixMarket matrix coordinate pattern symmetric\n"
      "4 4 3\n"
      "2 1\n"
      "4 4\n"
      "4 2\n",
      "t.mtx", &info);
  EXPECT_TRUE(t.pattern);
  EXPECT_EQ(info.field, "pattern");
  EXPECT_EQ(entries(t), (std::vector<Entry>{{1, 0, 1}, {0, 1, 1}, {3, 3, 1}, {3, 1, 1}, {1, 3, 1}}));
}

TEST(IO, MatrixMarketInteger) {
  sj::MatrixMarketInfo info;
  auto t = sj::parse_matrix_market(
      "%%MatrixMarket matrix coordinate integer general\n"
      "2 2 3\n"
      "1 1 -7\n"
      "2 1 +12\n"
      "2 2 9007199254740992\n",
      "t.mtx", &info);
  EXPECT_EQ(info.field, "integer");
  EXPECT_EQ(entries(t), (std::vector<Entry>{{0, 0, -7}, {1, 0, 12}, {1, 1, 9007199254740992.0}}));
}

TEST(IO, MatrixMarketArrayGeneralKeepsZeros) {
  sj::MatrixMarketInfo info;
  auto t = sj::parse_matrix_market(
      "%%MatrixMarket matrix array real general\n"
      "2 3\n"
      "1\n2\n0\n4\n5\n0\n",  // column-major
      "t.mtx", &info);
  EXPECT_FALSE(info.coordinate);
  EXPECT_EQ(info.stored_entries, 6);
  EXPECT_EQ(t.dims[0], 2);
  EXPECT_EQ(t.dims[1], 3);
  EXPECT_EQ(entries(t), (std::vector<Entry>{{0, 0, 1}, {1, 0, 2}, {0, 1, 0}, {1, 1, 4}, {0, 2, 5}, {1, 2, 0}}));
}

TEST(IO, MatrixMarketArraySymmetricAndSkew) {
  auto s = sj::parse_matrix_market(
      "%%MatrixMarket matrix array integer symmetric\n"
      "3 3\n"
      "1\n2\n3\n4\n5\n6\n",  // lower triangle by columns: (1,1) (2,1) (3,1) (2,2) (3,2) (3,3)
      "t.mtx");
  EXPECT_EQ(entries(s), (std::vector<Entry>{{0, 0, 1}, {1, 0, 2}, {0, 1, 2}, {2, 0, 3}, {0, 2, 3},
                                            {1, 1, 4}, {2, 1, 5}, {1, 2, 5}, {2, 2, 6}}));
  auto k = sj::parse_matrix_market(
      "%%MatrixMarket matrix array real skew-symmetric\n"
      "3 3\n"
      "1\n2\n3\n",  // strictly lower: (2,1) (3,1) (3,2)
      "t.mtx");
  EXPECT_EQ(entries(k), (std::vector<Entry>{{1, 0, 1}, {0, 1, -1}, {2, 0, 2}, {0, 2, -2}, {2, 1, 3}, {1, 2, -3}}));
  auto one = sj::parse_matrix_market("%%MatrixMarket matrix array real skew-symmetric\n1 1\n", "t.mtx");
  EXPECT_EQ(one.nnz(), 0);
  EXPECT_EQ(one.dims[0], 1);
}

TEST(IO, MatrixMarketLexicalForms) {
  // Case-insensitive banner, "double" as real, a byte-order mark, CRLF, tabs, comments and
  // blank lines between entries, Fortran exponents, '+', inf/nan, no final newline.
  std::string text =
      "\xEF\xBB\xBF%%matrixmarket MATRIX Coordinate Double General\r\n"
      "%comment\r\n"
      "\r\n"
      "  5 1 9\r\n"
      "1\t1\t.39E+01\r\n"
      "% in between\r\n"
      "\r\n"
      "2 1 1.5D+03\r\n"
      "3 1 +2.5\r\n"
      "4 1 -1d-2\r\n"
      "5 1 inf\r\n"
      "5 1 -Infinity\r\n"
      "5 1 1e400\r\n"
      "5 1 1e-400\r\n"
      "5 1 nan";
  auto t = sj::parse_matrix_market(text, "t.mtx");
  ASSERT_EQ(t.nnz(), 9);
  EXPECT_EQ(t.values[0], 3.9);
  EXPECT_EQ(t.values[1], 1500.0);
  EXPECT_EQ(t.values[2], 2.5);
  EXPECT_EQ(t.values[3], -0.01);
  EXPECT_EQ(t.values[4], INFINITY);
  EXPECT_EQ(t.values[5], -INFINITY);
  EXPECT_EQ(t.values[6], INFINITY);  // beyond double range: like strtod
  EXPECT_EQ(t.values[7], 0.0);
  EXPECT_TRUE(std::isnan(t.values[8]));
}

TEST(IO, MatrixMarketEmptyShapes) {
  auto a = sj::parse_matrix_market("%%MatrixMarket matrix coordinate real general\n0 0 0\n", "t.mtx");
  EXPECT_EQ(a.nnz(), 0);
  EXPECT_EQ(a.dims[0], 0);
  auto b = sj::parse_matrix_market("%%MatrixMarket matrix coordinate pattern general\n0 7 0", "t.mtx");
  EXPECT_EQ(b.dims[1], 7);
  auto c = sj::parse_matrix_market("%%MatrixMarket matrix array real general\n4 0\n", "t.mtx");
  EXPECT_EQ(c.nnz(), 0);
}

// --- Matrix Market: every error, with its status and line ----------------------------------

const char* kBannerReal = "%%MatrixMarket matrix coordinate real general\n";

TEST(IO, MatrixMarketBannerErrors) {
  expect_mtx_error("", SJ_ERR_PARSE, 1, "empty file");
  expect_mtx_error("3 3 1\n1 1 1\n", SJ_ERR_PARSE, 1, "missing banner");
  expect_mtx_error("%MatrixMarket matrix coordinate real general\n1 1 0\n", SJ_ERR_PARSE, 1, "missing banner");
  expect_mtx_error("%%MatrixMarket matrix coordinate real\n1 1 0\n", SJ_ERR_PARSE, 1, "incomplete banner");
  expect_mtx_error("%%MatrixMarket matrix coordinate real general extra\n", SJ_ERR_PARSE, 1, "'extra'");
  expect_mtx_error("%%MatrixMarket vector coordinate real general\n", SJ_ERR_PARSE, 1, "unknown object 'vector'");
  expect_mtx_error("%%MatrixMarket matrix sparse real general\n", SJ_ERR_PARSE, 1, "unknown format 'sparse'");
  expect_mtx_error("%%MatrixMarket matrix coordinate quaternion general\n", SJ_ERR_PARSE, 1,
                   "unknown field 'quaternion'");
  expect_mtx_error("%%MatrixMarket matrix coordinate real upper\n", SJ_ERR_PARSE, 1, "unknown symmetry 'upper'");
  expect_mtx_error("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 0\n", SJ_ERR_UNSUPPORTED, 1,
                   "complex");
  expect_mtx_error("%%MatrixMarket matrix array complex hermitian\n", SJ_ERR_UNSUPPORTED, 1, "complex");
  expect_mtx_error("%%MatrixMarket matrix coordinate real hermitian\n", SJ_ERR_UNSUPPORTED, 1, "hermitian");
  expect_mtx_error("%%MatrixMarket matrix array pattern general\n", SJ_ERR_PARSE, 1, "array pattern");
  expect_mtx_error("%%MatrixMarket matrix coordinate pattern skew-symmetric\n", SJ_ERR_PARSE, 1,
                   "pattern skew-symmetric");
}

TEST(IO, MatrixMarketSizeLineErrors) {
  std::string b = kBannerReal;
  expect_mtx_error(b + "% only comments\n\n", SJ_ERR_PARSE, 3, "missing size line");
  expect_mtx_error(b + "3 3\n", SJ_ERR_PARSE, 2, "bad size line");
  expect_mtx_error(b + "3 3 1 1\n", SJ_ERR_PARSE, 2, "bad size line");
  expect_mtx_error(b + "%c\n3 x 1\n", SJ_ERR_PARSE, 3, "cols 'x' is not an integer");
  expect_mtx_error(b + "3 3 1.0\n", SJ_ERR_PARSE, 2, "entries '1.0' is not an integer");
  expect_mtx_error(b + "-3 3 1\n", SJ_ERR_PARSE, 2, "negative rows -3");
  expect_mtx_error(b + "3 3 -1\n", SJ_ERR_PARSE, 2, "negative entries -1");
  expect_mtx_error(b + "99999999999999999999 3 1\n", SJ_ERR_OVERFLOW, 2, "does not fit");
  expect_mtx_error("%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n", SJ_ERR_PARSE, 2, "must be square");
  expect_mtx_error("%%MatrixMarket matrix array real general\n2 2 4\n", SJ_ERR_PARSE, 2, "'rows cols'");
  expect_mtx_error("%%MatrixMarket matrix array real general\n4000000000 4000000000\n", SJ_ERR_OVERFLOW, 2,
                   "does not fit");
  expect_mtx_error("%%MatrixMarket matrix array real symmetric\n9223372036854775807 9223372036854775807\n",
                   SJ_ERR_OVERFLOW, 2, "does not fit");
}

TEST(IO, MatrixMarketEntryErrors) {
  std::string b = std::string(kBannerReal) + "3 3 2\n";  // entries start on line 3
  expect_mtx_error(b + "0 1 1\n", SJ_ERR_PARSE, 3, "row index 0 out of range 1..3");
  expect_mtx_error(b + "1 1 1\n4 1 1\n", SJ_ERR_PARSE, 4, "row index 4 out of range 1..3");
  expect_mtx_error(b + "1 9 1\n", SJ_ERR_PARSE, 3, "column index 9 out of range 1..3");
  expect_mtx_error(b + "-1 1 1\n", SJ_ERR_PARSE, 3, "row index -1 out of range");
  expect_mtx_error(b + "1 99999999999999999999 1\n", SJ_ERR_PARSE, 3, "column index '99999999999999999999' out of range");
  expect_mtx_error(b + "a 1 1\n", SJ_ERR_PARSE, 3, "row index 'a' is not an integer");
  expect_mtx_error(b + "1 1.0 1\n", SJ_ERR_PARSE, 3, "column index '1.0' is not an integer");
  expect_mtx_error(b + "1 1 abc\n", SJ_ERR_PARSE, 3, "value 'abc' is not a number");
  expect_mtx_error(b + "1 1 1.0.0\n", SJ_ERR_PARSE, 3, "not a number");
  expect_mtx_error(b + "1 1 0x10\n", SJ_ERR_PARSE, 3, "not a number");
  expect_mtx_error(b + "1 1 1e\n", SJ_ERR_PARSE, 3, "not a number");
  expect_mtx_error(b + "1 1\n", SJ_ERR_PARSE, 3, "missing value");
  expect_mtx_error(b + "1\n", SJ_ERR_PARSE, 3, "missing column index and value");
  expect_mtx_error(b + "1 1 1 garbage\n", SJ_ERR_PARSE, 3, "unexpected 'garbage'");
  expect_mtx_error(b + "1 1 1\n\n%\n", SJ_ERR_PARSE, 5, "file ends after 1 of the 2 declared entries");
  expect_mtx_error(b + "1 1 1\n2 2 2\n3 3 3\n", SJ_ERR_PARSE, 5, "more entries than the 2 declared on line 2");
  expect_mtx_error(b + "1 1 1\n2 2 2\n% fine\n\n3 3 3\n", SJ_ERR_PARSE, 7, "more entries");
  expect_mtx_error("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n", SJ_ERR_PARSE, 3,
                   "pattern entry has a value column '1'");
  expect_mtx_error("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", SJ_ERR_PARSE, 3,
                   "value '1.5' is not an integer");
  expect_mtx_error("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1e99999\n", SJ_ERR_PARSE, 3,
                   "not an integer");
  expect_mtx_error("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n2 1 1\n2 2 3\n", SJ_ERR_PARSE, 4,
                   "nonzero diagonal entry (2, 2)");
  expect_mtx_error("%%MatrixMarket matrix coordinate real general\n0 5 1\n1 1 1\n", SJ_ERR_PARSE, 3,
                   "row index 1 out of range 1..0");
  // A long or binary token is shortened and escaped in the message.
  auto f = failure_of([&] { sj::parse_matrix_market(b + "1 1 " + std::string(500, 'x') + "\n", "t.mtx"); });
  ASSERT_TRUE(f);
  EXPECT_LT(f->message.size(), 200u) << f->message;
  expect_mtx_error(b + "1 1 \x01\xff\n", SJ_ERR_PARSE, 3, "'\\x01\\xff'");
}

TEST(IO, MatrixMarketArrayErrors) {
  std::string b = "%%MatrixMarket matrix array real general\n2 2\n";
  expect_mtx_error(b + "1\n2\n3\n", SJ_ERR_PARSE, 5, "file ends after 3 of the 4 declared entries");
  expect_mtx_error(b + "1\n2\n3\n4\n5\n", SJ_ERR_PARSE, 7, "more entries than the 4 declared");
  expect_mtx_error(b + "1 2\n3\n4\n", SJ_ERR_PARSE, 3, "unexpected '2'");
  expect_mtx_error(b + "1\nz\n", SJ_ERR_PARSE, 4, "value 'z' is not a number");
  // Skew arrays store no diagonal, so the count is n(n-1)/2.
  expect_mtx_error("%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n4\n", SJ_ERR_PARSE, 6,
                   "more entries than the 3 declared");
}

TEST(IO, MatrixMarketHugeDeclaredCountsAllocateNothingLarge) {
  // 10^15 declared entries (and a 10^9 x 10^9 array) with one entry present: the reader must
  // not reserve by the header, just report the shortfall.
  expect_mtx_error(std::string(kBannerReal) + "1000000000 1000000000 1000000000000000\n1 1 1\n", SJ_ERR_PARSE, 3,
                   "after 1 of the 1000000000000000 declared entries");
  expect_mtx_error("%%MatrixMarket matrix coordinate real symmetric\n"
                   "9223372036854775807 9223372036854775807 9223372036854775807\n1 1 1\n",
                   SJ_ERR_PARSE, 3, "after 1 of the 9223372036854775807");
  expect_mtx_error("%%MatrixMarket matrix array real general\n1000000000 1000000000\n1\n", SJ_ERR_PARSE, 3,
                   "after 1 of the 1000000000000000000");
}

TEST(IO, ReadFileErrors) {
  TempDir dir;
  std::string missing = dir.file("no_such.mtx");
  auto f = failure_of([&] { sj::read_matrix_market(missing); });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, SJ_ERR_IO);
  EXPECT_NE(f->message.find(missing), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("No such file"), std::string::npos) << f->message;

  auto g = failure_of([&] { sj::read_frostt(dir.file("")); });  // the folder itself
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, SJ_ERR_IO);
  EXPECT_NE(g->message.find("Is a directory"), std::string::npos) << g->message;

  // A file that is not regular (no size from fstat) is still read to its end.
  auto d = failure_of([&] { sj::read_matrix_market("/dev/null"); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, SJ_ERR_PARSE);
  EXPECT_EQ(d->message, "/dev/null:1: empty file: expected the banner '%%MatrixMarket matrix ...'");

  // A read error names the file path, a parse error too.
  write_text(dir.file("bad.mtx"), "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n");
  auto h = failure_of([&] { sj::read_matrix_market(dir.file("bad.mtx")); });
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, SJ_ERR_PARSE);
  EXPECT_EQ(h->message, dir.file("bad.mtx") + ":3: row index 3 out of range 1..2");
}

// --- writers and round trips ---------------------------------------------------------------

TEST(IO, MatrixMarketRoundTripIsBitwise) {
  TempDir dir;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed);
    auto t = random_tensor(rng, 2, static_cast<int64_t>(rng() % 300));
    if (seed == 0) {  // every awkward value at least once
      t.values.clear();
      t.coords[0].clear();
      t.coords[1].clear();
      for (double v : awkward_doubles()) {
        t.coords[0].push_back(static_cast<int64_t>(rng() % t.dims[0]));
        t.coords[1].push_back(static_cast<int64_t>(rng() % t.dims[1]));
        t.values.push_back(v);
      }
    }
    std::string path = dir.file("m" + std::to_string(seed) + ".mtx");
    sj::write_matrix_market(t, path);
    sj::MatrixMarketInfo info;
    auto back = sj::read_matrix_market(path, &info);
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_identical(t, back);
    EXPECT_EQ(info.field, "real");
    EXPECT_EQ(info.symmetry, "general");
    EXPECT_FALSE(back.pattern);
  }
  // NaN reads back as NaN.
  sj::CooTensor n;
  n.order = 2;
  n.dims = {1, 1};
  n.coords[0] = {0};
  n.coords[1] = {0};
  n.values = {std::nan("")};
  sj::write_matrix_market(n, dir.file("nan.mtx"));
  EXPECT_TRUE(std::isnan(sj::read_matrix_market(dir.file("nan.mtx")).values[0]));
}

TEST(IO, MatrixMarketWritePatternAndVector) {
  TempDir dir;
  std::mt19937_64 rng(7);
  auto t = random_tensor(rng, 2, 40);
  sj::write_matrix_market(t, dir.file("p.mtx"), /*pattern=*/true);
  EXPECT_EQ(read_all(dir.file("p.mtx")).rfind("%%MatrixMarket matrix coordinate pattern general\n", 0), 0u);
  auto p = sj::read_matrix_market(dir.file("p.mtx"));
  EXPECT_TRUE(p.pattern);
  EXPECT_EQ(p.coords[0], t.coords[0]);
  EXPECT_EQ(p.coords[1], t.coords[1]);
  EXPECT_EQ(p.values, std::vector<double>(t.values.size(), 1.0));

  // An order-1 tensor becomes an n x 1 matrix.
  sj::CooTensor v;
  v.order = 1;
  v.dims = {5};
  v.coords[0] = {4, 0, 2};
  v.values = {0.5, -1, 3};
  sj::write_matrix_market(v, dir.file("v.mtx"));
  EXPECT_EQ(read_all(dir.file("v.mtx")),
            "%%MatrixMarket matrix coordinate real general\n5 1 3\n5 1 0.5\n1 1 -1\n3 1 3\n");
  auto m = sj::read_matrix_market(dir.file("v.mtx"));
  EXPECT_EQ(m.dims[0], 5);
  EXPECT_EQ(m.dims[1], 1);
  EXPECT_EQ(entries(m), (std::vector<Entry>{{4, 0, 0.5}, {0, 0, -1}, {2, 0, 3}}));

  // An empty matrix round-trips too.
  sj::CooTensor e;
  e.order = 2;
  e.dims = {0, 3};
  sj::write_matrix_market(e, dir.file("e.mtx"));
  auto eb = sj::read_matrix_market(dir.file("e.mtx"));
  EXPECT_EQ(eb.dims[0], 0);
  EXPECT_EQ(eb.dims[1], 3);
  EXPECT_EQ(eb.nnz(), 0);
}

TEST(IO, WritersRefuseBadTensorsAndLeaveNoFile) {
  TempDir dir;
  std::string path = dir.file("x.mtx");
  write_text(path, "previous content");
  sj::CooTensor t3;
  t3.order = 3;
  t3.dims = {2, 2, 2};
  auto f = failure_of([&] { sj::write_matrix_market(t3, path); });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, SJ_ERR_INVALID_ARGUMENT);

  sj::CooTensor bad;
  bad.order = 2;
  bad.dims = {2, 2};
  bad.coords[0] = {0, 2};
  bad.coords[1] = {0, 0};
  bad.values = {1, 2};
  f = failure_of([&] { sj::write_matrix_market(bad, path); });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, SJ_ERR_INVALID_TENSOR);
  EXPECT_NE(f->message.find("entry 1"), std::string::npos) << f->message;

  bad.coords[0] = {0};
  f = failure_of([&] { sj::write_frostt(bad, path); });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, SJ_ERR_INVALID_TENSOR);

  sj::CooTensor t5;
  t5.order = 5;
  f = failure_of([&] { sj::write_frostt(t5, path); });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, SJ_ERR_INVALID_ARGUMENT);

  EXPECT_EQ(read_all(path), "previous content");
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"x.mtx"});
}

TEST(IO, WriteReplacesAtomicallyAndReportsIoErrors) {
  TempDir dir;
  std::mt19937_64 rng(3);
  auto t = random_tensor(rng, 2, 10);
  std::string path = dir.file("a.mtx");
  write_text(path, "old");
  sj::write_matrix_market(t, path);
  expect_identical(t, sj::read_matrix_market(path));
  EXPECT_EQ(dir.listing(), std::vector<std::string>{"a.mtx"});  // no temporary left behind

  // A folder that does not exist, and a path that is a folder: SJ_ERR_IO, nothing left over.
  auto f = failure_of([&] { sj::write_matrix_market(t, dir.file("nope/a.mtx")); });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, SJ_ERR_IO);
  EXPECT_NE(f->message.find("nope/a.mtx"), std::string::npos) << f->message;
  fs::create_directory(dir.file("sub"));
  f = failure_of([&] { sj::write_frostt(t, dir.file("sub")); });
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, SJ_ERR_IO);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"a.mtx", "sub"}));
  EXPECT_TRUE(fs::is_empty(dir.file("sub")));
}

// --- FROSTT --------------------------------------------------------------------------------

TEST(IO, FrosttRead) {
  auto t = sj::parse_frostt(
      "# a comment\r\n"
      "\r\n"
      "1 2 3 1.5\r\n"
      "  # indented comment\n"
      "4\t1 2 -2e-3\n"
      "2 5 1 +.5D+01",
      "t.tns");
  EXPECT_EQ(t.order, 3);
  EXPECT_EQ(t.dims[0], 4);
  EXPECT_EQ(t.dims[1], 5);
  EXPECT_EQ(t.dims[2], 3);
  EXPECT_EQ(t.coords[0], (std::vector<int64_t>{0, 3, 1}));
  EXPECT_EQ(t.coords[1], (std::vector<int64_t>{1, 0, 4}));
  EXPECT_EQ(t.coords[2], (std::vector<int64_t>{2, 1, 0}));
  EXPECT_EQ(t.values, (std::vector<double>{1.5, -2e-3, 5}));

  auto v = sj::parse_frostt("3 1\n1 2\n", "t.tns");
  EXPECT_EQ(v.order, 1);
  EXPECT_EQ(v.dims[0], 3);
  auto q = sj::parse_frostt("1 2 3 4 5\n", "t.tns");
  EXPECT_EQ(q.order, 4);
  EXPECT_EQ(q.dims[3], 4);
}

TEST(IO, FrosttErrors) {
  expect_tns_error("", SJ_ERR_PARSE, 1, "no entries");
  expect_tns_error("# only\n\n# comments\n", SJ_ERR_PARSE, 3, "no entries");
  expect_tns_error("1 2 3 4 5 6\n", SJ_ERR_UNSUPPORTED, 1, "more than 4 coordinates");
  expect_tns_error("1 2 3 4 5 6 7 8 9 10\n", SJ_ERR_UNSUPPORTED, 1, "more than 4 coordinates");
  expect_tns_error("#\n7\n", SJ_ERR_PARSE, 2, "single field");
  expect_tns_error("1 1 1 1\n1 1 1\n", SJ_ERR_PARSE, 2, "expected 4 fields like line 1, found 3");
  expect_tns_error("1 1 1 1\n\n1 1 1 1 1\n", SJ_ERR_PARSE, 3, "expected 4 fields like line 1, found 5");
  expect_tns_error("1 1 1 1\n1 1 1 1 1 1\n", SJ_ERR_PARSE, 2, "found 6");
  expect_tns_error("1 1 1 1\n1 1 1 1 1 1 1 1\n", SJ_ERR_PARSE, 2, "found more than 6");
  expect_tns_error("1 0 1 1\n", SJ_ERR_PARSE, 1, "coordinate 2 '0' out of range");
  expect_tns_error("1 1 -4 1\n", SJ_ERR_PARSE, 1, "coordinate 3 '-4' out of range");
  expect_tns_error("1 1 99999999999999999999 1\n", SJ_ERR_PARSE, 1, "out of range");
  expect_tns_error("1 x 1 1\n", SJ_ERR_PARSE, 1, "coordinate 2 'x' is not an integer");
  expect_tns_error("1 2.0 1 1\n", SJ_ERR_PARSE, 1, "is not an integer");
  expect_tns_error("1 1 1 1\r\n1 1 1 one\r\n", SJ_ERR_PARSE, 2, "value 'one' is not a number");
}

TEST(IO, FrosttRoundTripIsBitwise) {
  TempDir dir;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    std::mt19937_64 rng(seed + 1000);
    int order = 1 + static_cast<int>(seed % 4);
    auto t = random_tensor(rng, order, 1 + static_cast<int64_t>(rng() % 200));
    std::string path = dir.file("t" + std::to_string(seed) + ".tns");
    sj::write_frostt(t, path);
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_identical(t, sj::read_frostt(path));
  }
}

// --- the real files in ../shared/data ------------------------------------------------------

TEST(IO, SharedMatricesMatchReadme) {
  auto files = sj::test::shared_matrices();
  if (files.empty()) GTEST_SKIP() << "../shared/data/matrices is absent";
  auto table = readme_rows(".mtx");
  ASSERT_FALSE(table.empty()) << "no matrix rows in ../shared/data/README.md";
  TempDir dir;
  for (const auto& path : files) {
    std::string name = path.filename().string();
    SCOPED_TRACE(name);
    auto row = table.find(name);
    ASSERT_NE(row, table.end()) << name << " is not in the README table";
    const auto& cells = row->second;  // file, source, kind, rows, cols, stored, nnz, note
    ASSERT_GE(cells.size(), 7u);
    sj::MatrixMarketInfo info;
    sj::CooTensor t;
    ASSERT_NO_THROW(t = sj::read_matrix_market(path.string(), &info));
    EXPECT_EQ(info.field + " " + info.symmetry, cells[2]);
    EXPECT_EQ(t.dims[0], std::stoll(cells[3]));
    EXPECT_EQ(t.dims[1], std::stoll(cells[4]));
    EXPECT_EQ(info.stored_entries, std::stoll(cells[5]));
    EXPECT_EQ(t.nnz(), std::stoll(cells[6]));
    EXPECT_EQ(t.pattern, info.field == "pattern");
    expect_consistent(t);
    // Written back as general, it reads back bit for bit.
    std::string out = dir.file(name);
    sj::write_matrix_market(t, out, t.pattern);
    expect_identical(t, sj::read_matrix_market(out));
    fs::remove(out);
  }
}

TEST(IO, SharedTensorsMatchReadme) {
  auto files = sj::test::shared_tensors();
  if (files.empty()) GTEST_SKIP() << "../shared/data/tensors is absent";
  auto table = readme_rows(".tns");
  ASSERT_FALSE(table.empty()) << "no tensor rows in ../shared/data/README.md";
  for (const auto& path : files) {
    std::string name = path.filename().string();
    SCOPED_TRACE(name);
    auto row = table.find(name);
    ASSERT_NE(row, table.end()) << name << " is not in the README table";
    const auto& cells = row->second;  // file, source, dims "I x J x K", nnz, note
    ASSERT_GE(cells.size(), 4u);
    std::vector<int64_t> dims;
    std::istringstream ds(cells[2]);
    std::string tok;
    while (ds >> tok)
      if (tok != "x") dims.push_back(std::stoll(tok));
    auto t = sj::read_frostt(path.string());
    ASSERT_EQ(t.order, static_cast<int>(dims.size()));
    for (int m = 0; m < t.order; ++m) EXPECT_EQ(t.dims[m], dims[m]) << "mode " << m;
    EXPECT_EQ(t.nnz(), std::stoll(cells[3]));
    expect_consistent(t);
  }
}

// --- fuzzing: damaged input parses or throws sj::Error, nothing else ------------------------

const char* kFuzzMtxSeeds[] = {
    "%%MatrixMarket matrix coordinate real symmetric\n% c\n4 4 5\n1 1 1.5\n2 1 -2e3\n3 2 .39E+01\n4 4 7\n4 1 1D-2\n",
    "%%MatrixMarket matrix coordinate pattern general\n3 5 4\n1 1\n2 5\n3 3\n1 4\n",
    "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n-2.5\n3e-7\n",
    "%%MatrixMarket matrix array integer general\r\n2 2\r\n1\r\n2\r\n3\r\n4\r\n",
    "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 4\n3 3 0\n",
};
const char* kFuzzTnsSeed = "# t\n1 2 3 1.5\n2 2 2 -1\n\n3 1 4 2e5\n";

// Parses with both readers; anything but success or sj::Error fails the test.
void parse_must_not_misbehave(const std::string& text, const std::string& what) {
  try {
    auto t = sj::parse_matrix_market(text, "f.mtx");
    expect_consistent(t);
  } catch (const sj::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("f.mtx:", 0), 0u) << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected exception " << e.what();
  }
  try {
    auto t = sj::parse_frostt(text, "f.tns");
    expect_consistent(t);
  } catch (const sj::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("f.tns:", 0), 0u) << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": unexpected exception " << e.what();
  }
}

TEST(IO, FuzzTruncateAtEveryOffset) {
  std::vector<std::string> seeds(std::begin(kFuzzMtxSeeds), std::end(kFuzzMtxSeeds));
  seeds.push_back(kFuzzTnsSeed);
  for (const auto& s : seeds)
    for (size_t n = 0; n <= s.size(); ++n)
      parse_must_not_misbehave(s.substr(0, n), "truncated at " + std::to_string(n));
}

TEST(IO, FuzzRandomMutations) {
  std::vector<std::string> seeds(std::begin(kFuzzMtxSeeds), std::end(kFuzzMtxSeeds));
  seeds.push_back(kFuzzTnsSeed);
  // Bytes that matter to the grammar, plus a few that should never appear.
  const std::string alphabet = std::string("0123456789 \t\n\r%#+-.eEdDx,") + '\0' + "\xff\x80z";
  int parsed = 0;
  for (uint64_t seed = 0; seed < 10000; ++seed) {
    std::mt19937_64 rng(seed);
    std::string text = seeds[seed % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 5) {
        case 0: text[at] = c; break;
        case 1: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c); break;
        case 2: text.erase(at, 1 + rng() % 3); break;
        case 3: text.insert(at, std::to_string(static_cast<int64_t>(rng()))); break;  // huge numbers
        default: {  // duplicate a span (extra entries, repeated fields)
          size_t len = std::min<size_t>(1 + rng() % 12, text.size() - at);
          text.insert(rng() % text.size(), text.substr(at, len));
        }
      }
    }
    try {
      sj::parse_matrix_market(text, "f.mtx");
      ++parsed;
    } catch (const sj::Error&) {
    }
    parse_must_not_misbehave(text, "seed " + std::to_string(seed));
  }
  // Some mutations must keep the file valid, or the fuzzing only ever tests the first check.
  EXPECT_GT(parsed, 50);
}

}  // namespace

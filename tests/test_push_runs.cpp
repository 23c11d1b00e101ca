// The push's AVX2 walk of runs of four consecutive rows (kernels/push_runs_avx2.hpp), checked
// bit for bit against the first-touch accumulation the exactness contract defines, on mesh-like
// matrices whose columns are made of node blocks (runs of 1-7 rows, some with a row missing,
// blocks at the last rows of A): every way a chunk walks a column (all rows, the first and the
// last of two chunks, cut ranges of three and seven chunks), sparse and dense y, f32 and f64,
// int32 and int64 rows, accumulators left touched by earlier x entries in every pattern, every
// semiring with a vector form, and or-and over bool (which takes the scalar walk). Every
// round runs with the accumulator the push would choose (here, with under 4096 rows, the
// sparse one) and with each one forced: the sparse one (first-touch test) and the dense one
// (plus-times, plus-pair and or-and: accumulators started at the exact identity, no test).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/spmspv_kernels.hpp"
#include "src/semiring.hpp"

#if defined(SJ_PUSH_RUNS_AVAILABLE)
namespace {

template <class I, class V> struct Csc {
  int64_t m = 0, n = 0;
  std::vector<int64_t> pos{0};
  std::vector<I> crd;
  std::vector<V> val;
  sj::CsView<I, V> view() const {
    sj::CsView<I, V> v;
    v.outer = n;
    v.inner = m;
    v.pos = pos.data();
    v.crd = crd.data();
    v.val = val.data();
    return v;
  }
};

// A value of type V from d (bool: 1 for d > 0.5).
template <class V> V value(double d) {
  if constexpr (std::is_same_v<V, uint8_t>) return d > 0.5 ? 1 : 0;  // NaN: 0
  else return static_cast<V>(d);
}

// Rows grouped into nodes of 1-7 rows; each column holds whole nodes, now and then less one row.
template <class I, class V>
Csc<I, V> mesh_matrix(std::mt19937& rng, int64_t m, int64_t n, double node_density, bool nan) {
  std::vector<int64_t> node_start{0};
  while (node_start.back() < m) node_start.push_back(std::min<int64_t>(m, node_start.back() + 1 + rng() % 7));
  const int64_t nodes = static_cast<int64_t>(node_start.size()) - 1;
  std::uniform_real_distribution<double> u(0, 1);
  Csc<I, V> a;
  a.m = m;
  a.n = n;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < nodes; ++k) {
      // The last node always in some columns: runs that end at row m - 1.
      if (!(u(rng) < node_density || (k == nodes - 1 && j % 5 == 0))) continue;
      const int64_t skip = u(rng) < 0.15 ? node_start[k] + static_cast<int64_t>(rng() % (node_start[k + 1] - node_start[k])) : -1;
      for (int64_t i = node_start[k]; i < node_start[k + 1]; ++i) {
        if (i == skip) continue;
        a.crd.push_back(static_cast<I>(i));
        const double r = u(rng);
        // Signed zeros and (in some matrices) NaN: where min / max must pick as std::min /
        // std::max do.
        const double v = r < 0.1 ? -0.0 : r < 0.13 && nan ? std::numeric_limits<double>::quiet_NaN()
                         : r < 0.55 ? static_cast<double>(rng() % 9) - 4 : u(rng) * 3 - 1;
        a.val.push_back(value<V>(v));
      }
    }
    a.pos.push_back(static_cast<int64_t>(a.crd.size()));
  }
  return a;
}

// y by the contract: x's entries in increasing j, each row's first product taken as is, the
// next ones added with S::add.
template <class S, class I, class V>
void expected_y(const Csc<I, V>& a, const std::vector<I>& xi, const std::vector<V>& xv, std::vector<V>& acc,
                std::vector<uint8_t>& has) {
  acc.assign(static_cast<size_t>(a.m), S::zero());
  has.assign(static_cast<size_t>(a.m), 0);
  for (size_t p = 0; p < xi.size(); ++p)
    for (int64_t q = a.pos[xi[p]]; q < a.pos[xi[p] + 1]; ++q) {
      const I i = a.crd[q];
      const V prod = S::mul(a.val[q], xv[p]);
      acc[i] = has[i] ? S::add(acc[i], prod) : prod;
      has[i] = 1;
    }
}

// Whether the sparse y of `count` entries (gi, gv) holds the rows with a product (has) and
// their values (want) bit for bit.
template <class I, class V>
bool same_y(const I* gi, const V* gv, int64_t count, const std::vector<uint8_t>& has, const std::vector<V>& want,
            const std::string& at) {
  int64_t k = 0;
  for (size_t i = 0; i < has.size(); ++i) {
    if (!has[i]) continue;
    EXPECT_LT(k, count) << at;
    if (k >= count) return false;
    EXPECT_EQ(gi[k], static_cast<I>(i)) << at;
    EXPECT_EQ(std::memcmp(&gv[k], &want[i], sizeof(V)), 0) << at << " row " << i;
    if (testing::Test::HasFailure()) return false;
    ++k;
  }
  EXPECT_EQ(k, count) << at;
  return !testing::Test::HasFailure();
}

// A mesh matrix of m x n with this node density (NaN among the values if `nan`) times x of
// this density, against expected_y, every way the push can run; returns whether the push
// picks the dense accumulator by itself.
template <class S, class I, class V>
bool check_push(std::mt19937& rng, int64_t m, int64_t n, double node_density, bool nan, double density,
                const std::string& where) {
  const Csc<I, V> a = mesh_matrix<I, V>(rng, m, n, node_density, nan);
  std::vector<I> xi;
  std::vector<V> xv;
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t j = 0; j < n; ++j)
    if (u(rng) < density) xi.push_back(static_cast<I>(j)), xv.push_back(value<V>(u(rng) < 0.1 ? -0.0 : u(rng) * 2 - 0.5));
  sj::SpVecView<I, V> x;
  x.n = n;
  x.nnz = static_cast<int64_t>(xi.size());
  x.idx = xi.data();
  x.val = xv.data();
  std::vector<V> want;
  std::vector<uint8_t> has;
  expected_y<S>(a, xi, xv, want, has);
  const sj::CsView<I, V> A = a.view();

  // Sparse y over chunkings of 1, 2, 3 and 7 chunks (two or more read cut ranges).
  using sj::spmspv::PushAccumulator;
  for (PushAccumulator how : {PushAccumulator::kAuto, PushAccumulator::kSparse, PushAccumulator::kDense}) {
    const std::string at = where + " accumulator " + std::to_string(static_cast<int>(how));
    for (int64_t chunks : {1, 2, 3, 7}) {
      sj::Partition part;
      part.bounds.clear();
      for (int64_t c = 0; c <= chunks; ++c) part.bounds.push_back(m * c / chunks);
      sj::Workers w = sj::Workers::serial();
      std::vector<I> oi(static_cast<size_t>(m));
      std::vector<V> ov(static_cast<size_t>(m));
      sj::spmspv::RowSink<I, V> sink;
      sink.idx = oi.data();
      sink.val = ov.data();
      sj::spmspv::push_sparse<S>(A, x, part, w, sink, how);
      std::vector<I> gi(static_cast<size_t>(sink.count));
      std::vector<V> gv(static_cast<size_t>(sink.count));
      sink.gather(gi.data(), gv.data());
      if (!same_y(gi.data(), gv.data(), sink.count, has, want, at + " chunks " + std::to_string(chunks))) return false;

      std::vector<V> y(static_cast<size_t>(m), V(-99));
      sj::spmspv::push_dense<S>(A, x, y.data(), part, w, how);
      for (int64_t i = 0; i < m && !testing::Test::HasFailure(); ++i)
        EXPECT_EQ(std::memcmp(&y[i], &want[i], sizeof(V)), 0) << at << " dense, chunks " << chunks << " row " << i;
      if (testing::Test::HasFailure()) return false;
    }
    // One chunk written where `place` says once the count is known (a new result at exact size):
    // arrays of exactly the count it asks for (ASan: no write past them). A place that throws
    // leaves the thread's workspace clear: the next call still gives y.
    EXPECT_THROW((sj::spmspv::push_chunk_sparse_placed<S, I, V>(
                     A, x, nullptr, 0, 0, m, [](int64_t) -> std::pair<I*, V*> { throw std::bad_alloc(); }, how)),
                 std::bad_alloc);
    int64_t asked = -1;
    std::vector<I> ei;
    std::vector<V> ev;
    const int64_t got = sj::spmspv::push_chunk_sparse_placed<S, I, V>(A, x, nullptr, 0, 0, m, [&](int64_t count) {
      asked = count;
      ei.resize(static_cast<size_t>(count));
      ev.resize(static_cast<size_t>(count));
      return std::pair{ei.data(), ev.data()};
    }, how);
    EXPECT_EQ(got, asked) << at << " placed";
    if (!same_y(ei.data(), ev.data(), got, has, want, at + " placed")) return false;
  }
  return sj::ExactIdentity<S>::exists && sj::spmspv::push_dense_accumulator(A, x.nnz, 0, m);
}

template <class S, class I, class V> void check_round(std::mt19937& rng, int round) {
  const int64_t m = 1 + static_cast<int64_t>(rng() % 300), n = 1 + static_cast<int64_t>(rng() % 120);
  const double density = round % 4 == 0 ? 1.0 : 0.05 + 0.1 * (round % 5);
  const std::string where = "round " + std::to_string(round) + " " + std::to_string(m) + "x" + std::to_string(n);
  EXPECT_FALSE((check_push<S, I, V>(rng, m, n, round % 3 == 0 ? 0.5 : 0.08, round % 7 == 3, density, where)))
      << where << ": the dense accumulator picked for under 4096 rows";
}

template <class S, class I, class V> void check_type(unsigned seed) {
  std::mt19937 rng(seed);
  for (int round = 0; round < 120; ++round) {
    check_round<S, I, V>(rng, round);
    if (testing::Test::HasFailure()) return;
  }
}

TEST(PushRuns, MeshMatricesMatchTheContractBitForBit) {
  if (!sj::push_runs::available()) GTEST_SKIP() << "CPU lacks AVX2";
  static_assert(sj::push_runs::kVectorised<sj::PlusTimes<double>, double>);
  static_assert(sj::push_runs::kVectorised<sj::MinPlus<float>, float>);
  check_type<sj::PlusTimes<double>, int32_t, double>(1);
  check_type<sj::PlusTimes<double>, int64_t, double>(2);
  check_type<sj::PlusTimes<float>, int32_t, float>(3);
  check_type<sj::PlusTimes<float>, int64_t, float>(4);
}

// min and max keep std::min / std::max's choice (ties and signed zeros: the accumulator).
TEST(PushRuns, OtherSemiringsMatchTheContractBitForBit) {
  if (!sj::push_runs::available()) GTEST_SKIP() << "CPU lacks AVX2";
  check_type<sj::MinPlus<double>, int32_t, double>(5);
  check_type<sj::MinPlus<float>, int64_t, float>(6);
  check_type<sj::MaxTimes<double>, int64_t, double>(7);
  check_type<sj::MaxTimes<float>, int32_t, float>(8);
  check_type<sj::PlusPair<double>, int32_t, double>(9);
}

// Outputs of 4096 rows and more take the dense accumulator by themselves once the products
// reach one per row (kernels/spmspv_kernels.hpp, push_dense_accumulator), and keep the
// sparse one below that; NaN and signed zeros among the values.
TEST(PushRuns, LargeOutputsPickTheDenseAccumulatorAndAgree) {
  std::mt19937 rng(11);
  for (int k = 0; k < 3; ++k) {
    const std::string where = "large " + std::to_string(k);
    EXPECT_TRUE((check_push<sj::PlusTimes<double>, int32_t, double>(rng, 6000, 90, 0.3, k == 1, 0.5, where)));
    EXPECT_FALSE((check_push<sj::PlusTimes<double>, int32_t, double>(rng, 6000, 90, 0.01, k == 1, 0.05, where)));
    EXPECT_TRUE((check_push<sj::PlusPair<float>, int64_t, float>(rng, 5000, 40, 0.5, false, 0.5, where)));
    EXPECT_TRUE((check_push<sj::OrAnd<uint8_t>, int32_t, uint8_t>(rng, 4100, 40, 0.5, false, 0.5, where)));
    // min and max over floating values have no exact identity: always the sparse accumulator.
    EXPECT_FALSE((check_push<sj::MinPlus<double>, int32_t, double>(rng, 6000, 90, 0.3, true, 0.5, where)));
    if (testing::Test::HasFailure()) return;
  }
}

// Reading touched rows back from their marks (scan_touched_any) into arrays of exactly the count,
// followed by guard entries: every count of touched rows in a block of 32 (blocks moved four
// rows at a time and row by row), rows past the last block, chunks that start past row 0.
template <class I, class V> void check_scan(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  for (int round = 0; round < 300; ++round) {
    const int64_t m = static_cast<int64_t>(rng() % 200), r0 = m > 0 && round % 3 == 1 ? static_cast<int64_t>(rng() % m) : 0;
    const double density = round % 5 == 0 ? 1.0 : u(rng);
    std::vector<uint8_t> mark(static_cast<size_t>(m), 0);
    std::vector<V> acc(static_cast<size_t>(m));
    std::vector<I> want_i;
    std::vector<V> want_v;
    for (int64_t i = 0; i < m; ++i) {
      acc[i] = value<V>(u(rng) * 100 - 50);
      if (i >= r0 && u(rng) < density) {
        mark[i] = 1;
        want_i.push_back(static_cast<I>(i));
        want_v.push_back(acc[i]);
      }
    }
    const int64_t cnt = static_cast<int64_t>(want_i.size());
    constexpr int kGuard = 4;
    std::vector<I> oi(static_cast<size_t>(cnt + kGuard), I(-7));
    std::vector<V> ov(static_cast<size_t>(cnt + kGuard), V(-7));
    const std::string at = "round " + std::to_string(round) + " rows [" + std::to_string(r0) + ", " + std::to_string(m) + ")";
    EXPECT_EQ(sj::spmspv::scan_touched_any(mark.data(), acc.data(), r0, m, oi.data(), ov.data(), cnt), cnt) << at;
    for (int64_t k = 0; k < cnt; ++k) {
      EXPECT_EQ(oi[k], want_i[k]) << at << " entry " << k;
      EXPECT_EQ(std::memcmp(&ov[k], &want_v[k], sizeof(V)), 0) << at << " entry " << k;
    }
    for (int64_t k = cnt; k < cnt + kGuard; ++k) {
      EXPECT_EQ(oi[k], I(-7)) << at << ": written past the room at " << k;
      EXPECT_EQ(ov[k], V(-7)) << at << ": written past the room at " << k;
    }
    for (int64_t i = 0; i < m; ++i) EXPECT_EQ(mark[i], 0) << at << " mark " << i;
    if (testing::Test::HasFailure()) return;
  }
}

TEST(PushRuns, ScanTouchedWritesTheRowsAndNothingPastItsRoom) {
  std::mt19937 rng(21);
  check_scan<int32_t, double>(rng);
  check_scan<int64_t, double>(rng);
  check_scan<int32_t, float>(rng);
  check_scan<int64_t, float>(rng);
  check_scan<int32_t, uint8_t>(rng);
}

TEST(PushRuns, BoolOrAndTakesTheScalarWalkAndAgrees) {
  static_assert(!sj::push_runs::kVectorised<sj::OrAnd<uint8_t>, uint8_t>);
  check_type<sj::OrAnd<uint8_t>, int32_t, uint8_t>(10);
}

}  // namespace
#endif

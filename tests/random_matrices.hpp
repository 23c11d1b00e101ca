// Seeded random sparse matrices and vectors for tests, and a dense brute-force matrix type.
// The generator is our own (splitmix64 + xoshiro256**, no <random> distributions), so a
// seed gives the same matrix with every standard library. Matrices are owned CsResult
// arrays (CSR when outer = rows); view() turns them into the CsView kernels take.
#pragma once
#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "src/tensor.hpp"

namespace sj::test {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = splitmix(seed);
  }
  uint64_t next() {  // xoshiro256**
    const uint64_t r = std::rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return r;
  }
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // Uniform in [lo, hi] (inclusive); the tiny modulo bias does not matter for tests.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    assert(lo <= hi);
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return span == 0 ? static_cast<int64_t>(next()) : lo + static_cast<int64_t>(next() % span);
  }
  bool bernoulli(double p) { return uniform01() < p; }

 private:
  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

// How stored values are drawn. Floating values are never -0.0 (so x*1, x+0 give x back
// exactly); bool values (uint8_t) are 0 or 1.
enum class Values {
  Real,      // full-mantissa reals in [-4, 4): sums depend on their order
  SmallInt,  // integers in [-3, 3], zero included (stored zeros)
  Positive,  // reals in [0.25, 4.25)
  Ones,      // all 1
};

template <class V> V random_value(Rng& rng, Values kind) {
  if constexpr (std::is_same_v<V, uint8_t>) {
    return kind == Values::Ones ? 1 : static_cast<uint8_t>(rng.bernoulli(0.75));
  } else {
    switch (kind) {
      case Values::Real: return static_cast<V>(rng.uniform01() * 8.0) - V(4);  // 4-4 is +0
      case Values::SmallInt: return static_cast<V>(rng.uniform_int(-3, 3));
      case Values::Positive: return static_cast<V>(0.25 + rng.uniform01() * 4.0);
      case Values::Ones: return V(1);
    }
    return V(1);
  }
}

struct MatrixOptions {
  double empty_row_fraction = 0;  // each row is emptied with this probability
  double empty_col_fraction = 0;  // each column likewise
  Values values = Values::Real;
};

template <class I, class V> CsView<I, V> view(const CsResult<I, V>& m) {
  CsView<I, V> v;
  v.outer = m.outer;
  v.inner = m.inner;
  v.pos = m.pos.data();
  v.crd = m.crd.data();
  v.val = m.val.data();
  return v;
}
template <class I, class V> SpVecView<I, V> view(const SpVecResult<I, V>& x) {
  SpVecView<I, V> v;
  v.n = x.n;
  v.nnz = static_cast<int64_t>(x.idx.size());
  v.idx = x.idx.data();
  v.val = x.val.data();
  return v;
}

namespace detail {
// Calls emit(j) for each j in [0, n) independently with probability p, in increasing j,
// in O(expected hits) by drawing the geometric gaps between hits.
template <class F> void bernoulli_positions(Rng& rng, int64_t n, double p, F&& emit) {
  if (p <= 0 || n <= 0) return;
  if (p >= 1) {
    for (int64_t j = 0; j < n; ++j) emit(j);
    return;
  }
  const double log_q = std::log1p(-p);
  int64_t j = -1;
  for (;;) {
    const double gap = std::floor(std::log(1.0 - rng.uniform01()) / log_q);  // >= 0
    if (gap >= static_cast<double>(n - 1 - j)) return;
    j += 1 + static_cast<int64_t>(gap);
    emit(j);
  }
}

// Builds a rows x cols CSR matrix whose row i has density row_density(i), then empties the
// rows and columns `opt` asks for.
template <class I, class V, class D>
CsResult<I, V> build(Rng& rng, int64_t rows, int64_t cols, const MatrixOptions& opt,
                     D&& row_density) {
  std::vector<uint8_t> empty_col(static_cast<size_t>(cols), 0);
  for (auto& e : empty_col) e = rng.bernoulli(opt.empty_col_fraction);
  CsResult<I, V> m;
  m.outer = rows;
  m.inner = cols;
  m.pos.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const bool empty_row = rng.bernoulli(opt.empty_row_fraction);
    const double p = row_density(i);
    bernoulli_positions(rng, cols, p, [&](int64_t j) {
      if (empty_row || empty_col[j]) return;
      m.crd.push_back(static_cast<I>(j));
      m.val.push_back(random_value<V>(rng, opt.values));
    });
    m.pos[i + 1] = static_cast<int64_t>(m.crd.size());
  }
  return m;
}
}  // namespace detail

// Every element stored independently with probability `density`.
template <class I, class V>
CsResult<I, V> random_uniform(Rng& rng, int64_t rows, int64_t cols, double density,
                              const MatrixOptions& opt = {}) {
  return detail::build<I, V>(rng, rows, cols, opt, [&](int64_t) { return density; });
}

// Row lengths follow a Pareto law with tail exponent `exponent` (> 1; smaller = heavier
// tail) and mean about `mean_row_length`, capped at cols; columns uniform within a row.
template <class I, class V>
CsResult<I, V> random_power_law(Rng& rng, int64_t rows, int64_t cols, double mean_row_length,
                                double exponent = 1.5, const MatrixOptions& opt = {}) {
  const double xmin = mean_row_length * (exponent - 1) / exponent;
  return detail::build<I, V>(rng, rows, cols, opt, [&](int64_t) {
    const double len = xmin * std::pow(1.0 - rng.uniform01(), -1.0 / exponent);
    return cols == 0 ? 0.0 : std::min(1.0, len / static_cast<double>(cols));
  });
}

// Elements with -lower <= j - i <= upper, each stored with probability `density`.
template <class I, class V>
CsResult<I, V> random_banded(Rng& rng, int64_t rows, int64_t cols, int64_t lower, int64_t upper,
                             double density, const MatrixOptions& opt = {}) {
  CsResult<I, V> full = random_uniform<I, V>(rng, rows, cols, density, opt);
  CsResult<I, V> m;
  m.outer = rows;
  m.inner = cols;
  m.pos.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t p = full.pos[i]; p < full.pos[i + 1]; ++p) {
      const int64_t d = static_cast<int64_t>(full.crd[p]) - i;
      if (d < -lower || d > upper) continue;
      m.crd.push_back(full.crd[p]);
      m.val.push_back(full.val[p]);
    }
    m.pos[i + 1] = static_cast<int64_t>(m.crd.size());
  }
  return m;
}

// Any of the families above with random parameters (density 0 to 1, some empty rows and
// columns): the everyday input of randomized tests.
template <class I, class V>
CsResult<I, V> random_matrix(Rng& rng, int64_t rows, int64_t cols, Values values = Values::Real) {
  MatrixOptions opt;
  opt.values = values;
  if (rng.bernoulli(0.3)) opt.empty_row_fraction = 0.3 * rng.uniform01();
  if (rng.bernoulli(0.3)) opt.empty_col_fraction = 0.3 * rng.uniform01();
  static constexpr double kDensities[] = {0.0, 0.02, 0.1, 0.3, 0.6, 1.0};
  switch (rng.uniform_int(0, 3)) {
    case 0: return random_uniform<I, V>(rng, rows, cols, kDensities[rng.uniform_int(0, 5)], opt);
    case 1: return random_uniform<I, V>(rng, rows, cols, rng.uniform01(), opt);
    case 2:
      return random_power_law<I, V>(rng, rows, cols, 1.0 + 4.0 * rng.uniform01(),
                                    1.2 + rng.uniform01(), opt);
    default:
      return random_banded<I, V>(rng, rows, cols, rng.uniform_int(0, 3), rng.uniform_int(0, 3),
                                 0.3 + 0.7 * rng.uniform01(), opt);
  }
}

// Every index stored independently with probability `density`; indices sorted.
template <class I, class V>
SpVecResult<I, V> random_sparse_vector(Rng& rng, int64_t n, double density,
                                       Values values = Values::Real) {
  SpVecResult<I, V> x;
  x.n = n;
  detail::bernoulli_positions(rng, n, density, [&](int64_t j) {
    x.idx.push_back(static_cast<I>(j));
    x.val.push_back(random_value<V>(rng, values));
  });
  return x;
}

template <class V> std::vector<V> random_dense_vector(Rng& rng, int64_t n, Values values = Values::Real) {
  std::vector<V> x(static_cast<size_t>(n));
  for (auto& v : x) v = random_value<V>(rng, values);
  return x;
}

// The n x n identity pattern with value `one` on the diagonal.
template <class I, class V> CsResult<I, V> identity_matrix(int64_t n, V one) {
  CsResult<I, V> m;
  m.outer = m.inner = n;
  for (int64_t i = 0; i <= n; ++i) m.pos.push_back(i);
  for (int64_t i = 0; i < n; ++i) {
    m.crd.push_back(static_cast<I>(i));
    m.val.push_back(one);
  }
  return m;
}

// A dense matrix that also records which elements are stored: the brute-force side of
// tests. Absent elements hold `fill` (tests use the semiring's zero()).
template <class V> struct DenseMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<V> val;        // row-major
  std::vector<uint8_t> has;  // 1 where an element is stored

  DenseMatrix() = default;
  DenseMatrix(int64_t r, int64_t c, V fill = V(0))
      : rows(r), cols(c), val(static_cast<size_t>(r * c), fill), has(static_cast<size_t>(r * c), 0) {}
  V at(int64_t i, int64_t j) const { return val[i * cols + j]; }
  bool stored(int64_t i, int64_t j) const { return has[i * cols + j] != 0; }
  void set(int64_t i, int64_t j, V v) {
    val[i * cols + j] = v;
    has[i * cols + j] = 1;
  }
};

// The dense form of a compressed matrix: CSR when csr (outer = rows), else CSC.
template <class I, class V>
DenseMatrix<V> to_dense(const CsView<I, V>& m, bool csr = true, V fill = V(0)) {
  DenseMatrix<V> d = csr ? DenseMatrix<V>(m.outer, m.inner, fill) : DenseMatrix<V>(m.inner, m.outer, fill);
  for (int64_t s = 0; s < m.outer; ++s)
    for (int64_t p = m.pos[s]; p < m.pos[s + 1]; ++p) {
      const int64_t c = m.crd[p];
      if (csr) d.set(s, c, m.val[p]);
      else d.set(c, s, m.val[p]);
    }
  return d;
}

// The CSR arrays of the stored elements of d.
template <class I, class V> CsResult<I, V> from_dense(const DenseMatrix<V>& d) {
  CsResult<I, V> m;
  m.outer = d.rows;
  m.inner = d.cols;
  m.pos.push_back(0);
  for (int64_t i = 0; i < d.rows; ++i) {
    for (int64_t j = 0; j < d.cols; ++j)
      if (d.stored(i, j)) {
        m.crd.push_back(static_cast<I>(j));
        m.val.push_back(d.at(i, j));
      }
    m.pos.push_back(static_cast<int64_t>(m.crd.size()));
  }
  return m;
}

}  // namespace sj::test

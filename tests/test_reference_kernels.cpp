// The reference kernels against dense brute force (written here, simply, summing in k order
// so results compare bit for bit) and against algebraic identities, on seeded random inputs
// over every semiring, value type and index type.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/reference.hpp"
#include "src/semiring.hpp"
#include "tests/random_matrices.hpp"

namespace {

using namespace sj;
using sj::test::DenseMatrix;
using sj::test::Rng;
using sj::test::Values;
using sj::test::view;

constexpr int kSeeds = 40;

// ---- type combinations ----------------------------------------------------------------

template <class S> const char* semiring_name() {
  switch (S::id) {
    case SJ_SEMIRING_PLUS_TIMES: return "plus-times";
    case SJ_SEMIRING_MIN_PLUS: return "min-plus";
    case SJ_SEMIRING_MAX_TIMES: return "max-times";
    case SJ_SEMIRING_OR_AND: return "or-and";
    case SJ_SEMIRING_PLUS_PAIR: return "plus-pair";
  }
  return "?";
}
template <class T> const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  else if constexpr (std::is_same_v<T, double>) return "f64";
  else if constexpr (std::is_same_v<T, uint8_t>) return "bool";
  else if constexpr (std::is_same_v<T, int32_t>) return "i32";
  else return "i64";
}

// Calls f.template operator()<S, I, V>() for every semiring / index / value combination the
// library serves: the four arithmetic semirings with f32 and f64, or-and with bool.
template <class I, class V, class F> void for_arith_semirings(F& f) {
  f.template operator()<PlusTimes<V>, I, V>();
  f.template operator()<MinPlus<V>, I, V>();
  f.template operator()<MaxTimes<V>, I, V>();
  f.template operator()<PlusPair<V>, I, V>();
}
template <class F> void for_all_types(F&& f) {
  for_arith_semirings<int32_t, float>(f);
  for_arith_semirings<int32_t, double>(f);
  for_arith_semirings<int64_t, float>(f);
  for_arith_semirings<int64_t, double>(f);
  f.template operator()<OrAnd<uint8_t>, int32_t, uint8_t>();
  f.template operator()<OrAnd<uint8_t>, int64_t, uint8_t>();
}

template <class S, class I, class V> std::string combo(int seed) {
  return std::string(semiring_name<S>()) + " " + type_name<I>() + " " + type_name<V>() +
         " seed " + std::to_string(seed);
}

// The multiplicative identity of S (for A*I = A).
template <class S, class V> V one() {
  return S::id == SJ_SEMIRING_MIN_PLUS ? V(0) : V(1);
}

// ---- helpers ----------------------------------------------------------------------------

template <class V> auto bits(V v) {
  if constexpr (sizeof(V) == 1) return static_cast<uint8_t>(v);
  else if constexpr (sizeof(V) == 4) return std::bit_cast<uint32_t>(v);
  else return std::bit_cast<uint64_t>(v);
}

// Dimensions for random shapes: 0 and 1 often, otherwise small enough for brute force.
int64_t random_dim(Rng& rng) {
  const double u = rng.uniform01();
  if (u < 0.1) return 0;
  if (u < 0.25) return 1;
  if (u < 0.6) return rng.uniform_int(2, 8);
  return rng.uniform_int(9, 28);
}

// Every structural invariant of a compressed result: positions start at 0 and never
// decrease, array lengths agree, coordinates lie inside the shape and increase strictly.
template <class I, class V> void expect_well_formed(const CsResult<I, V>& m) {
  ASSERT_EQ(m.pos.size(), static_cast<size_t>(m.outer) + 1);
  ASSERT_EQ(m.pos[0], 0);
  ASSERT_EQ(m.crd.size(), static_cast<size_t>(m.pos[m.outer]));
  ASSERT_EQ(m.val.size(), m.crd.size());
  for (int64_t s = 0; s < m.outer; ++s) {
    ASSERT_LE(m.pos[s], m.pos[s + 1]) << "segment " << s;
    for (int64_t p = m.pos[s]; p < m.pos[s + 1]; ++p) {
      ASSERT_GE(m.crd[p], 0) << "segment " << s;
      ASSERT_LT(static_cast<int64_t>(m.crd[p]), m.inner) << "segment " << s;
      if (p > m.pos[s]) {
        ASSERT_LT(m.crd[p - 1], m.crd[p]) << "segment " << s << " not sorted";
      }
    }
  }
}

// Same stored pattern and bit-identical stored values.
template <class V> void expect_same(const DenseMatrix<V>& got, const DenseMatrix<V>& want) {
  ASSERT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.cols, want.cols);
  for (int64_t i = 0; i < want.rows; ++i)
    for (int64_t j = 0; j < want.cols; ++j) {
      ASSERT_EQ(got.stored(i, j), want.stored(i, j)) << "at (" << i << "," << j << ")";
      if (want.stored(i, j)) {
        ASSERT_EQ(bits(got.at(i, j)), bits(want.at(i, j)))
            << "at (" << i << "," << j << "): " << +got.at(i, j) << " vs " << +want.at(i, j);
      }
    }
}

// A CSR result against the brute-force matrix.
template <class I, class V>
void expect_csr_equals(const CsResult<I, V>& got, const DenseMatrix<V>& want) {
  ASSERT_NO_FATAL_FAILURE(expect_well_formed(got));
  expect_same(test::to_dense(view(got)), want);
}

// Two compressed results with identical arrays.
template <class I, class V>
void expect_identical(const CsResult<I, V>& a, const CsResult<I, V>& b) {
  ASSERT_EQ(a.outer, b.outer);
  ASSERT_EQ(a.inner, b.inner);
  ASSERT_EQ(a.pos, b.pos);
  ASSERT_EQ(a.crd, b.crd);
  ASSERT_EQ(a.val.size(), b.val.size());
  for (size_t p = 0; p < a.val.size(); ++p) ASSERT_EQ(bits(a.val[p]), bits(b.val[p])) << p;
}

// Values: mostly full-mantissa reals (the sum's order shows in the bits); sometimes small
// integers with zeros, whose products -0 show whether a sum wrongly starts from zero().
Values random_values(Rng& rng) { return rng.bernoulli(0.3) ? Values::SmallInt : Values::Real; }

template <class I, class V> CsResult<I, V> random_csr(Rng& rng, int64_t rows, int64_t cols) {
  return test::random_matrix<I, V>(rng, rows, cols, random_values(rng));
}

// ---- brute force (dense, k in increasing order, first product starts the sum) -----------

template <class S, class V> struct Sum {
  bool any = false;
  V acc{};
  void add(V p) {
    acc = any ? S::add(acc, p) : p;
    any = true;
  }
};

template <class S, class V>
DenseMatrix<V> brute_matmul(const DenseMatrix<V>& A, const DenseMatrix<V>& B) {
  DenseMatrix<V> C(A.rows, B.cols, S::zero());
  for (int64_t i = 0; i < A.rows; ++i)
    for (int64_t j = 0; j < B.cols; ++j) {
      Sum<S, V> s;
      for (int64_t k = 0; k < A.cols; ++k)
        if (A.stored(i, k) && B.stored(k, j)) s.add(S::mul(A.at(i, k), B.at(k, j)));
      if (s.any) C.set(i, j, s.acc);
    }
  return C;
}

// y(i) over stored x(j) only (xs marks them); `any` per row recorded in y.has.
template <class S, class V>
DenseMatrix<V> brute_matvec(const DenseMatrix<V>& A, const std::vector<V>& x,
                            const std::vector<uint8_t>& xs) {
  DenseMatrix<V> y(A.rows, 1, S::zero());
  for (int64_t i = 0; i < A.rows; ++i) {
    Sum<S, V> s;
    for (int64_t j = 0; j < A.cols; ++j)
      if (A.stored(i, j) && xs[j]) s.add(S::mul(A.at(i, j), x[j]));
    if (s.any) y.set(i, 0, s.acc);
  }
  return y;
}

template <class V> DenseMatrix<V> brute_transpose(const DenseMatrix<V>& A) {
  DenseMatrix<V> T(A.cols, A.rows);
  for (int64_t i = 0; i < A.rows; ++i)
    for (int64_t j = 0; j < A.cols; ++j)
      if (A.stored(i, j)) T.set(j, i, A.at(i, j));
  return T;
}

// ---- kernels against brute force --------------------------------------------------------

TEST(Reference, SpgemmMatchesBruteForce) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(1000 + seed);
      const int64_t m = random_dim(rng), k = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, k);
      auto B = random_csr<I, V>(rng, k, n);
      auto want = brute_matmul<S>(test::to_dense(view(A)), test::to_dense(view(B)));
      ASSERT_NO_FATAL_FAILURE(expect_csr_equals(ref::spgemm<S>(view(A), view(B)), want));
    }
  });
}

TEST(Reference, SpgemmDenseMatchesBruteForce) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(2000 + seed);
      const int64_t m = random_dim(rng), k = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, k);
      auto B = random_csr<I, V>(rng, k, n);
      auto want = brute_matmul<S>(test::to_dense(view(A)), test::to_dense(view(B)));
      // Garbage first: the kernel must set every element itself.
      std::vector<V> C(static_cast<size_t>(m * n), V(7));
      ref::spgemm_dense<S>(view(A), view(B), C.data());
      for (size_t e = 0; e < C.size(); ++e)
        ASSERT_EQ(bits(C[e]), bits(want.val[e])) << "element " << e;
    }
  });
}

TEST(Reference, MaskedSpgemmMatchesBruteForce) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(3000 + seed);
      const int64_t m = random_dim(rng), k = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, k);
      auto B = random_csr<I, V>(rng, k, n);
      // The mask has its own value type, and its values (zeros included) are ignored.
      auto M = test::random_matrix<I, double>(rng, m, n, Values::SmallInt);
      auto full = brute_matmul<S>(test::to_dense(view(A)), test::to_dense(view(B)));
      DenseMatrix<V> want(m, n, S::zero());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          bool in_mask = false;
          for (int64_t p = M.pos[i]; p < M.pos[i + 1]; ++p) in_mask |= (M.crd[p] == j);
          if (in_mask && full.stored(i, j)) want.set(i, j, full.at(i, j));
        }
      ASSERT_NO_FATAL_FAILURE(
          expect_csr_equals(ref::masked_spgemm<S>(view(M), view(A), view(B)), want));
    }
  });
}

TEST(Reference, SpmspvMatchesBruteForce) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(4000 + seed);
      const int64_t m = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, n);
      auto x = test::random_sparse_vector<I, V>(rng, n, rng.uniform01(), random_values(rng));
      std::vector<V> xd(n, V(0));
      std::vector<uint8_t> xs(n, 0);
      for (size_t p = 0; p < x.idx.size(); ++p) {
        xd[x.idx[p]] = x.val[p];
        xs[x.idx[p]] = 1;
      }
      auto want = brute_matvec<S>(test::to_dense(view(A)), xd, xs);

      auto y = ref::spmspv<S>(view(A), view(x));
      ASSERT_EQ(y.n, m);
      ASSERT_EQ(y.idx.size(), y.val.size());
      DenseMatrix<V> got(m, 1);
      for (size_t p = 0; p < y.idx.size(); ++p) {
        ASSERT_TRUE(y.idx[p] >= 0 && y.idx[p] < m) << "index " << +y.idx[p] << " outside";
        if (p > 0) {
          ASSERT_LT(y.idx[p - 1], y.idx[p]) << "indices not sorted";
        }
        got.set(y.idx[p], 0, y.val[p]);
      }
      ASSERT_NO_FATAL_FAILURE(expect_same(got, want));

      std::vector<V> yd(m, V(7));
      ref::spmspv_dense<S>(view(A), view(x), yd.data());
      for (int64_t i = 0; i < m; ++i) ASSERT_EQ(bits(yd[i]), bits(want.val[i])) << "row " << i;
    }
  });
}

TEST(Reference, SpmvMatchesBruteForce) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(5000 + seed);
      const int64_t m = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, n);
      auto x = test::random_dense_vector<V>(rng, n, random_values(rng));
      auto want = brute_matvec<S>(test::to_dense(view(A)), x, std::vector<uint8_t>(n, 1));
      std::vector<V> y(m, V(7));
      ref::spmv<S>(view(A), x.data(), y.data());
      for (int64_t i = 0; i < m; ++i) ASSERT_EQ(bits(y[i]), bits(want.val[i])) << "row " << i;
    }
  });
}

TEST(Reference, EwiseMatchesBruteForce) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(6000 + seed);
      const int64_t m = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, n);
      auto B = random_csr<I, V>(rng, m, n);
      auto Ad = test::to_dense(view(A)), Bd = test::to_dense(view(B));
      DenseMatrix<V> mult(m, n), add(m, n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const bool a = Ad.stored(i, j), b = Bd.stored(i, j);
          if (a && b) {
            mult.set(i, j, S::mul(Ad.at(i, j), Bd.at(i, j)));
            add.set(i, j, S::add(Ad.at(i, j), Bd.at(i, j)));
          } else if (a) {
            add.set(i, j, Ad.at(i, j));
          } else if (b) {
            add.set(i, j, Bd.at(i, j));
          }
        }
      ASSERT_NO_FATAL_FAILURE(expect_csr_equals(ref::ewise_mult<S>(view(A), view(B)), mult));
      ASSERT_NO_FATAL_FAILURE(expect_csr_equals(ref::ewise_add<S>(view(A), view(B)), add));

      // The same matrices as CSC arrays give the same matrices back as CSC.
      auto At = ref::transpose(view(A)), Bt = ref::transpose(view(B));
      auto mult_csc = ref::ewise_mult<S>(view(At), view(Bt));
      auto add_csc = ref::ewise_add<S>(view(At), view(Bt));
      ASSERT_NO_FATAL_FAILURE(expect_well_formed(mult_csc));
      ASSERT_NO_FATAL_FAILURE(expect_well_formed(add_csc));
      ASSERT_NO_FATAL_FAILURE(expect_same(test::to_dense(view(mult_csc), false), mult));
      ASSERT_NO_FATAL_FAILURE(expect_same(test::to_dense(view(add_csc), false), add));
    }
  });
}

TEST(Reference, TransposeMatchesBruteForce) {
  for_all_types([]<class S, class I, class V>() {
    if constexpr (S::id == SJ_SEMIRING_PLUS_TIMES || S::id == SJ_SEMIRING_OR_AND) {
      for (int seed = 0; seed < kSeeds; ++seed) {
        SCOPED_TRACE((combo<S, I, V>(seed)));
        Rng rng(7000 + seed);
        auto A = random_csr<I, V>(rng, random_dim(rng), random_dim(rng));
        auto T = ref::transpose(view(A));
        ASSERT_EQ(T.outer, A.inner);
        ASSERT_EQ(T.inner, A.outer);
        ASSERT_NO_FATAL_FAILURE(
            expect_csr_equals(T, brute_transpose(test::to_dense(view(A)))));
        // Read as CSC, the arrays are A itself.
        ASSERT_NO_FATAL_FAILURE(expect_same(test::to_dense(view(T), false), test::to_dense(view(A))));
      }
    }
  });
}

// ---- algebraic identities ---------------------------------------------------------------

TEST(Reference, TransposeTwiceIsIdentity) {
  for_all_types([]<class S, class I, class V>() {
    if constexpr (S::id == SJ_SEMIRING_PLUS_TIMES || S::id == SJ_SEMIRING_OR_AND) {
      for (int seed = 0; seed < kSeeds; ++seed) {
        SCOPED_TRACE((combo<S, I, V>(seed)));
        Rng rng(8000 + seed);
        auto A = random_csr<I, V>(rng, random_dim(rng), random_dim(rng));
        auto T = ref::transpose(view(A));
        ASSERT_NO_FATAL_FAILURE(expect_identical(ref::transpose(view(T)), A));
      }
    }
  });
}

TEST(Reference, ProductTransposeIsTransposedProduct) {  // (AB)^T = B^T A^T
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(9000 + seed);
      const int64_t m = random_dim(rng), k = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, k);
      auto B = random_csr<I, V>(rng, k, n);
      auto lhs = ref::transpose(view(ref::spgemm<S>(view(A), view(B))));
      auto At = ref::transpose(view(A)), Bt = ref::transpose(view(B));
      auto rhs = ref::spgemm<S>(view(Bt), view(At));
      ASSERT_NO_FATAL_FAILURE(expect_well_formed(rhs));
      ASSERT_NO_FATAL_FAILURE(expect_identical(lhs, rhs));
    }
  });
}

TEST(Reference, EwiseMultCommutes) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(10000 + seed);
      const int64_t m = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, n);
      auto B = random_csr<I, V>(rng, m, n);
      ASSERT_NO_FATAL_FAILURE(expect_identical(ref::ewise_mult<S>(view(A), view(B)),
                                               ref::ewise_mult<S>(view(B), view(A))));
    }
  });
}

TEST(Reference, EwiseAddWithEmptyIsIdentity) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(11000 + seed);
      const int64_t m = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, n);
      auto E = test::random_uniform<I, V>(rng, m, n, 0.0);
      ASSERT_NO_FATAL_FAILURE(expect_identical(ref::ewise_add<S>(view(A), view(E)), A));
      ASSERT_NO_FATAL_FAILURE(expect_identical(ref::ewise_add<S>(view(E), view(A)), A));
      ASSERT_NO_FATAL_FAILURE(expect_identical(ref::ewise_mult<S>(view(A), view(E)), E));
    }
  });
}

TEST(Reference, MaskedIsSpgemmFilteredByMask) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(12000 + seed);
      const int64_t m = random_dim(rng), k = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, k);
      auto B = random_csr<I, V>(rng, k, n);
      auto M = test::random_matrix<I, uint8_t>(rng, m, n);
      auto C = ref::spgemm<S>(view(A), view(B));
      // Keep C's entries whose position M stores: ewise_mult with M's pattern, via a copy of
      // C that takes the mask's pattern as an intersection.
      CsResult<I, V> want;
      want.outer = m;
      want.inner = n;
      want.pos.push_back(0);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t p = C.pos[i]; p < C.pos[i + 1]; ++p)
          for (int64_t q = M.pos[i]; q < M.pos[i + 1]; ++q)
            if (M.crd[q] == C.crd[p]) {
              want.crd.push_back(C.crd[p]);
              want.val.push_back(C.val[p]);
            }
        want.pos.push_back(static_cast<int64_t>(want.crd.size()));
      }
      ASSERT_NO_FATAL_FAILURE(
          expect_identical(ref::masked_spgemm<S>(view(M), view(A), view(B)), want));
      // A full mask is no mask.
      auto full = test::random_uniform<I, uint8_t>(rng, m, n, 1.0);
      ASSERT_NO_FATAL_FAILURE(
          expect_identical(ref::masked_spgemm<S>(view(full), view(A), view(B)), C));
    }
  });
}

TEST(Reference, SpgemmWithIdentity) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(13000 + seed);
      const int64_t m = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, n);
      auto Im = test::identity_matrix<I, V>(m, one<S, V>());
      auto In = test::identity_matrix<I, V>(n, one<S, V>());
      auto want = A;
      if constexpr (S::id == SJ_SEMIRING_PLUS_PAIR) want.val.assign(want.val.size(), V(1));
      ASSERT_NO_FATAL_FAILURE(expect_identical(ref::spgemm<S>(view(A), view(In)), want));
      ASSERT_NO_FATAL_FAILURE(expect_identical(ref::spgemm<S>(view(Im), view(A)), want));
    }
  });
}

TEST(Reference, SpmspvIsSpgemmWithColumn) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(14000 + seed);
      const int64_t m = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, n);
      auto x = test::random_sparse_vector<I, V>(rng, n, rng.uniform01(), random_values(rng));
      CsResult<I, V> X;  // x as an n x 1 CSR matrix
      X.outer = n;
      X.inner = 1;
      X.pos.assign(n + 1, 0);
      for (size_t p = 0; p < x.idx.size(); ++p) {
        X.pos[x.idx[p] + 1] = 1;
        X.crd.push_back(0);
        X.val.push_back(x.val[p]);
      }
      for (int64_t j = 0; j < n; ++j) X.pos[j + 1] += X.pos[j];
      auto C = ref::spgemm<S>(view(A), view(X));
      auto y = ref::spmspv<S>(view(A), view(x));
      ASSERT_EQ(y.idx.size(), static_cast<size_t>(C.pos[m]));
      size_t p = 0;
      for (int64_t i = 0; i < m; ++i)
        if (C.pos[i + 1] > C.pos[i]) {
          ASSERT_EQ(y.idx[p], i);
          ASSERT_EQ(bits(y.val[p]), bits(C.val[C.pos[i]]));
          ++p;
        }
    }
  });
}

TEST(Reference, SpmvIsSpmspvWithFullVector) {
  for_all_types([]<class S, class I, class V>() {
    for (int seed = 0; seed < kSeeds; ++seed) {
      SCOPED_TRACE((combo<S, I, V>(seed)));
      Rng rng(15000 + seed);
      const int64_t m = random_dim(rng), n = random_dim(rng);
      auto A = random_csr<I, V>(rng, m, n);
      auto x = test::random_sparse_vector<I, V>(rng, n, 1.0, random_values(rng));
      std::vector<V> y1(m), y2(m);
      ref::spmv<S>(view(A), x.val.data(), y1.data());
      ref::spmspv_dense<S>(view(A), view(x), y2.data());
      for (int64_t i = 0; i < m; ++i) ASSERT_EQ(bits(y1[i]), bits(y2[i])) << "row " << i;
    }
  });
}

// ---- larger inputs, and the families of the generator -------------------------------------

TEST(Reference, LargerSkewedInputs) {
  // Power-law, banded and hollow matrices, big enough that the accumulators are reused
  // across many rows. Brute force would be slow here, so the sparse and dense SpGEMM and
  // the transposed product check each other.
  using S = PlusTimes<double>;
  for (int seed = 0; seed < 6; ++seed) {
    SCOPED_TRACE(seed);
    Rng rng(16000 + seed);
    test::MatrixOptions hollow;
    hollow.empty_row_fraction = 0.2;
    hollow.empty_col_fraction = 0.2;
    auto A = test::random_power_law<int32_t, double>(rng, 300, 200, 6.0, 1.3, hollow);
    auto B = test::random_banded<int64_t, double>(rng, 200, 250, 5, 9, 0.7);
    // B with int32 indices so both operands agree.
    CsResult<int32_t, double> B32{B.outer, B.inner, B.pos,
                                  std::vector<int32_t>(B.crd.begin(), B.crd.end()), B.val};
    auto C = ref::spgemm<S>(view(A), view(B32));
    ASSERT_NO_FATAL_FAILURE(expect_well_formed(C));
    std::vector<double> D(300 * 250);
    ref::spgemm_dense<S>(view(A), view(B32), D.data());
    auto Cd = test::to_dense(view(C));
    for (int64_t i = 0; i < 300; ++i)
      for (int64_t j = 0; j < 250; ++j)
        ASSERT_EQ(bits(D[i * 250 + j]), bits(Cd.stored(i, j) ? Cd.at(i, j) : 0.0));
    auto Bt = ref::transpose(view(B32)), At = ref::transpose(view(A));
    ASSERT_NO_FATAL_FAILURE(expect_identical(ref::transpose(view(C)),
                                             ref::spgemm<S>(view(Bt), view(At))));
  }
}

TEST(Reference, GeneratorFamiliesHaveTheirShape) {
  Rng rng(17000);
  auto band = test::random_banded<int32_t, float>(rng, 50, 60, 2, 3, 1.0);
  ASSERT_NO_FATAL_FAILURE(expect_well_formed(band));
  for (int64_t i = 0; i < 50; ++i)
    for (int64_t p = band.pos[i]; p < band.pos[i + 1]; ++p) {
      EXPECT_GE(band.crd[p] - i, -2);
      EXPECT_LE(band.crd[p] - i, 3);
    }
  EXPECT_EQ(band.pos[1], 4);  // row 0: columns 0..3 at density 1
  auto full = test::random_uniform<int64_t, double>(rng, 7, 9, 1.0);
  EXPECT_EQ(full.pos[7], 63);
  auto none = test::random_uniform<int64_t, double>(rng, 7, 9, 0.0);
  EXPECT_EQ(none.pos[7], 0);
  test::MatrixOptions hollow;
  hollow.empty_row_fraction = 1.0;
  auto emptied = test::random_uniform<int32_t, double>(rng, 5, 5, 1.0, hollow);
  EXPECT_EQ(emptied.pos[5], 0);
  // Same seed, same matrix.
  Rng r1(5), r2(5);
  expect_identical(test::random_matrix<int32_t, double>(r1, 20, 20),
                   test::random_matrix<int32_t, double>(r2, 20, 20));
}

// ---- the exactness contract and edge cases ----------------------------------------------

TEST(Reference, SumStartsFromFirstProductInKOrder) {
  using S = PlusTimes<double>;
  // One product of -0: the result is -0 (starting from zero() = +0 would give +0).
  CsResult<int32_t, double> A{1, 1, {0, 1}, {0}, {-1.0}};
  CsResult<int32_t, double> B{1, 1, {0, 1}, {0}, {0.0}};
  auto C = ref::spgemm<S>(view(A), view(B));
  ASSERT_EQ(C.val.size(), 1u);
  EXPECT_TRUE(std::signbit(C.val[0]));
  double d = 5;
  ref::spgemm_dense<S>(view(A), view(B), &d);
  EXPECT_TRUE(std::signbit(d));
  // Order matters: (1e16 + 1) + -1e16 = 0 in doubles, but 1e16 + -1e16 + 1 = 1. Products in
  // increasing k: k=0 -> 1e16, k=1 -> 1, k=2 -> -1e16.
  CsResult<int32_t, double> R{1, 3, {0, 3}, {0, 1, 2}, {1e16, 1.0, -1e16}};
  CsResult<int32_t, double> Ones{3, 1, {0, 1, 2, 3}, {0, 0, 0}, {1.0, 1.0, 1.0}};
  auto P = ref::spgemm<S>(view(R), view(Ones));
  ASSERT_EQ(P.val.size(), 1u);
  EXPECT_EQ(P.val[0], (1e16 + 1.0) + -1e16);
  double y;
  const double x[3] = {1, 1, 1};
  ref::spmv<S>(view(R), x, &y);
  EXPECT_EQ(y, (1e16 + 1.0) + -1e16);
}

TEST(Reference, EmptyShapes) {
  using S = PlusTimes<float>;
  CsResult<int32_t, float> Z0x5{0, 5, {0}, {}, {}};
  CsResult<int32_t, float> Z5x0{5, 0, {0, 0, 0, 0, 0, 0}, {}, {}};
  auto C = ref::spgemm<S>(view(Z5x0), view(Z0x5));  // 5x5 with no products
  ASSERT_NO_FATAL_FAILURE(expect_well_formed(C));
  EXPECT_EQ(C.outer, 5);
  EXPECT_EQ(C.inner, 5);
  EXPECT_EQ(C.pos[5], 0);
  std::vector<float> D(25, 3.0f);
  ref::spgemm_dense<S>(view(Z5x0), view(Z0x5), D.data());
  for (float v : D) EXPECT_EQ(v, 0.0f);
  auto E = ref::spgemm<S>(view(Z0x5), view(ref::transpose(view(Z0x5))));  // 0x0
  EXPECT_EQ(E.outer, 0);
  EXPECT_EQ(E.pos.size(), 1u);
  // Views with null arrays for an empty matrix.
  CsView<int32_t, float> null0x3{0, 3, nullptr, nullptr, nullptr};
  EXPECT_EQ(ref::transpose(null0x3).pos, std::vector<int64_t>(4, 0));
  // min-plus: dense output of no products is +inf.
  float inf_out[25];
  ref::spgemm_dense<MinPlus<float>>(view(Z5x0), view(Z0x5), inf_out);
  for (float v : inf_out) EXPECT_EQ(v, std::numeric_limits<float>::infinity());
}

TEST(Reference, BadShapesAndOverflowAreErrors) {
  using S = PlusTimes<double>;
  CsResult<int32_t, double> A{2, 3, {0, 0, 0}, {}, {}};
  CsResult<int32_t, double> B{2, 2, {0, 0, 0}, {}, {}};
  auto status_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.status();
    }
    return SJ_OK;
  };
  EXPECT_EQ(status_of([&] { ref::spgemm<S>(view(A), view(B)); }), SJ_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(status_of([&] { ref::masked_spgemm<S>(view(A), view(B), view(B)); }),
            SJ_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(status_of([&] { ref::ewise_add<S>(view(A), view(B)); }), SJ_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(status_of([&] { ref::ewise_mult<S>(view(A), view(B)); }), SJ_ERR_SHAPE_MISMATCH);
  SpVecResult<int32_t, double> x{2, {}, {}};
  EXPECT_EQ(status_of([&] { ref::spmspv<S>(view(A), view(x)); }), SJ_ERR_SHAPE_MISMATCH);

  // Dense output of 2^40 x 2^40 elements: refused before anything is read or written.
  const int64_t huge = int64_t(1) << 40;
  CsView<int32_t, double> tall{huge, 0, nullptr, nullptr, nullptr};
  CsView<int32_t, double> wide{0, huge, nullptr, nullptr, nullptr};
  EXPECT_EQ(status_of([&] { ref::spgemm_dense<S>(tall, wide, static_cast<double*>(nullptr)); }), SJ_ERR_OVERFLOW);
  // A row count whose pointer array (rows + 1) overflows.
  CsView<int32_t, double> endless{std::numeric_limits<int64_t>::max(), 0, nullptr, nullptr,
                                  nullptr};
  CsView<int32_t, double> none{0, 0, nullptr, nullptr, nullptr};
  EXPECT_EQ(status_of([&] { ref::spgemm<S>(endless, none); }), SJ_ERR_OVERFLOW);
}

}  // namespace

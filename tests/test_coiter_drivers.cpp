// The coiteration drivers (kernels/coiter_drivers.hpp) against the reference kernels
// (kernels/reference.hpp), bit for bit (no reassociation), for several kernel specs (widths,
// phase masks, methods, ISAs, the fast-lane threshold forced to 0, trimming off, no JIT), on
// random inputs and on every real matrix; and the SpGEMM `inner` schedule forced through the
// C API against the reference schedule.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "capi/handles.hpp"
#include "jit/isa.hpp"
#include "kernels/coiter_drivers.hpp"
#include "kernels/coiter_portable.hpp"
#include "kernels/reference.hpp"
#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/error.hpp"
#include "src/plan.hpp"
#include "src/semiring.hpp"
#include "src/tensor_file.hpp"
#include "tests/random_matrices.hpp"
#include "tests/test_util.hpp"

namespace {

using sj::Tensor;
using sj::kernels::CoiterConfig;
using sj::test::Rng;

template <class V> constexpr sj::ValueType vt_of() {
  return std::is_same_v<V, float> ? sj::ValueType::F32 : std::is_same_v<V, double> ? sj::ValueType::F64 : sj::ValueType::Bool;
}
template <class I> constexpr sj::IndexType it_of() { return sizeof(I) == 4 ? sj::IndexType::I32 : sj::IndexType::I64; }

template <class I, class V> Tensor tensor(const sj::CsResult<I, V>& r) {
  return sj::to_tensor(sj::default_allocator(), true, r, vt_of<V>());
}
template <class I, class V> Tensor tensor(const sj::SpVecResult<I, V>& r) {
  return sj::to_tensor(sj::default_allocator(), r, vt_of<V>());
}
Tensor dense_tensor(int order, int64_t rows, int64_t cols, sj::ValueType vt, const void* data) {
  int64_t dims[2] = {rows, cols};
  Tensor t = sj::make_dense(sj::default_allocator(), order, dims, vt);
  const int64_t n = order == 1 ? rows : rows * cols;
  if (n) std::memcpy(t.values.mutable_data(), data, static_cast<size_t>(n) * sj::value_size(vt));
  return t;
}
// CSC of a CSR matrix's transpose: the same arrays, relabelled.
Tensor csc_of_transpose(const Tensor& csr) {
  Tensor t = csr;
  std::swap(t.dims[0], t.dims[1]);
  std::swap(t.mode_order[0], t.mode_order[1]);
  t.derived = nullptr;
  return t;
}

// Same shape, format, structure and value bits.
::testing::AssertionResult identical(const Tensor& want, const Tensor& got) {
  if (want.order != got.order || want.dims != got.dims) return ::testing::AssertionFailure() << "shapes differ";
  if (sj::is_dense(want) != sj::is_dense(got)) return ::testing::AssertionFailure() << "formats differ";
  if (want.value_type != got.value_type) return ::testing::AssertionFailure() << "value types differ";
  const int vs = sj::value_size(want.value_type);
  if (sj::is_dense(want)) {
    const int64_t n = want.order == 1 ? want.dims[0] : want.dims[0] * want.dims[1];
    if (n && std::memcmp(want.values.data(), got.values.data(), static_cast<size_t>(n) * vs) != 0)
      return ::testing::AssertionFailure() << "dense values differ";
    return ::testing::AssertionSuccess();
  }
  if (want.index_type != got.index_type) return ::testing::AssertionFailure() << "index types differ";
  if (want.order == 1) {
    if (want.nnz() != got.nnz()) return ::testing::AssertionFailure() << "nnz " << want.nnz() << " vs " << got.nnz();
    for (int64_t p = 0; p < want.nnz(); ++p) {
      if (sj::crd_at(want.levels[0], want.index_type, p) != sj::crd_at(got.levels[0], got.index_type, p))
        return ::testing::AssertionFailure() << "index at " << p << " differs";
      if (std::memcmp(static_cast<const char*>(want.values.data()) + p * vs,
                      static_cast<const char*>(got.values.data()) + p * vs, vs) != 0)
        return ::testing::AssertionFailure() << "value at " << p << " differs";
    }
    return ::testing::AssertionSuccess();
  }
  if (sj::is_csr(want) != sj::is_csr(got)) return ::testing::AssertionFailure() << "orientations differ";
  const int64_t outer = want.level_dim(0);
  const int64_t* wp = want.levels[1].pos.as<int64_t>();
  const int64_t* gp = got.levels[1].pos.as<int64_t>();
  for (int64_t i = 0; i <= outer; ++i)
    if (wp[i] != gp[i]) return ::testing::AssertionFailure() << "pointer " << i << ": " << wp[i] << " vs " << gp[i];
  for (int64_t p = 0; p < wp[outer]; ++p) {
    if (sj::crd_at(want.levels[1], want.index_type, p) != sj::crd_at(got.levels[1], got.index_type, p))
      return ::testing::AssertionFailure() << "coordinate at position " << p << " differs";
    if (std::memcmp(static_cast<const char*>(want.values.data()) + p * vs,
                    static_cast<const char*>(got.values.data()) + p * vs, vs) != 0)
      return ::testing::AssertionFailure() << "value at position " << p << " differs";
  }
  sj::validate(got);
  return ::testing::AssertionSuccess();
}

// The configurations every driver is checked with.
CoiterConfig make(int width, const char* phases, sj_coiter_method method, sj_isa isa = SJ_ISA_AUTO,
                  int64_t min_fast = -1, bool trim = true) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.vector_width = width;
  std::strncpy(o.phases, phases, sizeof(o.phases) - 1);
  o.method = method;
  o.isa = isa;
  CoiterConfig c;
  c.spec = sj::kernels::choose_coiter_spec(o, sj::IndexType::I32, sj::ValueType::F64, 50, 50);
  c.min_fast = min_fast;
  c.trim = trim;
  return c;
}

std::vector<std::pair<std::string, CoiterConfig>> configs(bool all) {
  std::vector<std::pair<std::string, CoiterConfig>> v;
  v.push_back({"auto(mean 50)", make(0, "", SJ_METHOD_AUTO)});
  v.push_back({"n4 001 broadcast", make(4, "001", SJ_METHOD_BROADCAST)});
  v.push_back({"n16 111 native fast-lane-always", make(16, "111", SJ_METHOD_NATIVE, SJ_ISA_AUTO, 0)});
  v.push_back({"avx2 n8 011 rotate", make(8, "011", SJ_METHOD_ROTATE, SJ_ISA_AVX2)});
  // The automatic rule's per-pair tiers, looked up per call and resolved once (for i32/f64
  // plus-times: other types and semirings must ignore these kernels and look their own up).
  sj_op_options o;
  sj_op_options_init(&o);
  const CoiterConfig tiered = sj::kernels::coiter_config(o, sj::IndexType::I32, sj::ValueType::F64, 50, 50);
  v.push_back({"tiered", tiered});
  v.push_back({"tiered resolved i32 f64 plus-times",
               sj::kernels::resolve_coiter(tiered, sj::IndexType::I32, sj::ValueType::F64, SJ_SEMIRING_PLUS_TIMES)});
  if (all) {
    CoiterConfig always = tiered;
    always.min_fast = 0;
    v.push_back({"tiered fast-lane-always", always});
    v.push_back({"n8 111 rotate untrimmed fast-lane-always", make(8, "111", SJ_METHOD_ROTATE, SJ_ISA_AUTO, 0, false)});
    v.push_back({"n16 010 broadcast", make(16, "010", SJ_METHOD_BROADCAST)});
    v.push_back({"n8 101 native", make(8, "101", SJ_METHOD_NATIVE)});
    v.push_back({"n4 110 rotate fast-lane-always", make(4, "110", SJ_METHOD_ROTATE, SJ_ISA_AUTO, 0)});
    v.push_back({"avx2 n4 100 broadcast untrimmed", make(4, "100", SJ_METHOD_BROADCAST, SJ_ISA_AVX2, 0, false)});
    v.push_back({"scalar isa", make(8, "111", SJ_METHOD_AUTO, SJ_ISA_SCALAR)});
    CoiterConfig off = make(4, "001", SJ_METHOD_AUTO);
    off.use_jit = false;
    v.push_back({"no jit", off});
  }
  return v;
}

// Checks every driver on one input (A: m x k, B: k x n, M: m x n, E: m x k, x: length k).
template <class S, class I, class V>
void check_all(const sj::CsResult<I, V>& ra, const sj::CsResult<I, V>& rb, const sj::CsResult<I, V>& rm,
               const sj::CsResult<I, V>& re, const sj::SpVecResult<I, V>& rx, const CoiterConfig& cfg,
               const std::string& what, bool with_spgemm = true) {
  const sj_semiring s = S::id;
  const auto& alloc = sj::default_allocator();
  const Tensor A = tensor(ra), B = tensor(rb), M = tensor(rm), E = tensor(re), x = tensor(rx);
  const Tensor Bcsc = sj::flip_orientation(B, alloc);
  const auto av = sj::test::view(ra), bv = sj::test::view(rb), mv = sj::test::view(rm), ev = sj::test::view(re);
  if (with_spgemm) {
    EXPECT_TRUE(identical(tensor(sj::ref::spgemm<S>(av, bv)), sj::kernels::coiter_spgemm(A, Bcsc, s, cfg, false, alloc)))
        << what << " spgemm sparse";
    std::vector<V> dense(static_cast<size_t>(ra.outer * rb.inner));
    sj::ref::spgemm_dense<S>(av, bv, dense.data());
    EXPECT_TRUE(identical(dense_tensor(2, ra.outer, rb.inner, vt_of<V>(), dense.data()),
                          sj::kernels::coiter_spgemm(A, Bcsc, s, cfg, true, alloc)))
        << what << " spgemm dense";
    // Into caller memory: every element written (the buffer starts as garbage).
    std::vector<V> into(dense.size(), V(7));
    sj::kernels::coiter_spgemm_dense_into(A, Bcsc, s, cfg, into.data());
    EXPECT_TRUE(dense.empty() || std::memcmp(dense.data(), into.data(), sizeof(V) * dense.size()) == 0)
        << what << " spgemm dense into";
    EXPECT_TRUE(identical(tensor(sj::ref::masked_spgemm<S>(mv, av, bv)),
                          sj::kernels::coiter_masked_spgemm(M, A, Bcsc, s, cfg, alloc)))
        << what << " masked";
  }
  const auto xv = sj::test::view(rx);
  EXPECT_TRUE(identical(tensor(sj::ref::spmspv<S>(av, xv)), sj::kernels::coiter_spmspv(A, x, s, cfg, false, alloc)))
      << what << " spmspv sparse";
  std::vector<V> y(static_cast<size_t>(ra.outer));
  sj::ref::spmspv_dense<S>(av, xv, y.data());
  EXPECT_TRUE(identical(dense_tensor(1, ra.outer, 0, vt_of<V>(), y.data()),
                        sj::kernels::coiter_spmspv(A, x, s, cfg, true, alloc)))
      << what << " spmspv dense";
  EXPECT_TRUE(identical(tensor(sj::ref::ewise_mult<S>(av, ev)), sj::kernels::coiter_ewise_mult(A, E, s, cfg, alloc)))
      << what << " ewise";
  // The same product on CSC operands gives the CSC result.
  const Tensor Ac = sj::flip_orientation(A, alloc), Ec = sj::flip_orientation(E, alloc);
  EXPECT_TRUE(identical(sj::flip_orientation(tensor(sj::ref::ewise_mult<S>(av, ev)), alloc),
                        sj::kernels::coiter_ewise_mult(Ac, Ec, s, cfg, alloc)))
      << what << " ewise csc";
}

template <class I, class V> void random_rounds(uint64_t seed, int rounds, bool all_configs) {
  Rng rng(seed);
  const auto cfgs = configs(all_configs);
  for (int round = 0; round < rounds; ++round) {
    const int64_t m = rng.uniform_int(1, 70), k = rng.uniform_int(1, 90), n = rng.uniform_int(1, 70);
    auto A = sj::test::random_matrix<I, V>(rng, m, k);
    auto B = sj::test::random_matrix<I, V>(rng, k, n);
    auto M = sj::test::random_matrix<I, V>(rng, m, n);
    auto E = sj::test::random_matrix<I, V>(rng, m, k);
    if (round % 3 == 0) E = A;  // identical segments
    auto x = sj::test::random_sparse_vector<I, V>(rng, k, rng.uniform01());
    for (size_t c = 0; c < cfgs.size(); ++c) {
      const auto& [name, cfg] = cfgs[c];
      const std::string what = "round " + std::to_string(round) + " " + name;
      static constexpr sj_semiring kSemirings[] = {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS,
                                                   SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_OR_AND, SJ_SEMIRING_PLUS_PAIR};
      const sj_semiring sr = kSemirings[(round + c) % 5];
      sj::with_semiring<V>(sr, [&](auto s) { check_all<decltype(s)>(A, B, M, E, x, cfg, what); });
    }
  }
}

TEST(CoiterDrivers, RandomI32F64AllConfigs) { random_rounds<int32_t, double>(101, 24, true); }
TEST(CoiterDrivers, RandomI32F32) { random_rounds<int32_t, float>(202, 12, true); }
TEST(CoiterDrivers, RandomI64F64) { random_rounds<int64_t, double>(303, 12, true); }
TEST(CoiterDrivers, RandomI64F32) { random_rounds<int64_t, float>(404, 8, false); }

TEST(CoiterDrivers, BoolOrAndTakesScalarPath) {
  Rng rng(505);
  for (int round = 0; round < 6; ++round) {
    auto A = sj::test::random_matrix<int32_t, uint8_t>(rng, 30, 40);
    auto B = sj::test::random_matrix<int32_t, uint8_t>(rng, 40, 25);
    auto M = sj::test::random_matrix<int32_t, uint8_t>(rng, 30, 25);
    auto E = sj::test::random_matrix<int32_t, uint8_t>(rng, 30, 40);
    auto x = sj::test::random_sparse_vector<int32_t, uint8_t>(rng, 40, 0.3);
    for (auto& [name, cfg] : configs(false))
      check_all<sj::OrAnd<uint8_t>>(A, B, M, E, x, cfg, "bool " + name);
  }
}

// Long segments (the fast lane runs many iterations), banded (trimming), coordinates near the
// top of the i32 range.
TEST(CoiterDrivers, LongBandedAndHighCoordinates) {
  Rng rng(606);
  auto dense = sj::test::random_uniform<int32_t, double>(rng, 40, 900, 0.4);
  auto denseB = sj::test::random_uniform<int32_t, double>(rng, 900, 30, 0.4);
  auto banded = sj::test::random_banded<int32_t, double>(rng, 400, 400, 30, 30, 0.7);
  auto x = sj::test::random_sparse_vector<int32_t, double>(rng, 900, 0.5);
  auto xb = sj::test::random_sparse_vector<int32_t, double>(rng, 400, 0.5);
  auto m1 = sj::test::random_uniform<int32_t, double>(rng, 40, 30, 0.5);
  for (auto& [name, cfg] : configs(true)) {
    check_all<sj::PlusTimes<double>>(dense, denseB, m1, dense, x, cfg, "dense-ish " + name);
    check_all<sj::PlusTimes<double>>(banded, banded, banded, banded, xb, cfg, "banded " + name);
  }
  // Coordinates near the top of the i32 range (sparse results only: no dense workspaces).
  const int64_t big = int64_t(2147483647);
  sj::CsResult<int32_t, double> top;
  top.outer = 3;
  top.inner = big;
  top.pos = {0};
  for (int r = 0; r < 3; ++r) {
    for (int64_t c = big - 60 + r; c < big; c += 1 + r) {
      top.crd.push_back(static_cast<int32_t>(c));
      top.val.push_back(0.5 + double(c % 7));
    }
    top.pos.push_back(static_cast<int64_t>(top.crd.size()));
  }
  sj::CsResult<int32_t, double> top2 = top;
  for (auto& v : top2.val) v = v * 1.25;
  for (auto& [name, cfg] : configs(true)) {
    const auto& alloc = sj::default_allocator();
    EXPECT_TRUE(identical(tensor(sj::ref::ewise_mult<sj::PlusTimes<double>>(sj::test::view(top), sj::test::view(top2))),
                          sj::kernels::coiter_ewise_mult(tensor(top), tensor(top2), SJ_SEMIRING_PLUS_TIMES, cfg, alloc)))
        << "top " << name;
  }
}

TEST(CoiterDrivers, BatchedDot) {
  Rng rng(707);
  auto A = sj::test::random_power_law<int32_t, double>(rng, 60, 500, 40, 1.4);
  auto B = sj::test::random_uniform<int32_t, double>(rng, 70, 500, 0.1);
  std::vector<int64_t> ra, rb;
  for (int q = 0; q < 400; ++q) ra.push_back(rng.uniform_int(0, 59)), rb.push_back(rng.uniform_int(0, 69));
  const auto av = sj::test::view(A), bv = sj::test::view(B);
  for (auto& [name, cfg] : configs(true)) {
    std::vector<double> out(ra.size());
    int64_t matched = sj::kernels::coiter_batched_dot(av, ra.data(), bv, rb.data(), int64_t(ra.size()),
                                                      SJ_SEMIRING_PLUS_TIMES, cfg, out.data());
    int64_t want_matched = 0;
    for (size_t q = 0; q < ra.size(); ++q) {
      double want = 0;
      const int64_t a0 = A.pos[ra[q]], b0 = B.pos[rb[q]];
      int64_t c = sj::kernels::coiter_dot_portable<int32_t, double, sj::PlusTimes<double>, false>(
          A.crd.data() + a0, A.val.data() + a0, A.pos[ra[q] + 1] - a0, B.crd.data() + b0, B.val.data() + b0,
          B.pos[rb[q] + 1] - b0, &want);
      want_matched += c > 0;
      EXPECT_EQ(std::memcmp(&want, &out[q], sizeof(double)), 0) << name << " pair " << q;
    }
    EXPECT_EQ(matched, want_matched) << name;
  }
}

TEST(CoiterDrivers, RejectsWrongFormats) {
  Rng rng(808);
  Tensor A = tensor(sj::test::random_matrix<int32_t, double>(rng, 5, 6));
  Tensor B = tensor(sj::test::random_matrix<int32_t, double>(rng, 6, 7));
  CoiterConfig cfg;
  EXPECT_THROW(sj::kernels::coiter_spgemm(A, B, SJ_SEMIRING_PLUS_TIMES, cfg, false, sj::default_allocator()), sj::Error);
  Tensor Bc = sj::flip_orientation(tensor(sj::test::random_matrix<int32_t, double>(rng, 5, 7)), sj::default_allocator());
  EXPECT_THROW(sj::kernels::coiter_spgemm(A, Bc, SJ_SEMIRING_PLUS_TIMES, cfg, false, sj::default_allocator()), sj::Error);
  EXPECT_THROW(sj::kernels::coiter_ewise_mult(A, B, SJ_SEMIRING_PLUS_TIMES, cfg, sj::default_allocator()), sj::Error);
}

TEST(CoiterDrivers, SpecRule) {
  sj_op_options o;
  sj_op_options_init(&o);
  auto s = sj::kernels::choose_coiter_spec(o, sj::IndexType::I32, sj::ValueType::F64, 3, 300);
  EXPECT_EQ(s.width, 4);
  EXPECT_EQ(s.phases, sj::jit::kPhaseCompare);
  if (sj::jit::default_isa() == SJ_ISA_AVX512 && sj::jit::host_features().vp2intersect) {
    s = sj::kernels::choose_coiter_spec(o, sj::IndexType::I32, sj::ValueType::F64, 250, 250);
    EXPECT_EQ(s.width, 16);
    EXPECT_EQ(s.method, sj::jit::CoiterMethod::Native);
    s = sj::kernels::choose_coiter_spec(o, sj::IndexType::I64, sj::ValueType::F64, 250, 250);
    EXPECT_EQ(s.width, 8);
  }
  o.vector_width = 16;
  std::strcpy(o.phases, "010");
  o.method = SJ_METHOD_ROTATE;
  s = sj::kernels::choose_coiter_spec(o, sj::IndexType::I32, sj::ValueType::F32, 1, 1);
  EXPECT_EQ(s.width, 16);
  EXPECT_EQ(s.phases, sj::jit::kPhaseCompute);
  EXPECT_EQ(s.method, sj::jit::CoiterMethod::Rotate);
  EXPECT_EQ(s.value, sj::ValueType::F32);
}

// Every real matrix: A*A^T (dense when small, else sparse), masked by A when square, A*x,
// A .* A^T (A .* A when rectangular). SpGEMM is limited to rows*rows <= 300k dots (dense output <= 100k) to keep the suite short under ASan.
TEST(CoiterDrivers, RealMatrices) {
  auto files = sj::test::shared_matrices();
  if (files.empty()) GTEST_SKIP() << "no ../shared/data/matrices";
  const auto& alloc = sj::default_allocator();
  const auto cfgs = configs(false);
  Rng rng(909);
  for (auto& f : files) {
    Tensor A = sj::read_tensor_file(f.string(), alloc);
    A = sj::convert(A, sj::format_spec(SJ_FORMAT_CSR, 2), sj::IndexType::I32, alloc);
    if (A.value_type != sj::ValueType::F64) A = sj::with_value_type(A, sj::ValueType::F64, alloc);
    const bool square = A.dims[0] == A.dims[1];
    const Tensor At = sj::transpose(A, alloc);  // CSR of A^T
    const Tensor AtCsc = csc_of_transpose(A);   // CSC of A^T
    const auto av = sj::cs_view<int32_t, double>(A), atv = sj::cs_view<int32_t, double>(At);
    const double dots = double(A.dims[0]) * double(A.dims[0]);
    auto rx = sj::test::random_sparse_vector<int32_t, double>(rng, A.dims[1], 0.2);
    const Tensor x = tensor(rx);
    using S = sj::PlusTimes<double>;
    const std::string name = f.filename().string();
    // References once per matrix.
    Tensor ref_sparse, ref_dense, ref_masked;
    if (dots <= 3e5) {
      ref_sparse = tensor(sj::ref::spgemm<S>(av, atv));
      if (dots <= 1e5) {
        std::vector<double> d(static_cast<size_t>(dots));
        sj::ref::spgemm_dense<S>(av, atv, d.data());
        ref_dense = dense_tensor(2, A.dims[0], A.dims[0], sj::ValueType::F64, d.data());
      }
      if (square) ref_masked = tensor(sj::ref::masked_spgemm<S>(av, av, atv));
    }
    const Tensor ref_y = tensor(sj::ref::spmspv<S>(av, sj::test::view(rx)));
    const Tensor& E = square ? At : A;
    const Tensor ref_e = tensor(sj::ref::ewise_mult<S>(av, sj::cs_view<int32_t, double>(E)));
    for (auto& [cname, cfg] : cfgs) {
      const std::string what = name + " " + cname;
      if (ref_sparse.order)
        EXPECT_TRUE(identical(ref_sparse, sj::kernels::coiter_spgemm(A, AtCsc, SJ_SEMIRING_PLUS_TIMES, cfg, false, alloc)))
            << what << " A*A^T";
      if (ref_dense.order)
        EXPECT_TRUE(identical(ref_dense, sj::kernels::coiter_spgemm(A, AtCsc, SJ_SEMIRING_PLUS_TIMES, cfg, true, alloc)))
            << what << " A*A^T dense";
      if (ref_masked.order)
        EXPECT_TRUE(identical(ref_masked, sj::kernels::coiter_masked_spgemm(A, A, AtCsc, SJ_SEMIRING_PLUS_TIMES, cfg, alloc)))
            << what << " masked";
      EXPECT_TRUE(identical(ref_y, sj::kernels::coiter_spmspv(A, x, SJ_SEMIRING_PLUS_TIMES, cfg, false, alloc)))
          << what << " spmspv";
      EXPECT_TRUE(identical(ref_e, sj::kernels::coiter_ewise_mult(A, E, SJ_SEMIRING_PLUS_TIMES, cfg, alloc)))
          << what << " ewise";
    }
  }
}

// The SpGEMM `inner` schedule forced through the C API, with the coiteration options, equals
// the reference schedule; B as CSR (converted and cached on the handle), as CSC, transposed.
TEST(CoiterDrivers, InnerScheduleThroughCApi) {
  sj_context* ctx = nullptr;
  ASSERT_EQ(sj_context_create(nullptr, &ctx), SJ_OK);
  Rng rng(1001);
  struct Forced {
    int width;
    const char* phases;
    sj_coiter_method method;
    sj_isa isa;
  };
  const Forced forced[] = {{0, "", SJ_METHOD_AUTO, SJ_ISA_AUTO},           {4, "001", SJ_METHOD_BROADCAST, SJ_ISA_AUTO},
                           {8, "111", SJ_METHOD_NATIVE, SJ_ISA_AUTO},      {16, "110", SJ_METHOD_ROTATE, SJ_ISA_AUTO},
                           {8, "011", SJ_METHOD_ROTATE, SJ_ISA_AVX2},      {4, "101", SJ_METHOD_AUTO, SJ_ISA_SCALAR}};
  for (int round = 0; round < 12; ++round) {
    const int64_t m = rng.uniform_int(1, 50), k = rng.uniform_int(1, 120), n = rng.uniform_int(1, 50);
    Tensor A = tensor(sj::test::random_matrix<int32_t, double>(rng, m, k));
    Tensor B = tensor(sj::test::random_matrix<int32_t, double>(rng, k, n));
    const int layout = round % 3;  // 0: B CSR, 1: B CSC, 2: B^T given as CSR with transpose_b
    Tensor Bgiven = layout == 0 ? B
                    : layout == 1 ? sj::flip_orientation(B, sj::default_allocator())
                                  : sj::transpose(B, sj::default_allocator());
    sj_tensor* a = sj::capi::new_tensor_handle(ctx, Tensor(A));
    sj_tensor* b = sj::capi::new_tensor_handle(ctx, Tensor(Bgiven));
    sj_op_options o;
    sj_op_options_init(&o);
    o.semiring = round % 4 == 1 ? SJ_SEMIRING_MIN_PLUS : SJ_SEMIRING_PLUS_TIMES;
    o.dense_output = round % 2;
    o.transpose_b = layout == 2;
    if (round % 5 == 4) o.output_index_type = SJ_INDEX_INT64;
    o.schedule = SJ_SCHEDULE_REFERENCE;
    sj_tensor* want = nullptr;
    ASSERT_EQ(sj_spgemm(ctx, a, b, &o, &want), SJ_OK) << sj_last_error_message();
    for (int rep = 0; rep < 2; ++rep)  // the second call finds B's CSC form on the handle
      for (const Forced& f : forced) {
        o.schedule = SJ_SCHEDULE_INNER;
        o.vector_width = f.width;
        std::memset(o.phases, 0, sizeof(o.phases));
        std::strncpy(o.phases, f.phases, 3);
        o.method = f.method;
        o.isa = f.isa;
        sj_tensor* got = nullptr;
        ASSERT_EQ(sj_spgemm(ctx, a, b, &o, &got), SJ_OK) << sj_last_error_message();
        EXPECT_TRUE(identical(want->t, got->t)) << "round " << round << " width " << f.width << " " << f.phases;
        sj_tensor_destroy(got);
      }
    sj_tensor_destroy(want);
    sj_tensor_destroy(a);
    sj_tensor_destroy(b);
  }
  EXPECT_EQ(sj_context_destroy(ctx), SJ_OK) << sj_last_error_message();
}

const sj::Context& context() {
  static const sj::Context ctx = [] {
    sj_config c;
    sj_config_init(&c);
    c.threads = 1;
    c.disable_disk_cache = 1;
    return sj::Context(c);
  }();
  return ctx;
}

// explain shows the kernel; the planner keeps Gustavson for ordinary sparse products and may
// pick `inner` only for a small dense-ish product with dense output.
TEST(CoiterDrivers, PlannerAndExplain) {
  Rng rng(1101);
  Tensor A = tensor(sj::test::random_uniform<int32_t, double>(rng, 2000, 2000, 0.003));
  sj_op_options o;
  sj_op_options_init(&o);
  sj::Plan autoplan(context(), sj::OpRequest{SJ_OP_SPGEMM, {A, A}, o});
  EXPECT_NE(autoplan.schedule(), SJ_SCHEDULE_INNER) << autoplan.explain();
  o.dense_output = 1;
  sj::Plan autodense(context(), sj::OpRequest{SJ_OP_SPGEMM, {A, A}, o});
  EXPECT_NE(autodense.schedule(), SJ_SCHEDULE_INNER) << autodense.explain();
  o.schedule = SJ_SCHEDULE_INNER;
  o.vector_width = 8;
  std::strcpy(o.phases, "100");  // a spec no other test compiles first in this process
  o.method = SJ_METHOD_BROADCAST;
  o.semiring = SJ_SEMIRING_MAX_TIMES;
  sj::Plan forced(context(), sj::OpRequest{SJ_OP_SPGEMM, {A, A}, o});
  const std::string text = forced.explain();
  EXPECT_NE(text.find("\"chosen\":\"inner\""), std::string::npos) << text;
  if (sj::jit::default_isa() != SJ_ISA_SCALAR)
    EXPECT_TRUE(text.find("\"source\":\"compiled\"") != std::string::npos ||
                text.find("\"source\":\"memory\"") != std::string::npos)
        << text;
  Tensor D = tensor(sj::test::random_uniform<int32_t, double>(rng, 30, 30, 0.9));
  sj_op_options_init(&o);
  o.dense_output = 1;
  sj::Plan small(context(), sj::OpRequest{SJ_OP_SPGEMM, {D, D}, o});
  // Either is acceptable here; the plan must run and agree with the reference.
  o.schedule = SJ_SCHEDULE_REFERENCE;
  sj::Plan ref(context(), sj::OpRequest{SJ_OP_SPGEMM, {D, D}, o});
  EXPECT_TRUE(identical(ref.execute({D, D}), small.execute({D, D})));
}

}  // namespace

// Gustavson SpGEMM (dense and hash accumulators), masked SpGEMM (saxpy-then-mask and dot per
// mask entry). See spgemm_gustavson.hpp for the contract.
#include "kernels/spgemm_gustavson.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "absl/cleanup/cleanup.h"
#include "jit/isa.hpp"
#include "src/dispatch.hpp"
#include "src/error.hpp"
#include "src/inspect.hpp"
#include "src/semiring.hpp"
#include "src/thread_scratch.hpp"
#include "kernels/sort_network_avx2.hpp"
#include "kernels/sparse_assembly.hpp"
#include "kernels/spgemm_structure.hpp"

namespace sj {
namespace {
std::atomic<DenseRowLoop> g_dense_row_loop{DenseRowLoop::Timed};
DenseRowLoop dense_row_loop() { return g_dense_row_loop.load(std::memory_order_relaxed); }
}  // namespace

void set_dense_row_loop(DenseRowLoop loop) { g_dense_row_loop.store(loop, std::memory_order_relaxed); }

// Two builds of the same kernels; the BMI/AVX2 one (no FMA: it would change the rounding of
// a*b+c, and results must match the reference bit for bit) is chosen at run time when the
// CPU has it.
// SJ_SPGEMM_AVX2 selects the AVX2 paths of the impl (GCC only: clang does not apply the
// target pragma to the intrinsics it inlines).
#define SJ_SPGEMM_AVX2 0
namespace spgemm_generic {
namespace {
#include "kernels/spgemm_gustavson_impl.hpp"
}  // namespace
}  // namespace spgemm_generic
#undef SJ_SPGEMM_AVX2

#pragma GCC push_options
#pragma GCC target("popcnt,bmi,bmi2,lzcnt,avx2")
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define SJ_SPGEMM_AVX2 1
#else
#define SJ_SPGEMM_AVX2 0
#endif
namespace spgemm_bmi {
namespace {
#include "kernels/spgemm_gustavson_impl.hpp"
}  // namespace
}  // namespace spgemm_bmi
#undef SJ_SPGEMM_AVX2
#pragma GCC pop_options

namespace {
// The AVX2 tier (jit/isa.hpp: AVX2, BMI1/2, POPCNT and LZCNT on this CPU, capped by
// SPARSEJIT_ISA) runs the build above.
bool cpu_has_bmi() {
  static const bool yes = jit::default_isa_includes(SJ_ISA_AVX2);
  return yes;
}
}  // namespace

size_t dense_workspace_bytes(int64_t cols, int value_bytes) {
  return estimate_bytes(cols, static_cast<size_t>(4 + value_bytes), estimate_bytes(cols / 8 + 16, 1));
}

bool dense_workspace_too_wide(int64_t cols, int value_bytes, double work, size_t cap) {
  const size_t bytes = dense_workspace_bytes(cols, value_bytes);
  if (cap != 0 && bytes > cap) return true;
  if (bytes <= static_cast<size_t>(kDenseWorkspaceFloor)) return false;
  return static_cast<double>(bytes) > kDenseWorkspacePerWork * std::max(work, 1.0);
}

Tensor spgemm_gustavson(const Tensor& A, const Tensor& B, sj_semiring semiring, bool dense_output,
                        SpgemmAccumulator acc, const Allocator& alloc, Workers& w, const TimedChoice* loop_choice) {
  spgemm_generic::check_dims(A, B);
  if (cpu_has_bmi())
    return spgemm_bmi::with_kernel_types(A, semiring, [&](auto s, auto i, auto v) {
      return spgemm_bmi::spgemm_typed<decltype(s), decltype(i), decltype(v)>(A, B, dense_output, acc, alloc, w, loop_choice);
    });
  return spgemm_generic::with_kernel_types(A, semiring, [&](auto s, auto i, auto v) {
    return spgemm_generic::spgemm_typed<decltype(s), decltype(i), decltype(v)>(A, B, dense_output, acc, alloc, w, loop_choice);
  });
}

Tensor spgemm_values_only(const Tensor& A, const Tensor& B, const SpgemmStructure& s, sj_semiring semiring,
                          const Allocator& alloc, Workers& w) {
  if (cpu_has_bmi())
    return spgemm_bmi::with_kernel_types(A, semiring, [&](auto sr, auto i, auto v) {
      return spgemm_bmi::values_only_typed<decltype(sr), decltype(i), decltype(v)>(A, B, s, alloc, w);
    });
  return spgemm_generic::with_kernel_types(A, semiring, [&](auto sr, auto i, auto v) {
    return spgemm_generic::values_only_typed<decltype(sr), decltype(i), decltype(v)>(A, B, s, alloc, w);
  });
}

Tensor masked_spgemm_saxpy(const Tensor& M, const Tensor& A, const Tensor& B, bool complement, sj_semiring semiring,
                           const Allocator& alloc, Workers& w) {
  spgemm_generic::check_dims(A, B);
  if (cpu_has_bmi())
    return spgemm_bmi::with_kernel_types(A, semiring, [&](auto s, auto i, auto v) {
      return spgemm_bmi::masked_saxpy_typed<decltype(s), decltype(i), decltype(v)>(M, A, B, complement, alloc, w);
    });
  return spgemm_generic::with_kernel_types(A, semiring, [&](auto s, auto i, auto v) {
    return spgemm_generic::masked_saxpy_typed<decltype(s), decltype(i), decltype(v)>(M, A, B, complement, alloc, w);
  });
}

Tensor masked_spgemm_dot(const Tensor& M, const Tensor& A, const Tensor& Bcsc, sj_semiring semiring,
                         const Allocator& alloc, Workers& w) {
  if (A.dims[1] != Bcsc.dims[0])
    fail(SJ_ERR_SHAPE_MISMATCH, "spgemm: A is ", A.dims[0], "x", A.dims[1], " but B is ", Bcsc.dims[0], "x",
         Bcsc.dims[1]);
  if (cpu_has_bmi())
    return spgemm_bmi::with_kernel_types(A, semiring, [&](auto s, auto i, auto v) {
      return spgemm_bmi::masked_dot_typed<decltype(s), decltype(i), decltype(v)>(M, A, Bcsc, alloc, w);
    });
  return spgemm_generic::with_kernel_types(A, semiring, [&](auto s, auto i, auto v) {
    return spgemm_generic::masked_dot_typed<decltype(s), decltype(i), decltype(v)>(M, A, Bcsc, alloc, w);
  });
}

}  // namespace sj

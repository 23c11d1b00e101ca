// When reading a dense operand's values with gathers pays: for an operand larger than one
// core's L2 and at most a quarter of the L3 (sysconf; 1 MiB and 32 MiB where the system does
// not say). Below L2 a scalar load hits and a gather only costs; once the operand no longer
// stays in L3 beside the sparse operand's stream, a gather waits for its slowest load. Measured
// with SpMV (kernels/spmv_gather_avx512.hpp says how); the generated index-notation loops use
// the same bounds (jit/llvm_backend.cpp, gather blocks).
#pragma once
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <utility>

namespace sj::gather_window {

inline int64_t l2_bytes() {
  static const int64_t bytes = [] {
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? int64_t{v} : int64_t{1} << 20;
  }();
  return bytes;
}
inline int64_t l3_bytes() {
  static const int64_t bytes = [] {
    const long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return v > 0 ? int64_t{v} : int64_t{32} << 20;
  }();
  return bytes;
}

// By the operand's size (the default), always or never: tests pin one, process-wide, to cover
// both loops on any input.
enum class Use { Auto, Always, Never };
inline std::atomic<Use> g_use{Use::Auto};
inline void set_use(Use u) { g_use.store(u, std::memory_order_relaxed); }

// The window by the caches alone, whatever a test pinned: explain tells the two apart.
inline std::pair<int64_t, int64_t> default_bounds() { return {l2_bytes(), l3_bytes() / 4}; }
inline bool in_default_window(int64_t bytes) {
  const auto [lo, hi] = default_bounds();
  return bytes > lo && bytes <= hi;
}

// Gathers pay for an operand of `bytes` with lo < bytes <= hi.
inline std::pair<int64_t, int64_t> bounds() {
  switch (g_use.load(std::memory_order_relaxed)) {
    case Use::Always: return {-1, std::numeric_limits<int64_t>::max()};
    case Use::Never: return {std::numeric_limits<int64_t>::max(), -1};
    case Use::Auto: break;
  }
  return default_bounds();
}
inline bool pays(int64_t bytes) {
  const auto [lo, hi] = bounds();
  return bytes > lo && bytes <= hi;
}

}  // namespace sj::gather_window

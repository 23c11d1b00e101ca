// compile(spec) -> a coiteration kernel with the C ABI of jit/coiter_spec.hpp. Owns the
// asmjit runtime (code pages are never writable and executable at once: dual mapping).
// Thread-safe; kernels are memoised in the process-wide KernelCache (bounded LRU,
// single-flight) under their KernelKey, and released when evicted and no longer held.
// A code-generation failure is never a failed call: it falls back to the portable kernel
// (kernels/coiter_portable.hpp) and logs once.
#pragma once
#include <cstdint>
#include <memory>

#include "jit/coiter_spec.hpp"

namespace sj::jit {

struct CoiterKernel {
  CoiterSpec spec;         // what was generated: isa resolved, method/width as the ISA allows
  void* fn = nullptr;      // never null
  bool generated = false;  // false: the portable kernel (scalar ISA or fallback)
  double codegen_us = 0;   // time spent generating (0 when memoised or portable)
  bool from_cache = false; // found in the process-wide kernel cache (cache/kernel_cache.hpp)
  // Keeps the code alive: the kernel cache may evict the entry, but the code is released only
  // when the last copy of this kernel is gone. Keep the CoiterKernel while calling fn.
  std::shared_ptr<const void> owner;

  template <class I, class V> CoiterDotFn<I, V> dot() const {
    return reinterpret_cast<CoiterDotFn<I, V>>(fn);
  }
  template <class I, class V> CoiterEmitFn<I, V> emit() const {
    return reinterpret_cast<CoiterEmitFn<I, V>>(fn);
  }
  template <class I> CoiterCountFn<I> count() const {
    return reinterpret_cast<CoiterCountFn<I>>(fn);
  }
};

// The spec the generator will actually build: isa AUTO -> default_isa() (SPARSEJIT_ISA),
// an ISA the CPU lacks falls down; Native -> Rotate without VP2INTERSECT; on AVX2 the width
// is capped to one 256-bit register (i32: 8, i64: 4) and Native is Rotate. Results do not
// depend on any of these choices (see the exactness contract).
CoiterSpec effective_spec(const CoiterSpec& spec);

class CoiterJit {
 public:
  CoiterJit();
  ~CoiterJit();
  CoiterJit(const CoiterJit&) = delete;
  CoiterJit& operator=(const CoiterJit&) = delete;

  // Throws sj::Error only for an invalid spec (validate()); never for a codegen failure.
  CoiterKernel compile(const CoiterSpec& spec);

  // The process-wide instance (never destroyed, so kernels outlive static destructors).
  static CoiterJit& global();

  // Test hook: while set, every fresh code generation fails (and falls back).
  static void force_codegen_failure_for_testing(bool on);

 private:
  CoiterKernel build_uncached(const CoiterSpec& spec);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

inline CoiterKernel compile_coiter(const CoiterSpec& spec) { return CoiterJit::global().compile(spec); }

}  // namespace sj::jit

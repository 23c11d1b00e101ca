// The LLVM ORC backend of index-notation kernels: lowers a LoopNest (src/loop_ir.hpp) to LLVM
// IR with IRBuilder, optimises it with the O3 pipeline for the host CPU and links it with one
// process-wide LLJIT. Compiled objects go through an llvm::ObjectCache backed by the
// runtime's PersistentStore, so another process with the same cache folder links the stored
// object instead of compiling (each kernel lives in its own JITDylib and is removed when its
// last owner goes). Compiled kernels are also shared in memory by key.
// The code generator lives in a module of its own that the library loads on first use
// (jit/llvm_module.hpp says why); these functions load it (jit/llvm_loader.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "sparsejit/sparsejit.h"
#include "src/einsum_parser.hpp"
#include "src/loop_ir.hpp"
#include "src/types.hpp"

namespace sj::cache {
class PersistentStore;
}

namespace sj::jit {

// Argument slots: arrays[f * kEinsumSlotsPerFactor + 2*l] = level l's pos (int64),
// + 2*l + 1 = its crd (index type), + 2*kMaxOrder = the values of factor f.
inline constexpr int kEinsumSlotsPerFactor = 2 * 4 + 1;

// The generated function. dims: per index id, then the gather window (src/gather_window.hpp:
// the bounds lo < bytes <= hi in which gather blocks run, see EinsumKernel::gathered). out: dense output values (value type) or null;
// present: per dense output position, set to 1 where a product was formed (or null); sink:
// receives sparse output entries through sj_einsum_emit; ws_*: the where workspace (values in
// the compute type, flags zeroed, list) sized to the workspace index's dimension. [lo, hi):
// the coordinates of the outermost loop's index to run (0, its dimension: the whole nest);
// the other loops run in full. Parallel execution gives each chunk its own range.
using EinsumKernelFn = void (*)(const void* const* arrays, const int64_t* dims, void* out, uint8_t* present,
                                void* sink, void* ws_vals, uint8_t* ws_flags, int64_t* ws_list, int64_t lo,
                                int64_t hi);

// What decides the generated code.
struct EinsumKernelSpec {
  const einsum::Expression* expr = nullptr;
  const einsum::Term* term = nullptr;
  const einsum::LoopNest* nest = nullptr;
  IndexType index_type = IndexType::I32;
  ValueType value_type = ValueType::F64;
  sj_semiring semiring = SJ_SEMIRING_PLUS_TIMES;
  bool scalar_only = false;  // no vectorisation and a baseline x86-64 target (the ablation build)
  // The dense output is this term's alone (one term, no presence flags): the kernel may set
  // each entry to zero() itself where its loops reach every entry once (starts_output).
  bool start_output = false;
};

class EinsumKernel {
 public:
  // (Inline: the module creates kernels, the library drops them.)
  ~EinsumKernel() {
    if (dylib && remove) remove(dylib);
  }
  EinsumKernelFn fn = nullptr;
  std::string key_text;  // the canonical text the cache keys by
  // The innermost loops whose located dense vectors are read eight values at a time by a
  // gather, as "k: x(k)" ("; " between loops); empty where none (no AVX-512F, a scalar-only
  // build, or no loop of that shape).
  std::string gathered;
  // Whether the kernel sets every dense output entry of its range to the semiring's zero
  // before adding into it (asked by EinsumKernelSpec::start_output, and its outermost loops
  // run densely over the output's indices): the caller then need not fill the array first,
  // which for SpMV's y was a write and a read of the whole vector more.
  bool starts_output = false;
  void* dylib = nullptr;  // llvm::orc::JITDylib*, removed with the kernel
  void (*remove)(void* dylib) = nullptr;  // the module's removal of it
};

struct EinsumCompileResult {
  std::shared_ptr<const EinsumKernel> kernel;  // null when compilation failed
  std::string source;   // "compiled", "memory" or "disk"
  double ms = 0;        // time to get the kernel (IR build + optimise + codegen + link, or load; the
                        // first in a process also loads the LLVM module)
  std::string error;    // why it failed
  std::string ir;       // the optimised IR (only when asked, for explain/debugging)
};

// Compiles (or finds) the kernel for `spec`. `store` may be null (no disk cache). Never
// throws for a failure of LLVM, nor when the module cannot be loaded (the error says where it
// was looked for); the caller falls back to the reference evaluator.
EinsumCompileResult compile_einsum_kernel(const EinsumKernelSpec& spec, cache::PersistentStore* store,
                                          bool want_ir = false);

// Loads the module now, unless a call before did (sj_einsum_backend_load): true when it is
// usable, else false with where it was looked for in *error. The outcome is the process's.
bool load_llvm_module(std::string* error);

// The host CPU name and features the backend targets ("skylake-avx512 +avx2,..."); empty
// when the module cannot be loaded.
std::string llvm_host_target();

}  // namespace sj::jit

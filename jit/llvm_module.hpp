// The boundary between libsparsejit and its LLVM module, libsparsejit-llvm.so (built from
// jit/llvm_backend.cpp), which the library loads with dlopen the first time an index-notation
// kernel is compiled or linked from the disk cache (jit/llvm_loader.cpp), not when a process
// starts. Why: a process that maps libLLVM-16 pays ~60 ms of start-up (its relocations and
// static constructors) and ~50 MB of memory, measured here with a program that only calls
// sj_version; hosts that never compile a loop nest (every built-in kernel) should not pay it.
//
// Both sides are built from this tree by one CMake configuration: the module is refused unless
// its build id is the library's, so the C++ types below may cross the boundary. The module
// resolves nothing from the library (it is linked with --no-undefined): what it needs of the
// library comes through LlvmModuleHost and LlvmCompileRequest.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jit/llvm_backend.hpp"

namespace sj::jit {

// The SIMD fast lane of two-way intersections in generated code: block width and compare.
struct SimdLane {
  unsigned width = 0;   // coordinates per block; 0: no fast lane (scalar-only build, no AVX2)
  bool native = false;  // VP2INTERSECT compare (else W broadcast compares)
  std::string text() const {
    if (width == 0) return "off";
    std::string s = "w";  // (appended, not "w" + ...: GCC 12 warns falsely on that)
    s += std::to_string(width);
    s += native ? 'n' : 'b';
    return s;
  }
};

// What the library gives the module once, when it is loaded.
struct LlvmModuleHost {
  const char* build_id;                      // the library's sj::kBuildId
  void (*sort_list)(int64_t* list, int64_t n);  // einsum::sort_workspace_list, called by kernels
};

// One kernel to compile: what the library decided (the lane, gathers, the key) beside the spec.
struct LlvmCompileRequest {
  const EinsumKernelSpec* spec = nullptr;
  SimdLane lane;
  bool gathers = false;  // gather blocks allowed (AVX-512F, not scalar-only)
  // The kernel's key text without the target; the module appends its CPU name and features.
  std::string key_prefix;
  // Each factor of spec->term as written ("x(k)"), for EinsumKernel::gathered.
  std::vector<std::string> factor_texts;
  // The object cache: null when there is none. load() returns false for an absent entry.
  void* store = nullptr;
  bool (*load)(void* store, const std::string& key_text, std::string* payload) = nullptr;
  void (*save)(void* store, const std::string& key_text, const std::string& payload) = nullptr;
};

struct LlvmModuleApi {
  EinsumCompileResult (*compile)(const LlvmCompileRequest& request);
  std::string (*host_target)();  // as llvm_host_target()
};

// The module's one exported symbol: null (and *error set) when `host` is from another build.
inline constexpr const char* kLlvmModuleEntry = "sparsejit_llvm_module";
using LlvmModuleEntry = const LlvmModuleApi* (*)(const LlvmModuleHost* host, std::string* error);

}  // namespace sj::jit

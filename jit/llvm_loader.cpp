// The library's side of jit/llvm_backend.hpp: loads the LLVM module (jit/llvm_module.hpp) the
// first time a kernel is asked for, decides what depends on this library (the SIMD lane, the
// gathers, the kernel's key, the object cache), and hands the rest to the module.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/kernel_key.hpp"
#include "cache/persistent_store.hpp"
#include "jit/isa.hpp"
#include "jit/llvm_module.hpp"
#include "kernels/einsum_output.hpp"
#include "src/build_id.hpp"
#include "src/environment.hpp"
#include "src/error.hpp"

namespace sj::jit {
namespace {

constexpr const char* kModuleFile = "libsparsejit-llvm.so";

// The folder of the file holding this code: libsparsejit.so, or the program linked with the
// static library (for which dladdr would give argv[0], so /proc/self/exe is read instead).
// Empty when not known as an absolute path: a relative one would name a file in whatever
// folder the process is in now.
std::string image_folder(bool* is_program) {
  Dl_info info{};
  link_map* lm = nullptr;
  *is_program = false;
  if (dladdr1(reinterpret_cast<void*>(&image_folder), &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0 ||
      !lm)
    return {};
  std::string path;
  if (lm->l_name && lm->l_name[0] != '\0') {
    path = lm->l_name;  // a shared object: the path it was loaded from
  } else {
    *is_program = true;  // the main program, whose link map has no name
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) path.assign(buf, static_cast<size_t>(n));
  }
  const size_t slash = path.rfind('/');
  if (path.empty() || path[0] != '/' || slash == std::string::npos) return {};
  return path.substr(0, slash);
}

// Where the module is looked for, in order: SPARSEJIT_LLVM_MODULE alone when set; else beside
// the image holding this code (libsparsejit.so is installed beside it); for a program linked
// with the static library, also <its folder>/../<libdir> (an installed tool, wherever the
// prefix was moved); then the build tree this library was built in and the folder it would
// be installed to. Each module is checked for this build's id (a module from another build
// is refused, and the next path tried).
std::vector<std::string> module_candidates() {
  if (const std::optional<std::string_view> v = env::value("SPARSEJIT_LLVM_MODULE"); v && !v->empty())
    return {std::string(*v)};
  std::vector<std::string> paths;
  bool is_program = false;
  if (const std::string dir = image_folder(&is_program); !dir.empty()) {
    paths.push_back(dir + "/" + kModuleFile);
    if (is_program) {  // <prefix>/bin/x -> <prefix>/<libdir>
      const std::string prefix = dir.substr(0, dir.rfind('/'));
      paths.push_back(prefix + "/" + SPARSEJIT_INSTALL_LIBDIR + "/" + kModuleFile);
    }
  }
  paths.push_back(SPARSEJIT_LLVM_MODULE_BUILT);
  paths.push_back(SPARSEJIT_LLVM_MODULE_INSTALLED);
  return paths;
}

struct Loaded {
  const LlvmModuleApi* api = nullptr;
  std::string error;  // why it is null
};
const Loaded& module() {
  static const Loaded loaded = [] {
    Loaded l;
    std::string tried;
    for (const std::string& path : module_candidates()) {
      // RTLD_LOCAL: LLVM's symbols stay out of the host's namespace.
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char* why = dlerror();
        tried += cat(tried.empty() ? "" : "; ", why ? why : path);
        continue;
      }
      auto entry = reinterpret_cast<LlvmModuleEntry>(dlsym(handle, kLlvmModuleEntry));
      if (!entry) {
        tried += cat(tried.empty() ? "" : "; ", path, ": no symbol ", kLlvmModuleEntry);
        continue;  // (left loaded: unloading a library that ran LLVM's constructors is not safe)
      }
      static constexpr LlvmModuleHost host{kBuildId, &einsum::sort_workspace_list};
      std::string refused;
      if (const LlvmModuleApi* api = entry(&host, &refused)) {
        l.api = api;
        return l;
      }
      tried += cat(tried.empty() ? "" : "; ", path, ": ", refused);
    }
    // The hint first: explain's text shows the first 300 characters.
    l.error = cat("cannot load the LLVM module ", kModuleFile, " (set SPARSEJIT_LLVM_MODULE to its path): ", tried);
    return l;
  }();
  return loaded;
}

// From the host (jit/isa.hpp, capped by SPARSEJIT_ISA): AVX-512 with VP2INTERSECT: one zmm
// register per block (16 i32 / 8 i64 coordinates) and the native compare; AVX-512 or AVX2
// without it: 8 i32 / 4 i64 coordinates and broadcast compares; scalar: no lane.
// SPARSEJIT_EINSUM_LANE (w4|w8|w16, suffix n or b, or off) overrides it, for ablation; an
// override the CPU cannot run is ignored.
SimdLane choose_lane(const EinsumKernelSpec& spec) {
  SimdLane l;
  const sj_isa cap = default_isa();  // the tier the asmjit kernels use too
  if (spec.scalar_only || cap == SJ_ISA_SCALAR) return l;
  const bool i64c = spec.index_type == IndexType::I64;
  const bool avx512 = cap == SJ_ISA_AVX512;
  const bool vp2i = avx512 && host_features().vp2intersect;
  l.width = vp2i ? (i64c ? 8 : 16) : (i64c ? 4 : 8);
  l.native = vp2i;
  // Width 4, 8 or 16, each plain, with broadcast compares (b) or VP2INTERSECT (n).
  if (const std::optional<size_t> i = env::choice(
          "SPARSEJIT_EINSUM_LANE", {"off", "w4", "w4b", "w4n", "w8", "w8b", "w8n", "w16", "w16b", "w16n"},
          "the default lane")) {
    if (*i == 0) return SimdLane{};
    const unsigned w = 4u << ((*i - 1) / 3);
    const bool native = (*i - 1) % 3 == 2;
    const unsigned bits = w * (i64c ? 64 : 32);
    if ((bits == 256 || (bits == 512 && avx512) || (bits == 128 && !native)) && (!native || vp2i)) {
      l.width = w;
      l.native = native;
    }
  }
  return l;
}

// Gather blocks (NestCodegen::gen_gather_blocks) where the kernels may use AVX-512F: the tier
// the asmjit kernels use (jit/isa.hpp, capped by SPARSEJIT_ISA), not the scalar-only build.
bool choose_gathers(const EinsumKernelSpec& spec) { return !spec.scalar_only && default_isa() == SJ_ISA_AVX512; }

// Stored objects are keyed by the hash of the kernel's key text (which the payload repeats).
cache::KernelKey object_key(const std::string& text) {
  auto k = cache::KernelKey::make(cache::KeyKind::LlvmObject);
  k.detail = cache::hash64(text.data(), text.size());
  return k;
}
bool load_object(void* store, const std::string& text, std::string* payload) {
  const auto bytes = static_cast<cache::PersistentStore*>(store)->load(object_key(text));
  if (!bytes) return false;
  payload->assign(bytes->begin(), bytes->end());
  return true;
}
void save_object(void* store, const std::string& text, const std::string& payload) {
  static_cast<cache::PersistentStore*>(store)->store(object_key(text), payload);
}

}  // namespace

EinsumCompileResult compile_einsum_kernel(const EinsumKernelSpec& spec, cache::PersistentStore* store, bool want_ir) {
  (void)want_ir;
  const auto t0 = std::chrono::steady_clock::now();
  const Loaded& m = module();  // the first call loads it (~55 ms here): counted in the result's ms
  if (!m.api) {
    EinsumCompileResult res;
    res.error = "LLVM JIT unavailable: " + m.error;
    return res;
  }
  LlvmCompileRequest r;
  r.spec = &spec;
  r.lane = choose_lane(spec);
  r.gathers = choose_gathers(spec);
  r.key_prefix = cat("einsum v4|lane=", r.lane.text(), "|gathers=", r.gathers, "|", spec.expr->canonical(), "|",
                     spec.nest->signature(*spec.expr, *spec.term), "|index=", to_string(spec.index_type),
                     "|value=", to_string(spec.value_type), "|semiring=", to_string(spec.semiring),
                     "|scalar=", spec.scalar_only, "|start_output=", spec.start_output);
  for (const einsum::Access& f : spec.term->factors) r.factor_texts.push_back(einsum::Expression::access_text(*spec.expr, f));
  if (store) {
    r.store = store;
    r.load = &load_object;
    r.save = &save_object;
  }
  EinsumCompileResult res = m.api->compile(r);
  res.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

bool load_llvm_module(std::string* error) {
  const Loaded& m = module();
  if (!m.api && error) *error = m.error;
  return m.api != nullptr;
}

std::string llvm_host_target() {
  const Loaded& m = module();
  return m.api ? m.api->host_target() : std::string();
}

}  // namespace sj::jit

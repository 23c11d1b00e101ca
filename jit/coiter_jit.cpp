#include "jit/coiter_jit.hpp"

#include <asmjit/x86.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

#include "jit/coiter_emitter.hpp"
#include "jit/isa.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/kernel_key.hpp"
#include "kernels/coiter_portable.hpp"
#include "src/logging.hpp"
#include "src/error.hpp"

namespace sj::jit {

namespace {

std::atomic<bool> g_force_failure{false};
std::atomic<bool> g_failure_logged{false};

// Records the first asmjit error instead of letting it pass silently.
class RecordingErrorHandler : public asmjit::ErrorHandler {
 public:
  asmjit::Error error = asmjit::kErrorOk;
  std::string message;
  void handleError(asmjit::Error err, const char* msg, asmjit::BaseEmitter*) override {
    if (error == asmjit::kErrorOk) error = err, message = msg ? msg : "";
  }
};

asmjit::JitAllocator::CreateParams wx_params() {
  asmjit::JitAllocator::CreateParams p{};
  // Write through a RW view, execute through a separate RX view: no page is W and X at once.
  p.options = asmjit::JitAllocatorOptions::kUseDualMapping;
  return p;
}

}  // namespace

CoiterSpec effective_spec(const CoiterSpec& in) {
  CoiterSpec s = in;
  s.isa = resolve_isa(in.isa);
  if (s.action != CoiterAction::Dot) s.reassociate = false, s.with_factor = false;
  if (s.method == CoiterMethod::Native && !(s.isa == SJ_ISA_AVX512 && host_features().vp2intersect))
    s.method = CoiterMethod::Rotate;
  if (s.isa == SJ_ISA_AVX2) {
    int cap = s.index == IndexType::I32 ? 8 : 4;
    if (s.width > cap) s.width = uint8_t(cap);
  }
  return s;
}

struct CoiterJit::Impl {
  asmjit::JitAllocator::CreateParams params = wx_params();
  asmjit::JitRuntime runtime{&params};
  std::mutex mutex;  // guards the runtime (generate and release)

  // Generates the kernel; on any failure returns false with a reason.
  bool generate(const CoiterSpec& spec, void** fn, std::string* why) {
    if (g_force_failure.load()) {
      *why = "forced by the test hook";
      return false;
    }
    asmjit::CodeHolder code;
    RecordingErrorHandler handler;
    if (asmjit::Error e = code.init(runtime.environment())) {
      *why = asmjit::DebugUtils::errorAsString(e);
      return false;
    }
    code.setErrorHandler(&handler);
    asmjit::x86::Assembler assembler(&code);
    try {
      if (spec.isa == SJ_ISA_AVX512) detail::emit_coiter_avx512(assembler, spec);
      else detail::emit_coiter_avx2(assembler, spec);
    } catch (const std::exception& e) {
      *why = e.what();
      return false;
    }
    if (handler.error != asmjit::kErrorOk) {
      *why = "asmjit: " + handler.message;
      return false;
    }
    if (asmjit::Error e = runtime.add(fn, &code)) {
      *why = std::string("asmjit: ") + asmjit::DebugUtils::errorAsString(e);
      return false;
    }
    return true;
  }
};

CoiterJit::CoiterJit() : impl_(std::make_unique<Impl>()) {}
CoiterJit::~CoiterJit() = default;

CoiterJit& CoiterJit::global() {
  static CoiterJit* jit = new CoiterJit();  // deliberately leaked: kernels stay callable
  return *jit;
}

void CoiterJit::force_codegen_failure_for_testing(bool on) {
  if (on) g_failure_logged.store(false);  // each forced episode gives its one warning (tests count it)
  g_force_failure.store(on);
}

// Generates (or falls back to the portable kernel) without consulting any cache.
CoiterKernel CoiterJit::build_uncached(const CoiterSpec& spec) {
  CoiterKernel k;
  k.spec = spec;
  if (spec.isa != SJ_ISA_SCALAR) {
    auto t0 = std::chrono::steady_clock::now();
    std::string why;
    void* fn = nullptr;
    bool ok;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      ok = impl_->generate(spec, &fn, &why);
    }
    if (ok) {
      k.fn = fn;
      k.generated = true;
      k.codegen_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    } else if (!g_failure_logged.exchange(true)) {
      global_logger().warn("code generation failed for '{}' ({}); using the portable kernel", spec.to_string(), why);
    }
  }
  if (!k.fn) k.fn = kernels::coiter_portable_fn(spec);
  return k;
}

CoiterKernel CoiterJit::compile(const CoiterSpec& requested) {
  validate(requested);
  CoiterSpec spec = effective_spec(requested);
  // The test hook's failures must not be remembered as the kernel for this spec.
  if (g_force_failure.load()) return build_uncached(spec);
  Impl* impl = impl_.get();
  auto r = cache::KernelCache::global().get_or_build(cache::KernelKey::for_coiter(spec), [&] {
    auto* built = new CoiterKernel(build_uncached(spec));
    return std::shared_ptr<const void>(built, [impl](const void* p) {
      auto* k = static_cast<const CoiterKernel*>(p);
      if (k->generated) {
        std::lock_guard<std::mutex> lock(impl->mutex);
        impl->runtime.release(k->fn);
      }
      delete k;
    });
  });
  CoiterKernel k = *static_cast<const CoiterKernel*>(r.value.get());
  k.owner = r.value;
  k.from_cache = r.source == cache::KernelSource::Memory;
  if (k.from_cache) k.codegen_us = 0;
  return k;
}

}  // namespace sj::jit

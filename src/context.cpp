#include "src/context.hpp"

#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "cache/kernel_cache.hpp"
#include "cache/persistent_store.hpp"
#include "jit/isa.hpp"
#include "src/available_cpus.hpp"
#include "src/cycle_clock.hpp"
#include "src/environment.hpp"
#include "src/logging.hpp"

namespace sj {
namespace {

// The thread count when the config leaves it 0: SPARSEJIT_THREADS, else the CPUs this process
// may use (src/available_cpus.hpp), not the machine's: under taskset or a container's CPU quota
// a worker per machine CPU would oversubscribe the CPUs the process has.
int default_threads(std::string& source) {
  const CpuBudget cpus = available_cpus();
  if (const std::optional<std::string_view> v = env::value("SPARSEJIT_THREADS")) {
    int n = 0;
    if (absl::SimpleAtoi(absl::string_view(v->data(), v->size()), &n) && n >= 1 && n <= kMaxThreads) {
      source = absl::StrCat("SPARSEJIT_THREADS=", n);
      return n;
    }
    env::report_bad("SPARSEJIT_THREADS", *v, absl::StrCat("a whole number from 1 to ", kMaxThreads),
                    absl::StrCat(cpus.usable, " (the CPUs this process may use)"));
  }
  source = cpus.why();
  return cpus.usable;
}

}  // namespace

Context::Context(const sj_config& c)
    : config(c), allocator(c.allocator), logger(make_logger(c.log_level, c.log_callback, c.log_user)) {
  if (c.threads > 0) {
    threads = c.threads;
    threads_source = "sj_config.threads";
  } else {
    threads = default_threads(threads_source);
  }
  if (c.cache_dir) cache_dir = c.cache_dir;
  config.cache_dir = nullptr;  // the copy above owns the text
  allocator.set_memory_cap(c.memory_cap_bytes);
  if (c.kernel_cache_capacity) cache::KernelCache::global().set_capacity(c.kernel_cache_capacity);
  // The CPU's features are read once per process, here rather than in the first plan: asmjit
  // runs dozens of CPUID instructions, and each traps to the hypervisor on a VM (~7 us here;
  // 0.27-0.31 ms in all).
  (void)jit::host_features();
  CycleClock::start();  // the origin execution timings are measured from (src/cycle_clock.hpp)
  // An explicitly named cache folder is checked now, so an unsafe one fails creation.
  if (!c.disable_disk_cache && (!cache_dir.empty() || std::getenv("SPARSEJIT_CACHE_DIR"))) (void)store();
}

std::shared_ptr<cache::PersistentStore> Context::store() const {
  if (config.disable_disk_cache) return nullptr;
  std::call_once(store_once_, [&] { store_ = cache::PersistentStore::open(cache_dir, logger); });
  return store_;
}

ThreadPool& Context::pool() const {
  std::call_once(pool_once_, [&] { pool_ = std::make_unique<ThreadPool>(threads); });
  return *pool_;
}

}  // namespace sj

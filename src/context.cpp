#include "src/context.hpp"

#include <cstdlib>
#include <thread>

#include "cache/kernel_cache.hpp"
#include "cache/persistent_store.hpp"
#include "jit/isa.hpp"
#include "src/cycle_clock.hpp"
#include "src/logging.hpp"

namespace sj {

Context::Context(const sj_config& c)
    : config(c), allocator(c.allocator), logger(make_logger(c.log_level, c.log_callback, c.log_user)) {
  threads = c.threads > 0 ? c.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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

// What a sj_context holds: the allocator for results, the logger, thread count and cache
// settings. Shared by every call made with the context (all members are read-only after
// creation, so concurrent use needs no lock).
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "spdlog/logger.h"
#include "src/allocator.hpp"
#include "src/block_pool.hpp"
#include "src/thread_pool.hpp"

namespace sj {

namespace cache {
class PersistentStore;
}

// The most threads a context runs (sj_config.threads, SPARSEJIT_THREADS): more is refused
// rather than tried, since starting tens of thousands of threads fails part way.
inline constexpr int kMaxThreads = 4096;

struct Context {
  explicit Context(const sj_config& config);

  // First member, so destroyed last: while any context lives, freed large result blocks are
  // kept for reuse; the last context to go gives them back (block_pool.hpp).
  BlockPool::Lease pool_lease;
  sj_config config;  // as given (cache_dir copied below)
  Allocator allocator;
  std::shared_ptr<spdlog::logger> logger;
  int threads = 1;
  std::string threads_source;  // where `threads` came from (explain): the config, SPARSEJIT_THREADS or the CPUs
  std::string cache_dir;

  // The persistent store (plan and calibration decisions; LLVM objects later), or null when
  // disabled. A folder named by the config or SPARSEJIT_CACHE_DIR is checked when the context
  // is created (an unsafe one fails creation with SJ_ERR_CACHE); the default folder under
  // ~/.cache is opened on first use, so contexts that never store create nothing.
  std::shared_ptr<cache::PersistentStore> store() const;

  // The context's workers (threads - 1 of them; the calling thread is the other), started
  // on the first call that runs in parallel, so contexts used serially start no thread.
  ThreadPool& pool() const;

 private:
  mutable std::once_flag pool_once_;
  mutable std::unique_ptr<ThreadPool> pool_;
  mutable std::once_flag store_once_;
  mutable std::shared_ptr<cache::PersistentStore> store_;
};

}  // namespace sj

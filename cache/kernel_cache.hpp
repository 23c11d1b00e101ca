// KernelCache: the in-memory cache of built things (asmjit kernels, LLVM objects loaded into
// a JIT, plan decisions) keyed by KernelKey.
//
// - Thread-safe. Single-flight: concurrent first requests for one key run the builder once;
//   the others wait for its result (or its exception, which is not cached: the next request
//   builds again).
// - Bounded: least recently used entries beyond the capacity are dropped. Values are
//   shared_ptr<const void> whose deleter releases the resource (e.g. frees jitted code), so
//   an evicted value lives on while a plan still holds it.
// - Statistics (hits, misses, builds, evictions, build time) for the API and explain.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "cache/kernel_key.hpp"

namespace sj::cache {

// Where a value handed out by the cache came from (explain's "kernel.source").
enum class KernelSource : uint8_t { Memory, Compiled, Disk };
std::string_view to_string(KernelSource s);  // "memory", "compiled", "disk"

struct KernelCacheStats {
  uint64_t hits = 0;          // found ready in memory
  uint64_t misses = 0;        // not ready: built here or waited for another thread's build
  uint64_t waits = 0;         // of the misses, those that joined a build already in flight
  uint64_t builds = 0;        // builder invocations (successful or not)
  uint64_t build_failures = 0;  // builders that threw
  uint64_t disk_loads = 0;    // builds that reported KernelSource::Disk
  uint64_t evictions = 0;     // entries dropped by the LRU bound
  double build_ms = 0;        // total wall time inside builders
  size_t size = 0;            // entries held now
  size_t capacity = 0;
  std::string to_json() const;  // {"hits":..,"misses":..,...} for explain
};

class KernelCache {
 public:
  using Value = std::shared_ptr<const void>;
  static constexpr size_t kDefaultCapacity = 1024;  // sj_config.kernel_cache_capacity == 0

  // What a lookup returns.
  struct Result {
    Value value;
    KernelSource source = KernelSource::Memory;  // Memory for hits and for waiters
    double build_ms = 0;                         // this call's build time (0 unless it built)
  };

  explicit KernelCache(size_t capacity = kDefaultCapacity);
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The value for `key`, building it once with `build` when absent. `build` is called without
  // the cache lock held, as either Value() or Value(KernelSource& source) — the latter lets a
  // builder that loaded from the persistent store say KernelSource::Disk (default Compiled).
  // A builder that throws propagates its exception to this caller and to every waiter.
  template <class F> Result get_or_build(const KernelKey& key, F&& build) {
    if constexpr (std::is_invocable_v<F&, KernelSource&>) {
      return get_or_build_impl(key, std::function<Value(KernelSource&)>(std::forward<F>(build)));
    } else {
      return get_or_build_impl(key, std::function<Value(KernelSource&)>(
                                        [&build](KernelSource&) -> Value { return build(); }));
    }
  }

  // The ready value or null (counts a hit or a miss; never waits for a build in flight).
  Value find(const KernelKey& key);
  // Inserts or replaces a ready value (counts nothing but evictions).
  void insert(const KernelKey& key, Value value);
  bool erase(const KernelKey& key);
  void clear();  // drops every ready entry (builds in flight finish and are kept)

  // 0 = kDefaultCapacity. Shrinking evicts at once.
  void set_capacity(size_t capacity);
  size_t capacity() const;
  size_t size() const;

  KernelCacheStats stats() const;
  void reset_stats();

  // The process-wide cache (never destroyed, so values outlive static destructors).
  static KernelCache& global();

 private:
  struct InFlight;
  struct Entry {
    Value value;                           // set when ready
    std::shared_ptr<InFlight> in_flight;   // set while building
    std::list<KernelKey>::iterator lru;    // valid when ready
  };

  Result get_or_build_impl(const KernelKey& key, const std::function<Value(KernelSource&)>& build);
  void touch(Entry& e);            // lock held
  void evict_over_capacity(std::vector<Value>& dropped);  // lock held; values moved out

  mutable std::mutex mutex_;
  std::unordered_map<KernelKey, Entry, KernelKeyHash> map_;
  std::list<KernelKey> lru_;  // front = most recently used; ready entries only
  size_t capacity_;
  KernelCacheStats stats_;
};

}  // namespace sj::cache

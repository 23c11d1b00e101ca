#include "cache/kernel_cache.hpp"

#include <exception>
#include <future>
#include <vector>

#include "src/json_writer.hpp"

namespace sj::cache {

std::string_view to_string(KernelSource s) {
  switch (s) {
    case KernelSource::Memory: return "memory";
    case KernelSource::Compiled: return "compiled";
    case KernelSource::Disk: return "disk";
  }
  return "?";
}

std::string KernelCacheStats::to_json() const {
  JsonWriter w;
  w.begin_object()
      .field("hits", static_cast<int64_t>(hits))
      .field("misses", static_cast<int64_t>(misses))
      .field("waits", static_cast<int64_t>(waits))
      .field("builds", static_cast<int64_t>(builds))
      .field("build_failures", static_cast<int64_t>(build_failures))
      .field("disk_loads", static_cast<int64_t>(disk_loads))
      .field("evictions", static_cast<int64_t>(evictions))
      .field("build_ms", build_ms)
      .field("size", static_cast<int64_t>(size))
      .field("capacity", static_cast<int64_t>(capacity))
      .end_object();
  return w.str();
}

struct KernelCache::InFlight {
  std::promise<Value> promise;
  std::shared_future<Value> future = promise.get_future().share();
};

KernelCache::KernelCache(size_t capacity) : capacity_(capacity ? capacity : kDefaultCapacity) {}

KernelCache& KernelCache::global() {
  static KernelCache* cache = new KernelCache();  // deliberately leaked: values stay valid
  return *cache;
}

void KernelCache::touch(Entry& e) { lru_.splice(lru_.begin(), lru_, e.lru); }

void KernelCache::evict_over_capacity(std::vector<Value>& dropped) {
  while (lru_.size() > capacity_) {
    auto it = map_.find(lru_.back());
    lru_.pop_back();
    if (it != map_.end()) {
      dropped.push_back(std::move(it->second.value));
      map_.erase(it);
    }
    ++stats_.evictions;
  }
}

KernelCache::Result KernelCache::get_or_build_impl(const KernelKey& key,
                                                   const std::function<Value(KernelSource&)>& build) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = map_.find(key);
  if (it != map_.end()) {
    Entry& e = it->second;
    if (!e.in_flight) {
      ++stats_.hits;
      touch(e);
      return {e.value, KernelSource::Memory, 0};
    }
    ++stats_.misses;
    ++stats_.waits;
    std::shared_future<Value> fut = e.in_flight->future;
    lock.unlock();
    return {fut.get(), KernelSource::Memory, 0};  // rethrows the builder's exception
  }
  ++stats_.misses;
  ++stats_.builds;
  auto flight = std::make_shared<InFlight>();
  map_.emplace(key, Entry{nullptr, flight, {}});
  lock.unlock();

  KernelSource source = KernelSource::Compiled;
  Value value;
  auto t0 = std::chrono::steady_clock::now();
  auto ms_since = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  try {
    value = build(source);
  } catch (...) {
    double ms = ms_since();
    lock.lock();
    ++stats_.build_failures;
    stats_.build_ms += ms;
    auto f = map_.find(key);
    if (f != map_.end() && f->second.in_flight == flight) map_.erase(f);
    lock.unlock();
    flight->promise.set_exception(std::current_exception());
    throw;
  }
  double ms = ms_since();
  std::vector<Value> dropped;  // evicted values are released after the lock
  lock.lock();
  stats_.build_ms += ms;
  if (source == KernelSource::Disk) ++stats_.disk_loads;
  auto f = map_.find(key);
  // Still ours (insert() may have replaced it meanwhile): publish, or forget a null result.
  if (f != map_.end() && f->second.in_flight == flight) {
    if (value) {
      f->second.value = value;
      f->second.in_flight.reset();
      lru_.push_front(key);
      f->second.lru = lru_.begin();
      evict_over_capacity(dropped);
    } else {
      map_.erase(f);
    }
  }
  lock.unlock();
  flight->promise.set_value(value);
  return {std::move(value), source, ms};
}

KernelCache::Value KernelCache::find(const KernelKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(key);
  if (it == map_.end() || it->second.in_flight) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  touch(it->second);
  return it->second.value;
}

void KernelCache::insert(const KernelKey& key, Value value) {
  if (!value) return;
  std::vector<Value> dropped;  // released after the lock (a deleter may free code)
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(key);
  if (it != map_.end() && !it->second.in_flight) {
    dropped.push_back(std::move(it->second.value));
    it->second.value = std::move(value);
    touch(it->second);
    return;
  }
  if (it != map_.end()) map_.erase(it);  // an in-flight build will find it replaced
  lru_.push_front(key);
  map_.emplace(key, Entry{std::move(value), nullptr, lru_.begin()});
  evict_over_capacity(dropped);
}

bool KernelCache::erase(const KernelKey& key) {
  Value dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = map_.find(key);
  if (it == map_.end() || it->second.in_flight) return false;
  dropped = std::move(it->second.value);
  lru_.erase(it->second.lru);
  map_.erase(it);
  return true;
}

void KernelCache::clear() {
  std::vector<Value> dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = map_.begin(); it != map_.end();) {
    if (it->second.in_flight) {
      ++it;
      continue;
    }
    dropped.push_back(std::move(it->second.value));
    it = map_.erase(it);
  }
  lru_.clear();
}

void KernelCache::set_capacity(size_t capacity) {
  std::vector<Value> dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = capacity ? capacity : kDefaultCapacity;
  evict_over_capacity(dropped);
}

size_t KernelCache::capacity() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_;
}

size_t KernelCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  KernelCacheStats s = stats_;
  s.size = lru_.size();
  s.capacity = capacity_;
  return s;
}

void KernelCache::reset_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_ = KernelCacheStats{};
}

}  // namespace sj::cache

#include "src/work_partition.hpp"

#include <algorithm>

#include "src/environment.hpp"

namespace sj {

ParallelTuning& parallel_tuning() {
  static ParallelTuning* t = [] {
    auto* p = new ParallelTuning;
    if (env::choice("SPARSEJIT_PARTITION", {"dynamic", "static"}, "dynamic") == 1)
      p->mode = static_cast<int>(PartitionMode::StaticRows);
    return p;
  }();
  return *t;
}

Workers Workers::for_call(const Context& ctx, int requested_threads) {
  Workers w;
  w.threads = requested_threads > 0 ? std::min(requested_threads, ctx.threads) : ctx.threads;
  w.threads = std::max(1, w.threads);
  if (w.threads > 1) w.ctx = &ctx;
  w.chunks = 1;
  return w;
}

void Workers::run_parallel(const Partition& p, const std::function<void(int64_t, int64_t, int64_t)>& body) {
  ctx->pool().parallel_for(p.chunks(), threads, [&](int64_t c) { body(c, p.begin(c), p.end(c)); });
}

namespace {
constexpr const char* kTooLittleWork = "serial: less estimated work than a parallel run pays for (min_parallel_work)";

// The default partition is {0, 0}: set its end (assigning a list rebuilt the inline vector,
// ~75 instructions of every serial call).
Partition one_chunk(int64_t n) {
  Partition p;
  p.bounds[1] = std::max<int64_t>(0, n);
  return p;
}
}  // namespace

bool worth_parallel(Workers& w, int64_t total_work) {
  if (w.threads <= 1) return false;
  if (total_work >= parallel_tuning().min_parallel_work.load(std::memory_order_relaxed)) return true;
  w.basis = kTooLittleWork;
  return false;
}

Partition partition_by_prefix(const int64_t* prefix, int64_t n, Workers& w, const char* basis) {
  w.basis = basis;
  if (w.threads <= 1 || n <= 1 || !prefix) return one_chunk(n);
  const ParallelTuning& t = parallel_tuning();
  Partition p;
  if (static_cast<PartitionMode>(t.mode.load(std::memory_order_relaxed)) == PartitionMode::StaticRows) {
    w.basis = "static: equal row counts, one chunk per thread";
    const int64_t k = std::min<int64_t>(w.threads, n);
    p.bounds.resize(static_cast<size_t>(k) + 1);
    for (int64_t c = 0; c <= k; ++c) p.bounds[static_cast<size_t>(c)] = n * c / k;
    return p;
  }
  const int64_t total = prefix[n] - prefix[0];
  if (!worth_parallel(w, total)) return one_chunk(n);
  const int64_t min_work = std::max<int64_t>(1, t.min_chunk_work.load(std::memory_order_relaxed));
  int64_t k = std::min<int64_t>(int64_t(w.threads) * t.chunks_per_thread.load(std::memory_order_relaxed), n);
  k = std::min(k, std::max<int64_t>(1, total / min_work));
  return partition_into(prefix, n, k);
}

Partition partition_into(const int64_t* prefix, int64_t n, int64_t k) {
  k = std::min(k, n);
  if (k <= 1 || !prefix) return one_chunk(n);
  const int64_t total = prefix[n] - prefix[0];
  // Boundary c is the first row whose prefix reaches c/k of the total work.
  Partition p;
  p.bounds.clear();
  p.bounds.push_back(0);
  for (int64_t c = 1; c < k; ++c) {
    const int64_t target = prefix[0] + static_cast<int64_t>(static_cast<__int128>(total) * c / k);
    const int64_t r = std::lower_bound(prefix, prefix + n + 1, target) - prefix;
    const int64_t b = std::clamp<int64_t>(r, 0, n);
    if (b > p.bounds.back() && b < n) p.bounds.push_back(b);
  }
  p.bounds.push_back(n);
  return p;
}

Partition partition_even(int64_t n, int64_t work_per_item, Workers& w, const char* basis) {
  w.basis = basis;
  if (w.threads <= 1 || n <= 1) return one_chunk(n);
  const ParallelTuning& t = parallel_tuning();
  const int64_t total = n * std::max<int64_t>(1, work_per_item);
  if (!worth_parallel(w, total)) return one_chunk(n);
  const int64_t min_work = std::max<int64_t>(1, t.min_chunk_work.load(std::memory_order_relaxed));
  int64_t k = std::min<int64_t>(int64_t(w.threads) * t.chunks_per_thread.load(std::memory_order_relaxed), n);
  k = std::min(k, std::max<int64_t>(1, total / min_work));
  if (k <= 1) return one_chunk(n);
  Partition p;
  p.bounds.resize(static_cast<size_t>(k) + 1);
  for (int64_t c = 0; c <= k; ++c) p.bounds[static_cast<size_t>(c)] = n * c / k;
  return p;
}

}  // namespace sj

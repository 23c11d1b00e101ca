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
}  // namespace

bool worth_parallel(Workers& w, int64_t total_work) {
  if (w.threads <= 1) return false;
  if (total_work >= parallel_tuning().min_parallel_work.load(std::memory_order_relaxed)) return true;
  w.basis = kTooLittleWork;
  return false;
}

namespace partition_detail {
bool static_mode() {
  return static_cast<PartitionMode>(parallel_tuning().mode.load(std::memory_order_relaxed)) == PartitionMode::StaticRows;
}

Partition static_rows(int64_t n, Workers& w) {
  w.basis = "static: equal row counts, one chunk per thread";
  return even_rows(n, std::min<int64_t>(w.threads, n));
}

Partition even_rows(int64_t n, int64_t k) {
  Partition p;
  p.bounds.resize(static_cast<size_t>(k) + 1);
  for (int64_t c = 0; c <= k; ++c) p.bounds[static_cast<size_t>(c)] = n * c / k;
  return p;
}

int64_t dynamic_chunks(int64_t n, int64_t total, Workers& w) {
  if (!worth_parallel(w, total)) return 1;
  const ParallelTuning& t = parallel_tuning();
  const int64_t min_work = std::max<int64_t>(1, t.min_chunk_work.load(std::memory_order_relaxed));
  const int64_t k = std::min<int64_t>(int64_t(w.threads) * t.chunks_per_thread.load(std::memory_order_relaxed), n);
  return std::min(k, std::max<int64_t>(1, total / min_work));
}
}  // namespace partition_detail

Partition partition_by_prefix(const int64_t* prefix, int64_t n, Workers& w, const char* basis) {
  if (!prefix) {
    w.basis = basis;
    return partition_detail::one_chunk(n);
  }
  return partition_by(n, w, basis, [prefix](int64_t i) { return prefix[i]; });
}

Partition partition_into(const int64_t* prefix, int64_t n, int64_t k) {
  if (!prefix) return partition_detail::one_chunk(n);
  return partition_into_by(n, k, [prefix](int64_t i) { return prefix[i]; });
}

Partition partition_even(int64_t n, int64_t work_per_item, Workers& w, const char* basis) {
  w.basis = basis;
  if (w.threads <= 1 || n <= 1) return partition_detail::one_chunk(n);
  const int64_t k = partition_detail::dynamic_chunks(n, n * std::max<int64_t>(1, work_per_item), w);
  if (k <= 1) return partition_detail::one_chunk(n);
  return partition_detail::even_rows(n, k);
}

}  // namespace sj

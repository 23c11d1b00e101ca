// How a call splits its rows (or columns) among threads: by estimated work, into more chunks
// than threads, handed out dynamically by the context's pool (src/thread_pool.hpp).
//
// Work estimates are a prefix sum over rows: multiplies per row for SpGEMM, nnz of both
// rows for element-wise operations, nnz of the row (or of the mask row) elsewhere, each plus
// a constant per row. A row is never split, so a result never depends on where the chunk
// boundaries fall: kernels compute each row exactly as the serial loop does, and sparse
// outputs are joined in row order (kernels/sparse_assembly.hpp). Hence bit-identical
// results for any thread count.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include <absl/container/inlined_vector.h>

#include "src/block_pool.hpp"
#include "src/context.hpp"

namespace sj {

// Dynamic: ~kChunksPerThread chunks of equal estimated work per thread, taken one at a time.
// StaticRows: one chunk of equal row count per thread (OpenMP's schedule(static)); kept
// only so the benchmark can show what dynamic balancing buys on skewed inputs.
enum class PartitionMode { Dynamic, StaticRows };

// Process-wide knobs for benchmarks and tests (atomics: read by concurrent calls). The mode
// starts from the environment (SPARSEJIT_PARTITION=static), the rest from the defaults.
struct ParallelTuning {
  std::atomic<int> mode{static_cast<int>(PartitionMode::Dynamic)};
  std::atomic<int64_t> min_chunk_work{1 << 14};  // estimated work units (~1 ns each) per chunk
  // A call with less estimated work stays on one thread. Waking a pool thread and joining
  // (twice for a sparse result: fill, then copy) costs ~6-16 us here, more under load, and the
  // pieces are copied once more: at 16k units a 2-thread B o A^T of 60k units ran 1.7-3x
  // slower than one thread (GraphBLAS's threshold, GxB_CHUNK, is 64k per thread).
  std::atomic<int64_t> min_parallel_work{1 << 18};
  std::atomic<int> chunks_per_thread{8};
  // How a split push SpMSpV reads A and x (kernels/spmspv_kernels.hpp, push_buckets_pay,
  // push_row_blocks_pay): 0 by its rule, 1 always cuts of x's columns, 2 always buckets of x's
  // products, 3 row blocks of A's CSC copy where A's handle can keep them, else cuts (tests,
  // benchmarks).
  std::atomic<int> push_split{0};
};
ParallelTuning& parallel_tuning();

// Rows [bounds[c], bounds[c+1]) form chunk c.
struct Partition {
  absl::InlinedVector<int64_t, 4> bounds{0, 0};  // inline up to 3 chunks: a serial call allocates nothing
  int64_t chunks() const { return static_cast<int64_t>(bounds.size()) - 1; }
  int64_t begin(int64_t c) const { return bounds[static_cast<size_t>(c)]; }
  int64_t end(int64_t c) const { return bounds[static_cast<size_t>(c) + 1]; }
};

// The threads one call may use, and a record of what its loops did (read by explain).
struct Workers {
  const Context* ctx = nullptr;  // null: serial
  int threads = 1;
  int64_t chunks = 1;       // the most chunks one loop of the call used
  const char* basis = "";   // what the last partition's work estimate was

  // options.threads (0 = the context's), at most the context's count.
  static Workers for_call(const Context& ctx, int requested_threads);
  static Workers serial() { return Workers{}; }

  // Runs body(begin, end) for every chunk of `p`, in parallel when threads > 1. The first
  // exception of any chunk is rethrown here.
  template <class Body> void run(const Partition& p, Body&& body) {
    run_indexed(p, [&](int64_t, int64_t b, int64_t e) { body(b, e); });
  }
  // The same with the chunk number (for per-chunk results joined in chunk order). A serial
  // run calls `body` directly: on tiny inputs a std::function call per loop was measurable.
  template <class Body> void run_indexed(const Partition& p, Body&& body) {
    const int64_t n = p.chunks();
    chunks = std::max(chunks, n);
    if (n <= 1 || threads <= 1 || !ctx) {
      for (int64_t c = 0; c < n; ++c) body(c, p.begin(c), p.end(c));
      return;
    }
    run_parallel(p, body);
  }

 private:
  void run_parallel(const Partition& p, const std::function<void(int64_t chunk, int64_t begin, int64_t end)>& body);
};

// Whether a call of this much estimated work runs on several threads (threads > 1 and at
// least min_parallel_work); when not, explain says so. For callers that can skip building a
// work prefix when the total is known.
bool worth_parallel(Workers& w, int64_t total_work);

// Splits [0, n) by the work prefix sum `prefix` (n + 1 entries, prefix[0] = 0,
// non-decreasing). One chunk when the call is serial or the total is below min_parallel_work.
Partition partition_by_prefix(const int64_t* prefix, int64_t n, Workers& w, const char* basis);

// At most k chunks of equal work by `prefix` (as above), whatever the thread count: for a
// serial caller that splits its output into bounded pieces.
Partition partition_into(const int64_t* prefix, int64_t n, int64_t k);

// The same two with the prefix given as prefix_at(i) for i in [0, n] (non-decreasing, read
// O(k log n) times): for work known in closed form, such as an element-wise product's nnz of
// A's and B's first i rows, read from their positions. Building that prefix as an array was a
// serial pass over the rows (~0.8 ms of a 6.9 ms 2-thread A .* B of 600k rows).
template <class PrefixAt> Partition partition_into_by(int64_t n, int64_t k, PrefixAt&& prefix_at);
template <class PrefixAt> Partition partition_by(int64_t n, Workers& w, const char* basis, PrefixAt&& prefix_at);

// The same with the work of row i given by row_work(i) (a constant per row is added). The
// prefix comes from the block pool (src/block_pool.hpp): a heap array of 8 bytes a row, freed
// by every call, was trimmed and faulted in again by the next (a 2-thread A .* B of 600k rows
// took 35 ms a call in a plain program, against 12 on one, until its arrays came from the pool).
template <class F> Partition partition_rows(int64_t n, Workers& w, const char* basis, F&& row_work) {
  if (w.threads <= 1 || n <= 1) return partition_by_prefix(nullptr, n, w, basis);
  ScratchArray<int64_t> prefix(static_cast<size_t>(n) + 1);
  int64_t* const pp = prefix.get();
  pp[0] = 0;
  for (int64_t i = 0; i < n; ++i) pp[i + 1] = pp[i] + 1 + static_cast<int64_t>(row_work(i));
  return partition_by_prefix(pp, n, w, basis);
}

// A plain split of [0, n), every item costing about `work_per_item`.
Partition partition_even(int64_t n, int64_t work_per_item, Workers& w, const char* basis);

namespace partition_detail {
// The default partition is {0, 0}: set its end (assigning a list rebuilt the inline vector,
// ~75 instructions of every serial call).
inline Partition one_chunk(int64_t n) {
  Partition p;
  p.bounds[1] = std::max<int64_t>(0, n);
  return p;
}
// Whether the mode is PartitionMode::StaticRows, and its split: equal row counts, one chunk
// per thread.
bool static_mode();
Partition static_rows(int64_t n, Workers& w);
// [0, n) in k chunks of equal row counts.
Partition even_rows(int64_t n, int64_t k);
// The chunk count for `total` work on w's threads (dynamic mode), setting explain's basis
// when the call stays serial.
int64_t dynamic_chunks(int64_t n, int64_t total, Workers& w);
}  // namespace partition_detail

template <class PrefixAt> Partition partition_into_by(int64_t n, int64_t k, PrefixAt&& prefix_at) {
  k = std::min(k, n);
  if (k <= 1) return partition_detail::one_chunk(n);
  const int64_t first = prefix_at(int64_t(0)), total = prefix_at(n) - first;
  // Boundary c is the first row whose prefix reaches c/k of the total work.
  Partition p;
  p.bounds.clear();
  p.bounds.push_back(0);
  for (int64_t c = 1; c < k; ++c) {
    const int64_t target = first + static_cast<int64_t>(static_cast<__int128>(total) * c / k);
    // The first i in [0, n] with prefix_at(i) >= target, by bisection. (Not
    // std::ranges::partition_point over views::iota: clang 14, which the fuzz build uses,
    // cannot compile libstdc++ 12's ranges.)
    int64_t lo = 0, hi = n + 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (prefix_at(mid) < target) lo = mid + 1;
      else hi = mid;
    }
    const int64_t b = std::min(lo, n);
    if (b > p.bounds.back() && b < n) p.bounds.push_back(b);
  }
  p.bounds.push_back(n);
  return p;
}

template <class PrefixAt> Partition partition_by(int64_t n, Workers& w, const char* basis, PrefixAt&& prefix_at) {
  w.basis = basis;
  if (w.threads <= 1 || n <= 1) return partition_detail::one_chunk(n);
  if (partition_detail::static_mode()) return partition_detail::static_rows(n, w);
  const int64_t k = partition_detail::dynamic_chunks(n, prefix_at(n) - prefix_at(int64_t(0)), w);
  return partition_into_by(n, k, prefix_at);
}

}  // namespace sj

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
  // How a split push SpMSpV reads x (kernels/spmspv_kernels.hpp, push_buckets_pay): 0 by its
  // rule, 1 always cuts of x's columns, 2 always buckets of x's products (tests, benchmarks).
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

// The same with the work of row i given by row_work(i) (a constant per row is added).
template <class F> Partition partition_rows(int64_t n, Workers& w, const char* basis, F&& row_work) {
  if (w.threads <= 1 || n <= 1) return partition_by_prefix(nullptr, n, w, basis);
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1);
  prefix[0] = 0;
  for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + 1 + static_cast<int64_t>(row_work(i));
  return partition_by_prefix(prefix.data(), n, w, basis);
}

// A plain split of [0, n), every item costing about `work_per_item`.
Partition partition_even(int64_t n, int64_t work_per_item, Workers& w, const char* basis);

}  // namespace sj

// SpMSpV kernels, y(i) = sum_j A(i,j) * x(j), x a sparse vector with sorted indices, and a
// row-wise SpMV. Every kernel keeps the exactness contract of kernels/reference.hpp: y(i)
// starts from its first product and adds the next ones in increasing j, and a sparse y
// stores i iff some product formed.
//
//   push     column-wise over CSC(A): for each stored x(j) in increasing j, scatter
//            A(:,j)*x(j) into a sparse accumulator (value + mark + list of touched rows);
//            Azad & Bulu\c{c}. Work ~ flops + nnz(x) (+ sort of the touched rows).
//   densify  scatter x into a dense value array + byte map, then gather over A's rows.
//            Work ~ nnz(A) + m.
//   search   row-wise; the shorter of (row, x) leads and gallops in the other.
//            Work ~ sum_i min(len_i, nnz x) * log(ratio).
//   inner    row-wise two-finger merge. Work ~ sum_i (len_i + nnz x) (less when a row ends early).
//
// Workspaces are thread-local and kept between calls; only the entries a call touched are
// reset, so a call costs O(its work), not O(m) or O(n), for sparse outputs.
//
// Threads (src/work_partition.hpp): every kernel splits the OUTPUT rows into chunks by
// estimated work (A's nnz per row) and each chunk computes its rows exactly as the serial
// loop does: push walks x's columns in its own row block of A's CSC copy (PushRowBlocks, kept
// with A's handle), or its part of each of x's columns (cut once per column at every chunk's
// first row, PushCuts), or adds its bucket of x's products, filled by all threads in
// increasing j (PushBuckets), into the running thread's accumulator. A sparse y is
// collected per chunk at the chunk's own rows of the capacity-m sink (at most one entry per
// row), and the chunks' segments are joined in row order. So y does not depend on the thread
// count.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <absl/container/inlined_vector.h>

#include "kernels/push_runs_avx2.hpp"
#include "kernels/sort_network_avx2.hpp"
#include "kernels/spmv_gather_avx512.hpp"
#include "src/block_pool.hpp"
#include "src/error.hpp"
#include "src/prefetch.hpp"
#include "src/semiring.hpp"
#include "src/tensor.hpp"
#include "src/thread_scratch.hpp"
#include "src/work_partition.hpp"

namespace sj::spmspv {

// The per-thread scratch of one (I, V) instantiation. Invariant between calls: mark, bits
// and xhas are all zero.
template <class I, class V> struct Scratch {
  std::vector<V> acc;        // push: row accumulators (size m); densify: x values (size n)
  std::vector<uint8_t> mark; // push: touched rows; densify: stored x(j)
  std::vector<I> list;       // push: touched rows in first-touch order; row kernels: output idx
  std::vector<V> outv;       // row kernels, push: output values
  std::vector<I> outi;       // push: output indices
  std::vector<uint64_t> bits; // push: touched rows as a bitmap (size m/64 + 1), all clear
  std::vector<I> stage_row;   // parallel push: a run of x's products, before they are bucketed
  std::vector<V> stage_prod;
  std::vector<uint32_t> stage_chunk;
  static Scratch& get() {
    static thread_local Scratch s;
    return tls_pinned(s);
  }
  // Each array grows on its own test: after a failed resize (bad_alloc to the caller) the next
  // call must not trust one array's size for the others.
  void need_staging(int64_t n) {
    grow(stage_row, n);
    grow(stage_prod, n);
    grow(stage_chunk, n);
  }
  template <class T> static void grow(std::vector<T>& v, int64_t n, T fill = T{}) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n), fill);
  }
  uint64_t* need_bits(int64_t m) {
    const size_t words = static_cast<size_t>(m >> 6) + 1;
    if (bits.size() < words) bits.resize(words, 0);
    return bits.data();
  }
  void need(int64_t n_acc, int64_t n_list) {
    grow(acc, n_acc);
    grow(mark, n_acc, uint8_t{0});
    grow(list, n_list);
    grow(outv, n_list);
    grow(outi, n_list);
  }
};

// Output sink: either a dense y (every element written; zero() where no product), or a
// sparse y collected in increasing i into idx/val arrays of capacity m: chunk c of rows
// [r0, r1) writes its entries from idx + r0, and segments[c] = {r0, its count}.
template <class I, class V> struct RowSink {
  V* dense = nullptr;  // when non-null
  I* idx = nullptr;
  V* val = nullptr;
  int64_t count = 0;  // total entries
  absl::InlinedVector<std::pair<int64_t, int64_t>, 2> segments;  // (start, entries) per chunk

  // Copies the segments, in order, to oi/ov (capacity count): a segment per chunk of w's
  // threads where there are many entries (one thread copying ~6 MB took ~10% of a 2-thread
  // push on x at 10% of a 600k-row A), else on this thread.
  void gather(I* oi, V* ov, Workers& w) const { gather_as<I>(oi, ov, w); }
  // The same with the coordinates converted to J (the caller's coordinate type).
  template <class J> void gather_as(J* oi, V* ov, Workers& w) const {
    for_segments(w, [&](int64_t start, int64_t n, int64_t o) {
      if constexpr (std::is_same_v<I, J>) {
        std::memcpy(oi + o, idx + start, sizeof(I) * static_cast<size_t>(n));
      } else {
        for (int64_t k = 0; k < n; ++k) oi[o + k] = static_cast<J>(idx[start + k]);
      }
      std::memcpy(ov + o, val + start, sizeof(V) * static_cast<size_t>(n));
    });
  }
  void gather(I* oi, V* ov) const {
    Workers serial = Workers::serial();
    gather(oi, ov, serial);
  }

 private:
  static constexpr int64_t kParallelGather = int64_t(1) << 17;  // entries
  // Calls copy(start, n, out_offset) for every non-empty segment.
  template <class Copy> void for_segments(Workers& w, Copy&& copy) const {
    const int64_t k = static_cast<int64_t>(segments.size());
    absl::InlinedVector<int64_t, 4> at(static_cast<size_t>(k) + 1, 0);
    for (int64_t c = 0; c < k; ++c) at[c + 1] = at[c] + segments[c].second;
    if (k < 2 || count < kParallelGather || w.threads <= 1) {
      for (int64_t c = 0; c < k; ++c)
        if (segments[c].second) copy(segments[c].first, segments[c].second, at[c]);
      return;
    }
    Partition each;  // one segment per chunk
    each.bounds.resize(static_cast<size_t>(k) + 1);
    for (int64_t c = 0; c <= k; ++c) each.bounds[c] = c;
    const int64_t chunks = w.chunks;  // explain's chunk count stays the kernel's
    w.run_indexed(each, [&](int64_t c, int64_t, int64_t) {
      if (segments[c].second) copy(segments[c].first, segments[c].second, at[c]);
    });
    w.chunks = chunks;
  }
};

// Runs chunk(c, r0, r1) -> entries written, over the partition, and records the segments.
template <class I, class V, class Chunk>
void run_sink_chunks(Workers& w, const Partition& p, RowSink<I, V>& sink, Chunk&& chunk) {
  sink.segments.assign(static_cast<size_t>(p.chunks()), {0, 0});
  w.run_indexed(p, [&](int64_t c, int64_t r0, int64_t r1) { sink.segments[c] = {r0, chunk(c, r0, r1)}; });
  sink.count = 0;
  for (auto& sgm : sink.segments) sink.count += sgm.second;
}

// ---- push: A given as CSC (outer = columns j, inner = rows i) ----
constexpr int64_t kPushPrefetch = 8;  // entries of x ahead (prefetching the touched accumulators too was slower)
// Position of column j's last entry, or of its start when it is empty (an address to
// prefetch: never before the column's arrays).
inline int64_t column_last(const int64_t* pos, int64_t j) { return std::max(pos[j], pos[j + 1] - 1); }
// Whether a split push buckets x's products (PushBuckets) rather than cutting x's columns
// (PushCuts), given A's mean column length (products per stored x). Cuts cost every chunk a
// visit of each of x's columns: a bounds read, a line fetch and the loop's end, ~k nx visits
// for k chunks. Buckets cost every product a staging write and a scattered write, whatever k.
// So cuts win on few threads and long columns, buckets on many threads and short columns.
// Measured as total work (every chunk run on one thread of the AMD VM, so the figures do not
// depend on the VM's 2 cores), per chunk: 16 per column, x 10%, cuts/buckets 3.7-4.4/4.7-4.9
// ms at 4 chunks, 2.7-2.9/2.4 at 8, 1.9-2.0/1.2 at 16; x 50%: 15.7/13.7 at 4, 10.3/3.0 at 16;
// 64 per column: 0.91/0.86 at 16; 256 per column: 0.34/0.48 at 16. The crossover is near
// threads = column length / 4. On a 16-core Xeon cuts gave 3.3x at 16 threads (16 per column).
constexpr double kBucketColumnPerThread = 4;
inline bool push_buckets_pay(const Workers& w, double mean_column) {
  switch (parallel_tuning().push_split.load(std::memory_order_relaxed)) {
    case 1: case 3: return false;
    case 2: return true;
    default: return w.threads > 1 && double(w.threads) * kBucketColumnPerThread >= mean_column;
  }
}
// Whether a split push walks row blocks of A's CSC copy (PushRowBlocks), where the caller
// keeps them with A's handle: wherever the rule takes no buckets. The blocks give each chunk
// its own arrays, so they replace the cuts; with many threads and short columns each chunk
// would still visit every column of x in its block, which the buckets avoid.
inline bool push_row_blocks_pay(const Workers& w, double mean_column) {
  switch (parallel_tuning().push_split.load(std::memory_order_relaxed)) {
    case 1: case 2: return false;
    case 3: return true;
    default: return !push_buckets_pay(w, mean_column);
  }
}
// A's mean column length, from its nnz and column count (push_partition has A's CSR
// positions, the push itself the CSC form).
inline double mean_column(int64_t nnz, int64_t columns) { return columns > 0 ? double(nnz) / double(columns) : 0; }
template <class I, class V> double mean_column(const CsView<I, V>& Acsc) {
  return mean_column(Acsc.pos[Acsc.outer] - Acsc.pos[0], Acsc.outer);
}

// x's entries [0, nx) in `runs` runs of equal count (one empty run when x is empty). Not
// partition_even: that one sets explain's basis, which stays the push's row basis.
inline Partition x_runs(int64_t nx, int64_t runs) {
  runs = std::max<int64_t>(1, runs);
  Partition px;
  px.bounds.resize(static_cast<size_t>(runs) + 1);
  for (int64_t r = 0; r <= runs; ++r) px.bounds[static_cast<size_t>(r)] = nx * r / runs;
  return px;
}
// Runs body(run, p0, p1) over the runs of x, leaving explain's chunk count (the push's row
// chunks, not these runs) as it was.
template <class Body> void over_x_runs(Workers& w, const Partition& px, Body&& body) {
  const int64_t row_chunks = w.chunks;
  w.run_indexed(px, body);
  w.chunks = row_chunks;
}

// Parallel push: the columns of x's entries cut at every chunk's first row, in one pass split
// over x among the threads, so that each column is looked up and searched once, not once per
// chunk. A chunk then reads its part of each column from two sequential arrays: no range test,
// no search, and a prefetch of exactly the lines it will read. With every chunk searching every
// column, 2 threads gave 1.18-1.34x on x at 10% of a 600k-column A.
template <class I, class V> class PushCuts {
 public:
  PushCuts(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const Partition& part, Workers& w)
      : nx_(x.nnz), cut_(static_cast<size_t>((part.chunks() + 1) * std::max<int64_t>(1, x.nnz))) {
    const int64_t k = part.chunks(), nx = nx_;
    // Chunk 0 reads from each column's start and the last chunk to its end.
    if (k < 1 || part.begin(0) != 0 || part.end(k - 1) != Acsc.inner)
      fail(SJ_ERR_INTERNAL, "push: cuts for a partition of rows [", part.begin(0), ", ", part.end(k - 1), ") of ",
           Acsc.inner);
    const int64_t* pos = Acsc.pos;
    const I* crd = Acsc.crd;
    int64_t* cut = cut_.get();
    // x in equal runs, two per thread
    over_x_runs(w, x_runs(nx, std::min<int64_t>(nx, 2 * int64_t(w.threads))), [&](int64_t, int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        // The column bounds 16 entries ahead, then both ends of the column's rows 8 ahead:
        // the search below reads them, and they are the pass's misses (without this prefetch
        // the pass took 2.3 of a 7.9 ms 2-thread call on x at 10% of a 600k-column A; 1.0 ms
        // with it).
        if (p + 16 < p1) prefetch_line(pos + x.idx[p + 16]);
        if (p + kPushPrefetch < p1) {
          const int64_t ja = x.idx[p + kPushPrefetch];
          prefetch_line(crd + pos[ja]);
          prefetch_line(crd + column_last(pos, ja));
        }
        const int64_t j = x.idx[p];
        int64_t q = pos[j];
        const int64_t e = pos[j + 1];
        cut[p] = q;
        cut[k * nx + p] = e;
        for (int64_t c = 1; c < k; ++c) {  // the first row >= the chunk's first row
          const I r = static_cast<I>(part.begin(c));
          const I* base = crd + q;
          int64_t len = e - q;
          if (len > 0 && crd[e - 1] < r) {
            q = e;
          } else {  // one exists (crd[e - 1] >= r): branch-free halving lands on it
            while (len > 1) {
              const int64_t half = len >> 1;
              base = base[half - 1] < r ? base + half : base;
              len -= half;
            }
            q = base - crd;
          }
          cut[c * nx + p] = q;
        }
      }
    });
  }
  const int64_t* lo(int64_t c) const { return cut_.get() + c * nx_; }
  const int64_t* hi(int64_t c) const { return cut_.get() + (c + 1) * nx_; }

 private:
  int64_t nx_;
  ScratchArray<int64_t> cut_;
};

// Parallel push: the products A(i,j) x(j) bucketed by output chunk (propagation blocking). x's
// entries are split into runs taken by the threads; each run stages its products with their
// rows and chunks, counts them per chunk, then writes (i, product) into its own segment of each
// chunk's bucket. Chunk c then adds, run after run, the segments of bucket c into its
// accumulator. Runs hold increasing j and each run's segment keeps its column order, so every
// row still adds its products in increasing j as the serial walk does, and y does not depend
// on the thread count.
//
// With cuts (above) every chunk fetches each of x's columns, so those misses do not split with
// the threads: on a 16-core Xeon, x at 10% of a 600k-column A, cuts gave 1.63x at 2 threads and
// 3.3x at 16 (GraphBLAS 13.5x). Here a column is fetched once, by one thread, and a chunk's
// accumulators stay in its core's cache, for ~9 ns more work per product (staging, scatter;
// push_buckets_pay weighs the two). The buckets hold at most nnz(A) products (each column
// once), the size of the CSC copy.
template <class S, class I, class V> class PushBuckets {
 public:
  PushBuckets(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const Partition& part, Workers& w)
      : chunks_(part.chunks()) {
    const int64_t k = chunks_, nx = x.nnz, m = Acsc.inner;
    if (k < 1 || part.begin(0) != 0 || part.end(k - 1) != m)
      fail(SJ_ERR_INTERNAL, "push: buckets for a partition of rows [", part.begin(0), ", ", part.end(k - 1), ") of ",
           m);
    const int64_t* pos = Acsc.pos;
    const I* crd = Acsc.crd;
    const V* val = Acsc.val;
    // Row -> chunk: a table over blocks of 2^shift rows gives the chunk of the block's first
    // row (at most 16k blocks, so it stays in L1/L2); a row past that chunk's end steps on.
    int shift = 0;
    while ((m >> shift) > kBlocks) ++shift;
    const int64_t blocks = (m >> shift) + 1;
    ScratchArray<uint32_t> table(static_cast<size_t>(blocks));
    ScratchArray<int64_t> bounds(static_cast<size_t>(k) + 1);
    int64_t* bnd = bounds.get();
    for (int64_t c = 0; c <= k; ++c) bnd[c] = part.bounds[static_cast<size_t>(c)];
    for (int64_t b = 0, c = 0; b < blocks; ++b) {
      while (c + 1 < k && bnd[c + 1] <= (b << shift)) ++c;
      table.get()[b] = static_cast<uint32_t>(c);
    }
    const uint32_t* tab = table.get();
    auto chunk_of = [&](int64_t i) {
      int64_t c = tab[i >> shift];
      while (i >= bnd[c + 1]) ++c;
      return c;
    };
    // x in runs: several per thread (taken as threads free up), and enough that a run's
    // columns (~kRunProducts products) stay in cache between its count and its writes.
    const double expected = mean_column(Acsc) * static_cast<double>(nx);  // (nnz nx overflows int64)
    const double by_products = std::min(expected / kRunProducts, static_cast<double>(kMaxRuns));
    runs_ = std::clamp<int64_t>(std::max<int64_t>(4 * int64_t(w.threads), static_cast<int64_t>(by_products)), 1,
                                std::max<int64_t>(1, std::min(nx, kMaxRuns)));
    const Partition px = x_runs(nx, runs_);
    // Each run's products, then where each run's products start (prefix).
    ScratchArray<int64_t> run_start(static_cast<size_t>(runs_) + 1);
    int64_t* start = run_start.get();
    over_x_runs(w, px, [&](int64_t r, int64_t p0, int64_t p1) {
      int64_t t = 0;
      for (int64_t p = p0; p < p1; ++p) t += pos[x.idx[p] + 1] - pos[x.idx[p]];
      start[r + 1] = t;
    });
    start[0] = 0;
    for (int64_t r = 0; r < runs_; ++r) start[r + 1] += start[r];
    row_ = ScratchArray<I>(static_cast<size_t>(start[runs_]));
    prod_ = ScratchArray<V>(static_cast<size_t>(start[runs_]));
    seg_ = ScratchArray<int64_t>(static_cast<size_t>(runs_ * (k + 1)));
    I* out_row = row_.get();
    V* out_prod = prod_.get();
    over_x_runs(w, px, [&](int64_t r, int64_t p0, int64_t p1) {
      // One pass over the run's columns (their misses overlapped by the look-ahead below)
      // writes each product, its row and its chunk to this thread's staging arrays and counts
      // the chunks; a second, sequential pass over the staging arrays writes them to the
      // chunks' segments. seg[c + 1] counts chunk c's products, becomes where they start, and
      // (as the cursor) ends where they end: then chunk c's segment is [seg[c], seg[c + 1]).
      int64_t* seg = seg_.get() + r * (k + 1);
      std::fill(seg, seg + k + 1, int64_t{0});
      auto& ws = Scratch<I, V>::get();
      const int64_t n_run = start[r + 1] - start[r];
      ws.need_staging(n_run);
      I* srow = ws.stage_row.data();
      V* sprod = ws.stage_prod.data();
      uint32_t* schunk = ws.stage_chunk.data();
      int64_t t = 0;
      for (int64_t p = p0; p < p1; ++p) {
        if (p + 16 < p1) prefetch_line(pos + x.idx[p + 16]);
        if (p + kPushPrefetch < p1) {
          const int64_t at = pos[x.idx[p + kPushPrefetch]];
          prefetch_line(crd + at);
          prefetch_line(val + at);
        }
        const int64_t j = x.idx[p];
        const V xj = x.val[p];
        for (int64_t q = pos[j], e = pos[j + 1]; q < e; ++q, ++t) {
          const I i = crd[q];
          const int64_t c = chunk_of(i);
          ++seg[c + 1];
          srow[t] = i;
          sprod[t] = S::mul(val[q], xj);
          schunk[t] = static_cast<uint32_t>(c);
        }
      }
      seg[0] = start[r];
      for (int64_t c = 1; c <= k; ++c) seg[c] += seg[c - 1];
      for (int64_t c = k; c > 0; --c) seg[c] = seg[c - 1];  // seg[c + 1]: chunk c's start
      for (int64_t u = 0; u < t; ++u) {
        const int64_t at = seg[schunk[u] + 1]++;
        out_row[at] = srow[u];
        out_prod[at] = sprod[u];
      }
    });
  }
  // Adds chunk c's products into the accumulator in increasing j (push_runs::add_one; Dense:
  // the dense one); returns the new count of listed rows. Kept out of push_walk's serial loop.
  template <bool Dense> [[gnu::noinline]] int64_t add(int64_t c, V* acc, uint8_t* mark, I* list, int64_t cnt) const {
    const I* row = row_.get();
    const V* prod = prod_.get();
    for (int64_t r = 0; r < runs_; ++r) {
      const int64_t* seg = seg_.get() + r * (chunks_ + 1);
      for (int64_t q = seg[c], e = seg[c + 1]; q < e; ++q) push_runs::add_one<S, Dense>(row[q], prod[q], acc, mark, list, cnt);
    }
    return cnt;
  }

 private:
  static constexpr int64_t kBlocks = 16384;       // row blocks of the row -> chunk table
  static constexpr int64_t kRunProducts = 16384;  // products per run of x (~200 KB of A)
  static constexpr int64_t kMaxRuns = 4096;
  int64_t chunks_;
  int64_t runs_ = 1;
  ScratchArray<I> row_;
  ScratchArray<V> prod_;
  ScratchArray<int64_t> seg_;
};

// What the chunks of a split push read: their own row blocks of A's CSC copy (each chunk
// walks whole columns of its block: kernels/push_row_blocks.hpp), cuts of x's columns (each
// chunk walks all of x) or buckets of x's products (each chunk reads its own); none for one
// chunk, which walks whole columns. push_partition and push_split agree through
// push_buckets_pay; the caller gives blocks only for the partition they were cut by.
template <class S, class I, class V> struct PushSplit {
  const CsView<I, V>* blocks = nullptr;  // one per chunk
  std::optional<PushCuts<I, V>> cuts;
  std::optional<PushBuckets<S, I, V>> buckets;
};
template <class S, class I, class V>
PushSplit<S, I, V> push_split(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const Partition& part, Workers& w,
                              const CsView<I, V>* blocks = nullptr) {
  PushSplit<S, I, V> s;
  if (part.chunks() <= 1) return s;
  if (blocks) s.blocks = blocks;
  else if (push_buckets_pay(w, mean_column(Acsc))) s.buckets.emplace(Acsc, x, part, w);
  else s.cuts.emplace(Acsc, x, part, w);
  return s;
}

// Which accumulator a push uses (push_accumulate): chosen per chunk (kAuto), or forced by
// tests; kDense falls back to the sparse one where S's add has no exact identity.
enum class PushAccumulator { kAuto, kSparse, kDense };

// Whether chunk [r0, r1) of a push with nx stored entries of x uses the dense accumulator
// (push_accumulate): when the chunk's accumulators outgrow L1 (4096 rows of f64) and the
// expected products per row, nnz(A) nx / (n m), reach 1. Where the accumulators miss the
// cache, the first-touch test waits for the miss before its misprediction is found; in L1 the
// test is cheap, and predicted well on banded and mesh matrices. Measured with both forced
// (bench_push_accumulator, 58 matrices and 3 synthetic ones, x at 1%, 10% and 50%): on
// 4000-row and larger inputs at 1-30 products per row the dense one was 1.0-1.8x faster
// (luxembourg at 50%: 1.0 vs 0.56 ms; uniform 600k at 10%: 1.3x), under 1 product per row
// 0.16-0.99x; under 4000 rows 0.64-1.07x at x 10% and 0.85-1.18x at 50%, inputs changing
// sides between runs.
constexpr int64_t kDenseAccumulatorMinRows = 4096;
constexpr double kDenseAccumulatorProductsPerRow = 1.0;
// The rule on its numbers (explain reports it from the plan's statistics).
inline bool dense_accumulator_pays(double products_per_row, int64_t chunk_rows) {
  return chunk_rows >= kDenseAccumulatorMinRows && products_per_row >= kDenseAccumulatorProductsPerRow;
}
template <class I, class V> inline bool push_dense_accumulator(const CsView<I, V>& Acsc, int64_t nx, int64_t r0, int64_t r1) {
  const int64_t n = Acsc.outer, m = Acsc.inner;
  if (n == 0 || m == 0) return false;
  const double per_row = static_cast<double>(Acsc.pos[n] - Acsc.pos[0]) * static_cast<double>(nx) /
                         (static_cast<double>(n) * static_cast<double>(m));
  return dense_accumulator_pays(per_row, r1 - r0);
}

// push_accumulate's walk over x's columns into the accumulator (Dense: the dense one), over
// the output rows [r0, r1) only; returns the count of listed rows (0 when Dense). The whole
// columns where [r0, r1) is every row; else chunk c's part of each of x's columns (PushCuts)
// or its bucket of products (PushBuckets): a chunk with neither is a bug.
template <class S, bool Dense, class I, class V>
int64_t push_walk(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const PushSplit<S, I, V>* split, int64_t c,
                  int64_t r0, int64_t r1, Scratch<I, V>& ws) {
  const int64_t m = Acsc.inner;
  V* acc = ws.acc.data();
  uint8_t* mark = ws.mark.data();
  I* list = ws.list.data();
  int64_t cnt = 0;
  // A chunk with its own row block walks that block's whole columns.
  const bool own_block = split && split->blocks;
  const CsView<I, V>& src = own_block ? split->blocks[c] : Acsc;
  const int64_t* pos = src.pos;
  const I* crd = src.crd;
  const V* val = src.val;
  // Columns [b, e) that begin with four consecutive rows (mesh matrices) are walked with such
  // runs done four products at a time (kernels/push_runs_avx2.hpp), where S and V have that
  // form; the others one product at a time. The lambdas are forced inline: g++ has twice
  // compiled them out of line when this function grew, a call per column of x (1.5-1.7x
  // slower at one thread on x at 10% of a 600k-column A).
#ifdef SJ_PUSH_RUNS_AVAILABLE
  const bool runs = push_runs::kVectorised<S, V> && push_runs::available();
#endif
  auto column = [&](int64_t b, int64_t e, V xj) __attribute__((always_inline)) {
#ifdef SJ_PUSH_RUNS_AVAILABLE
    if constexpr (push_runs::kVectorised<S, V>) {
      if (runs && e - b >= 4 && crd[b + 3] - crd[b] == 3) {
        cnt = push_runs::column<S, Dense, I, V>(crd, val, b, e, xj, acc, mark, list, cnt);
        return;
      }
    }
#endif
    for (int64_t q = b; q < e; ++q) push_runs::add_one<S, Dense>(crd[q], S::mul(val[q], xj), acc, mark, list, cnt);
  };
  const int64_t nx = x.nnz;
  if ((r0 > 0 || r1 < m) && !own_block) {
    if (split && split->buckets) return split->buckets->template add<Dense>(c, acc, mark, list, cnt);
    if (!split || !split->cuts)
      fail(SJ_ERR_INTERNAL, "push: a chunk of rows [", r0, ", ", r1, ") of ", m, " has neither cuts nor buckets");
    const int64_t* lo = split->cuts->lo(c);
    const int64_t* hi = split->cuts->hi(c);
    for (int64_t p = 0; p < nx; ++p) {
      if (p + kPushPrefetch < nx) {
        prefetch_line(crd + lo[p + kPushPrefetch]);
        prefetch_line(val + lo[p + kPushPrefetch]);
      }
      column(lo[p], hi[p], x.val[p]);
    }
    return cnt;
  }
  // x's columns are scattered through A's CSC arrays: fetch the column bounds 16 entries of x
  // ahead and the column's first lines of rows and values 8 ahead, so that the misses of
  // several columns overlap (~1.5x on x at 10% of a 600k-column A, at 1 and 2 threads). The
  // prefetches are unconditional until the last 16 entries of x: the tests per entry of x
  // were a quarter of its own work (~30 instructions) on short columns.
  auto ahead = [&](int64_t p) __attribute__((always_inline)) {
    const int64_t at = pos[x.idx[p]];
    prefetch_line(crd + at);
    prefetch_line(val + at);
  };
  auto step = [&](int64_t p) __attribute__((always_inline)) {
    const int64_t j = x.idx[p];
    column(pos[j], pos[j + 1], x.val[p]);
  };
  int64_t p = 0;
  for (; p + 2 * kPushPrefetch < nx; ++p) {
    prefetch_line(pos + x.idx[p + 2 * kPushPrefetch]);
    ahead(p + kPushPrefetch);
    step(p);
  }
  for (; p < nx; ++p) {
    if (p + kPushPrefetch < nx) ahead(p + kPushPrefetch);
    step(p);
  }
  return cnt;
}

// Calls finish(list, count, acc, mark) with the touched rows (unsorted) whose acc holds y(i);
// finish must reset mark[i] for every listed i. With the dense accumulator (below) list is
// null and count -1: the touched rows are those of [r0, r1) with mark[i] set.
//
// The dense accumulator: where S's add has an exact identity (ExactIdentity: plus-times and
// plus-pair, or-and, integer min and max) and the call is expected to add several products
// into each row (push_dense_accumulator), acc[r0, r1) starts at the identity and every
// product is added and its row marked without testing for the row's first product; finish
// reads the touched rows back from the marks. The sparse accumulator's test mispredicts up
// to once per touched row where rows are touched in no pattern (luxembourg, x at 50%: 1.1 ms
// sparse, 0.72 ms dense). y is bit for bit the same.
template <class S, class I, class V, class Finish>
void push_accumulate(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const PushSplit<S, I, V>* split, int64_t c,
                     int64_t r0, int64_t r1, PushAccumulator how, Finish&& finish) {
  const int64_t m = Acsc.inner;
  auto& ws = Scratch<I, V>::get();
  ws.need(m, m);
  if constexpr (ExactIdentity<S>::exists) {
    if (how == PushAccumulator::kDense ||
        (how == PushAccumulator::kAuto && push_dense_accumulator(Acsc, x.nnz, r0, r1))) {
      std::fill(ws.acc.data() + r0, ws.acc.data() + r1, ExactIdentity<S>::value());
      push_walk<S, true>(Acsc, x, split, c, r0, r1, ws);
      finish(static_cast<I*>(nullptr), int64_t{-1}, ws.acc.data(), ws.mark.data());
      return;
    }
  }
  const int64_t cnt = push_walk<S, false>(Acsc, x, split, c, r0, r1, ws);
  finish(ws.list.data(), cnt, ws.acc.data(), ws.mark.data());
}

// The partition of push: output rows by A's nnz per row (`row_pos`: A's CSR positions).
// Expected products ~ nnz(A) * nx / n.
inline double push_expected_products(const int64_t* row_pos, int64_t m, int64_t nx, int64_t n) {
  return n > 0 ? static_cast<double>(row_pos[m]) * static_cast<double>(nx) / static_cast<double>(n) : 0;
}
constexpr const char* kPushSerialBasis = "serial: few products";
// Below two chunks' work the call stays serial, whatever the thread count.
inline bool push_serial(double expected, int64_t n, const Workers& w) {
  return w.threads <= 1 || n <= 0 ||
         expected < 2.0 * static_cast<double>(parallel_tuning().min_chunk_work.load(std::memory_order_relaxed));
}
inline Partition push_partition(const int64_t* row_pos, int64_t m, int64_t nx, int64_t n, Workers& w) {
  // Serial below two chunks' work (push_serial) or worth_parallel's threshold.
  const double expected = push_expected_products(row_pos, m, nx, n);
  if (push_serial(expected, n, w)) return partition_by_prefix(nullptr, m, w, kPushSerialBasis);
  if (!worth_parallel(w, static_cast<int64_t>(expected))) return partition_by_prefix(nullptr, m, w, w.basis);
  if (static_cast<PartitionMode>(parallel_tuning().mode.load(std::memory_order_relaxed)) == PartitionMode::StaticRows)
    return partition_by_prefix(row_pos, m, w, "A's nnz per output row");  // the ablation's equal rows
  if (push_buckets_pay(w, mean_column(row_pos[m] - row_pos[0], n))) {
    // Chunks of equal A nnz, several per thread as for the other kernels, but no more than the
    // expected products give work for: a chunk reads only its own bucket.
    const ParallelTuning& t = parallel_tuning();
    const int64_t per_chunk = std::max<int64_t>(1, t.min_chunk_work.load(std::memory_order_relaxed));
    const int64_t k = std::min<int64_t>(int64_t(w.threads) * t.chunks_per_thread.load(std::memory_order_relaxed),
                                        std::max<int64_t>(2, static_cast<int64_t>(expected) / per_chunk));
    w.basis = "A's nnz per output row, x's products bucketed by chunk";
    return partition_into(row_pos, m, k);
  }
  // Cuts: every chunk walks all of x's entries (a column's bounds, its first lines, the loop's
  // end), and every chunk boundary costs a search of each column, so one chunk per thread,
  // whatever the column lengths. On x at 10% of a 600k-column A (16 products per stored x) 2
  // threads took 6.2-8.1 ms with 2 chunks against 8.2-10.4 ms with 4 (the same process,
  // alternated, nine calls each); with 256 per column (40k columns) 2.1-2.5 ms with 2 chunks
  // against 3.3-3.7 ms with 8 (1 thread: 2.7-3.0).
  w.basis = "A's nnz per output row, a chunk per thread (each walks all of x)";
  return partition_into(row_pos, m, w.threads);
}

// The AVX2 sorting network (kernels/sort_network_avx2.hpp) for a touched list of n int32
// rows within [lo, hi]: its instructions, or 0 where it does not apply (wider indices, n over
// 256, no AVX2).
template <class I> inline int64_t touched_network_cost([[maybe_unused]] int64_t n, [[maybe_unused]] int64_t lo,
                                                       [[maybe_unused]] int64_t hi) {
#ifdef SJ_SORT_NETWORK_AVAILABLE
  if (n > 1 && sort_network::available()) return sort_network::cost<I>(n, lo, hi);
#endif
  return 0;
}
template <class I> inline void touched_network_sort([[maybe_unused]] I* list, [[maybe_unused]] int64_t n,
                                                    [[maybe_unused]] int64_t lo, [[maybe_unused]] int64_t hi) {
#ifdef SJ_SORT_NETWORK_AVAILABLE
  sort_network::sort(list, n, lo, hi);
#endif
}

// The sparse accumulator's touched rows are read back from the marks (scan_touched) when at
// least 1 in kScanTouchedShare of the chunk's rows was touched.
constexpr int64_t kScanTouchedShare = 4;
// scan_touched one row at a time (no AVX2, and the rows past the last block of 32).
template <class I, class V>
int64_t scan_touched_rows(uint8_t* __restrict mark, const V* __restrict acc, int64_t r0, int64_t r1,
                          I* __restrict oi, V* __restrict ov) {  // one row at a time
  int64_t k = 0;
  for (int64_t i = r0; i < r1; ++i)
    if (mark[i]) {
      mark[i] = 0;
      oi[k] = static_cast<I>(i);
      ov[k] = acc[i];
      ++k;
    }
  return k;
}
#ifdef SJ_SORT_NETWORK_AVAILABLE
namespace scan_detail {
// For each 4-bit mask n, the lanes of n's set bits moved to the front: as 32-bit lane pairs for
// 8-byte elements (vpermps) and as bytes for 4-byte elements (pshufb).
struct Compress4 {
  alignas(32) int32_t wide[16][8];
  alignas(16) uint8_t narrow[16][16];
};
constexpr Compress4 make_compress4() {
  Compress4 t{};
  for (int n = 0; n < 16; ++n) {
    int k = 0;
    for (int s = 0; s < 4; ++s) {
      if (!((n >> s) & 1)) continue;
      t.wide[n][2 * k] = 2 * s;
      t.wide[n][2 * k + 1] = 2 * s + 1;
      for (int b = 0; b < 4; ++b) t.narrow[n][4 * k + b] = static_cast<uint8_t>(4 * s + b);
      ++k;
    }
  }
  return t;
}
inline constexpr Compress4 kCompress4 = make_compress4();

// Rows at .. at+3 whose bit is set in n, and their accumulators, stored from oi / ov (room for
// four each); returns how many.
template <class I, class V>
[[gnu::target("avx2,popcnt"), gnu::always_inline]] inline int64_t compress4(const V* acc, int64_t at, unsigned n, I* oi,
                                                                            V* ov) {
  if constexpr (sizeof(I) == 4) {
    const __m128i rows = _mm_add_epi32(_mm_set1_epi32(static_cast<int32_t>(at)), _mm_setr_epi32(0, 1, 2, 3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(oi),
                     _mm_shuffle_epi8(rows, _mm_load_si128(reinterpret_cast<const __m128i*>(kCompress4.narrow[n]))));
  } else {
    const __m256i rows = _mm256_add_epi64(_mm256_set1_epi64x(at), _mm256_setr_epi64x(0, 1, 2, 3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(oi),
                        _mm256_permutevar8x32_epi32(rows, _mm256_load_si256(reinterpret_cast<const __m256i*>(kCompress4.wide[n]))));
  }
  if constexpr (sizeof(V) == 8) {
    const __m256i vals = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + at));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ov),
                        _mm256_permutevar8x32_epi32(vals, _mm256_load_si256(reinterpret_cast<const __m256i*>(kCompress4.wide[n]))));
  } else {
    const __m128i vals = _mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + at));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(ov),
                     _mm_shuffle_epi8(vals, _mm_load_si128(reinterpret_cast<const __m128i*>(kCompress4.narrow[n]))));
  }
  return __builtin_popcount(n);
}
}  // namespace scan_detail

// Blocks of 32 rows with at least this many touched are moved four rows at a time by a table
// of lane orders (scan_detail::compress4), sparser blocks one touched row at a time. Against
// the row-at-a-time loop alone (into the caller's buffers, one thread, 9 alternated runs):
// x at 10% 1.02-1.38x (dwt_992 4.28 -> 3.20 us), x at 50% 1.03-1.38x; 8 against 14 was
// 1.04-1.08x faster at 10% and within 0.96-1.0x at 50%, 3 against 8 within 0.94-1.02x.
// The per-row loop's exit mispredicts once per block, the table's loop never.
constexpr int kScanCompressMinTouched = 8;

// Touched rows of [r0, r1) in increasing order, read from their byte marks 32 at a time (AVX2),
// for calls that touch a good part of their rows: no sort, and no bitmap to set per entry and
// decode (bcsstk16, x at 10%, 4780 of 4884 rows touched: 625k -> 593k instructions a call).
// Clears the marks; returns the count. oi / ov have room for cap entries (at least the count):
// a block moved four rows at a time may write up to three lanes past its last entry.
template <class I, class V>
[[gnu::target("avx2,bmi,popcnt")]] int64_t scan_touched(uint8_t* __restrict mark, const V* __restrict acc, int64_t r0,
                                                        int64_t r1, I* __restrict oi, V* __restrict ov, int64_t cap) {
  constexpr bool kCompress = (sizeof(I) == 4 || sizeof(I) == 8) && (sizeof(V) == 4 || sizeof(V) == 8);
  int64_t k = 0, i = r0;
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 32 <= r1; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(mark + i));
    uint32_t bits = ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, zero)));
    if (!bits) continue;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(mark + i), zero);
    if constexpr (kCompress) {
      // Every store of the block writes four lanes at most 28 past k.
      if (__builtin_popcount(bits) >= kScanCompressMinTouched && k + 32 <= cap) {
        for (int g = 0; g < 32; g += 4) k += scan_detail::compress4<I, V>(acc, i + g, (bits >> g) & 15, oi + k, ov + k);
        continue;
      }
    }
    do {
      const int64_t r = i + __builtin_ctz(bits);
      oi[k] = static_cast<I>(r);
      ov[k] = acc[r];
      ++k;
      bits &= bits - 1;
    } while (bits);
  }
  return k + scan_touched_rows(mark, acc, i, r1, oi + k, ov + k);
}
#endif

// scan_touched, AVX2 or not.
template <class I, class V>
int64_t scan_touched_any(uint8_t* mark, const V* acc, int64_t r0, int64_t r1, I* oi, V* ov, int64_t cap) {
#ifdef SJ_SORT_NETWORK_AVAILABLE
  if (sort_network::available()) return scan_touched(mark, acc, r0, r1, oi, ov, cap);
#endif
  return scan_touched_rows(mark, acc, r0, r1, oi, ov);
}

// The set marks of [r0, r1): the dense accumulator's touched rows, counted before they are
// written. Marks are 0 or 1, so eight of them summed by one multiply: ~0.5 instructions a row.
inline int64_t count_marks(const uint8_t* mark, int64_t r0, int64_t r1) {
  int64_t k = 0, i = r0;
  for (; i + 8 <= r1; i += 8) {
    uint64_t word;
    std::memcpy(&word, mark + i, 8);
    k += static_cast<int64_t>((word * 0x0101010101010101ull) >> 56);
  }
  for (; i < r1; ++i) k += mark[i];
  return k;
}

// Chunk `chunk` of a sparse y: its rows [r0, r1) with a product, in increasing order, written to
// where place(count) says (a pair of index and value pointers with room for count entries),
// once the count is known; returns the count. The touched rows are ordered the cheapest way
// (below). place may throw (a result it allocates): the marks are cleared first, so the
// thread's workspace stays ready for its next call.
template <class S, class I, class V, class Place>
int64_t push_chunk_sparse_placed(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const PushSplit<S, I, V>* split,
                                 int64_t chunk, int64_t r0, int64_t r1, Place&& place,
                                 PushAccumulator how = PushAccumulator::kAuto) {
  int64_t written = 0;
  push_accumulate<S>(Acsc, x, split, chunk, r0, r1, how, [&](I* list, int64_t cnt, V* acc, uint8_t* mark) {
    // Touched rows in increasing order: read back from the marks when a good part of the
    // chunk's rows was touched (AVX2), or with the dense accumulator, which has only the
    // marks; else a sorting network (up to 256 int32 rows on AVX2, no branch on the data), a
    // comparison sort (~3 units per entry and level, and about a misprediction per entry), or
    // a bitmap of the chunk's rows: set a bit per entry, then read the words over [r0, r1)
    // and decode each set bit (~2 units per entry + 1 per word). Scanning the marks of every
    // row one by one cost ~0.5 ns per row: 0.1 ms per call at m = 200k. The network is
    // weighed against the bitmap in instructions, as the SpGEMM rows do
    // (kernels/spgemm_gustavson_impl.hpp: ~3 per entry + ~37 per word).
    enum class Order { kScan, kNetwork, kSort, kBitmap } order = Order::kScan;
    if (!list) {
      cnt = count_marks(mark, r0, r1);
    } else {
      bool scan = false;
#ifdef SJ_SORT_NETWORK_AVAILABLE
      scan = cnt * kScanTouchedShare >= r1 - r0 && sort_network::available();
#endif
      if (!scan) {
        const int64_t span_words = ((r1 - 1) >> 6) - (r0 >> 6) + 1;
        double lg = 1;
        for (int64_t c = cnt; c > 1; c >>= 1) lg += 1;
        const int64_t net = touched_network_cost<I>(cnt, r0, r1 - 1);
        order = net != 0 && net <= 3 * cnt + 37 * span_words ? Order::kNetwork
                : static_cast<double>(cnt) * lg * 3.0 < 2.0 * static_cast<double>(cnt) + static_cast<double>(span_words)
                    ? Order::kSort
                    : Order::kBitmap;
      }
    }
    I* oi;
    V* ov;
    uint64_t* bits = nullptr;
    try {
      if (order == Order::kBitmap) bits = Scratch<I, V>::get().need_bits(r1);
      std::tie(oi, ov) = place(cnt);
    } catch (...) {
      std::fill(mark + r0, mark + r1, uint8_t{0});
      throw;
    }
    if (order == Order::kScan) {
      written = scan_touched_any(mark, acc, r0, r1, oi, ov, cnt);
      return;
    }
    if (order != Order::kBitmap) {
      if (order == Order::kNetwork) touched_network_sort(list, cnt, r0, r1 - 1);
      else std::sort(list, list + cnt);
      for (int64_t k = 0; k < cnt; ++k) {
        const I i = list[k];
        oi[k] = i;
        ov[k] = acc[i];
        mark[i] = 0;
      }
    } else {
      for (int64_t k = 0; k < cnt; ++k) {
        const I i = list[k];
        bits[i >> 6] |= uint64_t(1) << (i & 63);
        mark[i] = 0;
      }
      int64_t k = 0;
      for (int64_t wi = r0 >> 6, we = (r1 - 1) >> 6; wi <= we && k < cnt; ++wi) {
        uint64_t word = bits[wi];
        if (!word) continue;
        bits[wi] = 0;
        do {
          const I i = static_cast<I>((wi << 6) + __builtin_ctzll(word));
          oi[k] = i;
          ov[k] = acc[i];
          ++k;
          word &= word - 1;
        } while (word);
      }
    }
    written = cnt;
  });
  return written;
}

// The same into oi/ov, with room for r1 - r0 entries.
template <class S, class I, class V>
int64_t push_chunk_sparse(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const PushSplit<S, I, V>* split, int64_t chunk,
                          int64_t r0, int64_t r1, I* oi, V* ov, PushAccumulator how = PushAccumulator::kAuto) {
  return push_chunk_sparse_placed<S, I, V>(Acsc, x, split, chunk, r0, r1, [&](int64_t) { return std::pair{oi, ov}; },
                                           how);
}

// Sparse y: sorted indices, written into the sink (capacity m) chunk by chunk. `blocks`: one
// row block of A's CSC copy per chunk of `part` (kernels/push_row_blocks.hpp), or null.
template <class S, class I, class V>
void push_sparse(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const Partition& part, Workers& w,
                 RowSink<I, V>& sink, PushAccumulator how = PushAccumulator::kAuto,
                 const CsView<I, V>* blocks = nullptr) {
  const PushSplit<S, I, V> split = push_split<S>(Acsc, x, part, w, blocks);
  run_sink_chunks(w, part, sink, [&](int64_t c, int64_t r0, int64_t r1) {
    return push_chunk_sparse<S>(Acsc, x, &split, c, r0, r1, sink.idx + r0, sink.val + r0, how);
  });
}

// Chunk `chunk` of a dense y: y[r0, r1), zero() where no product formed. y is written only
// once the products are summed (its workspace sized), so a chunk that fails writes nothing.
template <class S, class I, class V>
void push_chunk_dense(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, const PushSplit<S, I, V>* split, int64_t chunk,
                      int64_t r0, int64_t r1, V* y, PushAccumulator how = PushAccumulator::kAuto) {
  push_accumulate<S>(Acsc, x, split, chunk, r0, r1, how, [&](I* list, int64_t cnt, V* acc, uint8_t* mark) {
    if (!list) {  // the dense accumulator
      for (int64_t i = r0; i < r1; ++i) {
        y[i] = mark[i] ? acc[i] : S::zero();
        mark[i] = 0;
      }
      return;
    }
    std::fill(y + r0, y + r1, S::zero());
    for (int64_t k = 0; k < cnt; ++k) {
      const I i = list[k];
      y[i] = acc[i];
      mark[i] = 0;
    }
  });
}

// Dense y (length m): zero() where no product formed. `blocks` as for push_sparse.
template <class S, class I, class V>
void push_dense(const CsView<I, V>& Acsc, const SpVecView<I, V>& x, V* y, const Partition& part, Workers& w,
                PushAccumulator how = PushAccumulator::kAuto, const CsView<I, V>* blocks = nullptr) {
  const PushSplit<S, I, V> split = push_split<S>(Acsc, x, part, w, blocks);
  w.run_indexed(part, [&](int64_t c, int64_t r0, int64_t r1) {
    push_chunk_dense<S>(Acsc, x, &split, c, r0, r1, y, how);
  });
}

// ---- row-wise kernels over A in CSR ----
// Runs row(i, &v) -> bool (true when some product formed) for every row of A, in chunks
// split by A's nnz per row, and writes the results into the sink.
template <class S, class V, class I, class Row>
void for_rows(const CsView<I, V>& A, RowSink<I, V>& sink, Workers& w, Row&& row) {
  const Partition part = partition_by_prefix(A.pos, A.outer, w, "A's nnz per row");
  if (sink.dense) {
    w.run(part, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        V v;
        sink.dense[i] = row(i, v) ? v : S::zero();
      }
    });
    return;
  }
  run_sink_chunks(w, part, sink, [&](int64_t, int64_t r0, int64_t r1) {
    I* idx = sink.idx + r0;
    V* val = sink.val + r0;
    int64_t c = 0;
    for (int64_t i = r0; i < r1; ++i) {
      V v;
      if (row(i, v)) {
        idx[c] = static_cast<I>(i);
        val[c] = v;
        ++c;
      }
    }
    return c;
  });
}

// densify: gather from x scattered into a dense array + byte map (n = A.inner).
template <class S, class I, class V>
void densify(const CsView<I, V>& A, const SpVecView<I, V>& x, RowSink<I, V>& sink, Workers& w) {
  auto& ws = Scratch<I, V>::get();
  ws.need(A.inner, 0);
  V* xv = ws.acc.data();
  uint8_t* has = ws.mark.data();
  for (int64_t p = 0; p < x.nnz; ++p) {
    xv[x.idx[p]] = x.val[p];
    has[x.idx[p]] = 1;
  }
  const int64_t* pos = A.pos;
  const I* crd = A.crd;
  const V* val = A.val;
  // Rows entirely outside [xlo, xhi] form no product. (xv/has are this thread's; the
  // chunks on other threads only read them, before this call resets has.)
  const I xlo = x.nnz ? x.idx[0] : I(0), xhi = x.nnz ? x.idx[x.nnz - 1] : I(-1);
  for_rows<S, V>(A, sink, w, [&](int64_t i, V& out) {
    int64_t p = pos[i];
    const int64_t e = pos[i + 1];
    if (p == e || crd[e - 1] < xlo || crd[p] > xhi) return false;
    for (; p < e; ++p)
      if (has[crd[p]]) break;
    if (p == e) return false;
    V acc = S::mul(val[p], xv[crd[p]]);
    for (++p; p < e; ++p) {
      const I j = crd[p];
      if (has[j]) acc = S::add(acc, S::mul(val[p], xv[j]));
    }
    out = acc;
    return true;
  });
  for (int64_t p = 0; p < x.nnz; ++p) has[x.idx[p]] = 0;
}

// First position q in [lo, hi) with a[q] >= key, galloping from lo.
template <class I> inline int64_t gallop(const I* a, int64_t lo, int64_t hi, I key) {
  if (lo >= hi || a[lo] >= key) return lo;
  int64_t step = 1, prev = lo;
  int64_t cur = lo + 1;
  while (cur < hi && a[cur] < key) {
    prev = cur;
    step <<= 1;
    cur = prev + step;
  }
  if (cur > hi) cur = hi;
  // a[prev] < key; answer in (prev, cur]
  return std::lower_bound(a + prev + 1, a + cur, key) - a;
}

// search: the shorter side leads, the longer one is galloped through.
template <class S, class I, class V>
void search(const CsView<I, V>& A, const SpVecView<I, V>& x, RowSink<I, V>& sink, Workers& w) {
  const int64_t* pos = A.pos;
  const I* crd = A.crd;
  const V* val = A.val;
  const I* xi = x.idx;
  const V* xv = x.val;
  const int64_t nx = x.nnz;
  const I xlo = nx ? xi[0] : I(0), xhi = nx ? xi[nx - 1] : I(-1);
  for_rows<S, V>(A, sink, w, [&](int64_t i, V& out) {
    int64_t p = pos[i];
    const int64_t e = pos[i + 1];
    if (p == e || crd[e - 1] < xlo || crd[p] > xhi) return false;
    bool any = false;
    V acc{};
    auto take = [&](int64_t pa, int64_t px) {
      const V prod = S::mul(val[pa], xv[px]);
      acc = any ? S::add(acc, prod) : prod;
      any = true;
    };
    int64_t q = 0;
    if (e - p <= nx) {
      for (; p < e && q < nx; ++p) {
        q = gallop(xi, q, nx, crd[p]);
        if (q < nx && xi[q] == crd[p]) take(p, q++);
      }
    } else {
      q = gallop(xi, int64_t(0), nx, crd[p]);
      for (; q < nx && p < e; ++q) {
        p = gallop(crd, p, e, xi[q]);
        if (p < e && crd[p] == xi[q]) take(p++, q);
      }
    }
    if (any) out = acc;
    return any;
  });
}

// inner: plain two-finger merge of each row with x.
template <class S, class I, class V>
void inner(const CsView<I, V>& A, const SpVecView<I, V>& x, RowSink<I, V>& sink, Workers& w) {
  const int64_t* pos = A.pos;
  const I* crd = A.crd;
  const V* val = A.val;
  const I* xi = x.idx;
  const V* xv = x.val;
  const int64_t nx = x.nnz;
  for_rows<S, V>(A, sink, w, [&](int64_t i, V& out) {
    int64_t p = pos[i], q = 0;
    const int64_t e = pos[i + 1];
    bool any = false;
    V acc{};
    while (p < e && q < nx) {
      const I a = crd[p], b = xi[q];
      if (a < b) {
        ++p;
      } else if (b < a) {
        ++q;
      } else {
        const V prod = S::mul(val[p], xv[q]);
        acc = any ? S::add(acc, prod) : prod;
        any = true;
        ++p;
        ++q;
      }
    }
    if (any) out = acc;
    return any;
  });
}

// Row-wise SpMV with dense x (every y(i) written; zero() for an empty row): the gather half
// of densify, x being dense already. An x larger than L2 is read by AVX-512 gathers where the
// CPU has them (kernels/spmv_gather_avx512.hpp; the same bits).
template <class S, class I, class V>
void spmv_rows(const CsView<I, V>& A, const V* __restrict x, V* __restrict y, Workers& w) {
  const int64_t* pos = A.pos;
  const I* crd = A.crd;
  const V* val = A.val;
  const bool gather = spmv_gather_avx512::chosen<S, I, V>(A.inner);
  w.run(partition_by_prefix(A.pos, A.outer, w, "A's nnz per row"), [&](int64_t r0, int64_t r1) {
  if constexpr (spmv_gather_avx512::supports<S, I, V>) {
    if (gather) return spmv_gather_avx512::rows<S, I, V>(pos, crd, val, x, y, r0, r1);  // x beyond L2
  }
  for (int64_t i = r0; i < r1; ++i) {
    const int64_t b = pos[i], e = pos[i + 1];
    if (b == e) {
      y[i] = S::zero();
      continue;
    }
    V acc = S::mul(val[b], x[crd[b]]);
    for (int64_t p = b + 1; p < e; ++p) acc = S::add(acc, S::mul(val[p], x[crd[p]]));
    y[i] = acc;
  }
  });
}

}  // namespace sj::spmspv

// Sparse outputs built by many threads without atomics or locks on the output: each chunk of
// rows (src/work_partition.hpp) writes its rows back to back, and the chunks are joined in
// row order by a prefix sum. Two ways:
//
//   assemble_by_pieces   one pass: each chunk writes its rows into the result at their per-row
//                        upper bound's offset; the chunks are moved down over the gaps in row
//                        order, each once the chunks before it are done (while later chunks
//                        are still filling), and those left when all are filled by all the
//                        threads together (or copied to an exact-size result in parallel).
//                        One chunk writes straight in. assemble_by_chunk_bounds is the
//                        same given the bounds at the chunks' first rows only.
//   assemble_two_pass    symbolic counts per row -> prefix sum -> numeric fill at the final
//                        positions; for outputs whose upper bound would be too large.
//   assemble_serial      the one-chunk case, for a serial caller that knows only the total bound.
//   assemble_vector_pieces   the pieces way for a sparse vector (at most one entry per row).
//
// Rows are computed by the caller's functions exactly as in a serial loop, so the result does
// not depend on the partition.
#pragma once
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <absl/container/inlined_vector.h>

#include "src/block_pool.hpp"
#include "src/tensor.hpp"
#include "src/work_partition.hpp"

namespace sj {

// The per-chunk pieces of a parallel sparse vector: carved out of one scratch array per kind
// (taken by the calling thread from the pool, src/block_pool.hpp), each piece starting on its
// own cache line. Pieces malloc'd and freed by each chunk went back to the top of the heap,
// were trimmed, and faulted in again on the next call (~15 us a page here; the same for
// matrix pieces made a 2-thread B o A^T of 29k entries 0.61 ms against 0.047 ms on one).
template <class I, class V> class Pieces {
 public:
  template <class Capacity> Pieces(int64_t k, Capacity&& capacity) : at_(static_cast<size_t>(k) + 1, 0) {
    constexpr int64_t kLine = 16;  // entries: 64 bytes of int32, 128 of double
    for (int64_t c = 0; c < k; ++c)
      at_[c + 1] = at_[c] + (std::max<int64_t>(0, capacity(c)) + kLine - 1) / kLine * kLine;
    crd_ = ScratchArray<I>(static_cast<size_t>(at_[k]));
    val_ = ScratchArray<V>(static_cast<size_t>(at_[k]));
  }
  I* crd(int64_t c) const { return crd_.get() + at_[c]; }
  V* val(int64_t c) const { return val_.get() + at_[c]; }

 private:
  std::vector<int64_t> at_;
  ScratchArray<I> crd_;
  ScratchArray<V> val_;
};

// One chunk: fill writes straight into result arrays sized by the total bound (the serial
// case of assemble_by_pieces; a serial caller that knows only the total calls it directly).
template <class I, class V, class Fill>
Tensor assemble_serial(int64_t rows, int64_t cols, int64_t bound, int64_t slack, const Allocator& alloc, ValueType vt,
                       bool shrink, Fill&& fill) {
  const IndexType it = index_type_of<I>();
  Tensor C = make_compressed_matrix(alloc, true, rows, cols, bound + slack, it, vt);
  int64_t* pos = C.levels[1].pos.template as_mut<int64_t>();
  pos[0] = 0;
  const int64_t nnz =
      rows > 0 ? fill(int64_t(0), rows, C.levels[1].crd.template as_mut<I>(), C.values.template as_mut<V>(), pos + 1)
               : 0;
  if (!shrink || nnz * 2 >= bound || bound < 1024) return C;
  return shrink_compressed_matrix(C, nnz, alloc);
}

// Entries a join copies with all threads; fewer are copied by the calling thread.
inline constexpr int64_t kParallelCopyMin = int64_t(1) << 16;

// fill(r0, r1, I* oc, V* ov, int64_t* ends) writes rows [r0, r1) back to back from oc/ov,
// sets ends[r] (absolute row r) to the end of row r relative to oc, and returns the count.
// chunk_bound: p.chunks() + 1 entries, a prefix sum of upper bounds at each chunk's first row
// and at the end (any base); `slack` entries of room past each chunk's bound that fill may
// scribble on. `shrink`: a result under half its capacity is copied to exact size (its
// coordinates and values; positions of their own are kept, shrink_compressed_matrix).
template <class I, class V, class Fill>
Tensor assemble_by_chunk_bounds(Workers& w, const Partition& p, int64_t rows, int64_t cols, const int64_t* chunk_bound,
                                int64_t slack, const Allocator& alloc, ValueType vt, bool shrink, Fill&& fill) {
  const IndexType it = index_type_of<I>();
  const int64_t k = p.chunks();
  const int64_t base = chunk_bound[0];
  if (k <= 1)
    return assemble_serial<I, V>(rows, cols, chunk_bound[k] - base, slack, alloc, vt, shrink, std::forward<Fill>(fill));
  // Every chunk writes straight into the result, at its rows' bound offset (the result is
  // sized by the total bound, as a serial call's is); the chunks are then moved down over the
  // gaps, in order. A tight bound (B o A^T on a symmetric pattern) moves nothing; pieces
  // copied into an exact-size result cost a second pass over the output on every call.
  const int64_t capacity = chunk_bound[k] - base + k * slack;
  Tensor C = make_compressed_matrix(alloc, true, rows, cols, capacity, it, vt);
  int64_t* pos = C.levels[1].pos.template as_mut<int64_t>();
  I* crd = C.levels[1].crd.template as_mut<I>();
  V* val = C.values.template as_mut<V>();
  pos[0] = 0;
  auto start = [&](int64_t c) { return chunk_bound[c] - base + c * slack; };
  // While chunks are still being filled, each is moved down to its final place (and its rows'
  // ends made absolute) as soon as every earlier chunk is done, by the thread that completes
  // that prefix, one chunk at a time in order: the moves overlap the later chunks' fills, where
  // after all of them they ran on one thread (4-5 ms of a 42 ms 2-thread SpGEMM of 8.6M
  // entries). Chunk c's destination lies below start(c + 1), where no later chunk writes, and
  // overlaps only the sources of earlier chunks, already moved. Once every chunk is filled, the
  // chunks not yet moved are left to the threads together (below): one thread moving them all
  // was the floor of many-thread calls whose fill is cheap next to the output (A+B of 19M
  // entries: ~10 ms of memmove, 25 ms at 16 threads).
  std::vector<int64_t> at(static_cast<size_t>(k) + 1, -1);  // at[c + 1]: entries of finished chunk c
  at[0] = 0;
  std::mutex mutex;
  int64_t next = 0, nnz = 0, filled = 0;  // the next chunk to move, where it goes; chunks filled
  bool moving = false;                    // a thread is moving chunks (then the others only record theirs)
  auto fix_ends = [&](int64_t c, int64_t offset) {
    if (offset)
      for (int64_t r = p.begin(c); r < p.end(c); ++r) pos[r + 1] += offset;
  };
  auto move_down = [&](int64_t c, int64_t n) {
    const int64_t from = start(c);
    if (from != nnz && n > 0) {
      std::memmove(crd + nnz, crd + from, sizeof(I) * static_cast<size_t>(n));
      std::memmove(val + nnz, val + from, sizeof(V) * static_cast<size_t>(n));
    }
    fix_ends(c, nnz);
    nnz += n;
  };
  w.run_indexed(p, [&](int64_t c, int64_t b, int64_t e) {  // rows' ends relative to the chunk
    const int64_t n = fill(b, e, crd + start(c), val + start(c), pos + 1);
    std::unique_lock lock(mutex);
    at[c + 1] = n;
    ++filled;
    if (moving) return;
    moving = true;
    while (next < k && at[next + 1] >= 0 && filled < k) {
      const int64_t m = next, entries = at[m + 1];
      lock.unlock();
      move_down(m, entries);
      lock.lock();
      ++next;
    }
    moving = false;
  });
  // Chunks [0, next) are in place; the others still at start(c). at[c]: where chunk c goes.
  for (int64_t c = 0; c < k; ++c) at[c + 1] += at[c];
  const int64_t total = at[k];
  auto source = [&](int64_t c) { return c < next ? at[c] : start(c); };
  // A parallel loop over the chunks for copies of many entries; a plain one for a few (waking
  // the threads costs microseconds).
  auto over_chunks = [&](int64_t entries, auto&& body) {
    if (entries >= kParallelCopyMin) w.run_indexed(p, body);
    else
      for (int64_t c = 0; c < k; ++c) body(c, p.begin(c), p.end(c));
  };
  if (shrink && total * 2 < capacity && capacity >= 1024) {
    // Each chunk is copied from where it lies to its place in the exact-size result, in
    // parallel: no chunk has to be moved down first.
    Tensor E = make_compressed_matrix(alloc, true, rows, cols, total, it, vt);
    int64_t* epos = E.levels[1].pos.template as_mut<int64_t>();
    I* ecrd = E.levels[1].crd.template as_mut<I>();
    V* eval = E.values.template as_mut<V>();
    epos[0] = 0;
    over_chunks(total, [&](int64_t c, int64_t b, int64_t e) {
      const int64_t from = source(c), to = at[c], n = at[c + 1] - to;
      if (n > 0) {
        std::memcpy(ecrd + to, crd + from, sizeof(I) * static_cast<size_t>(n));
        std::memcpy(eval + to, val + from, sizeof(V) * static_cast<size_t>(n));
      }
      const int64_t offset = c < next ? 0 : to;  // moved chunks' ends are absolute already
      for (int64_t r = b; r < e; ++r) epos[r + 1] = pos[r + 1] + offset;
    });
    return E;
  }
  // The chunks not yet moved, by all threads: chunk c's entries that land below its source
  // (its head: the first min(n, start(c) - at[c])) overlap earlier chunks' sources, so they are
  // first copied aside; the rest move down within the chunk's own source, which no other chunk
  // reads or writes. Once all have done so, the heads are written to their places. Worth it
  // when the heads are few (a tight bound: A+B, B o A^T); a loose one (SpGEMM's multiply
  // counts) would copy most of the output aside, so those chunks move in order on this thread.
  if (next == k) return C;
  std::vector<int64_t> head(static_cast<size_t>(k) + 1, 0);
  for (int64_t c = 0; c < k; ++c)
    head[c + 1] = head[c] + (c < next ? 0 : std::min(at[c + 1] - at[c], start(c) - at[c]));
  const int64_t unmoved = total - at[next];
  if (head[k] * 8 > unmoved || unmoved < kParallelCopyMin) {
    for (int64_t c = next; c < k; ++c) move_down(c, at[c + 1] - at[c]);
    return C;
  }
  ScratchArray<I> head_crd;
  ScratchArray<V> head_val;
  if (head[k] > 0) {
    head_crd = ScratchArray<I>(static_cast<size_t>(head[k]));
    head_val = ScratchArray<V>(static_cast<size_t>(head[k]));
  }
  over_chunks(unmoved, [&](int64_t c, int64_t, int64_t) {
    if (c < next) return;
    const int64_t from = start(c), to = at[c], n = at[c + 1] - to, h = head[c + 1] - head[c];
    if (h > 0) {
      std::memcpy(head_crd.get() + head[c], crd + from, sizeof(I) * static_cast<size_t>(h));
      std::memcpy(head_val.get() + head[c], val + from, sizeof(V) * static_cast<size_t>(h));
    }
    if (n > h && h > 0) {  // entries [h, n) go to [to + h, to + n) = [from, from + n - h)
      std::memmove(crd + from, crd + from + h, sizeof(I) * static_cast<size_t>(n - h));
      std::memmove(val + from, val + from + h, sizeof(V) * static_cast<size_t>(n - h));
    }
    fix_ends(c, to);
  });
  for (int64_t c = next; c < k; ++c) {  // at most an eighth of the entries
    const int64_t h = head[c + 1] - head[c];
    if (h == 0) continue;
    std::memcpy(crd + at[c], head_crd.get() + head[c], sizeof(I) * static_cast<size_t>(h));
    std::memcpy(val + at[c], head_val.get() + head[c], sizeof(V) * static_cast<size_t>(h));
  }
  return C;
}

// The same with bound_prefix: rows + 1 entries, a prefix sum of per-row upper bounds.
template <class I, class V, class Fill>
Tensor assemble_by_pieces(Workers& w, const Partition& p, int64_t rows, int64_t cols, const int64_t* bound_prefix,
                          int64_t slack, const Allocator& alloc, ValueType vt, bool shrink, Fill&& fill) {
  absl::InlinedVector<int64_t, 33> chunk_bound(static_cast<size_t>(p.chunks()) + 1);
  for (int64_t c = 0; c < p.chunks(); ++c) chunk_bound[static_cast<size_t>(c)] = bound_prefix[p.begin(c)];
  chunk_bound.back() = bound_prefix[rows];
  return assemble_by_chunk_bounds<I, V>(w, p, rows, cols, chunk_bound.data(), slack, alloc, vt, shrink,
                                        std::forward<Fill>(fill));
}

// count(r0, r1, int64_t* counts) sets counts[r] to the length of row r, for r in [r0, r1);
// fill(r0, r1, I* crd, V* val, const int64_t* pos) writes row r at pos[r].
template <class I, class V, class Count, class Fill>
Tensor assemble_two_pass(Workers& w, const Partition& p, int64_t rows, int64_t cols, int64_t slack,
                         const Allocator& alloc, ValueType vt, Count&& count, Fill&& fill) {
  // The counts from the pool, not the heap (see partition_rows, src/work_partition.hpp).
  ScratchArray<int64_t> counts(static_cast<size_t>(rows) + 1);
  int64_t* const pos = counts.get();
  std::fill(pos, pos + rows + 1, int64_t(0));
  w.run(p, [&](int64_t b, int64_t e) { count(b, e, pos + 1); });
  for (int64_t r = 0; r < rows; ++r) pos[r + 1] += pos[r];
  Tensor C = make_compressed_matrix(alloc, true, rows, cols, pos[rows] + slack, index_type_of<I>(), vt);
  int64_t* cp = C.levels[1].pos.template as_mut<int64_t>();
  std::memcpy(cp, pos, sizeof(int64_t) * static_cast<size_t>(rows + 1));
  I* crd = C.levels[1].crd.template as_mut<I>();
  V* val = C.values.template as_mut<V>();
  w.run(p, [&](int64_t b, int64_t e) { fill(b, e, crd, val, cp); });
  return C;
}

// fill(r0, r1, I* oi, V* ov) writes the stored entries of rows [r0, r1) in increasing index
// order (at most r1 - r0 of them) and returns their count. A serial call fills `scratch`
// (capacity n) and copies it at exact size.
template <class I, class V, class Fill>
Tensor assemble_vector_pieces(Workers& w, const Partition& p, int64_t n, const Allocator& alloc, ValueType vt,
                              I* scratch_idx, V* scratch_val, Fill&& fill) {
  const IndexType it = index_type_of<I>();
  const int64_t k = p.chunks();
  std::vector<int64_t> off(static_cast<size_t>(k) + 1, 0);
  if (k <= 1) {
    const int64_t cnt = n > 0 ? fill(int64_t(0), n, scratch_idx, scratch_val) : 0;
    Tensor y;
    init_sparse_vector_copy(y, alloc, n, cnt, scratch_idx, scratch_val, vt);
    return y;
  }
  Pieces<I, V> pieces(k, [&](int64_t c) { return p.end(c) - p.begin(c); });
  w.run_indexed(p, [&](int64_t c, int64_t b, int64_t e) { off[c + 1] = fill(b, e, pieces.crd(c), pieces.val(c)); });
  for (int64_t c = 0; c < k; ++c) off[c + 1] += off[c];
  Tensor y = make_sparse_vector(alloc, n, off[k], it, vt);
  I* yi = y.levels[0].crd.template as_mut<I>();
  V* yv = y.values.template as_mut<V>();
  for (int64_t c = 0; c < k; ++c) {  // a copy of nnz(y) entries: not worth a second parallel loop
    const int64_t m = off[c + 1] - off[c];
    if (!m) continue;
    std::memcpy(yi + off[c], pieces.crd(c), sizeof(I) * static_cast<size_t>(m));
    std::memcpy(yv + off[c], pieces.val(c), sizeof(V) * static_cast<size_t>(m));
  }
  return y;
}

}  // namespace sj

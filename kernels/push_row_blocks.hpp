// A's CSC copy cut into row blocks, one per chunk of a split push SpMSpV
// (kernels/spmspv_kernels.hpp), kept with A's handle like the whole CSC copy.
//
// Why: a split push gives each thread the output rows of one chunk. Over the whole CSC copy,
// every chunk reads its part of each of x's columns, and with ~16 entries a column each part
// still costs about the misses of the whole column (its bounds, the first lines of its rows and
// values), so the column walks did not split with the rows; and finding where each chunk's
// part starts (PushCuts) was a pass of its own, ~1.7 ms of an 8-11 ms 2-thread call on x at
// 10% of a 600k-column A. Here block b is the CSC form of A's rows [begin(b), end(b)) alone: a
// chunk walks whole columns of its own arrays, and the blocks together read as many lines as
// the serial walk does.
//
// Each block keeps A's row numbers (its inner dimension is all of A's m rows), so a chunk adds
// into the same accumulator slots as the serial walk, each row's products in increasing j:
// results are bit-identical for any thread count. The blocks hold A's entries once (the size
// of a CSC copy) plus one array of column positions per block. They are made for the thread
// count of the calls that split (one set per count), in place of the whole copy: a handle
// whose calls are sometimes serial (few products) keeps both. The views point into the
// blocks' arrays, not into this struct, so a copy or move keeps them valid.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "src/block_pool.hpp"
#include "src/tensor.hpp"
#include "src/work_partition.hpp"

namespace sj::spmspv {

template <class I, class V> struct PushRowBlocks {
  Partition part;              // the row blocks: partition_into(A's CSR row positions, m, k)
  std::vector<Tensor> blocks;  // block b: CSC (m x n) of A's rows [part.begin(b), part.end(b))
  Buffer whole_pos;            // the CSC positions of all of A (n + 1): its column lengths
  std::vector<CsView<I, V>> views;  // of the blocks
  // Shape and column positions of all of A, for the push's statistics (mean column length,
  // products per row); no rows or values: chunks walk the blocks.
  CsView<I, V> whole;
};

// The row blocks of a CSR matrix `csr` (m x n, coordinates I, values V) for k threads (the
// push's partition, partition_into(A's row positions, m, k): at most k blocks), built on w's
// threads, one block per chunk. Memory from `alloc`, charged to its cap.
template <class I, class V>
PushRowBlocks<I, V> make_push_row_blocks(const Tensor& csr, int64_t k, const Allocator& alloc, Workers& w) {
  const CsView<I, V> A = cs_view<I, V>(csr);  // outer = rows
  const int64_t m = A.outer, n = A.inner;
  PushRowBlocks<I, V> blocks;
  PushRowBlocks<I, V>* out = &blocks;
  out->part = partition_into(A.pos, m, k);
  const int64_t nb = out->part.chunks();
  out->blocks.resize(static_cast<size_t>(nb));
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t r0 = out->part.begin(b), r1 = out->part.end(b);
    out->blocks[static_cast<size_t>(b)] = make_compressed_matrix(alloc, /*csr=*/false, m, n, A.pos[r1] - A.pos[r0],
                                                                 index_type_of<I>(), value_type_of<V>());
  }
  // A counting sort of each block's entries by column; rows are visited in increasing order,
  // so each column's rows come out sorted. One block per chunk of the call's threads.
  Partition per_block;
  per_block.bounds.resize(static_cast<size_t>(nb) + 1);
  for (int64_t b = 0; b <= nb; ++b) per_block.bounds[static_cast<size_t>(b)] = b;
  const int64_t row_chunks = w.chunks;
  w.run_indexed(per_block, [&](int64_t b, int64_t, int64_t) {
    Tensor& t = out->blocks[static_cast<size_t>(b)];
    int64_t* pos = t.levels[1].pos.template as_mut<int64_t>();
    I* crd = t.levels[1].crd.template as_mut<I>();
    V* val = t.values.template as_mut<V>();
    const int64_t r0 = out->part.begin(b), r1 = out->part.end(b);
    std::memset(pos, 0, sizeof(int64_t) * static_cast<size_t>(n + 1));
    for (int64_t q = A.pos[r0]; q < A.pos[r1]; ++q) ++pos[A.crd[q] + 1];
    for (int64_t j = 0; j < n; ++j) pos[j + 1] += pos[j];
    ScratchArray<int64_t> next(static_cast<size_t>(std::max<int64_t>(n, 1)));
    std::memcpy(next.get(), pos, sizeof(int64_t) * static_cast<size_t>(n));
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t q = A.pos[i]; q < A.pos[i + 1]; ++q) {
        const int64_t at = next.get()[A.crd[q]]++;
        crd[at] = static_cast<I>(i);
        val[at] = A.val[q];
      }
  });
  w.chunks = row_chunks;  // explain's chunk count stays the push's
  out->whole_pos = Buffer::allocate_array(alloc, n + 1, sizeof(int64_t));
  int64_t* whole = out->whole_pos.template as_mut<int64_t>();
  std::memset(whole, 0, sizeof(int64_t) * static_cast<size_t>(n + 1));
  for (auto& t : out->blocks) {
    const int64_t* pos = t.levels[1].pos.template as<int64_t>();
    for (int64_t j = 0; j <= n; ++j) whole[j] += pos[j];
  }
  for (auto& t : out->blocks) out->views.push_back(cs_view<I, V>(t));
  out->whole.outer = n;
  out->whole.inner = m;
  out->whole.pos = whole;
  return blocks;
}

}  // namespace sj::spmspv

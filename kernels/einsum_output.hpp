// Where generated index-notation kernels send sparse output entries. Kernels emit entries in
// the output's level order and each coordinate once (the loop order guarantees it: output
// indices outermost, or a `where` consumer draining a sorted workspace), so the result's
// levels are assembled as the stream arrives: no coordinate list, no sort.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "kernels/emit_sink.hpp"
#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/work_partition.hpp"

namespace sj::einsum {

// An append-only array for the streamed entries: push_back is a compare and a store, growth
// is out of line. std::vector's push_back, its reallocation inlined, had every emitted entry
// save and restore six registers.
template <class T> class AppendArray {
 public:
  void push_back(T x) {
    if (n_ == buf_.size()) [[unlikely]]
      grow();
    buf_[n_++] = x;
  }
  size_t size() const { return n_; }
  size_t capacity() const { return buf_.size(); }
  const T& operator[](size_t i) const { return buf_[i]; }
  const T* data() const { return buf_.data(); }
  T* mutable_data() { return buf_.data(); }
  void clear() { n_ = 0; }
  // After entries were written past size() directly (an EmitSink lane), at most capacity().
  void set_size(size_t n) { n_ = n; }

 private:
  [[gnu::noinline]] void grow() { buf_.resize(std::max<size_t>(256, 2 * buf_.size())); }
  std::vector<T> buf_;
  size_t n_ = 0;
};

// Sorts a `where` workspace's list of touched coordinates (generated kernels call it through
// sj_einsum_sort before draining the workspace in order).
void sort_workspace_list(int64_t* list, int64_t n);

// Collects entries as a coordinate list (any order; for sums of several terms).
struct CooSink : EmitSink {
  explicit CooSink(int order, const std::array<int64_t, kMaxOrder>& dims);
  CooTensor coo;
};

// Layouts of dense levels then one compressed level (CSR, CSC, a sparse vector,
// dense-dense-compressed): the terms of a sum are assembled on their own and joined by
// sum_term_results.
bool one_compressed_level(const FormatSpec& spec);
// The sum of several terms' results, each of layout `spec` (one_compressed_level), in term
// order: ((t0 + t1) + t2) ..., each join a row-by-row merge over the dense positions
// (ewise::merge_add, split among the workers by merge work), an entry several terms hold the
// semiring's add of their values in the output's value type. The first result may be returned
// as it is (one term).
Tensor sum_term_results(std::vector<Tensor>& parts, const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims,
                        IndexType it, ValueType vt, sj_semiring sr, const Allocator& alloc, Workers& w);

// Several terms' outputs into one sparse output: each list holds a compiled term's entries,
// in the output's level order and each coordinate once (as the term's kernel emitted them), and
// they are merged into `into` in that order; a coordinate several terms hold is the semiring's
// sum in term order, as the reference evaluator's join adds them. A merge of sorted lists: the
// map of coordinates it replaces made Z(i,j) = A(i,j) + B(i,j) ~100x slower than sj_ewise_add.
void join_sorted_terms(const std::vector<CooTensor>& terms, const FormatSpec& spec, sj_semiring sr, EmitSink& into);

// Builds a tensor of layout `spec` from entries that arrive sorted by the spec's level order
// and unique. Layouts: any number of dense levels first, then compressed (unique) levels.
struct StreamingAssembler : EmitSink {
  StreamingAssembler(const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims);
  // A piece of a parallel run: the entries whose level-0 coordinate lies in [lo, hi), emitted
  // by one chunk (its dense positions, if level 0 is dense, start at lo's).
  StreamingAssembler(const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims, int64_t lo, int64_t hi);
  static bool supports(const FormatSpec& spec);
  // Starts over for another run (as if constructed with these arguments), keeping the
  // capacity of the arrays: a plan reuses its assemblers, so a repeated execution neither
  // grows vectors again nor touches fresh memory.
  void reset(const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims, int64_t lo, int64_t hi);
  // Bytes of capacity held by the arrays.
  size_t capacity_bytes() const;
  // The lane (EmitSink) over the arrays' free room, for layouts it serves; close_lane takes
  // the entries a kernel appended there into the arrays' sizes (finish and emit call it).
  void open_lane();
  void close_lane();
  // The tensor of the pieces of a parallel run (pieces[c] from chunk c of `p`, whose entries
  // follow those of pieces[c-1] in level order), built without an intermediate copy: the
  // pieces' lengths are prefix-summed, the result's arrays allocated at exact size, and the
  // workers copy each piece at its offset (segment starts shifted, dense counts summed).
  static Tensor finish_pieces(const std::vector<std::unique_ptr<StreamingAssembler>>& pieces, Workers& w,
                              const Partition& p, IndexType it, ValueType vt, const Allocator& alloc);
  Tensor finish(IndexType it, ValueType vt, const Allocator& alloc);

  FormatSpec spec;
  std::array<int64_t, kMaxOrder> dims{};
  int dense_prefix = 0;
  int64_t dense_positions = 1;
  int64_t dense_base = 0;  // the first dense position this assembler counts (a piece's)
  // the previous entry's coordinates in level order (layouts of one compressed level keep its
  // dense position and coordinate instead: emit_one_compressed)
  std::array<int64_t, kMaxOrder> last{};
  bool any = false;
  bool out_of_order = false;  // a repeated coordinate (a bug): finish() refuses
  std::vector<int64_t> first_counts;            // per dense position: entries of the first compressed level
  std::array<std::vector<int64_t>, kMaxOrder> pos;
  std::array<AppendArray<int64_t>, kMaxOrder> crd;
  AppendArray<double> values;
};

// Assemblers kept by a plan between executions (taken and given back by concurrent
// executions under a lock, once per chunk). Very large ones are not kept.
class AssemblerStock {
 public:
  std::unique_ptr<StreamingAssembler> take(const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims,
                                           int64_t lo, int64_t hi);
  void give(std::unique_ptr<StreamingAssembler> a);

 private:
  static constexpr size_t kMaxKeptBytes = size_t(64) << 20;  // per assembler
  static constexpr size_t kMaxKept = 256;
  std::mutex mu_;
  std::vector<std::unique_ptr<StreamingAssembler>> kept_;
};

}  // namespace sj::einsum

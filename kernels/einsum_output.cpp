#include "kernels/einsum_output.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/ewise_kernels.hpp"
#include "kernels/sort_network_avx2.hpp"
#include "src/dispatch.hpp"
#include "src/error.hpp"
#include "src/semiring.hpp"

namespace sj::einsum {

namespace {
// The result's shape, types and level kinds; the arrays of its compressed levels are filled
// by the caller (finish and finish_pieces).
Tensor empty_result(const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims, IndexType it, ValueType vt) {
  Tensor t;
  t.order = spec.order;
  t.dims = dims;
  t.mode_order = spec.mode_order;
  t.index_type = it;
  t.value_type = vt;
  t.levels.resize(spec.order);
  for (int l = 0; l < spec.order; ++l) t.levels[l].kind = spec.kinds[l];
  return t;
}

// LSD radix sort of list[0..n) (every key in [lo, lo + span], span < 2^32) by digits of at most 11
// bits of key - lo: as many passes as the span needs, each a count, a prefix sum and a stable
// scatter, with no branch on the data.
void radix_sort(int64_t* list, int64_t n, int64_t lo, uint64_t span) {
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  int bits = 1;
  while (bits < 64 && (span >> bits) != 0) ++bits;
  const int passes = (bits + kBits - 1) / kBits;
  const int digit = (bits + passes - 1) / passes;  // equal digits: 2 passes of 9 bits, not 11 + 7
  thread_local std::vector<uint32_t> a, b;
  a.resize(static_cast<size_t>(n));
  b.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<uint32_t>(static_cast<uint64_t>(list[i]) - static_cast<uint64_t>(lo));
  uint32_t count[kBuckets];
  for (int pass = 0; pass < passes; ++pass) {
    const int shift = pass * digit;
    const uint32_t mask = (uint32_t{1} << digit) - 1;
    std::fill_n(count, size_t{1} << digit, 0u);
    for (int64_t i = 0; i < n; ++i) ++count[(a[i] >> shift) & mask];
    uint32_t sum = 0;
    for (size_t d = 0; d < (size_t{1} << digit); ++d) {
      const uint32_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (int64_t i = 0; i < n; ++i) b[count[(a[i] >> shift) & mask]++] = a[i];
    a.swap(b);
  }
  for (int64_t i = 0; i < n; ++i) list[i] = static_cast<int64_t>(static_cast<uint64_t>(lo) + a[i]);
  if (a.size() > (size_t{1} << 20)) {  // a huge list's scratch is not kept
    std::vector<uint32_t>().swap(a);
    std::vector<uint32_t>().swap(b);
  }
}

}  // namespace

void sort_workspace_list(int64_t* list, int64_t n) {
  // The keys are a SpGEMM-like row's columns, in the order the products first touched them.
  // std::sort mispredicts about once per key: it was 27% of C(i,j) = A(i,k) * B(k,j) into CSR
  // on ca-GrQc (callgrind), more than the products.
  if (n < 2) return;
  int64_t lo = list[0], hi = list[0];
  for (int64_t i = 1; i < n; ++i) {
    lo = std::min(lo, list[i]);
    hi = std::max(hi, list[i]);
  }
#if defined(__x86_64__) && defined(__GNUC__)
  // Up to 256 keys under 2^31: the SpGEMM kernels' sorting networks, as 32-bit keys.
  if (n <= sort_network::kMaxKeys && lo >= 0 && hi < std::numeric_limits<int32_t>::max() &&
      sort_network::available()) {
    int32_t keys[sort_network::kMaxKeys];
    for (int64_t i = 0; i < n; ++i) keys[i] = static_cast<int32_t>(list[i]);
    sort_network::sort(keys, n, lo, hi);
    for (int64_t i = 0; i < n; ++i) list[i] = keys[i];
    return;
  }
#endif
  // Longer lists (a power-law input's heavy rows) by radix, where the span fits 32 bits.
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // hi >= lo: no wrap
  if (n > 64 && n < (int64_t{1} << 31) && span <= UINT32_MAX) {
    radix_sort(list, n, lo, span);
    return;
  }
  std::sort(list, list + n);
}

CooSink::CooSink(int order, const std::array<int64_t, kMaxOrder>& dims) {
  coo.order = order;
  coo.dims = dims;
  emit = [](EmitSink* self, const int64_t* c, double v) {
    CooTensor& t = static_cast<CooSink*>(self)->coo;
    for (int m = 0; m < t.order; ++m) t.coords[m].push_back(c[m]);
    t.values.push_back(v);
  };
}

bool one_compressed_level(const FormatSpec& spec) {
  if (spec.order == 0 || !StreamingAssembler::supports(spec)) return false;
  for (int l = 0; l + 1 < spec.order; ++l)
    if (spec.kinds[l] != LevelKind::Dense) return false;
  return true;
}

Tensor sum_term_results(std::vector<Tensor>& parts, const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims,
                        IndexType it, ValueType vt, sj_semiring sr, const Allocator& alloc, Workers& w) {
  if (parts.empty()) fail(SJ_ERR_INTERNAL, "einsum: a sum of no terms");
  if (parts.size() == 1) return std::move(parts[0]);
  const int D = spec.order - 1;  // the compressed level
  int64_t outer = 1;
  for (int l = 0; l < D; ++l) outer *= dims[spec.mode_order[l]];
  const int64_t inner = dims[spec.mode_order[D]];
  Tensor sum;  // a CSR of outer rows: each dense position a row
  with_kernel_types(it, vt, sr, [&](auto s, auto i, auto v) {
    using S = decltype(s);
    using I = decltype(i);
    using V = decltype(v);
    // The compressed level `l` of `t` as the rows of a matrix.
    auto rows_of = [&](const Tensor& t, int l) {
      CsView<I, V> r;
      r.outer = outer;
      r.inner = inner;
      r.pos = t.levels[l].pos.template as<int64_t>();
      r.crd = t.levels[l].crd.template as<I>();
      r.val = t.values.template as<V>();
      return r;
    };
    sum = ewise::merge_add<S>(alloc, rows_of(parts[0], D), rows_of(parts[1], D), vt, w);
    for (size_t t = 2; t < parts.size(); ++t) sum = ewise::merge_add<S>(alloc, rows_of(sum, 1), rows_of(parts[t], D), vt, w);
  });
  Tensor out = empty_result(spec, dims, it, vt);
  out.levels[D].pos = sum.levels[1].pos;
  out.levels[D].crd = sum.levels[1].crd;
  out.values = sum.values;
  return out;
}

void join_sorted_terms(const std::vector<CooTensor>& terms, const FormatSpec& spec, sj_semiring sr, EmitSink& into) {
  const int order = spec.order;
  const size_t k = terms.size();
  std::vector<int64_t> at(k, 0);
  // Term t's entry p against term u's entry q in level order: <0, 0 or >0.
  auto compare = [&](size_t t, int64_t p, size_t u, int64_t q) {
    for (int l = 0; l < order; ++l) {
      const int m = spec.mode_order[l];
      const int64_t a = terms[t].coords[m][p], b = terms[u].coords[m][q];
      if (a != b) return a < b ? -1 : 1;
    }
    return 0;
  };
  std::array<int64_t, kMaxOrder> c{};
  with_semiring<double>(sr, [&](auto s) {
    using S = decltype(s);
    for (;;) {
      // The term holding the smallest coordinate (the first such term on a tie).
      size_t lead = k;
      for (size_t t = 0; t < k; ++t)
        if (at[t] < terms[t].nnz() && (lead == k || compare(t, at[t], lead, at[lead]) < 0)) lead = t;
      if (lead == k) break;
      const int64_t p = at[lead]++;
      double v = terms[lead].values[p];
      for (size_t t = lead + 1; t < k; ++t)
        if (at[t] < terms[t].nnz() && compare(t, at[t], lead, p) == 0) v = S::add(v, terms[t].values[at[t]++]);
      for (int m = 0; m < order; ++m) c[m] = terms[lead].coords[m][p];
      into.emit(&into, c.data(), v);
    }
  });
}

bool StreamingAssembler::supports(const FormatSpec& spec) {
  bool compressed_seen = false;
  for (int l = 0; l < spec.order; ++l) {
    if (spec.kinds[l] == LevelKind::Singleton || !spec.unique[l]) return false;
    if (spec.kinds[l] == LevelKind::Dense && compressed_seen) return false;
    compressed_seen |= spec.kinds[l] == LevelKind::Compressed;
  }
  return compressed_seen;
}

StreamingAssembler::StreamingAssembler(const FormatSpec& s, const std::array<int64_t, kMaxOrder>& d)
    : StreamingAssembler(s, d, 0, s.order > 0 ? d[s.mode_order[0]] : 0) {}

StreamingAssembler::StreamingAssembler(const FormatSpec& s, const std::array<int64_t, kMaxOrder>& d, int64_t lo,
                                       int64_t hi) {
  reset(s, d, lo, hi);
}

namespace {

// Any layout: finds the first level (in level order) whose coordinate differs from the
// previous entry's, opens a segment at each level below it, appends the coordinates.
void emit_any_layout(EmitSink* self, const int64_t* c, double v) {
  auto& a = *static_cast<StreamingAssembler*>(self);
  const int r = a.spec.order;
  int d = 0;
  if (a.any)
    while (d < r && c[a.spec.mode_order[d]] == a.last[d]) ++d;
  if (d == r) {  // cannot throw through generated code: remembered, reported by finish()
    a.out_of_order = true;
    return;
  }
  for (int l = 0; l < r; ++l) a.last[l] = c[a.spec.mode_order[l]];
  a.any = true;
  const int D = a.dense_prefix;
  for (int l = std::max(d, D); l < r; ++l) {
    if (l == D) {
      int64_t p = 0;
      for (int k = 0; k < D; ++k) p = p * a.dims[a.spec.mode_order[k]] + a.last[k];
      ++a.first_counts[p - a.dense_base];
    } else if (l > d) {
      a.pos[l].push_back(static_cast<int64_t>(a.crd[l].size()));  // a new parent at level l-1 opens its segment
    }
    a.crd[l].push_back(a.last[l]);
  }
  a.values.push_back(v);
}

// D dense levels, then one compressed level (a sparse vector, CSR, CSC, dense-dense-compressed):
// every entry counts at its dense position and appends one coordinate, so the general
// version's level loops and segment bookkeeping reduce to a few stores. It was ~80
// instructions an entry, half of a y(i) = A(i,k)*x(k) call (callgrind, ca-GrQc).
template <int D> void emit_one_compressed(EmitSink* self, const int64_t* c, double v) {
  auto& a = *static_cast<StreamingAssembler*>(self);
  a.close_lane();  // entries a kernel appended in the lane first
  int64_t p = 0;
  for (int k = 0; k < D; ++k) p = p * a.dims[a.spec.mode_order[k]] + c[a.spec.mode_order[k]];
  const int64_t j = c[a.spec.mode_order[D]];
  if (a.any && p == a.last[0] && j == a.last[1]) {  // the same coordinate again (see above)
    a.out_of_order = true;
    return;
  }
  a.last[0] = p;
  a.last[1] = j;
  a.any = true;
  ++a.first_counts[p - a.dense_base];
  a.crd[D].push_back(j);
  a.values.push_back(v);
  a.open_lane();  // over the room left, or the grown arrays
}

// The layouts emit_one_compressed serves, and so the ones with a lane: one compressed level
// after 0-2 dense ones.
bool one_compressed_level(const FormatSpec& spec, int dense_prefix) {
  return spec.order - dense_prefix == 1 && dense_prefix <= 2;
}

}  // namespace

void StreamingAssembler::reset(const FormatSpec& s, const std::array<int64_t, kMaxOrder>& d, int64_t lo, int64_t hi) {
  spec = s;
  dims = d;
  dense_prefix = 0;
  dense_positions = 1;
  dense_base = 0;
  last = {};
  any = false;
  out_of_order = false;
  while (dense_prefix < spec.order && spec.kinds[dense_prefix] == LevelKind::Dense) {
    dense_positions *= dims[spec.mode_order[dense_prefix]];
    ++dense_prefix;
  }
  if (dense_prefix > 0) {  // positions of level-0 coordinates [lo, hi)
    const int64_t inner = dense_positions / std::max<int64_t>(1, dims[spec.mode_order[0]]);
    dense_base = lo * inner;
    dense_positions = (hi - lo) * inner;
  }
  first_counts.assign(static_cast<size_t>(dense_positions), 0);
  switch (one_compressed_level(spec, dense_prefix) ? dense_prefix : -1) {
    case 0: emit = emit_one_compressed<0>; break;
    case 1: emit = emit_one_compressed<1>; break;
    case 2: emit = emit_one_compressed<2>; break;
    default: emit = emit_any_layout;
  }
  for (int l = 0; l < kMaxOrder; ++l) {
    pos[l].clear();
    crd[l].clear();
  }
  values.clear();
  open_lane();  // after the clears: the lane starts at size 0
}

void StreamingAssembler::open_lane() {
  const int D = dense_prefix;
  if (!one_compressed_level(spec, D)) {  // layouts through emit_any_layout
    lane_n = lane_cap = 0;
    return;
  }
  lane_crd = crd[D].mutable_data();
  lane_val = values.mutable_data();
  lane_counts = first_counts.data();
  lane_n = static_cast<int64_t>(values.size());
  lane_cap = static_cast<int64_t>(std::min(crd[D].capacity(), values.capacity()));
  lane_j_mode = spec.mode_order[D];
  lane_p_base = dense_base;
  lane_p_mode[0] = D >= 1 ? spec.mode_order[0] : 0;
  lane_p_mode[1] = D >= 2 ? spec.mode_order[1] : 0;
  lane_p_mul[0] = D == 0 ? 0 : D == 1 ? 1 : dims[spec.mode_order[1]];
  lane_p_mul[1] = D == 2 ? 1 : 0;
}

void StreamingAssembler::close_lane() {
  if (lane_cap == 0) return;
  crd[dense_prefix].set_size(static_cast<size_t>(lane_n));
  values.set_size(static_cast<size_t>(lane_n));
}

size_t StreamingAssembler::capacity_bytes() const {
  size_t b = first_counts.capacity() * sizeof(int64_t) + values.capacity() * sizeof(double);
  for (int l = 0; l < kMaxOrder; ++l) b += (pos[l].capacity() + crd[l].capacity()) * sizeof(int64_t);
  return b;
}

std::unique_ptr<StreamingAssembler> AssemblerStock::take(const FormatSpec& spec,
                                                         const std::array<int64_t, kMaxOrder>& dims, int64_t lo,
                                                         int64_t hi) {
  std::unique_ptr<StreamingAssembler> a;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!kept_.empty()) {
      a = std::move(kept_.back());
      kept_.pop_back();
    }
  }
  if (!a) return std::make_unique<StreamingAssembler>(spec, dims, lo, hi);
  a->reset(spec, dims, lo, hi);
  return a;
}

void AssemblerStock::give(std::unique_ptr<StreamingAssembler> a) {
  if (!a || a->capacity_bytes() > kMaxKeptBytes) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.size() < kMaxKept) kept_.push_back(std::move(a));
}

Tensor StreamingAssembler::finish_pieces(const std::vector<std::unique_ptr<StreamingAssembler>>& pieces, Workers& w,
                                         const Partition& part, IndexType it, ValueType vt, const Allocator& alloc) {
  for (auto& piece : pieces) piece->close_lane();
  const StreamingAssembler& first = *pieces.front();
  const FormatSpec& spec = first.spec;
  const int r = spec.order;
  const int D = first.dense_prefix;
  const size_t k = pieces.size();
  int64_t total_dense = 1;
  for (int l = 0; l < D; ++l) total_dense *= first.dims[spec.mode_order[l]];
  // offsets of each piece in every array: a prefix sum over the pieces
  std::vector<std::array<int64_t, kMaxOrder>> crd_at(k + 1), pos_at(k + 1);
  std::vector<int64_t> val_at(k + 1, 0);
  for (size_t c = 0; c < k; ++c) {
    const StreamingAssembler& q = *pieces[c];
    if (q.out_of_order) fail(SJ_ERR_INTERNAL, "einsum output: an entry was emitted twice (please report)");
    for (int l = D; l < r; ++l) {
      crd_at[c + 1][l] = crd_at[c][l] + static_cast<int64_t>(q.crd[l].size());
      pos_at[c + 1][l] = pos_at[c][l] + static_cast<int64_t>(q.pos[l].size());
    }
    val_at[c + 1] = val_at[c] + static_cast<int64_t>(q.values.size());
  }
  // Pieces of a split outer dense loop count disjoint, increasing ranges of dense positions:
  // each worker then writes the first level's positions of its own range (and of the gap
  // before it) from its piece's entry offset, instead of one thread counting, summing and
  // prefix-summing every dense position (three passes over the rows of Z = A .* B).
  auto range_end = [&](size_t c) { return pieces[c]->dense_base + static_cast<int64_t>(pieces[c]->first_counts.size()); };
  bool ranges_apart = true;
  for (size_t c = 0; c < k; ++c) {
    ranges_apart &= pieces[c]->dense_base >= (c == 0 ? 0 : range_end(c - 1));
    ranges_apart &= range_end(c) <= total_dense;
  }
  Tensor t = empty_result(spec, first.dims, it, vt);
  for (int l = D; l < r; ++l) {
    Level& lv = t.levels[l];
    const int64_t npos = l == D ? total_dense + 1 : pos_at[k][l] + 1;
    lv.pos = Buffer::allocate_array(alloc, npos, sizeof(int64_t));
    lv.crd = Buffer::allocate_array(alloc, crd_at[k][l], static_cast<size_t>(index_size(it)));
    int64_t* pp = lv.pos.as_mut<int64_t>();
    pp[npos - 1] = crd_at[k][l];
    if (l == D && !ranges_apart) {  // counts per dense position (one shared counter without dense levels), prefix-summed
      std::fill(pp, pp + npos, int64_t(0));  // summed in place: no per-call array of the rows
      for (auto& q : pieces)
        for (size_t i = 0; i < q->first_counts.size(); ++i) pp[q->dense_base + static_cast<int64_t>(i) + 1] += q->first_counts[i];
      for (int64_t i = 0; i < total_dense; ++i) pp[i + 1] += pp[i];
    }
  }
  t.values = Buffer::allocate_array(alloc, val_at[k], static_cast<size_t>(value_size(vt)));
  w.run_indexed(part, [&](int64_t c, int64_t, int64_t) {
    const StreamingAssembler& q = *pieces[c];
    if (ranges_apart) {  // the first level's positions from the end of piece c - 1's range to the end of c's
      int64_t* pp = t.levels[D].pos.as_mut<int64_t>();
      int64_t run = crd_at[c][D];
      const int64_t gap_from = c == 0 ? 0 : range_end(static_cast<size_t>(c) - 1);
      for (int64_t i = gap_from; i < q.dense_base; ++i) pp[i + 1] = run;
      if (c == 0) pp[0] = 0;
      for (size_t i = 0; i < q.first_counts.size(); ++i) pp[q.dense_base + static_cast<int64_t>(i) + 1] = run += q.first_counts[i];
      if (static_cast<size_t>(c) + 1 == k)
        for (int64_t i = range_end(static_cast<size_t>(c)); i < total_dense; ++i) pp[i + 1] = run;
    }
    with_types(it, vt, [&](auto i, auto v) {
      using I = decltype(i);
      using V = decltype(v);
      for (int l = D; l < r; ++l) {
        I* crd = t.levels[l].crd.as_mut<I>() + crd_at[c][l];
        for (size_t e = 0; e < q.crd[l].size(); ++e) crd[e] = static_cast<I>(q.crd[l][e]);
        if (l > D) {
          int64_t* pos = t.levels[l].pos.as_mut<int64_t>() + pos_at[c][l];
          for (size_t e = 0; e < q.pos[l].size(); ++e) pos[e] = q.pos[l][e] + crd_at[c][l];
        }
      }
      V* val = t.values.as_mut<V>() + val_at[c];
      for (size_t e = 0; e < q.values.size(); ++e)
        val[e] = std::is_same_v<V, uint8_t> ? static_cast<V>(q.values[e] != 0) : static_cast<V>(q.values[e]);
    });
  });
  return t;
}

Tensor StreamingAssembler::finish(IndexType it, ValueType vt, const Allocator& alloc) {
  close_lane();
  if (out_of_order) fail(SJ_ERR_INTERNAL, "einsum output: an entry was emitted twice (please report)");
  const int r = spec.order;
  const int D = dense_prefix;
  Tensor t = empty_result(spec, dims, it, vt);
  for (int l = D; l < r; ++l) {
    Level& lv = t.levels[l];
    std::vector<int64_t> p;
    if (l == D) {
      p.resize(dense_positions + 1);
      p[0] = 0;
      for (int64_t q = 0; q < dense_positions; ++q) p[q + 1] = p[q] + first_counts[q];
    } else {
      p = std::move(pos[l]);
      p.push_back(static_cast<int64_t>(crd[l].size()));
    }
    lv.pos = Buffer::copy_of(alloc, p.data(), sizeof(int64_t) * p.size());
    const size_t n = crd[l].size();
    lv.crd = Buffer::allocate(alloc, static_cast<size_t>(index_size(it)) * n);
    if (it == IndexType::I64) {
      if (n) std::memcpy(lv.crd.mutable_data(), crd[l].data(), sizeof(int64_t) * n);
    } else {
      auto* out = lv.crd.as_mut<int32_t>();
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(crd[l][i]);
    }
  }
  const size_t nv = values.size();
  t.values = Buffer::allocate(alloc, static_cast<size_t>(value_size(vt)) * nv);
  with_types(IndexType::I64, vt, [&](auto, auto v) {
    using V = decltype(v);
    V* out = t.values.as_mut<V>();
    for (size_t i = 0; i < nv; ++i) out[i] = std::is_same_v<V, uint8_t> ? static_cast<V>(values[i] != 0) : static_cast<V>(values[i]);
  });
  return t;
}

}  // namespace sj::einsum

#include "src/tensor.hpp"

#include <algorithm>
#include <array>
#include <compare>
#include <atomic>
#include <limits>

#include "absl/strings/str_join.h"
#include "src/error.hpp"
#include "src/sanitizers.hpp"

namespace sj {

int64_t Tensor::level_entries(int l) const {
  int64_t n = 1;
  for (int k = 0; k <= l; ++k) {
    const Level& lv = levels[k];
    switch (lv.kind) {
      case LevelKind::Dense: n *= level_dim(k); break;  // overflow is ruled out by validate()
      case LevelKind::Compressed: n = lv.pos.as<int64_t>()[n]; break;
      case LevelKind::Singleton: break;
    }
  }
  return n;
}

bool Tensor::owns_arrays() const {
  if (!values.empty() && !values.owned()) return false;
  for (auto& lv : levels)
    if ((!lv.pos.empty() && !lv.pos.owned()) || (!lv.crd.empty() && !lv.crd.owned())) return false;
  return true;
}

namespace {
bool kinds_are(const Tensor& t, std::initializer_list<LevelKind> ks) {
  if (static_cast<int>(ks.size()) != t.order) return false;
  int l = 0;
  for (LevelKind k : ks) {
    if (t.levels[l].kind != k) return false;
    if (k == LevelKind::Compressed && !t.levels[l].unique) return false;
    ++l;
  }
  return true;
}
bool identity_order(const Tensor& t) {
  for (int l = 0; l < t.order; ++l)
    if (t.mode_order[l] != l) return false;
  return true;
}
}  // namespace

bool is_csr(const Tensor& t) {
  return kinds_are(t, {LevelKind::Dense, LevelKind::Compressed}) && identity_order(t);
}
bool is_csc(const Tensor& t) {
  return kinds_are(t, {LevelKind::Dense, LevelKind::Compressed}) && t.mode_order[0] == 1;
}
bool is_sparse_vector(const Tensor& t) { return kinds_are(t, {LevelKind::Compressed}); }
bool stores_coordinates(const Tensor& t) {
  for (int l = 0; l < t.order; ++l)
    if (t.levels[l].kind != LevelKind::Dense) return true;
  return false;
}
bool is_dense(const Tensor& t) { return !stores_coordinates(t) && identity_order(t); }

std::optional<sj_format> Tensor::named_format() const {
  if (order == 2) {
    if (is_csr(*this)) return SJ_FORMAT_CSR;
    if (is_csc(*this)) return SJ_FORMAT_CSC;
    if (kinds_are(*this, {LevelKind::Compressed, LevelKind::Compressed}) && identity_order(*this))
      return SJ_FORMAT_DCSR;
    if (levels[0].kind == LevelKind::Compressed && !levels[0].unique &&
        levels[1].kind == LevelKind::Singleton && identity_order(*this))
      return SJ_FORMAT_COO;
    if (levels[0].kind == LevelKind::Dense && levels[1].kind == LevelKind::Dense)
      return identity_order(*this) ? SJ_FORMAT_DENSE : SJ_FORMAT_DENSE_COL_MAJOR;
  }
  if (order == 1 && is_sparse_vector(*this)) return SJ_FORMAT_SPARSE_VECTOR;
  if (order >= 1 && is_dense(*this)) return SJ_FORMAT_DENSE;
  if (order == 3 && kinds_are(*this, {LevelKind::Dense, LevelKind::Compressed, LevelKind::Compressed}))
    return SJ_FORMAT_CSF;
  return std::nullopt;
}

std::string Tensor::describe() const {
  std::vector<std::string> d, lv;
  for (int m = 0; m < order; ++m) d.push_back(std::to_string(dims[m]));
  std::string name;
  if (auto f = named_format()) {
    static const char* names[] = {"CSR", "CSC", "DCSR", "COO", "sparse vector", "dense", "CSF", "dense column-major"};
    name = names[*f];
  } else {
    name = "tensor";
  }
  for (int l = 0; l < order; ++l)
    lv.push_back(cat(to_string(levels[l].kind), levels[l].unique ? "" : "-nonunique", "(",
                              mode_order[l], ")"));
  return cat(name, " ", order == 0 ? "scalar" : absl::StrJoin(d, "x"), " [",
                      absl::StrJoin(lv, ", "), "] ", to_string(index_type), " ", to_string(value_type),
                      " nnz=", order == 0 ? 1 : nnz());
}

// Results up to this size take one allocation (make_compressed_matrix). Not under
// AddressSanitizer, so that a kernel writing past a result's coordinates is still reported
// instead of landing in its values.
constexpr int64_t kOneBlockBytes = kUnderAsan ? 0 : int64_t(64) << 10;

// Arrays of a one-block result each start a 64-byte line.
template <class T> constexpr T round_up_to_line(T b) { return (b + 63) / 64 * 64; }
// The layout init_sparse_vector gives a vector's one block: positions, then coordinates and
// values each from a line.
constexpr size_t kVectorCrdAt = 64;

Tensor make_compressed_matrix(const Allocator& alloc, bool csr, int64_t rows, int64_t cols,
                              int64_t nnz, IndexType it, ValueType vt) {
  Tensor t;
  t.order = 2;
  t.dims = {rows, cols, 0, 0};
  t.mode_order = csr ? std::array<int, 4>{0, 1, 2, 3} : std::array<int, 4>{1, 0, 2, 3};
  t.index_type = it;
  t.value_type = vt;
  t.levels.resize(2);
  t.levels[0].kind = LevelKind::Dense;
  t.levels[1].kind = LevelKind::Compressed;
  int64_t outer = csr ? rows : cols;
  // The memory cap bounds the result as a whole, not only each of its arrays.
  alloc.charge(estimate_bytes(outer, sizeof(int64_t),
                              estimate_bytes(nnz, static_cast<size_t>(index_size(it) + value_size(vt)), sizeof(int64_t))),
               [&] { return cat("a ", rows, "x", cols, " ", csr ? "CSR" : "CSC", " matrix of ", nnz, " entries"); });
  // A small result (under kOneBlockBytes) takes one allocation, each array on its own 64-byte
  // line, as make_sparse_vector does: three allocations and frees were ~1.7k of the ~8k
  // instructions of a tiny SpGEMM call. Larger arrays keep their own blocks (size classes and
  // huge pages of the block pool, src/block_pool.hpp).
  if (outer >= 0 && nnz >= 0 && outer < kOneBlockBytes && nnz < kOneBlockBytes) {  // no overflow below
    const int64_t pos_bytes = (outer + 1) * static_cast<int64_t>(sizeof(int64_t));
    const int64_t crd_bytes = nnz * index_size(it), val_bytes = nnz * value_size(vt);
    const int64_t crd_at = round_up_to_line(pos_bytes), val_at = crd_at + round_up_to_line(crd_bytes);
    if (val_at + val_bytes <= kOneBlockBytes) {
      Buffer all = Buffer::allocate_array(alloc, val_at + val_bytes, 1);
      t.levels[1].pos = all.part(0, static_cast<size_t>(pos_bytes));
      t.levels[1].crd = all.part(static_cast<size_t>(crd_at), static_cast<size_t>(crd_bytes));
      t.values = all.part(static_cast<size_t>(val_at), static_cast<size_t>(val_bytes));
      return t;
    }
  }
  t.levels[1].pos = Buffer::allocate_array(alloc, outer, sizeof(int64_t), 1);
  t.levels[1].crd = Buffer::allocate_array(alloc, nnz, index_size(it));
  t.values = Buffer::allocate_array(alloc, nnz, value_size(vt));
  return t;
}

Tensor shrink_compressed_matrix(const Tensor& c, int64_t nnz, const Allocator& alloc) {
  const bool csr = c.mode_order[0] == 0;
  const int64_t outer = c.dims[csr ? 0 : 1];
  const size_t ib = static_cast<size_t>(index_size(c.index_type)), vb = static_cast<size_t>(value_size(c.value_type));
  // Positions over one block were allocated alone (make_compressed_matrix); under it they may
  // share the block with the larger arrays, which sharing them would keep alive.
  if ((outer + 1) * static_cast<int64_t>(sizeof(int64_t)) <= kOneBlockBytes) {
    Tensor e = make_compressed_matrix(alloc, csr, c.dims[0], c.dims[1], nnz, c.index_type, c.value_type);
    std::memcpy(e.levels[1].pos.mutable_data(), c.levels[1].pos.data(), sizeof(int64_t) * static_cast<size_t>(outer + 1));
    std::memcpy(e.levels[1].crd.mutable_data(), c.levels[1].crd.data(), ib * static_cast<size_t>(nnz));
    std::memcpy(e.values.mutable_data(), c.values.data(), vb * static_cast<size_t>(nnz));
    return e;
  }
  alloc.charge(estimate_bytes(nnz, ib + vb, sizeof(int64_t) * static_cast<size_t>(outer + 1)),
               [&] { return cat("a result of ", nnz, " entries"); });
  Tensor e = c;
  e.derived.reset();
  e.levels[1].crd = Buffer::copy_of(alloc, c.levels[1].crd.data(), ib * static_cast<size_t>(nnz));
  e.values = Buffer::copy_of(alloc, c.values.data(), vb * static_cast<size_t>(nnz));
  return e;
}

Tensor make_sparse_vector(const Allocator& alloc, int64_t n, int64_t nnz, IndexType it, ValueType vt) {
  Tensor t;
  init_sparse_vector(t, alloc, n, nnz, it, vt);
  return t;
}

namespace {

// Refills `t` (is_refillable_sparse_vector) with a vector of `nnz` entries when they fit the
// part of its block that it uses (rounded up to whole lines: the block may be larger, after a
// smaller refill), moving its windows without touching the block's reference counts. The block
// came from the default allocator (the spare handles of capi/spare_handle.hpp are only kept
// from, and only given to, contexts that use it), so it must go to one that uses it too.
bool refill_sparse_vector(Tensor& t, const Allocator& alloc, int64_t n, int64_t nnz, IndexType it, ValueType vt) {
  if (!alloc.is_default() || nnz < 0 || !is_refillable_sparse_vector(t, std::numeric_limits<size_t>::max())) return false;
  // The other holders' last uses (they may have let go on other threads) come before the writes.
  std::atomic_thread_fence(std::memory_order_acquire);
  Level& lv = t.levels[0];
  // Allocations are whole 64-byte lines (Allocator::allocate).
  const size_t capacity = round_up_to_line(static_cast<size_t>(t.values.as<char>() + t.values.bytes() - lv.pos.as<char>()));
  if (static_cast<size_t>(nnz) > capacity) return false;  // no overflow below
  const size_t crd_bytes = static_cast<size_t>(nnz) * index_size(it), val_bytes = static_cast<size_t>(nnz) * value_size(vt);
  const size_t val_at = kVectorCrdAt + round_up_to_line(crd_bytes);
  // Over the cap as a new block would be (Allocator::allocate): allocated, so it fails alike.
  if (val_at + val_bytes > capacity || alloc.over_cap(val_at + val_bytes)) return false;
  t.dims = {n, 0, 0, 0};
  t.index_type = it;
  t.value_type = vt;
  lv.pos.as_mut<int64_t>()[1] = nnz;
  lv.crd.repoint_within(lv.pos, kVectorCrdAt, crd_bytes);
  t.values.repoint_within(lv.pos, val_at, val_bytes);
  return true;
}

}  // namespace

bool is_refillable_sparse_vector(const Tensor& t, size_t max_bytes) {
  if (kUnderAsan || t.order != 1 || t.levels.size() != 1 || t.derived) return false;
  const Level& lv = t.levels[0];
  // One block held by these three windows only: no copy of the tensor shares it.
  if (lv.kind != LevelKind::Compressed || !lv.unique || !lv.pos.starts_owner() ||
      lv.pos.bytes() != 2 * sizeof(int64_t) || !lv.crd.shares_owner(lv.pos) || !t.values.shares_owner(lv.pos) ||
      lv.pos.owner_uses() != 3)
    return false;
  const char* base = lv.pos.as<char>();
  if (lv.crd.as<char>() != base + kVectorCrdAt || t.values.as<char>() != lv.crd.as<char>() + round_up_to_line(lv.crd.bytes()))
    return false;
  return static_cast<size_t>(t.values.as<char>() + t.values.bytes() - base) <= max_bytes;
}

void init_sparse_vector(Tensor& t, const Allocator& alloc, int64_t n, int64_t nnz, IndexType it, ValueType vt) {
  alloc.charge(estimate_bytes(nnz, static_cast<size_t>(index_size(it) + value_size(vt)), 2 * sizeof(int64_t)),
               [&] { return cat("a sparse vector of ", nnz, " entries"); });
  if (t.order != 0) {
    if (refill_sparse_vector(t, alloc, n, nnz, it, vt)) return;
    t = Tensor{};
  }
  t.order = 1;
  t.dims = {n, 0, 0, 0};
  t.index_type = it;
  t.value_type = vt;
  t.levels.resize(1);
  t.levels[0].kind = LevelKind::Compressed;
  // Positions, coordinates and values in one allocation, each array on its own 64-byte line.
  const size_t entry = static_cast<size_t>(index_size(it) + value_size(vt));
  if (nnz < 0 || nnz > (std::numeric_limits<int64_t>::max() / 4 - 256) / static_cast<int64_t>(entry))
    fail(SJ_ERR_OUT_OF_MEMORY, "a sparse vector of ", nnz, " entries does not fit in memory");
  const size_t crd_bytes = static_cast<size_t>(nnz) * index_size(it), val_bytes = static_cast<size_t>(nnz) * value_size(vt);
  const size_t val_at = kVectorCrdAt + round_up_to_line(crd_bytes);
  Buffer all = Buffer::allocate_array(alloc, static_cast<int64_t>(val_at + val_bytes), 1);
  t.levels[0].pos = all.part(0, sizeof(int64_t) * 2);
  t.levels[0].pos.as_mut<int64_t>()[0] = 0;
  t.levels[0].pos.as_mut<int64_t>()[1] = nnz;
  t.levels[0].crd = all.part(kVectorCrdAt, crd_bytes);
  t.values = all.part(val_at, val_bytes);
}

Tensor make_dense(const Allocator& alloc, int order, const int64_t* dims, ValueType vt) {
  Tensor t;
  init_dense(t, alloc, order, dims, vt);
  return t;
}

void init_dense(Tensor& t, const Allocator& alloc, int order, const int64_t* dims, ValueType vt) {
  if (t.order != 0) t = Tensor{};
  t.order = order;
  int64_t n = 1;
  for (int m = 0; m < order; ++m) {
    t.dims[m] = dims[m];
    if (dims[m] < 0) fail(SJ_ERR_INVALID_ARGUMENT, "dimension ", m, " is negative (", dims[m], ")");
    if (dims[m] != 0 && n > std::numeric_limits<int64_t>::max() / value_size(vt) / dims[m])
      fail(SJ_ERR_OVERFLOW, "dense tensor of ", absl::StrJoin(dims, dims + order, "x"),
           " entries does not fit in memory addresses");
    n *= dims[m];
  }
  t.value_type = vt;
  t.levels.resize(order);
  t.values = Buffer::allocate(alloc, value_size(vt) * n);
}

// ------------------------------------------------------------------------------------------
// Validation. Messages name the segment in the user's terms: "row 17" for CSR, "column 17" for
// CSC, otherwise the coordinates of the parent entry.

namespace {

const char* mode_noun(const Tensor& t, int mode) {
  if (t.order == 2) return mode == 0 ? "row" : "column";
  if (t.order == 1) return "index";
  static const char* names[] = {"mode-0 coordinate", "mode-1 coordinate", "mode-2 coordinate",
                                "mode-3 coordinate"};
  return names[mode];
}

// Coordinate, at level l, of the entry at position p (only called on valid outer levels).
int64_t coord_of(const Tensor& t, int l, int64_t p) {
  const Level& lv = t.levels[l];
  if (lv.kind == LevelKind::Dense) return p % t.level_dim(l);
  return crd_at(lv, t.index_type, p);
}
int64_t parent_of(const Tensor& t, int l, int64_t p) {
  const Level& lv = t.levels[l];
  if (lv.kind == LevelKind::Dense) return p / t.level_dim(l);
  if (lv.kind == LevelKind::Singleton) return p;
  const int64_t* pos = lv.pos.as<int64_t>();
  int64_t parents = l == 0 ? 1 : t.level_entries(l - 1);
  // The parent whose segment holds p: last q with pos[q] <= p (segments may be empty).
  return std::upper_bound(pos, pos + parents + 1, p) - pos - 1;
}

// "row 17" / "row 3, column 9" — the path to the parent position `p` at level l-1.
std::string segment_name(const Tensor& t, int l, int64_t p) {
  if (l == 0) return t.order == 1 ? "vector" : "top level";
  std::vector<std::string> parts;
  for (int k = l - 1; k >= 0; --k) {
    parts.push_back(cat(mode_noun(t, t.mode_order[k]), " ", coord_of(t, k, p)));
    p = parent_of(t, k, p);
  }
  std::reverse(parts.begin(), parts.end());
  return absl::StrJoin(parts, ", ");
}

}  // namespace

void validate(const Tensor& t) {
  if (t.order < 0 || t.order > kMaxOrder)
    fail(SJ_ERR_INVALID_ARGUMENT, "order ", t.order, " is not supported (1 to ", kMaxOrder, ")");
  if (static_cast<int>(t.levels.size()) != t.order)
    fail(SJ_ERR_INTERNAL, "tensor has ", t.levels.size(), " levels for order ", t.order);
  // Every mode stored exactly once.
  std::array<bool, kMaxOrder> seen{};
  for (int l = 0; l < t.order; ++l) {
    int m = t.mode_order[l];
    if (m < 0 || m >= t.order || seen[m])
      fail(SJ_ERR_INVALID_ARGUMENT, "mode order must be a permutation of 0..", t.order - 1,
           " (level ", l, " names mode ", m, ")");
    seen[m] = true;
  }
  const int64_t max_coord = t.index_type == IndexType::I32 ? std::numeric_limits<int32_t>::max()
                                                           : std::numeric_limits<int64_t>::max();
  for (int m = 0; m < t.order; ++m) {
    if (t.dims[m] < 0) fail(SJ_ERR_INVALID_ARGUMENT, "dimension of mode ", m, " is negative (", t.dims[m], ")");
    // Coordinates run up to dim-1, which must fit the index type.
    if (t.dims[m] > 0 && t.dims[m] - 1 > max_coord)
      fail(SJ_ERR_OVERFLOW, "dimension ", t.dims[m], " of mode ", m, " does not fit ",
           to_string(t.index_type), " coordinates");
  }

  int64_t parents = 1;  // entries of the level above
  for (int l = 0; l < t.order; ++l) {
    const Level& lv = t.levels[l];
    const int64_t dim = t.level_dim(l);
    const char* noun = mode_noun(t, t.mode_order[l]);
    if (lv.kind == LevelKind::Dense) {
      if (dim != 0 && parents > std::numeric_limits<int64_t>::max() / dim)
        fail(SJ_ERR_OVERFLOW, "level ", l, ": ", parents, " x ", dim, " dense entries overflow int64");
      parents *= dim;
      continue;
    }
    if (lv.kind == LevelKind::Singleton) {
      if (l == 0) fail(SJ_ERR_INVALID_ARGUMENT, "level 0 cannot be singleton");
      if (parents > 0 && lv.crd.empty()) fail(SJ_ERR_NULL_POINTER, "level ", l, ": coordinate array is NULL");
      for (int64_t p = 0; p < parents; ++p) {
        int64_t c = crd_at(lv, t.index_type, p);
        if (c < 0 || c >= dim)
          fail(SJ_ERR_INVALID_TENSOR, "entry ", p, ": ", noun, " ", c, " out of range [0, ", dim, ")");
      }
      // 2-D COO (a singleton under a non-unique level): entries of one row must be ordered and
      // unique by column. Deeper layouts are checked entry by entry below: there, equal outer
      // coordinates may still have different parents or differ further down.
      if (t.order == 2 && l == 1 && t.levels[0].kind == LevelKind::Compressed && !t.levels[0].unique) {
        const Level& up = t.levels[l - 1];
        for (int64_t p = 1; p < parents; ++p) {
          if (crd_at(up, t.index_type, p) != crd_at(up, t.index_type, p - 1)) continue;
          int64_t a = crd_at(lv, t.index_type, p - 1), b = crd_at(lv, t.index_type, p);
          if (b < a)
            fail(SJ_ERR_INVALID_TENSOR, mode_noun(t, t.mode_order[l - 1]), " ", crd_at(up, t.index_type, p), ": ",
                 noun, " ", b, " follows ", a, " (coordinates must be sorted)");
          if (b == a)
            fail(SJ_ERR_INVALID_TENSOR, mode_noun(t, t.mode_order[l - 1]), " ", crd_at(up, t.index_type, p), ": ",
                 noun, " ", b, " appears twice (coordinates must be unique)");
        }
      }
      continue;
    }
    // Compressed.
    if (lv.pos.empty()) fail(SJ_ERR_NULL_POINTER, "level ", l, " (", noun, "s): position array is NULL");
    const int64_t* pos = lv.pos.as<int64_t>();
    if (pos[0] != 0)
      fail(SJ_ERR_INVALID_TENSOR, "level ", l, " (", noun, "s): positions must start at 0, not ", pos[0]);
    for (int64_t p = 0; p < parents; ++p) {
      if (pos[p + 1] < pos[p])
        fail(SJ_ERR_INVALID_TENSOR, segment_name(t, l, p), ": position ", pos[p + 1], " is less than ",
             pos[p], " (positions must be non-decreasing)");
    }
    const int64_t count = pos[parents];
    if (count > 0 && lv.crd.empty()) fail(SJ_ERR_NULL_POINTER, "level ", l, " (", noun, "s): coordinate array is NULL");
    for (int64_t p = 0; p < parents; ++p) {
      for (int64_t q = pos[p]; q < pos[p + 1]; ++q) {
        int64_t c = crd_at(lv, t.index_type, q);
        if (c < 0 || c >= dim)
          fail(SJ_ERR_INVALID_TENSOR, segment_name(t, l, p), ": ", noun, " ", c, " out of range [0, ", dim, ")");
        if (q == pos[p]) continue;
        int64_t prev = crd_at(lv, t.index_type, q - 1);
        if (c < prev)
          fail(SJ_ERR_INVALID_TENSOR, segment_name(t, l, p), ": ", noun, " ", c, " follows ", prev,
               " (coordinates must be sorted)");
        if (c == prev && lv.unique)
          fail(SJ_ERR_INVALID_TENSOR, segment_name(t, l, p), ": ", noun, " ", c,
               " appears twice (coordinates must be unique)");
      }
    }
    parents = count;
  }
  // Under a non-unique level, equal coordinates there are allowed, so uniqueness and order are
  // properties of whole entries: their coordinates, in level order, must strictly increase
  // from one entry to the next (every kernel, and index notation's merges, count on it).
  // (2-D COO is covered by its check above.)
  const bool coo_2d = t.order == 2 && t.levels[1].kind == LevelKind::Singleton;
  if (!coo_2d && std::any_of(t.levels.begin(), t.levels.end(), [](const Level& lv) { return !lv.unique; })) {
    std::array<int64_t, kMaxOrder> prev{}, cur{};
    for (int64_t e = 0; e < parents; ++e) {
      for (int64_t k = t.order - 1, p = e; k >= 0; --k) {
        cur[k] = coord_of(t, static_cast<int>(k), p);
        if (k > 0) p = parent_of(t, static_cast<int>(k), p);
      }
      if (e > 0) {
        const auto order = std::lexicographical_compare_three_way(cur.begin(), cur.begin() + t.order, prev.begin(),
                                                                  prev.begin() + t.order);
        if (order <= 0) {
          std::string at;
          for (int k = 0; k < t.order; ++k) at += cat(k ? ", " : "", mode_noun(t, t.mode_order[k]), " ", cur[k]);
          fail(SJ_ERR_INVALID_TENSOR, "entry ", e, " (", at, ")",
               order == 0 ? " appears twice (coordinates must be unique)"
                          : " comes after a greater one (coordinates must be sorted)");
        }
      }
      prev = cur;
    }
  }
  if (parents > 0 && t.values.empty()) fail(SJ_ERR_NULL_POINTER, "values array is NULL");
  if (t.value_type == ValueType::Bool) {
    const uint8_t* v = t.values.as<uint8_t>();
    for (int64_t p = 0; p < parents; ++p)
      if (v[p] > 1) fail(SJ_ERR_INVALID_TENSOR, "value ", p, " is ", int(v[p]), " (bool values must be 0 or 1)");
  }
}

}  // namespace sj

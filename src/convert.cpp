#include "src/convert.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "src/dispatch.hpp"
#include "src/error.hpp"

namespace sj {

FormatSpec format_spec(sj_format format, int order, const int* mode_order) {
  FormatSpec s;
  s.order = order;
  auto need = [&](int o, const char* name) {
    if (order != o) fail(SJ_ERR_FORMAT, name, " needs a tensor of order ", o, ", not ", order);
  };
  switch (format) {
    case SJ_FORMAT_CSR:
      need(2, "CSR");
      s.kinds = {LevelKind::Dense, LevelKind::Compressed};
      break;
    case SJ_FORMAT_CSC:
      need(2, "CSC");
      s.kinds = {LevelKind::Dense, LevelKind::Compressed};
      s.mode_order = {1, 0, 2, 3};
      break;
    case SJ_FORMAT_DCSR:
      need(2, "DCSR");
      s.kinds = {LevelKind::Compressed, LevelKind::Compressed};
      break;
    case SJ_FORMAT_COO:
      need(2, "COO");
      s.kinds = {LevelKind::Compressed, LevelKind::Singleton};
      s.unique[0] = false;
      break;
    case SJ_FORMAT_SPARSE_VECTOR:
      need(1, "a sparse vector");
      s.kinds = {LevelKind::Compressed};
      break;
    case SJ_FORMAT_DENSE:
      if (order < 1 || order > kMaxOrder) fail(SJ_ERR_FORMAT, "dense needs order 1 to 4");
      s.kinds = {LevelKind::Dense, LevelKind::Dense, LevelKind::Dense, LevelKind::Dense};
      break;
    case SJ_FORMAT_DENSE_COL_MAJOR:
      need(2, "dense column-major");
      s.kinds = {LevelKind::Dense, LevelKind::Dense};
      s.mode_order = {1, 0, 2, 3};
      break;
    case SJ_FORMAT_CSF:
      need(3, "CSF");
      s.kinds = {LevelKind::Dense, LevelKind::Compressed, LevelKind::Compressed};
      if (mode_order) {
        std::array<bool, 3> seen{};
        for (int l = 0; l < 3; ++l) {
          int m = mode_order[l];
          if (m < 0 || m > 2 || seen[m]) fail(SJ_ERR_INVALID_ARGUMENT, "CSF mode order must be a permutation of 0,1,2");
          seen[m] = true;
          s.mode_order[l] = m;
        }
      }
      break;
    default:
      fail(SJ_ERR_INVALID_ARGUMENT, "unknown format ", static_cast<int>(format));
  }
  return s;
}

FormatSpec format_spec_of(const Tensor& t) {
  FormatSpec s;
  s.order = t.order;
  for (int l = 0; l < t.order; ++l) {
    s.kinds[l] = t.levels[l].kind;
    s.unique[l] = t.levels[l].unique;
    s.mode_order[l] = t.mode_order[l];
  }
  return s;
}

// ------------------------------------------------------------------------------------------

namespace {

double value_at(const Tensor& t, int64_t p) {
  switch (t.value_type) {
    case ValueType::F32: return t.values.as<float>()[p];
    case ValueType::F64: return t.values.as<double>()[p];
    case ValueType::Bool: return t.values.as<uint8_t>()[p];
  }
  return 0;
}

void store_value(Buffer& b, ValueType vt, int64_t p, double v) {
  switch (vt) {
    case ValueType::F32: b.as_mut<float>()[p] = static_cast<float>(v); break;
    case ValueType::F64: b.as_mut<double>()[p] = v; break;
    case ValueType::Bool: b.as_mut<uint8_t>()[p] = v != 0.0; break;
  }
}

void store_crd(Buffer& b, IndexType it, int64_t p, int64_t c) {
  if (it == IndexType::I32) b.as_mut<int32_t>()[p] = static_cast<int32_t>(c);
  else b.as_mut<int64_t>()[p] = c;
}

// Walks the levels depth-first, recording each stored leaf's coordinates.
void collect(const Tensor& t, int l, int64_t parent, std::array<int64_t, kMaxOrder>& c, CooTensor& out) {
  if (l == t.order) {
    for (int m = 0; m < t.order; ++m) out.coords[m].push_back(c[m]);
    out.values.push_back(value_at(t, parent));
    return;
  }
  const Level& lv = t.levels[l];
  const int mode = t.mode_order[l];
  switch (lv.kind) {
    case LevelKind::Dense: {
      const int64_t dim = t.level_dim(l);
      for (int64_t i = 0; i < dim; ++i) {
        c[mode] = i;
        collect(t, l + 1, parent * dim + i, c, out);
      }
      break;
    }
    case LevelKind::Compressed: {
      const int64_t* pos = lv.pos.as<int64_t>();
      for (int64_t p = pos[parent]; p < pos[parent + 1]; ++p) {
        c[mode] = crd_at(lv, t.index_type, p);
        collect(t, l + 1, p, c, out);
      }
      break;
    }
    case LevelKind::Singleton:
      c[mode] = crd_at(lv, t.index_type, parent);
      collect(t, l + 1, parent, c, out);
      break;
  }
}

}  // namespace

CooTensor to_coo(const Tensor& t) {
  CooTensor out;
  out.order = t.order;
  out.dims = t.dims;
  const int64_t n = t.order == 0 ? 1 : t.nnz();
  for (int m = 0; m < t.order; ++m) out.coords[m].reserve(n);
  out.values.reserve(n);
  std::array<int64_t, kMaxOrder> c{};
  collect(t, 0, 0, c, out);
  return out;
}

Tensor from_coo(const CooTensor& coo, const FormatSpec& spec, IndexType it, ValueType vt,
                const Allocator& alloc, Duplicates dup) {
  const int order = coo.order;
  if (spec.order != order) fail(SJ_ERR_FORMAT, "format of order ", spec.order, " for a tensor of order ", order);
  const int64_t n = coo.nnz();
  for (int m = 0; m < order; ++m) {
    if (static_cast<int64_t>(coo.coords[m].size()) != n) fail(SJ_ERR_INTERNAL, "ragged coordinate list");
    for (int64_t e = 0; e < n; ++e) {
      int64_t c = coo.coords[m][e];
      if (c < 0 || c >= coo.dims[m])
        fail(SJ_ERR_INVALID_TENSOR, "entry ", e, ": mode-", m, " coordinate ", c, " out of range [0, ",
             coo.dims[m], ")");
    }
  }
  // Sort entries by coordinates in level order (stable: duplicates keep input order).
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  auto key_less = [&](int64_t a, int64_t b) {
    for (int l = 0; l < order; ++l) {
      int64_t ca = coo.coords[spec.mode_order[l]][a], cb = coo.coords[spec.mode_order[l]][b];
      if (ca != cb) return ca < cb;
    }
    return false;
  };
  auto same = [&](int64_t a, int64_t b) {
    for (int m = 0; m < order; ++m)
      if (coo.coords[m][a] != coo.coords[m][b]) return false;
    return true;
  };
  bool sorted = true;
  for (int64_t e = 1; e < n && sorted; ++e) sorted = !key_less(e, e - 1);
  if (!sorted) std::stable_sort(perm.begin(), perm.end(), key_less);
  // Merge duplicates.
  std::vector<int64_t> entry;  // representative input index of each distinct coordinate
  std::vector<double> vals;
  entry.reserve(n);
  vals.reserve(n);
  for (int64_t k = 0; k < n; ++k) {
    int64_t e = perm[k];
    if (!entry.empty() && same(entry.back(), e)) {
      if (dup == Duplicates::Refuse) {
        std::string where;
        for (int m = 0; m < order; ++m) where += cat(m ? ", " : "", coo.coords[m][e]);
        fail(SJ_ERR_INVALID_TENSOR, "duplicate entry at (", where, ") (input entries ", entry.back(), " and ", e, ")");
      }
      vals.back() += coo.values[e];
      continue;
    }
    entry.push_back(e);
    vals.push_back(coo.values[e]);
  }
  const int64_t m_entries = static_cast<int64_t>(entry.size());

  Tensor t;
  t.order = order;
  t.dims = coo.dims;
  t.mode_order = spec.mode_order;
  t.index_type = it;
  t.value_type = vt;
  t.levels.resize(order);
  for (int m = 0; m < order; ++m)
    if (it == IndexType::I32 && coo.dims[m] - 1 > INT32_MAX)
      fail(SJ_ERR_OVERFLOW, "dimension ", coo.dims[m], " does not fit i32 coordinates");

  // Build level by level; ppos[k] is entry k's position in the level just built.
  std::vector<int64_t> ppos(m_entries, 0), cur(m_entries);
  int64_t parents = 1;
  for (int l = 0; l < order; ++l) {
    Level& lv = t.levels[l];
    lv.kind = spec.kinds[l];
    lv.unique = spec.unique[l];
    const int mode = spec.mode_order[l];
    const int64_t dim = coo.dims[mode];
    auto crd_of = [&](int64_t k) { return coo.coords[mode][entry[k]]; };
    switch (lv.kind) {
      case LevelKind::Dense:
        if (dim != 0 && parents > INT64_MAX / dim) fail(SJ_ERR_OVERFLOW, "dense level ", l, " overflows int64");
        for (int64_t k = 0; k < m_entries; ++k) cur[k] = ppos[k] * dim + crd_of(k);
        parents *= dim;
        break;
      case LevelKind::Compressed: {
        lv.pos = Buffer::allocate_array(alloc, parents, sizeof(int64_t), 1);
        int64_t* pos = lv.pos.as_mut<int64_t>();
        std::fill(pos, pos + parents + 1, 0);
        // A new position whenever the parent or (for unique levels) the coordinate changes.
        int64_t count = 0;
        for (int64_t k = 0; k < m_entries; ++k) {
          bool fresh = k == 0 || ppos[k] != ppos[k - 1] || !lv.unique || crd_of(k) != crd_of(k - 1);
          if (fresh) {
            ++count;
            ++pos[ppos[k] + 1];
          }
          cur[k] = count - 1;
        }
        for (int64_t p = 0; p < parents; ++p) pos[p + 1] += pos[p];
        lv.crd = Buffer::allocate_array(alloc, count, index_size(it));
        for (int64_t k = 0; k < m_entries; ++k) store_crd(lv.crd, it, cur[k], crd_of(k));
        parents = count;
        break;
      }
      case LevelKind::Singleton: {
        for (int64_t k = 1; k < m_entries; ++k)
          if (ppos[k] == ppos[k - 1])
            fail(SJ_ERR_FORMAT, "a singleton level ", l, " cannot hold two entries under one parent");
        lv.crd = Buffer::allocate_array(alloc, parents, index_size(it));
        for (int64_t k = 0; k < m_entries; ++k) {
          cur[k] = ppos[k];
          store_crd(lv.crd, it, cur[k], crd_of(k));
        }
        break;
      }
    }
    std::swap(ppos, cur);
  }
  const int64_t leaves = order == 0 ? 1 : parents;
  t.values = Buffer::allocate_array(alloc, leaves, value_size(vt));
  std::memset(t.values.mutable_data(), 0, value_size(vt) * leaves);
  for (int64_t k = 0; k < m_entries; ++k) store_value(t.values, vt, ppos[k], vals[k]);
  return t;
}

bool already_in(const Tensor& t, const FormatSpec& spec, IndexType it) {
  return format_spec_of(t) == spec && (t.index_type == it || !stores_coordinates(t));
}

namespace {

// `t` with its coordinates stored as `it`: the same levels, new coordinate arrays, positions
// and values shared (O(nnz), against the sort of the general path). Only when every
// coordinate fits, which dims bound (a tensor's coordinates are checked against its dims).
bool coordinates_fit(const Tensor& t, IndexType it) {
  if (it == IndexType::I64) return true;
  for (int m = 0; m < t.order; ++m)
    if (t.dims[m] > int64_t{std::numeric_limits<int32_t>::max()} + 1) return false;
  return true;
}

template <class From, class To> void narrow_or_widen(const Buffer& from, Buffer& to, int64_t n) {
  const From* src = from.as<From>();
  To* dst = to.as_mut<To>();
  for (int64_t p = 0; p < n; ++p) dst[p] = static_cast<To>(src[p]);
}

Tensor with_index_type(const Tensor& t, IndexType it, const Allocator& alloc) {
  Tensor out = t;
  out.derived = nullptr;
  out.index_type = it;
  for (int l = 0; l < t.order; ++l) {
    if (t.levels[l].kind == LevelKind::Dense) continue;
    const int64_t n = t.level_entries(l);
    Buffer crd = Buffer::allocate_array(alloc, n, index_size(it));
    if (it == IndexType::I32) narrow_or_widen<int64_t, int32_t>(t.levels[l].crd, crd, n);
    else narrow_or_widen<int32_t, int64_t>(t.levels[l].crd, crd, n);
    out.levels[l].crd = std::move(crd);
  }
  return out;
}

}  // namespace

Tensor convert(const Tensor& t, const FormatSpec& spec, IndexType it, const Allocator& alloc) {
  if (already_in(t, spec, it)) return t;
  const FormatSpec have = format_spec_of(t);
  if (have == spec && coordinates_fit(t, it)) return with_index_type(t, it, alloc);
  if (t.order == 2 && (is_csr(t) || is_csc(t)) && coordinates_fit(t, it)) {
    FormatSpec flipped = have;
    std::swap(flipped.mode_order[0], flipped.mode_order[1]);
    if (flipped == spec)
      return it == t.index_type ? flip_orientation(t, alloc) : flip_orientation(with_index_type(t, it, alloc), alloc);
  }
  return from_coo(to_coo(t), spec, it, t.value_type, alloc, Duplicates::Refuse);
}

namespace {
template <class I, class V> Tensor flip_typed(const Tensor& t, const Allocator& alloc) {
  const bool csr = is_csr(t);
  const int64_t outer = t.level_dim(0), inner = t.level_dim(1);
  const int64_t nnz = t.nnz();
  Tensor out = make_compressed_matrix(alloc, !csr, t.dims[0], t.dims[1], nnz, t.index_type, t.value_type);
  const int64_t* pos = t.levels[1].pos.as<int64_t>();
  const I* crd = t.levels[1].crd.as<I>();
  const V* val = t.values.as<V>();
  int64_t* opos = out.levels[1].pos.as_mut<int64_t>();
  I* ocrd = out.levels[1].crd.as_mut<I>();
  V* oval = out.values.as_mut<V>();
  // Counting sort by inner coordinate; walking segments in order keeps the result sorted.
  // The positions are their own cursors: opos[j] starts as segment j's first slot and ends as
  // its end, then shifts up one place. (A copy of them as cursors was a fresh array of 8 bytes
  // per column, whose page faults were most of a transpose's time on luxembourg: 115k columns.)
  std::fill(opos, opos + inner + 1, 0);
  for (int64_t p = 0; p < nnz; ++p) ++opos[crd[p] + 1];
  for (int64_t j = 0; j < inner; ++j) opos[j + 1] += opos[j];
  for (int64_t s = 0; s < outer; ++s) {
    for (int64_t p = pos[s]; p < pos[s + 1]; ++p) {
      const int64_t q = opos[crd[p]]++;
      ocrd[q] = static_cast<I>(s);
      oval[q] = val[p];
    }
  }
  std::memmove(opos + 1, opos, sizeof(int64_t) * static_cast<size_t>(inner));
  opos[0] = 0;
  return out;
}
}  // namespace

Tensor flip_orientation(const Tensor& t, const Allocator& alloc) {
  if (!(is_csr(t) || is_csc(t))) fail(SJ_ERR_FORMAT, "flip_orientation needs CSR or CSC, got ", t.describe());
  return with_types(t.index_type, t.value_type, [&](auto i, auto v) {
    return flip_typed<decltype(i), decltype(v)>(t, alloc);
  });
}

Tensor transpose(const Tensor& t, const Allocator& alloc) {
  if (t.order != 2) fail(SJ_ERR_FORMAT, "transpose needs a matrix, got ", t.describe());
  if (is_csr(t) || is_csc(t)) {
    // The other orientation's arrays, relabelled: CSC arrays of A are the CSR arrays of A^T.
    Tensor f = flip_orientation(t, alloc);
    std::swap(f.dims[0], f.dims[1]);
    std::swap(f.mode_order[0], f.mode_order[1]);
    return f;
  }
  CooTensor c = to_coo(t);
  std::swap(c.dims[0], c.dims[1]);
  std::swap(c.coords[0], c.coords[1]);
  return from_coo(c, format_spec_of(t), t.index_type, t.value_type, alloc, Duplicates::Refuse);
}

Tensor with_value_type(const Tensor& t, ValueType vt, const Allocator& alloc) {
  if (t.value_type == vt) return t;
  Tensor out = t;  // shares the coordinate arrays, not the derived forms (values differ)
  out.derived = nullptr;
  const int64_t n = t.order == 0 ? 1 : t.nnz();
  out.value_type = vt;
  out.values = Buffer::allocate_array(alloc, n, value_size(vt));
  for (int64_t p = 0; p < n; ++p) store_value(out.values, vt, p, value_at(t, p));
  return out;
}

void to_output_index_type(Tensor& result, int requested, IndexType like_inputs, const Allocator& alloc) {
  if (result.order == 0) return;
  IndexType it = output_index_type(requested, like_inputs);
  if (!stores_coordinates(result)) {
    result.index_type = it;  // nothing to convert: the type is a label
    return;
  }
  if (it == result.index_type) return;
  result = convert(result, format_spec_of(result), it, alloc);
}

}  // namespace sj

// The one tensor representation: per-level storage (dense / compressed / singleton), in a
// chosen level order, over owned or borrowed arrays. Named formats (CSR, CSC, ...) are just
// particular level lists; kernels take light views (CsView) of the matrices they need.
#pragma once
#include <array>
#include <cstring>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "src/buffer.hpp"
#include "src/types.hpp"

namespace sj {

constexpr int kMaxOrder = 4;

struct Level {
  LevelKind kind = LevelKind::Dense;
  bool unique = true;  // false only for COO's first level (compressed, repeated coordinates)
  Buffer pos;          // int64, compressed only: (entries of the parent level) + 1
  Buffer crd;          // index_type, compressed and singleton
};

struct DerivedForms;

struct Tensor {
  int order = 0;
  std::array<int64_t, kMaxOrder> dims{};        // logical dimension of each mode
  std::array<int, kMaxOrder> mode_order{0, 1, 2, 3};  // level l stores mode mode_order[l]
  // One per level, outermost first; stored inline (at most kMaxOrder), so that copying a
  // tensor, which every call does with its operands, allocates nothing.
  absl::InlinedVector<Level, kMaxOrder> levels;
  IndexType index_type = IndexType::I32;
  ValueType value_type = ValueType::F64;
  Buffer values;
  // Conversions made from this tensor, shared by its copies (set on tensors behind handles).
  std::shared_ptr<DerivedForms> derived;

  // Dimension of the mode stored at level l.
  int64_t level_dim(int l) const { return dims[mode_order[l]]; }
  // Number of entries (positions) at level l; the last level's count is the value count.
  int64_t level_entries(int l) const;
  int64_t nnz() const { return order == 0 ? 1 : level_entries(order - 1); }
  bool owns_arrays() const;
  std::optional<sj_format> named_format() const;
  std::string describe() const;  // "CSR 100x200 i32 f64 nnz=345" for logs and errors
};

// Reading a coordinate of either index type.
inline int64_t crd_at(const Level& lv, IndexType t, int64_t p) {
  return t == IndexType::I32 ? lv.crd.as<int32_t>()[p] : lv.crd.as<int64_t>()[p];
}

// A compressed matrix as kernels see it: `outer` segments (rows of CSR, columns of CSC),
// segment s holds coordinates crd[pos[s]..pos[s+1]) of the `inner` dimension.
template <class I, class V> struct CsView {
  int64_t outer = 0, inner = 0;
  const int64_t* pos = nullptr;
  const I* crd = nullptr;
  const V* val = nullptr;
  int64_t nnz() const { return outer == 0 ? 0 : pos[outer]; }
};

// A sparse vector as kernels see it.
template <class I, class V> struct SpVecView {
  int64_t n = 0, nnz = 0;
  const I* idx = nullptr;
  const V* val = nullptr;
};

// Kernel results before they become a Tensor (the ops layer copies them into buffers from
// the context's allocator).
template <class I, class V> struct CsResult {
  int64_t outer = 0, inner = 0;
  std::vector<int64_t> pos;
  std::vector<I> crd;
  std::vector<V> val;
};
template <class I, class V> struct SpVecResult {
  int64_t n = 0;
  std::vector<I> idx;
  std::vector<V> val;
};

bool is_csr(const Tensor& t);
bool is_csc(const Tensor& t);
bool is_sparse_vector(const Tensor& t);
bool is_dense(const Tensor& t);  // every level dense, identity order (row-major)
// Some level is not dense, so the tensor stores coordinates; otherwise its index type is only a
// label (sj_tensor_create_dense says int64) and converting it is free.
bool stores_coordinates(const Tensor& t);

// Views of a CSR (outer = rows) or CSC (outer = columns) tensor. The types must match.
template <class I, class V> CsView<I, V> cs_view(const Tensor& t) {
  CsView<I, V> v;
  v.outer = t.level_dim(0);
  v.inner = t.level_dim(1);
  v.pos = t.levels[1].pos.as<int64_t>();
  v.crd = t.levels[1].crd.as<I>();
  v.val = t.values.as<V>();
  return v;
}
template <class I, class V> SpVecView<I, V> spvec_view(const Tensor& t) {
  SpVecView<I, V> v;
  v.n = t.dims[0];
  v.nnz = t.nnz();
  v.idx = t.levels[0].crd.as<I>();
  v.val = t.values.as<V>();
  return v;
}

// Tensors that own their arrays, allocated through `alloc`.
Tensor make_compressed_matrix(const Allocator& alloc, bool csr, int64_t rows, int64_t cols,
                              int64_t nnz, IndexType it, ValueType vt);
// A result of make_compressed_matrix whose first `nnz` entries are its content, with its
// coordinates and values copied to arrays of exactly that size (the caller then drops the
// larger ones). Its positions are shared, not copied, where they are an array of their own:
// copying them again was ~5% of a 600k-row element-wise product.
Tensor shrink_compressed_matrix(const Tensor& c, int64_t nnz, const Allocator& alloc);
Tensor make_sparse_vector(const Allocator& alloc, int64_t n, int64_t nnz, IndexType it,
                          ValueType vt);
Tensor make_dense(const Allocator& alloc, int order, const int64_t* dims, ValueType vt);
// The same two built in place in `t`: a result that goes straight into its handle is not
// moved (a Tensor move and the destruction of the empty one left behind are ~200
// instructions, a tenth of a tiny SpMSpV call). `t` is empty (a default Tensor) or a kept
// result (capi/spare_handle.hpp), which is cleared first; init_sparse_vector instead refills
// its block when is_refillable_sparse_vector accepts it, the new vector fits the part of the
// block the kept one used, and `alloc` is the default allocator (the kept block came from it).
void init_sparse_vector(Tensor& t, const Allocator& alloc, int64_t n, int64_t nnz, IndexType it, ValueType vt);
void init_dense(Tensor& t, const Allocator& alloc, int order, const int64_t* dims, ValueType vt);
// Whether `t` is a sparse vector as init_sparse_vector makes it, in one block of at most
// `max_bytes` that nothing else holds (no copy of the tensor, no derived forms), so that it may
// be refilled in place. Never under AddressSanitizer, which then still reports a use of a
// destroyed result.
bool is_refillable_sparse_vector(const Tensor& t, size_t max_bytes);

// Turns a kernel result into an owned tensor (CSR when `csr`, else CSC), copying into
// buffers from the context's allocator.
template <class I, class V>
Tensor to_tensor(const Allocator& alloc, bool csr, const CsResult<I, V>& r, ValueType vt) {
  const int64_t nnz = static_cast<int64_t>(r.crd.size());
  Tensor t = make_compressed_matrix(alloc, csr, csr ? r.outer : r.inner, csr ? r.inner : r.outer,
                                    nnz, index_type_of<I>(), vt);
  std::memcpy(t.levels[1].pos.mutable_data(), r.pos.data(), sizeof(int64_t) * (r.outer + 1));
  if (nnz) {
    std::memcpy(t.levels[1].crd.mutable_data(), r.crd.data(), sizeof(I) * nnz);
    std::memcpy(t.values.mutable_data(), r.val.data(), sizeof(V) * nnz);
  }
  return t;
}
// A sparse vector of length n holding copies of idx[0, nnz) and val[0, nnz), built in `t`
// (as for init_sparse_vector).
template <class I, class V>
void init_sparse_vector_copy(Tensor& t, const Allocator& alloc, int64_t n, int64_t nnz, const I* idx, const V* val,
                             ValueType vt) {
  init_sparse_vector(t, alloc, n, nnz, index_type_of<I>(), vt);
  if (nnz) {
    std::memcpy(t.levels[0].crd.mutable_data(), idx, sizeof(I) * static_cast<size_t>(nnz));
    std::memcpy(t.values.mutable_data(), val, sizeof(V) * static_cast<size_t>(nnz));
  }
}
template <class I, class V>
Tensor to_tensor(const Allocator& alloc, const SpVecResult<I, V>& r, ValueType vt) {
  Tensor t;
  init_sparse_vector_copy(t, alloc, r.n, static_cast<int64_t>(r.idx.size()), r.idx.data(), r.val.data(), vt);
  return t;
}

// Checks every structural invariant and throws sj::Error(SJ_ERR_INVALID_TENSOR, ...) naming
// the first violation precisely ("row 17: column 5 follows 9 (coordinates must be sorted)").
void validate(const Tensor& t);

}  // namespace sj

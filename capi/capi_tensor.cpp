// Tensor handles: creation over caller arrays (borrowed or copied, validated unless trusted),
// from COO triplets and files; reading arrays back; conversion; destruction.
#include <cstring>
#include <limits>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "src/call_counter.hpp"
#include "src/convert.hpp"
#include "src/tensor_file.hpp"

namespace sj::capi {
namespace {

sj_index_type check_index_type(sj_index_type it) {
  if (it != SJ_INDEX_INT32 && it != SJ_INDEX_INT64)
    fail(SJ_ERR_INVALID_ARGUMENT, "index_type ", static_cast<int>(it), " is unknown");
  return it;
}
sj_value_type check_value_type(sj_value_type vt) {
  if (vt != SJ_VALUE_F32 && vt != SJ_VALUE_F64 && vt != SJ_VALUE_BOOL)
    fail(SJ_ERR_INVALID_ARGUMENT, "value_type ", static_cast<int>(vt), " is unknown");
  return vt;
}

int64_t checked_bytes(int64_t count, int elem, const char* what) {
  if (count < 0) fail(SJ_ERR_INVALID_TENSOR, what, " has a negative length (", count, ")");
  if (count > std::numeric_limits<int64_t>::max() / elem)
    fail(SJ_ERR_OVERFLOW, what, " of ", count, " entries overflows the address space");
  return count * elem;
}

// Builds a tensor over the caller's arrays. Buffer lengths come from the positions, so
// positions are checked (start at 0, non-negative end) before the next level relies on them.
Tensor borrow_desc(const sj_tensor_desc& d) {
  if (d.order < 1 || d.order > kMaxOrder) fail(SJ_ERR_INVALID_ARGUMENT, "order ", d.order, " is not supported (1 to 4)");
  require(d.dims, "desc.dims");
  require(d.levels, "desc.levels");
  Tensor t;
  t.order = d.order;
  t.index_type = from_c(check_index_type(d.index_type));
  t.value_type = from_c(check_value_type(d.value_type));
  for (int m = 0; m < d.order; ++m) {
    if (d.dims[m] < 0) fail(SJ_ERR_INVALID_ARGUMENT, "dimension of mode ", m, " is negative (", d.dims[m], ")");
    t.dims[m] = d.dims[m];
    t.mode_order[m] = d.mode_order ? d.mode_order[m] : m;
    if (t.mode_order[m] < 0 || t.mode_order[m] >= d.order)
      fail(SJ_ERR_INVALID_ARGUMENT, "mode_order[", m, "] = ", t.mode_order[m], " is not a mode");
  }
  std::array<bool, kMaxOrder> seen{};
  for (int m = 0; m < d.order; ++m) {
    if (seen[t.mode_order[m]]) fail(SJ_ERR_INVALID_ARGUMENT, "mode_order names mode ", t.mode_order[m], " twice");
    seen[t.mode_order[m]] = true;
  }
  t.levels.resize(d.order);
  int64_t parents = 1;
  for (int l = 0; l < d.order; ++l) {
    Level& lv = t.levels[l];
    sj_level_kind k = d.levels[l];
    if (k < SJ_LEVEL_DENSE || k > SJ_LEVEL_COMPRESSED_NONUNIQUE)
      fail(SJ_ERR_INVALID_ARGUMENT, "level ", l, " has unknown kind ", static_cast<int>(k));
    lv.kind = from_c(k);
    lv.unique = k != SJ_LEVEL_COMPRESSED_NONUNIQUE;
    const int64_t dim = t.level_dim(l);
    switch (lv.kind) {
      case LevelKind::Dense:
        if (dim != 0 && parents > std::numeric_limits<int64_t>::max() / dim)
          fail(SJ_ERR_OVERFLOW, "level ", l, ": ", parents, " x ", dim, " dense entries overflow int64");
        parents *= dim;
        break;
      case LevelKind::Compressed: {
        if (!d.pos) fail(SJ_ERR_NULL_POINTER, "desc.pos is NULL but level ", l, " is compressed");
        const int64_t* pos = d.pos[l];
        if (!pos) fail(SJ_ERR_NULL_POINTER, "level ", l, ": position array is NULL");
        if (pos[0] != 0) fail(SJ_ERR_INVALID_TENSOR, "level ", l, ": positions must start at 0, not ", pos[0]);
        lv.pos = Buffer::borrow(pos, checked_bytes(parents + 1, 8, "positions"));
        int64_t count = pos[parents];
        lv.crd = Buffer::borrow(d.crd ? d.crd[l] : nullptr,
                                checked_bytes(count, index_size(t.index_type), "coordinates"));
        if (count > 0 && (!d.crd || !d.crd[l])) fail(SJ_ERR_NULL_POINTER, "level ", l, ": coordinate array is NULL");
        parents = count;
        break;
      }
      case LevelKind::Singleton:
        if (parents > 0 && (!d.crd || !d.crd[l])) fail(SJ_ERR_NULL_POINTER, "level ", l, ": coordinate array is NULL");
        lv.crd = Buffer::borrow(d.crd ? d.crd[l] : nullptr, checked_bytes(parents, index_size(t.index_type), "coordinates"));
        break;
    }
  }
  if (parents > 0 && !d.values) fail(SJ_ERR_NULL_POINTER, "values array is NULL");
  t.values = Buffer::borrow(d.values, checked_bytes(parents, value_size(t.value_type), "values"));
  return t;
}

bool shares_an_array(const Tensor& a, const Tensor& b) {
  auto same = [](const Buffer& x, const Buffer& y) { return !x.empty() && x.data() == y.data(); };
  if (same(a.values, b.values)) return true;
  for (size_t l = 0; l < a.levels.size() && l < b.levels.size(); ++l)
    if (same(a.levels[l].pos, b.levels[l].pos) || same(a.levels[l].crd, b.levels[l].crd)) return true;
  return false;
}

Tensor deep_copy(const Tensor& t, const Allocator& alloc) {
  Tensor c = t;
  auto copy = [&](Buffer& b) {
    if (!b.empty() || b.bytes() == 0) b = Buffer::copy_of(alloc, b.data(), b.bytes());
  };
  for (auto& lv : c.levels) {
    if (lv.kind == LevelKind::Compressed) copy(lv.pos);
    if (lv.kind != LevelKind::Dense) copy(lv.crd);
  }
  copy(c.values);
  return c;
}

void check_flags(uint32_t flags) {
  if (flags & ~(SJ_TENSOR_COPY | SJ_TENSOR_TRUSTED)) fail(SJ_ERR_INVALID_ARGUMENT, "unknown tensor flags 0x", flags);
}

sj_status create_from_desc(sj_context* ctx, const sj_tensor_desc* desc, uint32_t flags, sj_tensor** out) {
  return guarded([&] {
    require(ctx, "ctx");
    require(desc, "desc");
    require(out, "out");
    check_flags(flags);
    Tensor t = borrow_desc(*desc);
    if (!(flags & SJ_TENSOR_TRUSTED)) validate(t);
    if (flags & SJ_TENSOR_COPY) t = deep_copy(t, ctx->impl->allocator);
    *out = new_tensor_handle(ctx, std::move(t));
  });
}

}  // namespace
}  // namespace sj::capi

using namespace sj;
using sj::capi::guarded;
using sj::capi::require;

extern "C" {

SJ_API sj_status sj_tensor_create(sj_context* ctx, const sj_tensor_desc* desc, uint32_t flags, sj_tensor** out) {
  return capi::create_from_desc(ctx, desc, flags, out);
}

SJ_API sj_status sj_tensor_create_csr(sj_context* ctx, int64_t rows, int64_t cols, sj_index_type it,
                                      sj_value_type vt, const int64_t* row_ptr, const void* col_ind,
                                      const void* values, uint32_t flags, sj_tensor** out) {
  int64_t dims[2] = {rows, cols};
  sj_level_kind levels[2] = {SJ_LEVEL_DENSE, SJ_LEVEL_COMPRESSED};
  const int64_t* pos[2] = {nullptr, row_ptr};
  const void* crd[2] = {nullptr, col_ind};
  sj_tensor_desc d{2, dims, nullptr, levels, it, vt, pos, crd, values};
  if (!row_ptr) return guarded([] { sj::fail(SJ_ERR_NULL_POINTER, "row_ptr is NULL"); });
  return capi::create_from_desc(ctx, &d, flags, out);
}

SJ_API sj_status sj_tensor_create_csc(sj_context* ctx, int64_t rows, int64_t cols, sj_index_type it,
                                      sj_value_type vt, const int64_t* col_ptr, const void* row_ind,
                                      const void* values, uint32_t flags, sj_tensor** out) {
  int64_t dims[2] = {rows, cols};
  int order[2] = {1, 0};
  sj_level_kind levels[2] = {SJ_LEVEL_DENSE, SJ_LEVEL_COMPRESSED};
  const int64_t* pos[2] = {nullptr, col_ptr};
  const void* crd[2] = {nullptr, row_ind};
  sj_tensor_desc d{2, dims, order, levels, it, vt, pos, crd, values};
  if (!col_ptr) return guarded([] { sj::fail(SJ_ERR_NULL_POINTER, "col_ptr is NULL"); });
  return capi::create_from_desc(ctx, &d, flags, out);
}

SJ_API sj_status sj_tensor_create_sparse_vector(sj_context* ctx, int64_t n, int64_t nnz, sj_index_type it,
                                                sj_value_type vt, const void* indices, const void* values,
                                                uint32_t flags, sj_tensor** out) {
  if (nnz < 0) return guarded([&] { sj::fail(SJ_ERR_INVALID_ARGUMENT, "nnz is negative (", nnz, ")"); });
  // The position array of a one-level tensor is {0, nnz}; it lives in the handle when borrowed.
  return guarded([&] {
    require(ctx, "ctx");
    require(out, "out");
    capi::check_flags(flags);
    int64_t dims[1] = {n};
    sj_level_kind levels[1] = {SJ_LEVEL_COMPRESSED};
    int64_t posv[2] = {0, nnz};
    const int64_t* pos[1] = {posv};
    const void* crd[1] = {indices};
    sj_tensor_desc d{1, dims, nullptr, levels, it, vt, pos, crd, values};
    Tensor t = capi::borrow_desc(d);
    t.levels[0].pos = Buffer::copy_of(ctx->impl->allocator, posv, sizeof posv);
    if (!(flags & SJ_TENSOR_TRUSTED)) validate(t);
    if (flags & SJ_TENSOR_COPY) t = capi::deep_copy(t, ctx->impl->allocator);
    *out = capi::new_tensor_handle(ctx, std::move(t));
  });
}

SJ_API sj_status sj_tensor_create_dense(sj_context* ctx, int order, const int64_t* dims, sj_value_type vt,
                                        const void* values, uint32_t flags, sj_tensor** out) {
  return guarded([&] {
    require(ctx, "ctx");
    require(dims, "dims");
    if (order < 1 || order > 2) fail(SJ_ERR_INVALID_ARGUMENT, "dense tensors of order ", order, " are not supported (1 or 2)");
    sj_level_kind levels[2] = {SJ_LEVEL_DENSE, SJ_LEVEL_DENSE};
    sj_tensor_desc d{order, dims, nullptr, levels, SJ_INDEX_INT64, vt, nullptr, nullptr, values};
    sj_status s = capi::create_from_desc(ctx, &d, flags, out);
    if (s != SJ_OK) throw Error(s, capi::last_error());
  });
}

SJ_API sj_status sj_tensor_create_coo(sj_context* ctx, int64_t rows, int64_t cols, int64_t nnz, sj_index_type it,
                                      sj_value_type vt, const void* row_ind, const void* col_ind, const void* values,
                                      int sum_duplicates, sj_tensor** out) {
  return guarded([&] {
    require(ctx, "ctx");
    require(out, "out");
    if (rows < 0 || cols < 0) fail(SJ_ERR_INVALID_ARGUMENT, "shape ", rows, "x", cols, " is negative");
    if (nnz < 0) fail(SJ_ERR_INVALID_ARGUMENT, "nnz is negative (", nnz, ")");
    if (nnz > 0) {
      require(row_ind, "row_ind");
      require(col_ind, "col_ind");
      require(values, "values");
    }
    const IndexType its = from_c(capi::check_index_type(it));
    const ValueType vts = from_c(capi::check_value_type(vt));
    CooTensor coo;
    coo.order = 2;
    coo.dims = {rows, cols, 0, 0};
    coo.coords[0].resize(nnz);
    coo.coords[1].resize(nnz);
    coo.values.resize(nnz);
    for (int64_t e = 0; e < nnz; ++e) {
      coo.coords[0][e] = its == IndexType::I32 ? static_cast<const int32_t*>(row_ind)[e] : static_cast<const int64_t*>(row_ind)[e];
      coo.coords[1][e] = its == IndexType::I32 ? static_cast<const int32_t*>(col_ind)[e] : static_cast<const int64_t*>(col_ind)[e];
      if (coo.coords[0][e] < 0 || coo.coords[0][e] >= rows)
        fail(SJ_ERR_INVALID_TENSOR, "entry ", e, ": row ", coo.coords[0][e], " out of range [0, ", rows, ")");
      if (coo.coords[1][e] < 0 || coo.coords[1][e] >= cols)
        fail(SJ_ERR_INVALID_TENSOR, "entry ", e, ": column ", coo.coords[1][e], " out of range [0, ", cols, ")");
      switch (vts) {
        case ValueType::F32: coo.values[e] = static_cast<const float*>(values)[e]; break;
        case ValueType::F64: coo.values[e] = static_cast<const double*>(values)[e]; break;
        case ValueType::Bool: coo.values[e] = static_cast<const uint8_t*>(values)[e] != 0; break;
      }
    }
    Tensor t = from_coo(coo, format_spec(SJ_FORMAT_CSR, 2), its, vts, ctx->impl->allocator,
                        sum_duplicates ? Duplicates::Sum : Duplicates::Refuse);
    *out = capi::new_tensor_handle(ctx, std::move(t));
  });
}

SJ_API sj_status sj_tensor_read_file(sj_context* ctx, const char* path, sj_tensor** out) {
  return guarded([&] {
    require(ctx, "ctx");
    require(path, "path");
    require(out, "out");
    Tensor t = read_tensor_file(path, ctx->impl->allocator);
    *out = capi::new_tensor_handle(ctx, std::move(t));
  });
}

SJ_API sj_status sj_tensor_write_file(sj_context* ctx, const sj_tensor* t, const char* path) {
  return guarded([&] {
    require(ctx, "ctx");
    require(t, "tensor");
    require(path, "path");
    write_tensor_file(t->t, path);
  });
}

SJ_API sj_status sj_tensor_get_info(const sj_tensor* t, sj_tensor_info* info) {
  return guarded([&] {
    require(t, "tensor");
    require(info, "info");
    sj_tensor_info r{};
    r.order = t->t.order;
    for (int l = 0; l < t->t.order; ++l) {
      r.dims[l] = t->t.dims[l];
      r.mode_order[l] = t->t.mode_order[l];
      r.levels[l] = t->t.levels[l].unique ? to_c(t->t.levels[l].kind) : SJ_LEVEL_COMPRESSED_NONUNIQUE;
    }
    r.index_type = to_c(t->t.index_type);
    r.value_type = to_c(t->t.value_type);
    r.nnz = t->t.nnz();
    auto f = t->t.named_format();
    r.format = f ? *f : static_cast<sj_format>(-1);
    r.owns_arrays = t->t.owns_arrays();
    *info = r;
  });
}

SJ_API sj_status sj_tensor_get_level(const sj_tensor* t, int level, const int64_t** pos, int64_t* pos_len,
                                     const void** crd, int64_t* crd_len) {
  return guarded([&] {
    require(t, "tensor");
    if (level < 0 || level >= t->t.order)
      fail(SJ_ERR_INVALID_ARGUMENT, "level ", level, " does not exist (order ", t->t.order, ")");
    const Level& lv = t->t.levels[level];
    const int64_t parents = level == 0 ? 1 : t->t.level_entries(level - 1);
    const bool has_pos = lv.kind == LevelKind::Compressed;
    const bool has_crd = lv.kind != LevelKind::Dense;
    if (pos) *pos = has_pos ? lv.pos.as<int64_t>() : nullptr;
    if (pos_len) *pos_len = has_pos ? parents + 1 : 0;
    if (crd) *crd = has_crd ? lv.crd.data() : nullptr;
    if (crd_len) *crd_len = has_crd ? t->t.level_entries(level) : 0;
  });
}

SJ_API sj_status sj_tensor_get_values(const sj_tensor* t, const void** values, int64_t* len) {
  return guarded([&] {
    require(t, "tensor");
    if (values) *values = t->t.values.data();
    if (len) *len = t->t.nnz();
  });
}

SJ_API sj_status sj_tensor_convert(sj_context* ctx, const sj_tensor* t, sj_format format, const int* mode_order,
                                   sj_index_type it, sj_tensor** out) {
  return guarded([&] {
    require(ctx, "ctx");
    require(t, "tensor");
    require(out, "out");
    FormatSpec spec = format_spec(format, t->t.order, mode_order);
    Tensor c = convert(t->t, spec, from_c(capi::check_index_type(it)), ctx->impl->allocator);
    // The result owns its arrays, from this context's allocator, even when nothing (or only the
    // index type) had to change: an array shared with `t` may be borrowed from the caller or
    // belong to another context, which can be destroyed first.
    if (!c.owns_arrays() || capi::shares_an_array(c, t->t)) c = capi::deep_copy(c, ctx->impl->allocator);
    *out = capi::new_tensor_handle(ctx, std::move(c));
  });
}

SJ_API sj_status sj_tensor_destroy(sj_tensor* t) {
  return guarded([&] {
    if (!t) return;
    // Destroyed twice: the first kept it for this thread's next result, and deleting it now
    // would leave that result a freed handle (glibc used to report the double free).
    if (capi::is_spare_handle(t)) return;
    // Kept or not before the count drops: the context may be destroyed as soon as it is 0.
    const bool kept = capi::keep_spare_handle(t);
    count_add(t->ctx->live_tensors, -1);
    if (!kept) delete t;
  });
}

}  // extern "C"

#include "src/output_copy.hpp"

#include <cstring>
#include <string>

#include "src/convert.hpp"
#include "src/error.hpp"

namespace sj {
namespace {

bool all_levels_dense(const Tensor& t) {
  for (int l = 0; l < t.order; ++l)
    if (t.levels[l].kind != LevelKind::Dense) return false;
  return true;
}

// One array of the layout against the caller's buffer: its length must fit the capacity,
// and a non-empty array needs a pointer.
// `capacity_name` is the field that holds its capacity ("pos_capacity", "pos_capacity[1]").
void check_buffer(const std::string& name, const std::string& capacity_name, int64_t len,
                  const void* ptr, int64_t capacity) {
  if (len == 0) return;
  if (!ptr) fail(SJ_ERR_NULL_POINTER, "buffers.", name, " is NULL but the result has ", len, " ", name, " entries");
  if (capacity < len)
    fail(SJ_ERR_INVALID_ARGUMENT, "buffers.", capacity_name, " is ", capacity, " but the result needs ", len,
         " entries (the caller's buffers were left untouched)");
}
// The same for a flat array; the capacity field's name is only built for the message (this
// check runs on every sj_plan_execute_into, where a string is a tenth of a tiny call).
void check_buffer(const char* name, int64_t len, const void* ptr, int64_t capacity) {
  if (len == 0 || (ptr && capacity >= len)) return;
  check_buffer(name, cat(name, "_capacity"), len, ptr, capacity);
}

}  // namespace

Tensor as_flat_output(const Tensor& t, const Allocator& alloc) {
  if (t.order == 2 && (is_csr(t) || is_csc(t))) return t;
  if (t.order == 1 && is_sparse_vector(t)) return t;
  if (t.order <= 2 && is_dense(t)) return t;  // order 0: a scalar
  if (t.order >= 1 && t.order <= 2 && all_levels_dense(t))
    return convert(t, format_spec(SJ_FORMAT_DENSE, t.order), t.index_type, alloc);
  if (t.order == 2) return convert(t, format_spec(SJ_FORMAT_CSR, 2), t.index_type, alloc);
  if (t.order >= 3) return t;  // per-level arrays as they are (level_layout / copy_levels)
  fail(SJ_ERR_FORMAT, "a result of order ", t.order, " (", t.describe(),
       ") has no layout for caller-owned buffers");
}

OutputLayout output_layout(const Tensor& t) {
  OutputLayout o;
  o.order = t.order;
  for (int m = 0; m < t.order && m < 2; ++m) o.dims[m] = t.dims[m];
  o.index_type = t.index_type;
  o.value_type = t.value_type;
  o.values_len = t.nnz();
  if (t.order >= 3) {  // per-level arrays only: pos_len = crd_len = 0
    const auto named = t.named_format();
    o.format = named ? *named : static_cast<sj_format>(-1);
  } else if (is_dense(t)) {
    o.format = SJ_FORMAT_DENSE;
  } else if (t.order == 1) {
    o.format = SJ_FORMAT_SPARSE_VECTOR;
    o.crd_len = o.values_len;
  } else {
    o.format = is_csr(t) ? SJ_FORMAT_CSR : SJ_FORMAT_CSC;
    o.pos_len = t.level_dim(0) + 1;
    o.crd_len = o.values_len;
  }
  return o;
}

void check_output_buffers(const OutputLayout& o, const OutputBuffers& b) {
  check_buffer("pos", o.pos_len, b.pos, b.pos_capacity);
  check_buffer("crd", o.crd_len, b.crd, b.crd_capacity);
  check_buffer("values", o.values_len, b.values, b.values_capacity);
}

void copy_output(const Tensor& t, const OutputLayout& o, const OutputBuffers& b) {
  if (t.order >= 3)
    fail(SJ_ERR_FORMAT, "a result of order ", t.order, " (", t.describe(),
         ") has one pos/crd pair per level: fill it with sj_pending_fill_levels (layout from "
         "sj_pending_get_levels)");
  check_output_buffers(o, b);
  if (t.order > 0) {  // a scalar (order 0) has its one value and no level
    const Level& inner = t.levels[t.order - 1];
    if (o.pos_len) std::memcpy(b.pos, inner.pos.data(), sizeof(int64_t) * o.pos_len);
    if (o.crd_len) std::memcpy(b.crd, inner.crd.data(), static_cast<size_t>(index_size(o.index_type)) * o.crd_len);
  }
  if (o.values_len)
    std::memcpy(b.values, t.values.data(), static_cast<size_t>(value_size(o.value_type)) * o.values_len);
}

LevelLayout level_layout(const Tensor& t) {
  LevelLayout o;
  o.order = t.order;
  o.index_type = t.index_type;
  o.value_type = t.value_type;
  o.values_len = t.nnz();
  for (int l = 0; l < t.order; ++l) {
    const Level& lv = t.levels[l];
    o.dims[l] = t.dims[l];
    o.mode_order[l] = t.mode_order[l];
    o.kinds[l] = lv.kind;
    o.unique[l] = lv.unique;
    if (lv.kind == LevelKind::Compressed) o.pos_len[l] = (l == 0 ? 1 : t.level_entries(l - 1)) + 1;
    if (lv.kind != LevelKind::Dense) o.crd_len[l] = t.level_entries(l);
  }
  return o;
}

void copy_levels(const Tensor& t, const LevelLayout& o, const LevelBuffers& b) {
  for (int l = 0; l < o.order; ++l) {
    check_buffer(cat("pos[", l, "]"), cat("pos_capacity[", l, "]"), o.pos_len[l], b.pos[l], b.pos_capacity[l]);
    check_buffer(cat("crd[", l, "]"), cat("crd_capacity[", l, "]"), o.crd_len[l], b.crd[l], b.crd_capacity[l]);
  }
  check_buffer("values", o.values_len, b.values, b.values_capacity);
  const size_t isz = static_cast<size_t>(index_size(o.index_type));
  for (int l = 0; l < o.order; ++l) {
    const Level& lv = t.levels[l];
    if (o.pos_len[l]) std::memcpy(b.pos[l], lv.pos.data(), sizeof(int64_t) * o.pos_len[l]);
    if (o.crd_len[l]) std::memcpy(b.crd[l], lv.crd.data(), isz * o.crd_len[l]);
  }
  if (o.values_len)
    std::memcpy(b.values, t.values.data(), static_cast<size_t>(value_size(o.value_type)) * o.values_len);
}

}  // namespace sj

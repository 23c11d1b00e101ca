// Caller-owned outputs: a computed result described as flat arrays (positions, coordinates,
// values) and copied into buffers the caller allocated. The description is the first pass of
// the C API's two-pass form; the copy, which checks every capacity before writing anything,
// is the second.
#pragma once
#include <cstdint>

#include "src/tensor.hpp"

namespace sj {

// The flat layout of a result: CSR, CSC, sparse vector or dense (row-major; order 0 is a
// scalar with one value). Results of order 3 and 4 have per-level arrays (LevelLayout).
struct OutputLayout {
  sj_format format = SJ_FORMAT_CSR;
  int order = 2;
  int64_t dims[2] = {0, 0};
  IndexType index_type = IndexType::I32;
  ValueType value_type = ValueType::F64;
  int64_t pos_len = 0;     // int64 positions (outer dimension + 1), 0 when there are none
  int64_t crd_len = 0;     // coordinates of index_type, 0 for dense results
  int64_t values_len = 0;  // values of value_type
};

// Where the caller wants the arrays; capacities count elements, not bytes.
struct OutputBuffers {
  int64_t* pos = nullptr;
  int64_t pos_capacity = 0;
  void* crd = nullptr;
  int64_t crd_capacity = 0;
  void* values = nullptr;
  int64_t values_capacity = 0;
};

// The per-level layout of a result of any order (the C API's sj_output_levels).
struct LevelLayout {
  int order = 0;
  int64_t dims[kMaxOrder] = {0, 0, 0, 0};
  int mode_order[kMaxOrder] = {0, 1, 2, 3};
  LevelKind kinds[kMaxOrder] = {LevelKind::Dense, LevelKind::Dense, LevelKind::Dense, LevelKind::Dense};
  bool unique[kMaxOrder] = {true, true, true, true};
  IndexType index_type = IndexType::I32;
  ValueType value_type = ValueType::F64;
  int64_t pos_len[kMaxOrder] = {0, 0, 0, 0};  // int64 positions of compressed levels
  int64_t crd_len[kMaxOrder] = {0, 0, 0, 0};  // coordinates of compressed and singleton levels
  int64_t values_len = 0;
};

// The caller's per-level arrays; capacities count elements.
struct LevelBuffers {
  int64_t* pos[kMaxOrder] = {};
  int64_t pos_capacity[kMaxOrder] = {};
  void* crd[kMaxOrder] = {};
  int64_t crd_capacity[kMaxOrder] = {};
  void* values = nullptr;
  int64_t values_capacity = 0;
};

// `t` in a layout the caller can receive: CSR, CSC, sparse vectors and dense tensors stay as
// they are; other matrix formats (a transposed DCSR or COO) become CSR through `alloc`.
Tensor as_flat_output(const Tensor& t, const Allocator& alloc);

// The layout of a tensor that as_flat_output returned. For order 3 and 4 (no flat layout) only
// the order, the first two dims, the types, the values and the named format (or -1) are set.
OutputLayout output_layout(const Tensor& t);

// The per-level layout of any tensor.
LevelLayout level_layout(const Tensor& t);

// Checks the caller's buffers against a flat layout (a length > 0 needs a non-null pointer and
// enough capacity). Throws SJ_ERR_NULL_POINTER or SJ_ERR_INVALID_ARGUMENT naming the first
// array that does not fit.
void check_output_buffers(const OutputLayout& layout, const OutputBuffers& out);
// Inline test of the same (it runs on every sj_plan_execute_into); the message only when one fails.
inline bool output_buffers_fit(const OutputLayout& o, const OutputBuffers& b) {
  auto fits = [](int64_t len, const void* ptr, int64_t capacity) { return len == 0 || (ptr && capacity >= len); };
  return fits(o.pos_len, b.pos, b.pos_capacity) && fits(o.crd_len, b.crd, b.crd_capacity) &&
         fits(o.values_len, b.values, b.values_capacity);
}

// A result written straight into the caller's buffers (sj_plan_execute_into). A schedule that
// can put its result there sets `layout` and `written`, and must write nothing when a buffer
// is too small: it checks them first (check_output_buffers), or writes only into buffers that
// hold every entry the result could have. The plan copies the tensor of any other schedule.
struct OutputTarget {
  const OutputBuffers* buffers = nullptr;
  IndexType index_type = IndexType::I32;  // the coordinate type the caller receives
  OutputLayout layout;                   // set as soon as the result's size is known
  bool layout_known = false;
  bool written = false;
};

// Checks every buffer against the layout (a length > 0 needs a non-null pointer and enough
// capacity) and only then copies. Throws SJ_ERR_NULL_POINTER or SJ_ERR_INVALID_ARGUMENT
// naming the first array that does not fit, before any byte is written.
void copy_output(const Tensor& t, const OutputLayout& layout, const OutputBuffers& out);

// The same for every level's arrays: all buffers are checked (naming the level) before any
// byte is written.
void copy_levels(const Tensor& t, const LevelLayout& layout, const LevelBuffers& out);

}  // namespace sj

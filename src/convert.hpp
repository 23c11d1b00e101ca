// Conversions between formats. The general path goes through a sorted coordinate list and
// builds any level list; CSR<->CSC has a counting-sort fast path. A conversion to the format
// a tensor already has returns it unchanged (sharing its arrays).
#pragma once
#include <array>
#include <optional>

#include "src/coo.hpp"
#include "src/tensor.hpp"

namespace sj {

// A target layout: level kinds (with uniqueness) and the level -> mode order.
struct FormatSpec {
  int order = 0;
  std::array<LevelKind, kMaxOrder> kinds{};
  std::array<bool, kMaxOrder> unique{true, true, true, true};
  std::array<int, kMaxOrder> mode_order{0, 1, 2, 3};
  bool operator==(const FormatSpec&) const = default;
};

// The level list of a named format for a tensor of this order; `mode_order` (may be null)
// reorders the levels of CSF. Throws SJ_ERR_FORMAT when the format does not fit the order.
FormatSpec format_spec(sj_format format, int order, const int* mode_order = nullptr);
FormatSpec format_spec_of(const Tensor& t);

enum class Duplicates { Refuse, Sum };

// All stored entries with logical coordinates; dense levels contribute every position
// (explicit zeros included).
CooTensor to_coo(const Tensor& t);

// Builds an owned tensor from a coordinate list (any order); duplicates are summed or
// refused with their coordinates. Coordinates are checked against dims.
Tensor from_coo(const CooTensor& coo, const FormatSpec& spec, IndexType it, ValueType vt,
                const Allocator& alloc, Duplicates dup = Duplicates::Refuse);

// Whether `t` already is in the layout `spec` with index type `it` (what convert returns as is).
bool already_in(const Tensor& t, const FormatSpec& spec, IndexType it);
// `t` in the layout `spec` with index type `it` (value type unchanged).
Tensor convert(const Tensor& t, const FormatSpec& spec, IndexType it, const Allocator& alloc);
// A plan's result in the coordinate type the caller asked for (sj_op_options.output_index_type;
// -1 = `like_inputs`: i64 when any operand has it, whatever type the kernels ran in). Scalars
// and all-dense results have no coordinates: only their label changes. In place: a result
// already in that type is not moved (a Tensor move is ~100 instructions, a tiny call's tenth).
void to_output_index_type(Tensor& result, int requested, IndexType like_inputs, const Allocator& alloc);
// The coordinate type that means: `requested` (an sj_index_type), or `like_inputs` for -1.
inline IndexType output_index_type(int requested, IndexType like_inputs) {
  return requested == -1 ? like_inputs : from_c(static_cast<sj_index_type>(requested));
}

// A CSR or CSC matrix in the other orientation (same matrix): counting sort, O(nnz + n).
Tensor flip_orientation(const Tensor& t, const Allocator& alloc);

// The transpose A^T in the same named format as A.
Tensor transpose(const Tensor& t, const Allocator& alloc);

// Casts values between f32/f64/bool (bool: nonzero -> 1).
Tensor with_value_type(const Tensor& t, ValueType vt, const Allocator& alloc);

}  // namespace sj

// B's CSC form for the schedules that walk B by column (SpGEMM `inner`, masked SpGEMM `inner`):
// one helper, so the two schedules share the same rules and the same cached copy.
#pragma once
#include "src/allocator.hpp"
#include "src/tensor.hpp"

namespace sj {

// True when the caller's B already is B's CSC form as the product sees it (B given as CSC, or
// B^T given as CSR when transpose_b): no copy is made.
bool csc_given(const Tensor& given, bool transpose_b);

// Bytes of the CSC copy csc_of_b makes of `b_csr` (arrays and the conversion's cursors).
size_t csc_copy_bytes(const Tensor& b_csr);

// B (as the product sees it, transpose applied) in CSC form of `b_csr`'s index type. `given`
// is the caller's operand, `b_csr` its prepared CSR form. The caller's arrays are used when
// they already are that form (relabelled for B^T given as CSR); otherwise a copy is made from
// `b_csr` through `alloc` (the context's allocator hooks), charged first against its memory
// cap as a whole, and kept with the caller's handle (its arrays do not change while it lives)
// so later calls convert once. A failure (SJ_ERR_OUT_OF_MEMORY) keeps nothing on the handle.
Tensor csc_of_b(const Tensor& given, const Tensor& b_csr, bool transpose_b, const Allocator& alloc);

}  // namespace sj

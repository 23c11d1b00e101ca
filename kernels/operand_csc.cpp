#include "kernels/operand_csc.hpp"

#include <cstdint>
#include <utility>

#include "src/convert.hpp"
#include "src/derived_forms.hpp"
#include "src/error.hpp"

namespace sj {

bool csc_given(const Tensor& given, bool transpose_b) { return transpose_b ? is_csr(given) : is_csc(given); }

// The copy's arrays (columns + 1 positions, the entries) and the counting sort's column cursors
// (flip_orientation), charged as a whole before any of them is allocated.
size_t csc_copy_bytes(const Tensor& b_csr) {
  const int64_t cols = b_csr.dims[1];
  const size_t entry = static_cast<size_t>(index_size(b_csr.index_type) + value_size(b_csr.value_type));
  return estimate_bytes(cols < INT64_MAX ? cols + 1 : cols, 2 * sizeof(int64_t), estimate_bytes(b_csr.nnz(), entry));
}

Tensor csc_of_b(const Tensor& given, const Tensor& b_csr, bool transpose_b, const Allocator& alloc) {
  if (!transpose_b && is_csc(given) && given.index_type == b_csr.index_type) return given;
  if (transpose_b && is_csr(given) && given.index_type == b_csr.index_type) {  // B^T given as CSR: relabel
    Tensor t = given;
    std::swap(t.dims[0], t.dims[1]);
    std::swap(t.mode_order[0], t.mode_order[1]);
    t.derived = nullptr;
    return t;
  }
  auto make = [&] {
    alloc.charge(csc_copy_bytes(b_csr), [&] { return cat("B's CSC copy (", b_csr.dims[1], " columns, ", b_csr.nnz(), " entries)"); });
    return flip_orientation(b_csr, alloc);
  };
  if (!given.derived) return make();
  return given.derived->get_or_make(cat(transpose_b ? "csc-of-transpose/" : "csc/", to_string(b_csr.index_type)), make);
}

}  // namespace sj

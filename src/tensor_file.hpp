// Tensors from and to files: Matrix Market (.mtx) for vectors and matrices, FROSTT (.tns)
// for tensors of order 3 and more. The extension decides.
#pragma once
#include <string>
#include <string_view>

#include "src/tensor.hpp"

namespace sj {

// A matrix becomes CSR (i32 coordinates when the dims allow), a 3-D tensor CSF
// (dense, compressed, compressed), a 1-D one a sparse vector. Values f64; duplicates summed.
Tensor read_tensor_file(const std::string& path, const Allocator& alloc);
// The same from text already in memory; `name`'s extension picks the format and names the
// text in error messages (the fuzz targets in tests/fuzz enter here).
Tensor parse_tensor_text(std::string_view text, const std::string& name, const Allocator& alloc);

// Vectors are written as n x 1 matrices.
void write_tensor_file(const Tensor& t, const std::string& path);

}  // namespace sj

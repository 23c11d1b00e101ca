#include "src/tensor_file.hpp"

#include <algorithm>
#include <cctype>

#include "src/convert.hpp"
#include "src/error.hpp"
#include "src/frostt.hpp"
#include "src/matrix_market.hpp"

namespace sj {
namespace {

std::string lower_extension(const std::string& path) {
  auto dot = path.find_last_of('.');
  auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

FormatSpec default_spec(int order) {
  switch (order) {
    case 1: return format_spec(SJ_FORMAT_SPARSE_VECTOR, 1);
    case 2: return format_spec(SJ_FORMAT_CSR, 2);
    case 3: return format_spec(SJ_FORMAT_CSF, 3);
    default: {
      FormatSpec s;
      s.order = order;
      s.kinds = {LevelKind::Dense, LevelKind::Compressed, LevelKind::Compressed, LevelKind::Compressed};
      return s;
    }
  }
}

}  // namespace

Tensor read_tensor_file(const std::string& path, const Allocator& alloc) {
  const std::string ext = lower_extension(path);
  if (ext != ".mtx" && ext != ".tns")
    fail(SJ_ERR_INVALID_ARGUMENT, path, ": unknown file type '", ext, "' (expected .mtx or .tns)");
  return parse_tensor_text(textio::read_file(path), path, alloc);
}

Tensor parse_tensor_text(std::string_view text, const std::string& name, const Allocator& alloc) {
  const std::string ext = lower_extension(name);
  CooTensor coo;
  if (ext == ".mtx") coo = parse_matrix_market(text, name);
  else if (ext == ".tns") coo = parse_frostt(text, name);
  else fail(SJ_ERR_INVALID_ARGUMENT, name, ": unknown file type '", ext, "' (expected .mtx or .tns)");
  bool fits32 = true;
  for (int m = 0; m < coo.order; ++m) fits32 &= coo.dims[m] - 1 <= INT32_MAX;
  return from_coo(coo, default_spec(coo.order), fits32 ? IndexType::I32 : IndexType::I64, ValueType::F64, alloc,
                  Duplicates::Sum);
}

void write_tensor_file(const Tensor& t, const std::string& path) {
  const std::string ext = lower_extension(path);
  CooTensor coo = to_coo(t);
  if (ext == ".mtx") {
    if (t.order > 2) fail(SJ_ERR_FORMAT, path, ": Matrix Market holds vectors and matrices; a tensor of order ", t.order, " needs .tns");
    if (t.order == 1) {
      coo.order = 2;
      coo.dims[1] = 1;
      coo.coords[1].assign(coo.values.size(), 0);
    }
    write_matrix_market(coo, path);
  } else if (ext == ".tns") {
    write_frostt(coo, path);
  } else {
    fail(SJ_ERR_INVALID_ARGUMENT, path, ": unknown file type '", ext, "' (expected .mtx or .tns)");
  }
}

}  // namespace sj

// Fuzz harness for the file readers: the bytes are a whole .mtx or .tns file, read through
// the same path as sj_tensor_read_file (parse, sort, sum duplicates, build CSR / CSF / a
// sparse vector). Bad input must be an sj::Error; whatever is accepted must validate.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/error.hpp"
#include "src/tensor.hpp"
#include "src/tensor_file.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace sj::fuzz {

inline int read_text(const uint8_t* data, size_t size, const std::string& name) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    Tensor t = parse_tensor_text(text, name, capped_allocator());
    try {
      validate(t);
    } catch (const Error& e) {
      broken("the reader returned a tensor that fails validation:", e.what());
    }
    (void)t.describe();
  } catch (const Error& e) {
    SJ_FUZZ_CHECK(e.status() != SJ_ERR_INTERNAL, e.what());
  }
  return 0;
}

}  // namespace sj::fuzz

// Turns runtime index/value types into template arguments: f(I{}, V{}).
#pragma once
#include <cstdint>

#include "src/types.hpp"

namespace sj {

template <class F> decltype(auto) with_types(IndexType it, ValueType vt, F&& f) {
  if (it == IndexType::I32) {
    if (vt == ValueType::F32) return f(int32_t{}, float{});
    if (vt == ValueType::F64) return f(int32_t{}, double{});
    return f(int32_t{}, uint8_t{});
  }
  if (vt == ValueType::F32) return f(int64_t{}, float{});
  if (vt == ValueType::F64) return f(int64_t{}, double{});
  return f(int64_t{}, uint8_t{});
}

}  // namespace sj

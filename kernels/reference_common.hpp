// Checks shared by the reference kernels: output sizes that must not overflow, and operand
// shapes that must fit. The ops layer validates first; these keep the kernels safe on
// their own (a kernel never writes past an array because a size wrapped around).
#pragma once
#include <cstdint>
#include <vector>

#include "src/error.hpp"

namespace sj::ref::detail {

inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    fail(SJ_ERR_OVERFLOW, what, ": ", a, " + ", b, " overflows int64");
  return r;
}

inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fail(SJ_ERR_OVERFLOW, what, ": ", a, " * ", b, " overflows int64");
  return r;
}

// A count about to size a std::vector<T>: refuse it (instead of std::length_error) when
// it cannot be one.
template <class T> size_t vector_size(int64_t n, const char* what) {
  if (n < 0 || static_cast<uint64_t>(n) > std::vector<T>().max_size())
    fail(SJ_ERR_OVERFLOW, what, ": ", n, " elements do not fit an array");
  return static_cast<size_t>(n);
}

template <class... Args> void require_shape(bool ok, const Args&... parts) {
  if (!ok) fail(SJ_ERR_SHAPE_MISMATCH, parts...);
}

}  // namespace sj::ref::detail

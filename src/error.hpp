// Internal errors: code throws sj::Error(status, message); the C API catches it at the
// boundary and turns it into an sj_status plus the per-thread message. Nothing else throws
// across files except std::bad_alloc, which the boundary maps to SJ_ERR_OUT_OF_MEMORY.
#pragma once
#include <charconv>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "sparsejit/sparsejit.h"

namespace sj {

class Error : public std::runtime_error {
 public:
  Error(sj_status status, std::string message)
      : std::runtime_error(std::move(message)), status_(status) {}
  sj_status status() const noexcept { return status_; }

 private:
  sj_status status_;
};

// Appends one message part. (Debian's Abseil is built without std::string_view support in
// absl::StrCat, so messages are assembled here: strings, numbers and chars.)
template <class T> void append_part(std::string& out, const T& part) {
  if constexpr (std::is_same_v<T, bool>) {
    out += part ? "true" : "false";
  } else if constexpr (std::is_same_v<T, char>) {
    out += part;
  } else if constexpr (std::is_arithmetic_v<T>) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, part);
    out.append(buf, r.ptr);
  } else if constexpr (std::is_enum_v<T>) {
    append_part(out, static_cast<std::underlying_type_t<T>>(part));
  } else {
    out += std::string_view(part);
  }
}

template <class... Args> std::string cat(const Args&... parts) {
  std::string out;
  (append_part(out, parts), ...);
  return out;
}

// fail(SJ_ERR_INVALID_TENSOR, "row ", r, ": column ", c, " follows ", prev, " (...)").
template <class... Args> [[noreturn]] void fail(sj_status status, const Args&... parts) {
  throw Error(status, cat(parts...));
}

}  // namespace sj

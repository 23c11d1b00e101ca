// Internal errors: code throws sj::Error(status, message); the C API catches it at the
// boundary and turns it into an sj_status plus the per-thread message. Nothing else throws
// across files except std::bad_alloc, which the boundary maps to SJ_ERR_OUT_OF_MEMORY.
#pragma once
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
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

// Builds the message with absl::StrCat: fail(SJ_ERR_INVALID_TENSOR, "row ", r, ": ...").
template <class... Args>
[[noreturn]] void fail(sj_status status, const Args&... parts) {
  throw Error(status, absl::StrCat(parts...));
}

}  // namespace sj

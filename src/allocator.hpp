// Memory for results the library hands to callers goes through the context's allocator hooks
// (sj_allocator); temporaries inside a kernel use ordinary std containers.
#pragma once
#include <cstddef>
#include <memory>

#include "sparsejit/sparsejit.h"

namespace sj {

class Allocator {
 public:
  Allocator();  // the C library's aligned allocation
  explicit Allocator(const sj_allocator& hooks);

  // Allocates `bytes` (rounded up, 64-byte aligned, never a null pointer for 0 bytes) and
  // returns an owner whose deleter frees through the same hooks. Throws
  // sj::Error(SJ_ERR_OUT_OF_MEMORY) when the hook fails or the size overflows, or when the
  // context's memory cap would be exceeded.
  std::shared_ptr<void> allocate(size_t bytes) const;

  void set_memory_cap(size_t cap) { memory_cap_ = cap; }
  size_t memory_cap() const { return memory_cap_; }

 private:
  sj_allocator hooks_;
  size_t memory_cap_ = 0;
};

// The process-wide default, for code paths without a context (tests, tools).
const Allocator& default_allocator();

}  // namespace sj

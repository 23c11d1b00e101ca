// Memory for results the library hands to callers goes through the context's allocator hooks
// (sj_allocator); temporaries inside a kernel use ordinary std containers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

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

  // The library's own allocation (src/block_pool.hpp), not a host's hooks.
  bool is_default() const;

  void set_memory_cap(size_t cap) { memory_cap_ = cap; }
  size_t memory_cap() const { return memory_cap_; }

  // Charges an estimate against the memory cap before anything is allocated: `what` (an
  // output's upper bound or exact symbolic size, a workspace sized by a dimension, a derived
  // copy of an operand) would take `bytes`; over the cap it fails with SJ_ERR_OUT_OF_MEMORY
  // "<what> needs <bytes> bytes, over the memory cap of <cap> bytes". No-op without a cap.
  void charge(size_t bytes, std::string_view what) const;
  // The same with `what` built only when the charge fails (what() returns a string): a call
  // that charges its result pays no string formatting on the way (a heap string per call).
  template <class What, class = decltype(std::string_view(std::declval<What>()()))>
  void charge(size_t bytes, What&& what) const {
    if (over_cap(bytes)) charge(bytes, std::string_view(what()));
  }
  // True when a cap is set and `bytes` exceeds it.
  bool over_cap(size_t bytes) const { return memory_cap_ != 0 && bytes > memory_cap_; }

 private:
  sj_allocator hooks_;
  size_t memory_cap_ = 0;
};

// The model cost of a schedule that would need a workspace or copy over the memory cap: the
// automatic choice takes it only when nothing else can serve the call; forced, it refuses
// with SJ_ERR_OUT_OF_MEMORY when it charges that memory.
inline constexpr double kOverMemoryCapCost = 1e300;

// count elements of `elem` bytes plus `extra` bytes, saturating at SIZE_MAX (for estimates
// that may exceed any memory; a negative count counts as 0).
size_t estimate_bytes(int64_t count, size_t elem, size_t extra = 0);

// The process-wide default, for code paths without a context (tests, tools).
const Allocator& default_allocator();

}  // namespace sj

// A typed-erased array that either owns its memory (allocated through an Allocator) or
// borrows a caller's array (zero-copy). Copies share ownership; nothing is deep-copied.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include "src/allocator.hpp"
#include "src/error.hpp"

namespace sj {

class Buffer {
 public:
  Buffer() = default;

  static Buffer borrow(const void* data, size_t bytes) {
    Buffer b;
    b.data_ = const_cast<void*>(data);
    b.bytes_ = bytes;
    return b;
  }
  static Buffer allocate(const Allocator& alloc, size_t bytes) {
    Buffer b;
    b.owner_ = alloc.allocate(bytes);
    b.data_ = b.owner_.get();
    b.bytes_ = bytes;
    return b;
  }
  // An owned array of count + extra elements of `elem` bytes. Counts come from tensor
  // dimensions and positions, so the size is checked here: one no memory could hold fails with
  // SJ_ERR_OUT_OF_MEMORY instead of wrapping around to a small allocation.
  static Buffer allocate_array(const Allocator& alloc, int64_t count, size_t elem, int64_t extra = 0) {
    constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max() / 4;
    if (count < 0 || count > kMaxBytes - extra || count + extra > kMaxBytes / static_cast<int64_t>(elem))
      fail(SJ_ERR_OUT_OF_MEMORY, "an array of ", count, extra ? " + 1" : "", " entries of ", elem,
           " bytes does not fit in memory");
    return allocate(alloc, static_cast<size_t>(count + extra) * elem);
  }
  // An owned copy of `bytes` from `src`.
  static Buffer copy_of(const Allocator& alloc, const void* src, size_t bytes) {
    Buffer b = allocate(alloc, bytes);
    if (bytes) std::memcpy(b.data_, src, bytes);
    return b;
  }

  // `bytes` of this buffer from `offset`, sharing its ownership: several small arrays of one
  // result in one allocation (one allocation and one free instead of one per array).
  Buffer part(size_t offset, size_t bytes) const {
    Buffer b;
    b.owner_ = owner_;
    b.data_ = static_cast<char*>(data_) + offset;
    b.bytes_ = bytes;
    return b;
  }

  // The same window moved within the block: `bytes` from `offset` of `base`, a part of the same
  // owner (shares_owner), with no reference count changed (a result refilled in its own block).
  void repoint_within(const Buffer& base, size_t offset, size_t bytes) {
    data_ = static_cast<char*>(base.data_) + offset;
    bytes_ = bytes;
  }
  // The same owner (the same control block; two borrowed buffers have none and do not count).
  bool shares_owner(const Buffer& o) const {
    return owner_ && !owner_.owner_before(o.owner_) && !o.owner_.owner_before(owner_);
  }
  // Whether this window starts the owner's block.
  bool starts_owner() const { return owner_ && owner_.get() == data_; }
  // Holders of this one's owner: buffers and anything else sharing it (0 for a borrowed one).
  long owner_uses() const { return owner_.use_count(); }
  // The block's owner, for a weak reference that tells whether the block still lives (tests).
  std::weak_ptr<void> watch_owner() const { return owner_; }

  bool owned() const { return owner_ != nullptr; }
  bool empty() const { return data_ == nullptr; }
  size_t bytes() const { return bytes_; }
  const void* data() const { return data_; }
  void* mutable_data() { return data_; }
  template <class T> const T* as() const { return static_cast<const T*>(data_); }
  template <class T> T* as_mut() { return static_cast<T*>(data_); }

 private:
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace sj

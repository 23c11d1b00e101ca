// The operands of one call (at most three), each either borrowed from a tensor that outlives
// the call (a handle's, a caller's list, a form kept on a handle) or owned (a conversion made
// for this call). Borrowing is why a repeated drop-in call copies no tensor: a Tensor copy and
// its destruction cost a few hundred instructions (its buffers share ownership atomically),
// which on tiny inputs was a large part of a call.
#pragma once
#include <array>
#include <cstddef>
#include <initializer_list>
#include <new>
#include <vector>

#include "src/error.hpp"
#include "src/tensor.hpp"

namespace sj {

class OperandList {
 public:
  static constexpr size_t kMax = 3;

  OperandList() = default;
  // Owned copies (tests and tools build requests from temporaries).
  OperandList(std::initializer_list<Tensor> ts) {
    for (const Tensor& t : ts) push_back(t);
  }
  OperandList(const std::vector<Tensor>& ts) {  // NOLINT: implicit, as the vector it replaced
    for (const Tensor& t : ts) push_back(t);
  }
  // Copies keep borrowing what the source borrows and copy what it owns.
  OperandList(const OperandList& o) { assign(o); }
  OperandList& operator=(const OperandList& o) {
    if (this != &o) clear(), assign(o);
    return *this;
  }
  OperandList(OperandList&& o) noexcept { take(std::move(o)); }
  OperandList& operator=(OperandList&& o) noexcept {
    if (this != &o) clear(), take(std::move(o));
    return *this;
  }
  ~OperandList() { clear(); }

  // Appends `t` without copying it; it must outlive the list.
  void borrow(const Tensor& t) { refs_[room()] = &t, ++n_; }
  // Appends an owned tensor.
  void push_back(Tensor t) {
    const size_t i = room();
    own(i, std::move(t));
    ++n_;
  }
  // Replaces operand i with an owned tensor.
  void set(size_t i, Tensor t) {
    if (owned(i)) slot(i)->~Tensor(), owned_ &= ~(1u << i);
    own(i, std::move(t));
  }
  void clear() {
    for (size_t i = 0; i < n_; ++i)
      if (owned(i)) slot(i)->~Tensor();
    owned_ = 0;
    n_ = 0;
  }

  const Tensor& operator[](size_t i) const { return *refs_[i]; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }

  class const_iterator {
   public:
    explicit const_iterator(const Tensor* const* p) : p_(p) {}
    const Tensor& operator*() const { return **p_; }
    const_iterator& operator++() { return ++p_, *this; }
    bool operator!=(const const_iterator& o) const { return p_ != o.p_; }
    bool operator==(const const_iterator& o) const { return p_ == o.p_; }

   private:
    const Tensor* const* p_;
  };
  const_iterator begin() const { return const_iterator(refs_.data()); }
  const_iterator end() const { return const_iterator(refs_.data() + n_); }

 private:
  size_t room() const {  // the next free slot
    if (n_ == kMax) fail(SJ_ERR_INVALID_ARGUMENT, "an operation takes at most ", kMax, " operands");
    return n_;
  }
  bool owned(size_t i) const { return (owned_ >> i) & 1u; }
  Tensor* slot(size_t i) { return std::launder(reinterpret_cast<Tensor*>(storage_[i])); }
  void own(size_t i, Tensor&& t) {
    refs_[i] = ::new (static_cast<void*>(storage_[i])) Tensor(std::move(t));
    owned_ |= 1u << i;
  }
  void assign(const OperandList& o) {
    for (size_t i = 0; i < o.n_; ++i) {
      if (o.owned(i)) own(i, Tensor(*o.refs_[i]));
      else refs_[i] = o.refs_[i];
    }
    n_ = o.n_;
  }
  void take(OperandList&& o) {
    for (size_t i = 0; i < o.n_; ++i) {
      if (o.owned(i)) own(i, std::move(*o.slot(i)));
      else refs_[i] = o.refs_[i];
    }
    n_ = o.n_;
    o.clear();
  }

  // Raw storage for owned tensors, constructed only when used: an array of std::optional
  // was zeroed whole (1.3 KB) on every construction.
  alignas(Tensor) unsigned char storage_[kMax][sizeof(Tensor)];
  std::array<const Tensor*, kMax> refs_{};
  unsigned owned_ = 0;  // bit i: storage_[i] holds a Tensor
  size_t n_ = 0;
};

}  // namespace sj

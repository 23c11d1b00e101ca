// Forms of a tensor that the runtime derived from it (its CSR copy, its transpose), kept with
// the tensor handle so repeated calls on the same operand convert once. Sound because a
// handle's arrays must not change while it lives (see the header's zero-copy rule).
#pragma once
#include <array>
#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "src/tensor.hpp"

namespace sj {

struct DerivedForms {
  std::mutex mutex;
  // A list: forms are only appended, never removed, so a reference to one stays valid while
  // the handle lives and a call may borrow it instead of copying it (and an empty list, on
  // every result handle, allocates nothing, unlike a deque).
  using Form = std::pair<std::string, Tensor>;
  std::list<Form> forms;
  // The first forms again, readable without the lock: a slot is set once (under the lock,
  // after its form is complete) and never changes. A lock and unlock per lookup were a tenth
  // of a tiny SpMSpV call through a plan.
  std::array<std::atomic<const Form*>, 8> published{};
  std::vector<std::pair<std::string, std::shared_ptr<const void>>> facts;  // e.g. statistics
  std::shared_ptr<void> plan_memo;  // plans of drop-in calls on this operand (src/plan_memo.hpp)
  // SpMSpV calls served with this tensor as A: the cost model amortises a kept CSC copy over
  // them (kernels/spmspv_schedules.cpp).
  std::atomic<int64_t> spmspv_calls{0};

  // A fact about the tensor (statistics, counts), computed once by `make` -> T.
  template <class T, class Make> std::shared_ptr<const T> fact(const std::string& key, Make&& make) {
    {
      std::lock_guard lock(mutex);
      for (auto& [k, v] : facts)
        if (k == key) return std::static_pointer_cast<const T>(v);
    }
    auto made = std::make_shared<const T>(make());
    std::lock_guard lock(mutex);
    for (auto& [k, v] : facts)
      if (k == key) return std::static_pointer_cast<const T>(v);
    facts.emplace_back(key, made);
    return made;
  }

  // The form named `key`, made by `make` on first use (outside the lock, so two threads may
  // both build it; the first stored wins and both results are equal). The reference stays
  // valid as long as this object.
  template <class Make> const Tensor& get_or_make(const std::string& key, Make&& make) {
    for (auto& slot : published) {  // no lock for the forms already made (the common case)
      const Form* f = slot.load(std::memory_order_acquire);
      if (!f) break;
      if (f->first == key) return f->second;
    }
    {
      std::lock_guard lock(mutex);
      for (auto& [k, t] : forms)
        if (k == key) return t;
    }
    Tensor made = make();
    std::lock_guard lock(mutex);
    for (auto& [k, t] : forms)
      if (k == key) return t;
    const Form& f = forms.emplace_back(key, std::move(made));
    for (auto& slot : published)
      if (!slot.load(std::memory_order_relaxed)) {
        slot.store(&f, std::memory_order_release);
        break;
      }
    return f.second;
  }
};

}  // namespace sj

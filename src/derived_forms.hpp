// Forms of a tensor that the runtime derived from it (its CSR copy, its transpose), kept with
// the tensor handle so repeated calls on the same operand convert once. Sound because a
// handle's arrays must not change while it lives (see the header's zero-copy rule).
#pragma once
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
  std::list<std::pair<std::string, Tensor>> forms;
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
    {
      std::lock_guard lock(mutex);
      for (auto& [k, t] : forms)
        if (k == key) return t;
    }
    Tensor made = make();
    std::lock_guard lock(mutex);
    for (auto& [k, t] : forms)
      if (k == key) return t;
    return forms.emplace_back(key, std::move(made)).second;
  }
};

}  // namespace sj

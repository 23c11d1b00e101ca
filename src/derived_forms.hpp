// Forms of a tensor that the runtime derived from it (its CSR copy, its transpose), kept with
// the tensor handle so repeated calls on the same operand convert once. Sound because a
// handle's arrays must not change while it lives (see the header's zero-copy rule).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "src/tensor.hpp"

namespace sj {

struct DerivedForms {
  std::mutex mutex;
  std::vector<std::pair<std::string, Tensor>> forms;
  std::vector<std::pair<std::string, std::shared_ptr<const void>>> facts;  // e.g. statistics
  std::shared_ptr<void> plan_memo;  // plans of drop-in calls on this operand (src/plan_memo.hpp)

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
  // both build it; the first stored wins and both results are equal).
  template <class Make> Tensor get_or_make(const std::string& key, Make&& make) {
    {
      std::lock_guard lock(mutex);
      for (auto& [k, t] : forms)
        if (k == key) return t;
    }
    Tensor made = make();
    std::lock_guard lock(mutex);
    for (auto& [k, t] : forms)
      if (k == key) return t;
    forms.emplace_back(key, made);
    return made;
  }
};

}  // namespace sj

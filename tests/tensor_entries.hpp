// A tensor's stored entries keyed by their coordinates, for comparing results whose formats or
// entry orders may differ (dense tensors: every position).
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "src/convert.hpp"
#include "src/tensor.hpp"

namespace sj::test {

// coordinates -> f(value), the value as to_coo gives it (a double).
template <class F> auto entries_by_coordinates(const Tensor& t, F f) {
  const CooTensor c = to_coo(t);
  std::map<std::vector<int64_t>, decltype(f(0.0))> m;
  for (int64_t p = 0; p < c.nnz(); ++p) {
    std::vector<int64_t> k;
    for (int d = 0; d < c.order; ++d) k.push_back(c.coords[d][p]);
    m[k] = f(c.values[p]);
  }
  return m;
}
inline std::map<std::vector<int64_t>, double> entries_by_coordinates(const Tensor& t) {
  return entries_by_coordinates(t, [](double v) { return v; });
}
// coordinates -> the value's bits: bit-for-bit comparisons (NaN payloads, signed zeros).
inline std::map<std::vector<int64_t>, uint64_t> bits_by_coordinates(const Tensor& t) {
  return entries_by_coordinates(t, [](double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  });
}

}  // namespace sj::test

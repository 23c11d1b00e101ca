// Coordinate lists: what file readers produce and writers consume, and the common middle of
// conversions between formats. Values are held as double (exact for f32, f64 and bool).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace sj {

struct CooTensor {
  int order = 0;
  std::array<int64_t, 4> dims{};
  std::array<std::vector<int64_t>, 4> coords;  // 0-based; coords[mode][entry]
  std::vector<double> values;
  bool pattern = false;  // read from a pattern file (values are all 1)
  int64_t nnz() const { return static_cast<int64_t>(values.size()); }
};

}  // namespace sj

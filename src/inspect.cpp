#include "src/inspect.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/error.hpp"

namespace sj {

MatrixStats matrix_stats(const Tensor& t, bool with_bandwidth) {
  if (!is_csr(t)) fail(SJ_ERR_INTERNAL, "matrix_stats needs CSR, got ", t.describe());
  MatrixStats s;
  s.rows = t.dims[0];
  s.cols = t.dims[1];
  s.nnz = t.nnz();
  if (s.rows > 0 && s.cols > 0) s.density = static_cast<double>(s.nnz) / s.rows / s.cols;
  if (s.rows == 0) return s;
  const int64_t* pos = t.levels[1].pos.as<int64_t>();
  std::vector<int64_t> len(s.rows);
  for (int64_t i = 0; i < s.rows; ++i) len[i] = pos[i + 1] - pos[i];
  length_stats(s, len);
  if (with_bandwidth) {
    s.bandwidth = 0;
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t p = pos[i]; p < pos[i + 1]; ++p)
        s.bandwidth = std::max(s.bandwidth, std::abs(crd_at(t.levels[1], t.index_type, p) - i));
  }
  return s;
}

MatrixStats transpose_stats(const Tensor& t) {
  if (!is_csr(t)) fail(SJ_ERR_INTERNAL, "transpose_stats needs CSR, got ", t.describe());
  MatrixStats s;
  s.rows = t.dims[1];
  s.cols = t.dims[0];
  s.nnz = t.nnz();
  if (s.rows > 0 && s.cols > 0) s.density = static_cast<double>(s.nnz) / s.rows / s.cols;
  if (s.rows == 0) return s;
  std::vector<int64_t> len(s.rows, 0);
  const Level& lv = t.levels[1];
  if (t.index_type == IndexType::I32)
    for (int64_t p = 0; p < s.nnz; ++p) ++len[lv.crd.as<int32_t>()[p]];
  else
    for (int64_t p = 0; p < s.nnz; ++p) ++len[lv.crd.as<int64_t>()[p]];
  length_stats(s, len);
  return s;
}

void length_stats(MatrixStats& s, std::vector<int64_t>& len) {
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < s.rows; ++i) {
    sum += len[i];
    sq += static_cast<double>(len[i]) * len[i];
    s.empty_rows += len[i] == 0;
  }
  s.row_mean = sum / s.rows;
  s.row_stddev = std::sqrt(std::max(0.0, sq / s.rows - s.row_mean * s.row_mean));
  auto pct = [&](double q) {
    size_t k = std::min(len.size() - 1, static_cast<size_t>(q * (len.size() - 1) + 0.5));
    std::nth_element(len.begin(), len.begin() + k, len.end());
    return len[k];
  };
  s.row_p50 = pct(0.5);
  s.row_p90 = pct(0.9);
  s.row_p99 = pct(0.99);
  auto [mn, mx] = std::minmax_element(len.begin(), len.end());
  s.row_min = *mn;
  s.row_max = *mx;
}

int64_t spgemm_flops(const Tensor& a, const Tensor& b) {
  const int64_t* bpos = b.levels[1].pos.as<int64_t>();
  const int64_t n = a.nnz();
  int64_t flops = 0;
  for (int64_t p = 0; p < n; ++p) {
    int64_t k = crd_at(a.levels[1], a.index_type, p);
    flops += bpos[k + 1] - bpos[k];
  }
  return flops;
}

void write_json(JsonWriter& w, const MatrixStats& s) {
  w.begin_object()
      .field("rows", s.rows).field("cols", s.cols).field("nnz", s.nnz).field("density", s.density)
      .field("row_mean", s.row_mean).field("row_stddev", s.row_stddev).field("row_min", s.row_min)
      .field("row_p50", s.row_p50).field("row_p90", s.row_p90).field("row_p99", s.row_p99)
      .field("row_max", s.row_max).field("empty_rows", s.empty_rows);
  if (s.bandwidth >= 0) w.field("bandwidth", s.bandwidth);
  w.end_object();
}

}  // namespace sj

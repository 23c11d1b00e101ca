// The push's two accumulators side by side (kernels/spmspv_kernels.hpp, push_accumulate): the
// sparse one (a first-touch test per product, touched rows listed) and the dense one (rows
// started at the semiring's exact identity, every product added and marked without a test),
// each forced, on every matrix in ../shared/data/matrices (A given as CSC, plus-times, f64,
// sparse y, one thread) at x densities 1%, 10% and 50%. For each input: the median time of
// each (rounds interleaved, so load on the shared machine hits both alike), which one the
// push picks by itself (push_dense_accumulator), and the time of the pick over the faster one.
//
// Synthetic inputs too (uniform 600k x 600k with 16 per column, uniform 20k x 20k at 1%, and
// power-law columns 200k x 200k), unless --no-synthetic.
//
// Options: --rounds N (default 31), --filter TEXT (inputs whose name contains TEXT),
// --no-synthetic.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/spmspv_kernels.hpp"
#include "sparsejit/sparsejit.h"
#include "tests/random_matrices.hpp"
#include "tests/test_util.hpp"

namespace {

using sj::spmspv::PushAccumulator;

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A's CSC arrays (int32 rows, f64 values), kept by the handle `t`.
struct CscMatrix {
  sj_tensor* t = nullptr;
  sj::CsView<int32_t, double> view;
  ~CscMatrix() { sj_tensor_destroy(t); }
};

bool load_csc(sj_context* ctx, const std::string& file, CscMatrix& out) {
  sj_tensor* a = nullptr;
  if (sj_tensor_read_file(ctx, file.c_str(), &a) != SJ_OK) return false;
  sj_tensor_info info;
  sj_tensor_get_info(a, &info);
  const bool ok = info.order == 2 && info.value_type == SJ_VALUE_F64 &&
                  sj_tensor_convert(ctx, a, SJ_FORMAT_CSC, nullptr, SJ_INDEX_INT32, &out.t) == SJ_OK;
  sj_tensor_destroy(a);
  if (!ok) return false;
  const int64_t* pos = nullptr;
  const void* crd = nullptr;
  const void* val = nullptr;
  sj_tensor_get_level(out.t, 1, &pos, nullptr, &crd, nullptr);
  sj_tensor_get_values(out.t, &val, nullptr);
  out.view.outer = info.dims[1];
  out.view.inner = info.dims[0];
  out.view.pos = pos;
  out.view.crd = static_cast<const int32_t*>(crd);
  out.view.val = static_cast<const double*>(val);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 31;
  bool synthetic = true;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::max(3, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else if (!std::strcmp(argv[i], "--no-synthetic")) synthetic = false;
  }
  sj_context* ctx = nullptr;
  sj_context_create(nullptr, &ctx);
  sj::test::Rng rng(2026);
  // The inputs: every real matrix (its handle keeps the arrays), then the synthetic ones
  // (generated row-wise; read as CSC they are their transposes, of the same kind).
  std::vector<std::pair<std::string, sj::CsView<int32_t, double>>> inputs;
  std::vector<std::unique_ptr<CscMatrix>> real;
  for (const auto& f : sj::test::shared_matrices()) {
    if (!filter.empty() && f.filename().string().find(filter) == std::string::npos) continue;
    auto A = std::make_unique<CscMatrix>();
    if (!load_csc(ctx, f.string(), *A)) continue;
    inputs.emplace_back(f.stem().string(), A->view);
    real.push_back(std::move(A));
  }
  std::vector<std::unique_ptr<sj::CsResult<int32_t, double>>> generated;
  auto add_synthetic = [&](const std::string& name, sj::CsResult<int32_t, double> a) {
    if (!filter.empty() && name.find(filter) == std::string::npos) return;
    generated.push_back(std::make_unique<sj::CsResult<int32_t, double>>(std::move(a)));
    inputs.emplace_back(name, sj::test::view(*generated.back()));
  };
  if (synthetic) {
    add_synthetic("uniform-600k-16/col", sj::test::random_uniform<int32_t, double>(rng, 600000, 600000, 16.0 / 600000));
    add_synthetic("uniform-20k-1%", sj::test::random_uniform<int32_t, double>(rng, 20000, 20000, 0.01));
    add_synthetic("power-law-200k-12/col", sj::test::random_power_law<int32_t, double>(rng, 200000, 200000, 12.0, 1.4));
  }
  if (inputs.empty()) {
    std::printf("no inputs (../shared/data/matrices absent, or --filter matched none)\n");
    return 0;
  }
  std::printf("%-26s %6s %9s %9s %9s %9s %10s %6s %10s\n", "input", "x", "rows", "products", "sparse_us", "dense_us",
              "sparse/dns", "picks", "pick/best");
  for (const double density : {0.01, 0.10, 0.50}) {
    std::vector<double> loss, gain_when_dense;
    int dense_picks = 0;
    for (const auto& [name, Aview] : inputs) {
      const sj::CsView<int32_t, double>& A = Aview;
      const auto xr = sj::test::random_sparse_vector<int32_t, double>(rng, A.outer, density);
      sj::SpVecView<int32_t, double> x;
      x.n = xr.n;
      x.nnz = static_cast<int64_t>(xr.idx.size());
      x.idx = xr.idx.data();
      x.val = xr.val.data();
      const int64_t m = A.inner;
      std::vector<int32_t> yi(static_cast<size_t>(std::max<int64_t>(1, m)));
      std::vector<double> yv(yi.size());
      sj::Partition part;
      part.bounds = {0, m};
      sj::Workers w = sj::Workers::serial();
      auto run = [&](PushAccumulator how) {
        sj::spmspv::RowSink<int32_t, double> sink;
        sink.idx = yi.data();
        sink.val = yv.data();
        sj::spmspv::push_sparse<sj::PlusTimes<double>>(A, x, part, w, sink, how);
        return sink.count;
      };
      if (run(PushAccumulator::kSparse) != run(PushAccumulator::kDense)) {
        std::printf("%s: the accumulators disagree\n", name.c_str());
        return 1;
      }
      // One call, repeated until it takes ~20 us, so the clock's own cost stays small.
      const double t0 = now_us();
      run(PushAccumulator::kSparse);
      const int reps = std::clamp(static_cast<int>(20.0 / std::max(1e-3, now_us() - t0)), 1, 10000);
      std::vector<double> ts, td;
      for (int r = 0; r < rounds; ++r)
        for (PushAccumulator how : {PushAccumulator::kSparse, PushAccumulator::kDense}) {
          const double a = now_us();
          for (int k = 0; k < reps; ++k) run(how);
          (how == PushAccumulator::kSparse ? ts : td).push_back((now_us() - a) / reps);
        }
      const double s = median(ts), d = median(td);
      int64_t products = 0;
      for (int64_t p = 0; p < x.nnz; ++p) products += A.pos[x.idx[p] + 1] - A.pos[x.idx[p]];
      const bool picks_dense = sj::spmspv::push_dense_accumulator(A, x.nnz, 0, m);
      const double pick = picks_dense ? d : s;
      loss.push_back(pick / std::min(s, d));
      if (picks_dense) gain_when_dense.push_back(s / d);
      dense_picks += picks_dense;
      std::printf("%-26s %5.1f%% %9lld %9lld %9.2f %9.2f %10.2f %6s %10.2f\n", name.c_str(), 100 * density,
                  static_cast<long long>(m), static_cast<long long>(products), s, d, s / d,
                  picks_dense ? "dense" : "sparse", pick / std::min(s, d));
    }
    auto geo = [](const std::vector<double>& v) {
      double l = 0;
      for (double r : v) l += std::log(r);
      return v.empty() ? NAN : std::exp(l / static_cast<double>(v.size()));
    };
    std::printf("== x %.0f%%: %zu inputs, dense picked on %d; pick/best geomean %.3f, worst %.2f; sparse/dense where "
                "dense picked: geomean %.2f\n",
                100 * density, inputs.size(), dense_picks, geo(loss), *std::max_element(loss.begin(), loss.end()),
                geo(gain_when_dense));
  }
  sj_context_destroy(ctx);
  return 0;
}

// The Splyce ablation on this machine: batched inner-product dots (rows of A against columns
// of B, as in inner-product SpGEMM) over uniform random 5000x5000 matrices at 5%, 1% and
// 0.1% density, for each vector width x phase mask x intersection method of the generated
// kernel, against the portable (branchy) and a branchless scalar two-finger loop.
// f64 values, i32 coordinates, plus-times, exact (no reassociation).
//
//   bench_coiter --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Counters: pairs/s; the "checksum" counter must agree across kernels of one density.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "jit/coiter_jit.hpp"
#include "jit/isa.hpp"
#include "kernels/coiter_portable.hpp"

namespace {

using sj::jit::CoiterDotFn;
using Dot = CoiterDotFn<int32_t, double>;

constexpr int kDim = 5000;

// Compressed rows (or columns): pos, crd, val.
struct Compressed {
  std::vector<int64_t> pos{0};
  std::vector<int32_t> crd;
  std::vector<double> val;
};

Compressed random_compressed(double density, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int> gap(density);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Compressed m;
  for (int r = 0; r < kDim; ++r) {
    for (int c = gap(rng); c < kDim; c += 1 + gap(rng)) {
      m.crd.push_back(c);
      m.val.push_back(value(rng));
    }
    m.pos.push_back(int64_t(m.crd.size()));
  }
  return m;
}

struct Problem {
  Compressed a, b;  // a: rows of A (CSR), b: columns of B (CSC)
  int rows;         // rows of A dotted with every column of B per iteration
};

const Problem& problem(int density_index) {
  static const double kDensity[] = {0.05, 0.01, 0.001};
  static const int kRows[] = {4, 16, 64};  // about the same work per iteration
  static Problem problems[3];
  static bool made[3] = {false, false, false};
  Problem& p = problems[density_index];
  if (!made[density_index]) {
    p.a = random_compressed(kDensity[density_index], 11 + density_index);
    p.b = random_compressed(kDensity[density_index], 97 + density_index);
    p.rows = kRows[density_index];
    made[density_index] = true;
  }
  return p;
}

void run_batched(benchmark::State& state, Dot fn, int density_index) {
  const Problem& p = problem(density_index);
  double checksum = 0;
  int64_t pairs = 0;
  for (auto _ : state) {
    double sum = 0;
    for (int r = 0; r < p.rows; ++r) {
      int64_t a0 = p.a.pos[r], na = p.a.pos[r + 1] - a0;
      for (int c = 0; c < kDim; ++c) {
        int64_t b0 = p.b.pos[c], nb = p.b.pos[c + 1] - b0;
        double out = 0;
        fn(p.a.crd.data() + a0, p.a.val.data() + a0, na, p.b.crd.data() + b0,
           p.b.val.data() + b0, nb, &out);
        sum += out;
      }
    }
    benchmark::DoNotOptimize(sum);
    checksum = sum;
    pairs += int64_t(p.rows) * kDim;
  }
  state.counters["pairs/s"] = benchmark::Counter(double(pairs), benchmark::Counter::kIsRate);
  state.counters["checksum"] = checksum;
}

const char* kDensityName[] = {"5%", "1%", "0.1%"};

void register_all() {
  using sj::PlusTimes;
  for (int d = 0; d < 3; ++d) {
    std::string prefix = std::string("dot/") + kDensityName[d] + "/";
    benchmark::RegisterBenchmark(
        (prefix + "scalar-branchy").c_str(), run_batched,
        &sj::kernels::coiter_dot_portable<int32_t, double, PlusTimes<double>, false>, d);
    benchmark::RegisterBenchmark(
        (prefix + "scalar-branchless").c_str(), run_batched,
        &sj::kernels::coiter_dot_branchless<int32_t, double, PlusTimes<double>, false>, d);
    for (sj_isa isa : {SJ_ISA_AVX512, SJ_ISA_AVX2}) {
      if (!sj::jit::isa_supported(isa)) continue;
      for (int n : {4, 8, 16}) {
        if (isa == SJ_ISA_AVX2 && n == 16) continue;
        for (auto method : {sj::jit::CoiterMethod::Broadcast, sj::jit::CoiterMethod::Rotate,
                            sj::jit::CoiterMethod::Native}) {
          if (method == sj::jit::CoiterMethod::Native &&
              (isa != SJ_ISA_AVX512 || !sj::jit::host_features().vp2intersect))
            continue;
          for (int phases = 0; phases < 8; ++phases) {
            // AVX2: only the paper's best mask and all-SIMD, to keep the run short.
            if (isa == SJ_ISA_AVX2 && phases != 1 && phases != 7) continue;
            for (int flags = 0; flags < 2; ++flags) {
              if (flags && phases != 1) continue;  // the PEERS.md skips: on "001" only
              sj::jit::CoiterSpec s;
              s.width = uint8_t(n);
              s.phases = uint8_t(phases);
              s.method = method;
              s.isa = isa;
              s.skip_empty = s.skip_disjoint = flags;
              sj::jit::CoiterKernel k = sj::jit::compile_coiter(s);
              std::string name = prefix + std::string(sj::jit::isa_name(isa)) + "/n" +
                                 std::to_string(n) + "/p" + sj::jit::phase_mask_string(s.phases) +
                                 "/" + std::string(sj::jit::to_string(method)) +
                                 (flags ? "/skips" : "");
              benchmark::RegisterBenchmark(name.c_str(), run_batched, k.dot<int32_t, double>(), d);
            }
          }
        }
      }
    }
  }
}

// Code generation time of one kernel (fresh JIT per iteration, so nothing is memoised).
void BM_codegen(benchmark::State& state) {
  sj::jit::CoiterSpec s;
  s.width = uint8_t(state.range(0));
  for (auto _ : state) {
    sj::jit::CoiterJit jit;
    benchmark::DoNotOptimize(jit.compile(s).fn);
  }
}
BENCHMARK(BM_codegen)->Arg(4)->Arg(8)->Arg(16)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

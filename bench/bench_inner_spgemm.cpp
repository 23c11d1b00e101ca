// Inner-product SpGEMM and row-wise SpMSpV through the coiteration drivers
// (kernels/coiter_drivers.hpp), in the Splyce paper's setups, against
//   scalar  the branchy scalar two-finger loop, every (row, column) pair, this file being
//           compiled with -O3 -march=native (bench/CMakeLists.txt);
//   mlir    the MLIR 15 sparsifier's kernel for the same linalg.generic (bench/mlir/
//           inner_spgemm.mlir, lowered at build time; only when mlir-opt-15 was found);
//   driver  our driver with the JIT off (skips, trimming, scalar merge): isolates the SIMD part;
//   jit/... our driver with a generated kernel, forced spec or the automatic rule (jit-auto:
//           the kernel chosen per pair from its length, kernels/coiter_drivers.hpp TIERS).
// Every variant writes the dense product into the same preallocated buffer.
// f64 values, i32 coordinates, plus-times, no reassociation (results bit-identical to scalar).
//
// Setups:
//   spgemm/<density>/...  B (5000x5000 CSR) x C (5000x5000 CSC), dense output, density
//                         0.01% .. 10%. To keep one run short, a block of the first R rows of B
//                         against all 5000 columns of C (R in kRows; the time per row is what
//                         compares); each benchmark reports per-row time.
//   spmspv/<density>/...  y = A x, A 5000x5000 CSR at the density, x sparse of length 5000 with
//                         50% of entries ("a long sparse x"), sparse y.
//   real/<matrix>/...     A * A^T for every ../shared/data/matrices/*.mtx with a dense output,
//                         on the first R rows (R = all rows when rows*rows <= 5e5 dots, else
//                         5e5 / rows), so that huge matrices fit in memory and in the run.
//   codegen/...           fresh code generation of one kernel (new CoiterJit per iteration).
//
//   bench_inner_spgemm --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//   bench_inner_spgemm --count <variant> <setup>   one run of a small case (for callgrind)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "jit/coiter_jit.hpp"
#include "jit/isa.hpp"
#include "kernels/coiter_drivers.hpp"
#include "kernels/coiter_portable.hpp"
#include "src/convert.hpp"
#include "src/tensor_file.hpp"

#ifdef SJ_BENCH_HAVE_MLIR
// The MLIR 15 memref ABI (llvm.emit_c_interface): descriptors passed by pointer.
template <class T, int N> struct MemRef {
  T* allocated;
  T* aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};
// What the sparsifier's kernel gets as a sparse tensor: an opaque pointer it hands back to the
// runtime's accessors, which we implement here over our own arrays (no MLIR runtime needed;
// the kernel's loops are the sparsifier's).
struct MlirSparse {
  const int64_t* pos;
  const int32_t* crd;
  const double* val;
  int64_t outer, nnz;
};
extern "C" {
void _mlir_ciface_sparsePointers64(MemRef<int64_t, 1>* out, void* t, int64_t) {
  auto* s = static_cast<MlirSparse*>(t);
  *out = {const_cast<int64_t*>(s->pos), const_cast<int64_t*>(s->pos), 0, {s->outer + 1}, {1}};
}
void _mlir_ciface_sparseIndices32(MemRef<int32_t, 1>* out, void* t, int64_t) {
  auto* s = static_cast<MlirSparse*>(t);
  *out = {const_cast<int32_t*>(s->crd), const_cast<int32_t*>(s->crd), 0, {s->nnz}, {1}};
}
void _mlir_ciface_sparseValuesF64(MemRef<double, 1>* out, void* t) {
  auto* s = static_cast<MlirSparse*>(t);
  *out = {const_cast<double*>(s->val), const_cast<double*>(s->val), 0, {s->nnz}, {1}};
}
void _mlir_ciface_inner_spgemm(MemRef<double, 2>* result, void* b, void* c, MemRef<double, 2>* out);
}
#endif

namespace {

using sj::Tensor;
using Cfg = sj::kernels::CoiterConfig;
const sj::Allocator& alloc() { return sj::default_allocator(); }

struct Problem {
  Tensor A;     // CSR block (rows x k)
  Tensor Bcsc;  // CSC (k x cols)
  Tensor x;     // sparse vector (spmspv only)
  int64_t rows = 0, cols = 0;
  bool spmspv = false;
};

// Uniform random CSR with geometric gaps (as bench/bench_coiter.cpp).
Tensor random_csr(int64_t rows, int64_t cols, double density, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int64_t> gap(density);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  sj::CsResult<int32_t, double> m;
  m.outer = rows;
  m.inner = cols;
  m.pos.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = gap(rng); c < cols; c += 1 + gap(rng)) {
      m.crd.push_back(int32_t(c));
      m.val.push_back(value(rng));
    }
    m.pos.push_back(int64_t(m.crd.size()));
  }
  return sj::to_tensor(alloc(), true, m, sj::ValueType::F64);
}

// The first `r` rows of a CSR matrix (shares nothing; small).
Tensor first_rows(const Tensor& a, int64_t r) {
  auto v = sj::cs_view<int32_t, double>(a);
  sj::CsResult<int32_t, double> m;
  m.outer = r;
  m.inner = v.inner;
  m.pos.assign(v.pos, v.pos + r + 1);
  m.crd.assign(v.crd, v.crd + v.pos[r]);
  m.val.assign(v.val, v.val + v.pos[r]);
  return sj::to_tensor(alloc(), true, m, sj::ValueType::F64);
}

// The paper's densities and the rows of B per benchmark run.
const double kDensity[] = {0.0001, 0.001, 0.01, 0.05, 0.10};
const char* kDensityName[] = {"0.01%", "0.1%", "1%", "5%", "10%"};
const int64_t kRows[] = {400, 160, 32, 8, 4};
constexpr int64_t kDim = 5000;

std::map<std::string, Problem>& problems() {
  static std::map<std::string, Problem> p;
  return p;
}

Problem& spgemm_problem(int d) {
  std::string key = std::string("spgemm/") + kDensityName[d];
  auto& p = problems()[key];
  if (p.rows == 0) {
    Tensor B = random_csr(kDim, kDim, kDensity[d], 11 + d);
    Tensor C = random_csr(kDim, kDim, kDensity[d], 97 + d);  // C as CSR, then CSC
    p.A = first_rows(B, kRows[d]);
    p.Bcsc = sj::flip_orientation(C, alloc());
    p.rows = kRows[d];
    p.cols = kDim;
  }
  return p;
}

Problem& spmspv_problem(int d) {
  std::string key = std::string("spmspv/") + kDensityName[d];
  auto& p = problems()[key];
  if (p.rows == 0) {
    p.A = random_csr(kDim, kDim, kDensity[d], 211 + d);
    Tensor xr = random_csr(1, kDim, 0.5, 307 + d);
    Tensor x = sj::make_sparse_vector(alloc(), kDim, xr.nnz(), sj::IndexType::I32, sj::ValueType::F64);
    std::memcpy(x.levels[0].crd.mutable_data(), xr.levels[1].crd.data(), sizeof(int32_t) * xr.nnz());
    std::memcpy(x.values.mutable_data(), xr.values.data(), sizeof(double) * xr.nnz());
    p.x = x;
    p.rows = kDim;
    p.spmspv = true;
  }
  return p;
}

Problem& real_problem(const std::filesystem::path& f) {
  auto& p = problems()["real/" + f.stem().string()];
  if (p.rows == 0) {
    Tensor A = sj::read_tensor_file(f.string(), alloc());
    A = sj::convert(A, sj::format_spec(SJ_FORMAT_CSR, 2), sj::IndexType::I32, alloc());
    if (A.value_type != sj::ValueType::F64) A = sj::with_value_type(A, sj::ValueType::F64, alloc());
    const int64_t rows = A.dims[0];
    const int64_t r = std::max<int64_t>(1, std::min<int64_t>(rows, int64_t(5e5) / std::max<int64_t>(1, rows)));
    p.A = first_rows(A, r);
    Tensor t = A;  // CSC of A^T: A's arrays relabelled
    std::swap(t.dims[0], t.dims[1]);
    std::swap(t.mode_order[0], t.mode_order[1]);
    t.derived = nullptr;
    p.Bcsc = t;
    p.rows = r;
    p.cols = rows;
  }
  return p;
}

// --- the variants ---------------------------------------------------------------------------

using Dot = int64_t (*)(const int32_t*, const double*, int64_t, const int32_t*, const double*, int64_t, double*);

// The baseline: every pair, the branchy merge (inlined: this file is built -O3 -march=native).
double run_scalar(const Problem& p, std::vector<double>& out) {
  auto a = sj::cs_view<int32_t, double>(p.A);
  if (p.spmspv) {
    auto x = sj::spvec_view<int32_t, double>(p.x);
    double sum = 0;
    for (int64_t i = 0; i < p.rows; ++i) {
      double v = 0;
      if (sj::kernels::coiter_dot_portable<int32_t, double, sj::PlusTimes<double>, false>(
              a.crd + a.pos[i], a.val + a.pos[i], a.pos[i + 1] - a.pos[i], x.idx, x.val, x.nnz, &v) > 0) {
        out[i] = v;
        sum += v;
      }
    }
    return sum;
  }
  auto b = sj::cs_view<int32_t, double>(p.Bcsc);
  std::fill(out.begin(), out.end(), 0.0);
  for (int64_t i = 0; i < p.rows; ++i) {
    const int64_t a0 = a.pos[i], na = a.pos[i + 1] - a0;
    double* oi = out.data() + i * p.cols;
    for (int64_t j = 0; j < p.cols; ++j) {
      const int64_t b0 = b.pos[j];
      sj::kernels::coiter_dot_portable<int32_t, double, sj::PlusTimes<double>, false>(
          a.crd + a0, a.val + a0, na, b.crd + b0, b.val + b0, b.pos[j + 1] - b0, oi + j);
    }
  }
  return out[0] + out[out.size() / 2];
}

#ifdef SJ_BENCH_HAVE_MLIR
double run_mlir(const Problem& p, std::vector<double>& out) {
  auto a = sj::cs_view<int32_t, double>(p.A);
  auto b = sj::cs_view<int32_t, double>(p.Bcsc);
  MlirSparse sa{a.pos, a.crd, a.val, a.outer, a.nnz()}, sb{b.pos, b.crd, b.val, b.outer, b.nnz()};
  std::fill(out.begin(), out.end(), 0.0);
  MemRef<double, 2> o{out.data(), out.data(), 0, {p.rows, p.cols}, {p.cols, 1}}, r{};
  _mlir_ciface_inner_spgemm(&r, &sa, &sb, &o);
  if (r.allocated != out.data()) std::free(r.allocated);
  return out[0] + out[out.size() / 2];
}
#endif

// Like the scalar loop and the MLIR kernel, the dense product goes into the caller's buffer
// (coiter_spgemm_dense_into), with the kernels looked up once before timing (resolve()).
double run_driver(const Problem& p, const Cfg& cfg, std::vector<double>& out) {
  if (p.spmspv) {
    Tensor y = sj::kernels::coiter_spmspv(p.A, p.x, SJ_SEMIRING_PLUS_TIMES, cfg, false, alloc());
    return y.nnz() ? y.values.as<double>()[0] : 0;
  }
  sj::kernels::coiter_spgemm_dense_into(p.A, p.Bcsc, SJ_SEMIRING_PLUS_TIMES, cfg, out.data());
  return out[0] + out[out.size() / 2];
}

Cfg resolve(const Cfg& c) {
  return sj::kernels::resolve_coiter(c, sj::IndexType::I32, sj::ValueType::F64, SJ_SEMIRING_PLUS_TIMES);
}

Cfg forced(int width, uint8_t phases, sj::jit::CoiterMethod method) {
  Cfg c;
  c.spec.width = uint8_t(width);
  c.spec.phases = phases;
  c.spec.method = method;
  c.spec.skip_empty = true;
  return c;
}

Cfg auto_cfg(const Problem& p) {
  sj_op_options o;
  sj_op_options_init(&o);
  const double la = p.A.dims[0] ? double(p.A.nnz()) / double(p.A.dims[0]) : 0;
  const double lb = p.spmspv ? double(p.x.nnz()) : p.Bcsc.dims[1] ? double(p.Bcsc.nnz()) / double(p.Bcsc.dims[1]) : 0;
  return sj::kernels::coiter_config(o, sj::IndexType::I32, sj::ValueType::F64, la, lb);  // per-pair tiers
}

struct Variant {
  std::string name;
  int kind;  // 0 scalar, 1 mlir, 2 driver with cfg, 3 driver auto
  Cfg cfg;
};

std::vector<Variant> variants(bool full) {
  using M = sj::jit::CoiterMethod;
  std::vector<Variant> v;
  v.push_back({"scalar", 0, {}});
#ifdef SJ_BENCH_HAVE_MLIR
  v.push_back({"mlir", 1, {}});
#endif
  Cfg off;
  off.use_jit = false;
  v.push_back({"driver", 2, off});
  v.push_back({"jit-auto", 3, {}});
  const bool native = sj::jit::host_features().vp2intersect && sj::jit::default_isa() == SJ_ISA_AVX512;
  if (full) {
    // The paper's Table 1: every phase mask at n = 4, broadcast compare.
    for (int ph = 0; ph < 8; ++ph)
      v.push_back({"jit/n4/p" + sj::jit::phase_mask_string(uint8_t(ph)) + "/broadcast", 2, forced(4, uint8_t(ph), M::Broadcast)});
    // Its Figure 12: n = 4, 8, 16 with each method, phases 001 and 111.
    for (int n : {4, 8, 16})
      for (M m : {M::Broadcast, M::Rotate, M::Native}) {
        if (m == M::Native && !native) continue;
        for (uint8_t ph : {uint8_t(1), uint8_t(7)}) {
          if (n == 4 && m == M::Broadcast) continue;  // in Table 1
          v.push_back({"jit/n" + std::to_string(n) + "/p" + sj::jit::phase_mask_string(ph) + "/" +
                           std::string(sj::jit::to_string(m)),
                       2, forced(n, ph, m)});
        }
      }
  } else {
    v.push_back({"jit/n4/p001/broadcast", 2, forced(4, 1, M::Broadcast)});
    v.push_back({"jit/n8/p111/" + std::string(native ? "native" : "rotate"), 2, forced(8, 7, native ? M::Native : M::Rotate)});
    v.push_back({"jit/n16/p111/" + std::string(native ? "native" : "rotate"), 2, forced(16, 7, native ? M::Native : M::Rotate)});
  }
  return v;
}

double run_variant(const Problem& p, const Variant& v, std::vector<double>& out) {
  switch (v.kind) {
    case 0: return run_scalar(p, out);
#ifdef SJ_BENCH_HAVE_MLIR
    case 1: return run_mlir(p, out);
#endif
    case 2: return run_driver(p, v.cfg, out);
    default: return run_driver(p, resolve(auto_cfg(p)), out);
  }
}

// The counted region for callgrind (--toggle-collect='*sj_bench_counted_run*').
__attribute__((noinline)) double sj_bench_counted_run(const Problem& p, const Variant& v, std::vector<double>& out) {
  return run_variant(p, v, out);
}

void bench(benchmark::State& state, Problem* p, Variant v) {
  if (v.kind == 1 && p->spmspv) {
    state.SkipWithError("no mlir spmspv");
    return;
  }
  std::vector<double> out(static_cast<size_t>(p->spmspv ? p->rows : p->rows * p->cols));
  if (v.kind == 3) v = Variant{v.name, 2, auto_cfg(*p)};
  if (v.kind == 2) v.cfg = resolve(v.cfg);
  double check = 0;
  for (auto _ : state) {
    check = run_variant(*p, v, out);
    benchmark::ClobberMemory();
  }
  state.counters["rows"] = double(p->rows);
  state.counters["check"] = check;
  state.counters["ns_per_row"] =
      benchmark::Counter(double(p->rows) * double(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (v.kind == 2 || v.kind == 3) state.SetLabel(sj::kernels::describe(v.cfg));
}

// Kernels are memoised process-wide, so each iteration compiles a spec not seen before: the
// width/method under test with another (semiring, value type, phase mask, with_factor).
void codegen(benchmark::State& state, sj::jit::CoiterSpec s) {
  static int serial = 0;
  std::vector<double> us;
  for (auto _ : state) {
    const int k = serial++;
    sj::jit::CoiterSpec t = s;
    t.semiring = static_cast<sj_semiring>(SJ_SEMIRING_PLUS_TIMES + k % 5);
    t.value = (k / 5) % 2 ? sj::ValueType::F32 : sj::ValueType::F64;
    t.phases = uint8_t((k / 10) % 8);
    t.with_factor = (k / 80) % 2;
    t.reassociate = (k / 160) % 2;
    sj::jit::CoiterJit jit;
    auto kern = jit.compile(t);
    us.push_back(kern.codegen_us);
    benchmark::DoNotOptimize(kern.fn);
  }
  std::sort(us.begin(), us.end());
  state.counters["median_us"] = us.empty() ? 0 : us[us.size() / 2];
}

std::vector<std::filesystem::path> real_matrices() {
  std::vector<std::filesystem::path> out;
  std::filesystem::path d = std::filesystem::path(SPARSEJIT_SOURCE_DIR) / ".." / "shared" / "data" / "matrices";
  if (const char* env = std::getenv("SPARSEJIT_DATA_DIR")) d = std::filesystem::path(env) / "matrices";
  if (!std::filesystem::is_directory(d)) return out;
  for (auto& e : std::filesystem::directory_iterator(d))
    if (e.path().extension() == ".mtx") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void register_all() {
  for (int d = 0; d < 5; ++d) {
    Problem* p = &spgemm_problem(d);
    for (auto& v : variants(true))
      benchmark::RegisterBenchmark((std::string("spgemm/") + kDensityName[d] + "/" + v.name).c_str(), bench, p, v)
          ->Unit(benchmark::kMillisecond);
  }
  for (int d : {1, 2, 3}) {
    Problem* p = &spmspv_problem(d);
    for (auto& v : variants(false)) {
      if (v.kind == 1) continue;
      benchmark::RegisterBenchmark((std::string("spmspv/") + kDensityName[d] + "/" + v.name).c_str(), bench, p, v)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (auto& f : real_matrices()) {
    Problem* p = &real_problem(f);
    for (auto& v : variants(false))
      benchmark::RegisterBenchmark(("real/" + f.stem().string() + "/" + v.name).c_str(), bench, p, v)
          ->Unit(benchmark::kMillisecond);
  }
  using M = sj::jit::CoiterMethod;
  for (auto [n, ph, m] : {std::tuple{4, 1, M::Broadcast}, std::tuple{8, 7, M::Native}, std::tuple{16, 7, M::Native},
                          std::tuple{8, 7, M::Rotate}}) {
    sj::jit::CoiterSpec s;
    s.width = uint8_t(n);
    s.phases = uint8_t(ph);
    s.method = m;
    s.skip_empty = true;
    benchmark::RegisterBenchmark(("codegen/n" + std::to_string(n) + "/p" + sj::jit::phase_mask_string(uint8_t(ph)) +
                                  "/" + std::string(sj::jit::to_string(m)))
                                     .c_str(),
                                 codegen, s)
        ->Unit(benchmark::kMicrosecond)
        ->Iterations(51)
        ->Repetitions(1);
  }
}

// --count <variant> <setup>: one run of a small case, for instruction counts under callgrind
// (variant "none" builds the inputs only, to subtract). Setups: spgemm-5% (4 rows), spgemm-1%
// (16 rows), real-<matrix stem>.
int count_mode(const std::string& variant, const std::string& setup) {
  using counted_fn = double (*)(const Problem&, const Variant&, std::vector<double>&);
  counted_fn counted = &sj_bench_counted_run;
  Problem* p = nullptr;
  if (setup.rfind("spgemm-", 0) == 0) {
    int d = 0;
    for (int i = 0; i < 5; ++i)
      if (setup == std::string("spgemm-") + kDensityName[i]) d = i;
    Tensor B = random_csr(kDim, kDim, kDensity[d], 11 + d);
    Tensor C = random_csr(kDim, kDim, kDensity[d], 97 + d);
    static Problem q;
    q.A = first_rows(B, std::max<int64_t>(1, kRows[d] / 4));
    q.Bcsc = sj::flip_orientation(C, alloc());
    q.rows = q.A.dims[0];
    q.cols = kDim;
    p = &q;
  } else {
    for (auto& f : real_matrices())
      if ("real-" + f.stem().string() == setup) p = &real_problem(f);
  }
  if (!p) return 2;
  std::vector<double> out(static_cast<size_t>(p->rows * p->cols));
  for (auto& v : variants(true)) {
    if (v.name != variant) continue;
    Variant w = v.kind == 3 ? Variant{v.name, 2, auto_cfg(*p)} : v;
    if (w.kind == 2) w.cfg = resolve(w.cfg);  // JIT compile outside the counted run
    std::printf("%s %s %.17g\n", setup.c_str(), variant.c_str(), counted(*p, w, out));
    return 0;
  }
  return variant == "none" ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--count") return count_mode(argv[2], argv[3]);
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

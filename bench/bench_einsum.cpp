// Index-notation kernels (issue 5): one table per question, medians of repeated executions.
//   1. SparseConflicts case studies on the real matrices / tensors in ../shared/data: the fused
//      search-based schedule vs transpose-then-compute (conversion kept with the operand, so
//      its steady state; the first call's conversion is shown apart) vs the planner's choice;
//      for the two matrix expressions also SuiteSparse:GraphBLAS (one thread) as an outside
//      baseline when it is found at build time, its result checked against ours.
//   2. The five Splyce kernels on synthetic inputs: the LLVM build for this CPU vs a
//      scalar-only build of the same loop nest (no vectoriser, baseline x86-64).
//   3. LLVM compile time per kernel: cold (nothing cached) and from the on-disk cache.
// Usage: bench_einsum [--quick]   (prints plain-text tables; scripts/bench-einsum.sh runs it)
#include <algorithm>
#include <ctime>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/llvm_backend.hpp"
#include "kernels/coiter_drivers.hpp"
#include "src/context.hpp"
#include "src/convert.hpp"
#include "src/derived_forms.hpp"
#include "src/einsum_planner.hpp"
#include "src/error.hpp"
#include "src/tensor_file.hpp"

#ifdef SJ_BENCH_HAVE_GRAPHBLAS
extern "C" {
#include <GraphBLAS.h>
}
#endif

using namespace sj;
using namespace sj::einsum;

namespace {

// CPU time of this thread: the machine running the benchmark is shared, and every kernel here
// runs on the calling thread, so CPU time is the steadier measure (wall time is also printed
// by the CLI).
double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

struct Timing {
  double first = 0, median = 0;
};

// Median of executions until ~`budget_ms` or `max_runs`.
Timing time_plan(EinsumPlan& plan, const std::vector<Tensor>& ops, double budget_ms = 300, int max_runs = 31) {
  Timing t;
  double t0 = now_ms();
  plan.execute(ops);
  t.first = now_ms() - t0;
  std::vector<double> times;
  double start = now_ms();
  while (static_cast<int>(times.size()) < max_runs && (times.size() < 3 || now_ms() - start < budget_ms)) {
    double a = now_ms();
    plan.execute(ops);
    times.push_back(now_ms() - a);
  }
  std::sort(times.begin(), times.end());
  t.median = times[times.size() / 2];
  return t;
}

// Median of f() calls, as time_plan.
template <class F> double time_call(F&& f, double budget_ms = 300, int max_runs = 31) {
  f();
  std::vector<double> times;
  double start = now_ms();
  while (static_cast<int>(times.size()) < max_runs && (times.size() < 3 || now_ms() - start < budget_ms)) {
    double a = now_ms();
    f();
    times.push_back(now_ms() - a);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::filesystem::path data_dir() {
  if (const char* e = std::getenv("SPARSEJIT_DATA_DIR")) return e;
  return std::filesystem::path(SPARSEJIT_SOURCE_DIR) / ".." / "shared" / "data";
}

Tensor with_forms(Tensor t) {
  t.derived = std::make_shared<DerivedForms>();
  return t;
}

sj_op_options opts(sj_schedule s) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = s;
  return o;
}

std::string chosen_name(const EinsumPlan& p) {
  return chosen_schedule_name(p.terms()[0]);
}

// Random tensor with `nnz_per_row` entries per innermost segment on average, in `spec`.
Tensor synthetic(const Context& ctx, std::vector<int64_t> dims, double density, const FormatSpec& spec, uint64_t seed) {
  CooTensor coo;
  coo.order = static_cast<int>(dims.size());
  for (int m = 0; m < coo.order; ++m) coo.dims[m] = dims[m];
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int64_t total = 1;
  for (auto d : dims) total *= d;
  const int64_t want = static_cast<int64_t>(density * static_cast<double>(total));
  std::vector<int64_t> lin;
  lin.reserve(want);
  for (int64_t n = 0; n < want; ++n) lin.push_back(static_cast<int64_t>(next() % static_cast<uint64_t>(total)));
  std::sort(lin.begin(), lin.end());
  lin.erase(std::unique(lin.begin(), lin.end()), lin.end());
  for (int64_t p : lin) {
    int64_t r = p;
    for (int m = coo.order - 1; m >= 0; --m) {
      coo.coords[m].push_back(r % dims[m]);
      r /= dims[m];
    }
    coo.values.push_back(0.5 + static_cast<double>(next() % 1000) / 1000.0);
  }
  return with_forms(from_coo(coo, spec, IndexType::I32, ValueType::F64, ctx.allocator));
}

#ifdef SJ_BENCH_HAVE_GRAPHBLAS
void grb(GrB_Info info, const char* what) {
  if (info != GrB_SUCCESS) throw std::runtime_error(std::string("GraphBLAS ") + what + " failed: " + std::to_string(info));
}

// A 2-D tensor (any format, index and value type) as a row-major FP64 GrB_Matrix.
GrB_Matrix grb_matrix(const Tensor& t) {
  CooTensor coo = to_coo(t);
  std::vector<GrB_Index> I(coo.coords[0].begin(), coo.coords[0].end()), J(coo.coords[1].begin(), coo.coords[1].end());
  GrB_Matrix g;
  grb(GrB_Matrix_new(&g, GrB_FP64, t.dims[0], t.dims[1]), "new");
  grb(GxB_Matrix_Option_set_INT32(g, GxB_FORMAT, GxB_BY_ROW), "by row");
  grb(GrB_Matrix_build_FP64(g, I.data(), J.data(), coo.values.data(), coo.nnz(), GrB_PLUS_FP64), "build");
  grb(GrB_Matrix_wait(g, GrB_MATERIALIZE), "wait");
  return g;
}

// A(i,j) = B(i,j) * C(j,i): B .* C' (the transpose is the descriptor's, not a copy).
GrB_Matrix grb_hadamard_t(GrB_Matrix B, GrB_Matrix C) {
  GrB_Index m, n;
  GrB_Matrix_nrows(&m, B);
  GrB_Matrix_ncols(&n, B);
  GrB_Matrix A;
  grb(GrB_Matrix_new(&A, GrB_FP64, m, n), "new");
  grb(GrB_Matrix_eWiseMult_BinaryOp(A, nullptr, nullptr, GrB_TIMES_FP64, B, C, GrB_DESC_T1), "eWiseMult");
  grb(GrB_Matrix_wait(A, GrB_MATERIALIZE), "wait");
  return A;
}

// a(i) = B(i,j) * C(j,i): the row sums of B .* C', O(nnz) (diag(B*C) through an mxm masked by
// the identity computes the same dots but needs a diagonal mask and a matrix result).
GrB_Vector grb_batched_dot(GrB_Matrix B, GrB_Matrix C) {
  GrB_Matrix T = grb_hadamard_t(B, C);
  GrB_Index m;
  GrB_Matrix_nrows(&m, B);
  GrB_Vector a;
  grb(GrB_Vector_new(&a, GrB_FP64, m), "new");
  grb(GrB_Matrix_reduce_Monoid(a, nullptr, nullptr, GrB_PLUS_MONOID_FP64, T, nullptr), "reduce");
  grb(GrB_Vector_wait(a, GrB_MATERIALIZE), "wait");
  GrB_Matrix_free(&T);
  return a;
}

// Entries (linear coordinate, value) sorted by coordinate.
using Entries = std::vector<std::pair<int64_t, double>>;
Entries entries_of(const Tensor& t) {
  CooTensor coo = to_coo(t);
  Entries e;
  for (int64_t k = 0; k < coo.nnz(); ++k)
    e.emplace_back(coo.coords[0][k] * (t.order == 2 ? t.dims[1] : 1) + (t.order == 2 ? coo.coords[1][k] : 0), coo.values[k]);
  std::sort(e.begin(), e.end());
  return e;
}
Entries take_entries(GrB_Matrix g) {  // frees g
  GrB_Index nv, n;
  GrB_Matrix_nvals(&nv, g);
  GrB_Matrix_ncols(&n, g);
  std::vector<GrB_Index> I(nv), J(nv);
  std::vector<double> X(nv);
  grb(GrB_Matrix_extractTuples_FP64(I.data(), J.data(), X.data(), &nv, g), "extractTuples");
  Entries e;
  for (GrB_Index k = 0; k < nv; ++k) e.emplace_back(static_cast<int64_t>(I[k] * n + J[k]), X[k]);
  GrB_Matrix_free(&g);
  std::sort(e.begin(), e.end());
  return e;
}
Entries take_entries(GrB_Vector g) {  // frees g
  GrB_Index nv;
  GrB_Vector_nvals(&nv, g);
  std::vector<GrB_Index> I(nv);
  std::vector<double> X(nv);
  grb(GrB_Vector_extractTuples_FP64(I.data(), X.data(), &nv, g), "extractTuples");
  Entries e;
  for (GrB_Index k = 0; k < nv; ++k) e.emplace_back(static_cast<int64_t>(I[k]), X[k]);
  GrB_Vector_free(&g);
  std::sort(e.begin(), e.end());
  return e;
}

// Same coordinates, values within a relative 1e-9; otherwise prints a MISMATCH line.
bool same_entries(const Entries& ours, const Entries& theirs, const char* expr, const std::string& input) {
  size_t bad = ours.size() == theirs.size() ? 0 : 1;
  for (size_t k = 0; bad == 0 && k < ours.size(); ++k) {
    auto [c, v] = ours[k];
    auto [d, w] = theirs[k];
    if (c != d || std::abs(v - w) > 1e-9 * std::max(std::abs(v), std::abs(w))) bad = k + 1;
  }
  if (bad == 0) return true;
  std::printf("MISMATCH %s on %s: ours %zu entries, GraphBLAS %zu", expr, input.c_str(), ours.size(), theirs.size());
  if (ours.size() == theirs.size())
    std::printf(", first difference at entry %zu: (%lld, %.17g) vs (%lld, %.17g)", bad - 1,
                static_cast<long long>(ours[bad - 1].first), ours[bad - 1].second,
                static_cast<long long>(theirs[bad - 1].first), theirs[bad - 1].second);
  std::printf("\n");
  return false;
}
#endif

void case_studies(const Context& ctx, bool quick) {
  std::printf("\n== SparseConflicts case studies: fused (search) vs transpose-then-compute vs auto (median ms)\n");
  std::printf("%-34s %-16s %9s %10s %10s %11s %-10s %7s", "expression", "input", "nnz", "fused", "transpose",
              "(1st call)", "auto", "auto/best");
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
  std::printf(" %10s %8s", "GrB", "GrB/auto");  // GraphBLAS, one thread; the same median CPU time
  std::vector<double> grb_ratios[2];
  int mismatches = 0;
#endif
  std::printf("\n");
  std::vector<std::string> names = {"bcsstk13", "bcsstk16", "ca-GrQc", "Erdos971", "add32", "rajat19", "luxembourg",
                                    "dwt_1242", "watt_2", "cage8", "bayer10", "tomography"};
  if (quick) names.resize(4);
  const char* exprs[] = {"A(i,j) = B(i,j) * C(j,i)", "a(i) = B(i,j) * C(j,i)"};
  double worst = 0;
  std::vector<double> ratios;
  for (auto& n : names) {
    auto path = data_dir() / "matrices" / (n + ".mtx");
    if (!std::filesystem::exists(path)) continue;
    Tensor m = with_forms(read_tensor_file(path.string(), ctx.allocator));
    if (m.dims[0] != m.dims[1]) continue;
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
    GrB_Matrix G = grb_matrix(m);  // B and C are both m; C(j,i) is the descriptor's transpose
#endif
    for (int x = 0; x < 2; ++x) {
      const char* e = exprs[x];
      std::vector<Tensor> ops{m, m};
      std::optional<std::string> out = std::string(e)[0] == 'A' ? std::optional<std::string>("csr") : std::nullopt;
      EinsumPlan fused(ctx, e, ops, {}, out, opts(SJ_SCHEDULE_SEARCH));
      Timing tf = time_plan(fused, ops);
      Tensor fresh = with_forms(m);  // a handle without the cached conversion: the first call converts
      std::vector<Tensor> fresh_ops{fresh, fresh};
      EinsumPlan tr(ctx, e, fresh_ops, {}, out, opts(SJ_SCHEDULE_TRANSPOSE));
      Timing tt = time_plan(tr, fresh_ops);
      Tensor fresh2 = with_forms(m);
      std::vector<Tensor> ops2{fresh2, fresh2};
      EinsumPlan au(ctx, e, ops2, {}, out, opts(SJ_SCHEDULE_AUTO));
      Timing ta = time_plan(au, ops2);
      double best = std::min(tf.median, tt.median);
      double r = ta.median / best;
      ratios.push_back(r);
      worst = std::max(worst, r);
      std::printf("%-34s %-16s %9lld %10.4f %10.4f %11.4f %-10s %7.2f", e, n.c_str(), static_cast<long long>(m.nnz()),
                  tf.median, tt.median, tt.first, chosen_name(au).c_str(), r);
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
      double tg = x == 0 ? time_call([&] { GrB_Matrix A = grb_hadamard_t(G, G); GrB_Matrix_free(&A); })
                         : time_call([&] { GrB_Vector a = grb_batched_dot(G, G); GrB_Vector_free(&a); });
      grb_ratios[x].push_back(tg / ta.median);
      std::printf(" %10.4f %8.2f\n", tg, tg / ta.median);
      Entries theirs = x == 0 ? take_entries(grb_hadamard_t(G, G)) : take_entries(grb_batched_dot(G, G));
      if (!same_entries(entries_of(au.execute(ops2)), theirs, e, n)) ++mismatches;
#else
      std::printf("\n");
#endif
    }
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
    GrB_Matrix_free(&G);
#endif
  }
  // the 3-D contraction on CSF tensors
  for (auto& n : {"nations", "kinships"}) {
    auto path = data_dir() / "tensors" / (std::string(n) + ".tns");
    if (!std::filesystem::exists(path)) continue;
    Tensor t = with_forms(read_tensor_file(path.string(), ctx.allocator));
    if (t.order != 3 || t.dims[1] != t.dims[2]) continue;
    const char* e = "a(i) = B(i,j,k) * C(i,k,j)";
    std::vector<Tensor> ops{t, t};
    EinsumPlan fused(ctx, e, ops, {}, std::nullopt, opts(SJ_SCHEDULE_SEARCH));
    Timing tf = time_plan(fused, ops);
    Tensor fresh = with_forms(t);
    std::vector<Tensor> fo{fresh, fresh};
    EinsumPlan tr(ctx, e, fo, {}, std::nullopt, opts(SJ_SCHEDULE_TRANSPOSE));
    Timing tt = time_plan(tr, fo);
    Tensor fresh2 = with_forms(t);
    std::vector<Tensor> ao{fresh2, fresh2};
    EinsumPlan au(ctx, e, ao, {}, std::nullopt, opts(SJ_SCHEDULE_AUTO));
    Timing ta = time_plan(au, ao);
    double r = ta.median / std::min(tf.median, tt.median);
    ratios.push_back(r);
    worst = std::max(worst, r);
    std::printf("%-34s %-16s %9lld %10.4f %10.4f %11.4f %-10s %7.2f\n", e, n, static_cast<long long>(t.nnz()), tf.median,
                tt.median, tt.first, chosen_name(au).c_str(), r);
  }
  double g = 0;
  for (double r : ratios) g += std::log(r);
  if (!ratios.empty())
    std::printf("auto vs the better alternative: geomean %.3f, worst %.3f (target <= 1.15)\n", std::exp(g / ratios.size()), worst);
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
  for (int x = 0; x < 2; ++x) {
    double lg = 0;
    for (double r : grb_ratios[x]) lg += std::log(r);
    if (!grb_ratios[x].empty())
      std::printf("GrB/auto %-26s geomean %.3f over %zu matrices (> 1: ours faster)\n", exprs[x],
                  std::exp(lg / grb_ratios[x].size()), grb_ratios[x].size());
  }
  std::printf("GraphBLAS results checked against ours: %d mismatch(es)\n", mismatches);
#endif
}

void splyce(const Context& ctx, bool quick) {
  std::printf("\n== Splyce kernels: LLVM build for this CPU vs scalar-only build (median ms)\n");
  std::printf("%-40s %-26s %10s %10s %8s\n", "kernel", "setup", "simd", "scalar", "speedup");
  const double s = quick ? 0.5 : 1.0;
  struct K {
    const char* name;
    const char* expr;
    std::vector<Tensor> ops;
    std::optional<std::string> out;
    std::vector<std::string> order;
    std::string setup;
  };
  auto n = [&](int64_t v) { return static_cast<int64_t>(v * s); };
  std::vector<K> ks;
  ks.push_back({"SpGEMM", "A(i,j) = B(i,k) * C(k,j)",
                {synthetic(ctx, {n(600), 2000}, 0.01, format_spec(SJ_FORMAT_CSR, 2), 1),
                 synthetic(ctx, {2000, n(600)}, 0.01, format_spec(SJ_FORMAT_CSC, 2), 2)},
                "dense", {"i", "j", "k"}, "B CSR, C CSC, 1% dense"});
  ks.push_back({"SpMSpV", "y(i) = A(i,j) * x(j)",
                {synthetic(ctx, {n(20000), 5000}, 0.02, format_spec(SJ_FORMAT_CSR, 2), 3),
                 synthetic(ctx, {5000}, 0.2, format_spec(SJ_FORMAT_SPARSE_VECTOR, 1), 4)},
                "dense", {"i", "j"}, "A CSR 2%, x 20%"});
  ks.push_back({"SpMTTKRP", "A(i,k) = B(i,k,l) * C(l,j) * D(k,j)",
                {synthetic(ctx, {n(60), 60, 60}, 0.05, format_spec(SJ_FORMAT_CSF, 3), 5),
                 synthetic(ctx, {60, 500}, 0.1, format_spec(SJ_FORMAT_CSR, 2), 6),
                 synthetic(ctx, {60, 500}, 0.1, format_spec(SJ_FORMAT_CSR, 2), 7)},
                "dense", {"i", "k", "l", "j"}, "B dcc 5%, C D CSR 10%"});
  ks.push_back({"SpMMH", "A(i,j) = B(i,k) * C(k,j) * D(i,j)",
                {synthetic(ctx, {2000, 300}, 0.05, format_spec(SJ_FORMAT_CSC, 2), 8),
                 synthetic(ctx, {300, n(300)}, 1.0, format_spec(SJ_FORMAT_DENSE_COL_MAJOR, 2), 9),
                 synthetic(ctx, {2000, n(300)}, 0.05, format_spec(SJ_FORMAT_CSC, 2), 10)},
                "dense", {"j", "k", "i"}, "B D CSC 5%, C dense"});
  ks.push_back({"SpTTSpM", "A(i,j,r) = B(i,j,k) * C(k,r)",
                {synthetic(ctx, {n(40), 40, 400}, 0.05, format_spec(SJ_FORMAT_CSF, 3), 11),
                 synthetic(ctx, {400, 60}, 0.1, format_spec(SJ_FORMAT_CSC, 2), 12)},
                "dense", {"i", "j", "r", "k"}, "B dcc 5%, C CSC 10%"});
  double g = 0;
  int cnt = 0;
  std::vector<double> asmjit_vs_ir;
  for (auto& k : ks) {
    EinsumTuning simd, scalar;
    simd.loop_order = scalar.loop_order = k.order;
    scalar.scalar_only = true;
    EinsumPlan a(ctx, k.expr, k.ops, {}, k.out, opts(SJ_SCHEDULE_AUTO), simd);
    EinsumPlan b(ctx, k.expr, k.ops, {}, k.out, opts(SJ_SCHEDULE_AUTO), scalar);
    Timing ta = time_plan(a, k.ops), tb = time_plan(b, k.ops);
    double sp = tb.median / ta.median;
    g += std::log(sp);
    ++cnt;
    std::printf("%-40s %-26s %10.4f %10.4f %8.2f\n", (std::string(k.name) + ": " + k.expr).c_str(), k.setup.c_str(),
                ta.median, tb.median, sp);
    // The same product through the asmjit coiteration kernels and their drivers (the drop-in
    // inner-product schedule, per-pair tiers): is the IR lane or the asmjit kernel faster?
    const std::string name = k.name;
    if (name == "SpGEMM" || name == "SpMSpV") {
      const Tensor& A = k.ops[0];
      const Tensor& X = k.ops[1];
      const double mean_a = static_cast<double>(A.nnz()) / static_cast<double>(std::max<int64_t>(1, A.dims[0]));
      const double mean_b = name == "SpMSpV" ? static_cast<double>(X.nnz())
                                             : static_cast<double>(X.nnz()) / static_cast<double>(std::max<int64_t>(1, X.dims[1]));
      const sj_op_options o = opts(SJ_SCHEDULE_AUTO);
      const kernels::CoiterConfig cfg = kernels::resolve_coiter(
          kernels::coiter_config(o, A.index_type, A.value_type, mean_a, mean_b), A.index_type, A.value_type, SJ_SEMIRING_PLUS_TIMES);
      const double tj = time_call([&] {
        if (name == "SpGEMM") kernels::coiter_spgemm(A, X, SJ_SEMIRING_PLUS_TIMES, cfg, true, ctx.allocator);
        else kernels::coiter_spmspv(A, X, SJ_SEMIRING_PLUS_TIMES, cfg, true, ctx.allocator);
      });
      asmjit_vs_ir.push_back(tj / ta.median);
      std::printf("  %-38s %-26s %10.4f %10s %8.2f  (asmjit time / IR lane time)\n", "asmjit kernels + drivers",
                  kernels::describe(cfg).c_str(), tj, "", tj / ta.median);
    }
  }
  std::printf("geomean speedup of the SIMD build: %.2fx (target >= 2.5x)\n", std::exp(g / cnt));
  double ga = 0;
  for (double r : asmjit_vs_ir) ga += std::log(r);
  if (!asmjit_vs_ir.empty())
    std::printf("asmjit kernels + drivers vs the IR lane on the same products: %.2fx the IR lane's time (geomean)\n",
                std::exp(ga / static_cast<double>(asmjit_vs_ir.size())));
}

void compile_times(bool quick) {
  std::printf("\n== LLVM compile time per kernel: cold vs from the on-disk cache (ms)\n");
  auto dir = std::filesystem::temp_directory_path() / ("sj-bench-einsum-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  const std::string d = dir.string();
  sj_config c;
  sj_config_init(&c);
  c.cache_dir = d.c_str();
  Context ctx(c);
  const char* exprs[] = {"A(i,j) = B(i,k) * C(k,j)", "y(i) = A(i,j) * x(j)", "A(i,k) = B(i,k,l) * C(l,j) * D(k,j)",
                         "A(i,j) = B(i,k) * C(k,j) * D(i,j)", "A(i,j,r) = B(i,j,k) * C(k,r)", "A(i,j) = B(i,j) * C(j,i)",
                         "a(i) = B(i,j) * C(j,i)", "a(i) = B(i,j,k) * C(i,k,j)"};
  // The LLVM module is loaded first (jit/llvm_module.hpp): its ~55 ms, once per process, would
  // otherwise count in the first kernel's cold compile.
  if (jit::llvm_host_target().empty()) std::printf("  (the LLVM module could not be loaded: kernels fall back)\n");
  std::printf("%-40s %10s %10s %12s %12s\n", "kernel", "cold cpu", "disk cpu", "cold wall", "disk wall");
  std::vector<double> colds, disks;
  for (const char* e : exprs) {
    Expression ex = parse(e);
    std::vector<Tensor> ops;
    int f = 0;
    for (auto& name : ex.operands) {
      const Access* a = nullptr;
      for (auto& fa : ex.terms[0].factors)
        if (fa.tensor == name) a = &fa;
      std::vector<int64_t> dims(a->indices.size(), 30);
      FormatSpec s = dims.size() == 1 ? format_spec(SJ_FORMAT_SPARSE_VECTOR, 1)
                     : dims.size() == 2 ? format_spec(SJ_FORMAT_CSR, 2) : format_spec(SJ_FORMAT_CSF, 3);
      ops.push_back(synthetic(ctx, dims, 0.1, s, 100 + f++));
    }
    double cold = 0, disk = 0, cold_wall = 0, disk_wall = 0;
    // The generated nest always: auto runs a matrix product (the first expression) by the
    // built-in SpGEMM, which compiles nothing.
    const sj_schedule sched = std::string_view(e) == "A(i,j) = B(i,k) * C(k,j)" ? SJ_SCHEDULE_FUSED : SJ_SCHEDULE_AUTO;
    {
      double t0 = now_ms();
      EinsumPlan p(ctx, e, ops, {}, std::nullopt, opts(sched));
      cold = now_ms() - t0;  // CPU ms of the whole plan (inspection, planning, compilation)
      for (auto& t : p.terms()) cold_wall += t.compile_ms;
    }  // the kernel leaves memory with the plan
    {
      double t0 = now_ms();
      EinsumPlan p(ctx, e, ops, {}, std::nullopt, opts(sched));
      disk = now_ms() - t0;
      for (auto& t : p.terms()) {
        disk_wall += t.compile_ms;
        if (t.kernel_source != "disk") std::printf("  (expected a disk hit, got %s)\n", t.kernel_source.c_str());
      }
    }
    colds.push_back(cold);
    disks.push_back(disk);
    std::printf("%-40s %10.3f %10.3f %12.3f %12.3f\n", e, cold, disk, cold_wall, disk_wall);
    if (quick && colds.size() == 3) break;
  }
  std::sort(colds.begin(), colds.end());
  std::sort(disks.begin(), disks.end());
  std::printf("median (CPU ms of the whole plan): cold %.3f ms (target <= 50), disk %.3f ms (target <= 1)\n", colds[colds.size() / 2],
              disks[disks.size() / 2]);
  std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  // bench_einsum [--quick] [--only compile|cases|splyce]
  bool quick = false;
  std::string only;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "--quick") quick = true;
    else if (arg == "--only" && a + 1 < argc) only = argv[++a];
    else {
      std::fprintf(stderr, "usage: bench_einsum [--quick] [--only compile|cases|splyce]\n");
      return 2;
    }
  }
  try {
    sj_config c;
    sj_config_init(&c);
    c.disable_disk_cache = 1;
    Context ctx(c);
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
    grb(GrB_init(GrB_NONBLOCKING), "init");
    grb(GxB_Global_Option_set_INT32(GxB_GLOBAL_NTHREADS, 1), "one thread");  // as our kernels: the calling thread
#endif
    if (only.empty() || only == "compile") compile_times(quick);
    if (only.empty() || only == "cases") case_studies(ctx, quick);
    if (only.empty() || only == "splyce") splyce(ctx, quick);
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
    GrB_finalize();
#endif
  } catch (const std::exception& e) {  // sj::Error, or a GraphBLAS failure
    std::fprintf(stderr, "bench_einsum: %s\n", e.what());
    return 1;
  }
  return 0;
}

// SpGEMM against the peers: C = A*A (A*A^T when A is rectangular), f64 plus-times, single
// thread, on every matrix of ../shared/data/matrices and on larger synthetic ones.
//
// Systems: ours (sj_plan_create once, then sj_plan_execute: the steady state; the first call is
// plan creation + one execution on a fresh plan), CXSparse cs_multiply (output columns
// UNSORTED), Eigen 3.4 SparseMatrix<RowMajor> product (sorted), SuiteSparse:GraphBLAS GrB_mxm
// (1 thread, by row, waited on). Each comparison is compiled in only when its library was
// found (see bench/CMakeLists.txt). Output allocation is inside every timed region; freeing
// the output is not. Steady state = median of >= 5 timed calls after one warm-up call (more
// calls for fast problems, up to ~0.3 s per system and matrix). Checksums (sum of output
// values) are compared across systems (relative 1e-9).
//
// Output: one tab-separated line per matrix (a header first), for scripts/bench-spgemm.sh.
// Options: --filter SUBSTR (matrices whose name contains it), --no-large (skip the big
// synthetic matrices), --schedules (time every forced schedule of ours instead of the peers,
// with the cost model's inputs: the calibration data of kernels/spgemm_schedules.cpp),
// --masked (likewise for masked SpGEMM C<A> = A*A). --complement: C<!A> = A*A (the mask
// complemented) against GraphBLAS's GrB_mxm with GrB_DESC_SC, and our unmasked A*A beside it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/inspect.hpp"
#include "src/tensor_file.hpp"
#include "tests/random_matrices.hpp"

#ifdef SJ_BENCH_HAVE_CXSPARSE
#include <suitesparse/cs.h>
#endif
#ifdef SJ_BENCH_HAVE_EIGEN
#include <Eigen/Sparse>
#endif
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
extern "C" {  // GraphBLAS.h has no C++ guard
#include <GraphBLAS.h>
}
#endif

namespace {

using Clock = std::chrono::steady_clock;

// The machine is shared: time with this thread's CPU clock (user + system time of the calling
// thread, page faults of the output included), which time slices given to others do not
// inflate. SPGEMM_BENCH_WALL=1 switches to the wall clock.
double now_ms() {
  static const bool wall = std::getenv("SPGEMM_BENCH_WALL") != nullptr;
  if (wall) return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

struct Csr {
  std::string name;
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> pos;
  std::vector<int32_t> crd;
  std::vector<double> val;
  int64_t nnz() const { return pos.empty() ? 0 : pos.back(); }
};

Csr from_tensor(const std::string& name, const sj::Tensor& t0) {
  sj::Tensor t = sj::convert(t0, sj::format_spec(SJ_FORMAT_CSR, 2), sj::IndexType::I32, sj::default_allocator());
  if (t.value_type != sj::ValueType::F64) t = sj::with_value_type(t, sj::ValueType::F64, sj::default_allocator());
  Csr c;
  c.name = name;
  c.rows = t.dims[0];
  c.cols = t.dims[1];
  const int64_t* p = t.levels[1].pos.as<int64_t>();
  c.pos.assign(p, p + c.rows + 1);
  const int32_t* j = t.levels[1].crd.as<int32_t>();
  const double* v = t.values.as<double>();
  c.crd.assign(j, j + c.nnz());
  c.val.assign(v, v + c.nnz());
  return c;
}

Csr transpose(const Csr& a) {
  Csr t;
  t.name = a.name;
  t.rows = a.cols;
  t.cols = a.rows;
  t.pos.assign(t.rows + 1, 0);
  for (int64_t p = 0; p < a.nnz(); ++p) ++t.pos[a.crd[p] + 1];
  for (int64_t i = 0; i < t.rows; ++i) t.pos[i + 1] += t.pos[i];
  t.crd.resize(a.nnz());
  t.val.resize(a.nnz());
  std::vector<int64_t> next(t.pos.begin(), t.pos.end() - 1);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t p = a.pos[i]; p < a.pos[i + 1]; ++p) {
      const int64_t q = next[a.crd[p]]++;
      t.crd[q] = static_cast<int32_t>(i);
      t.val[q] = a.val[p];
    }
  return t;
}

// Result of timing one system on one problem.
struct Timing {
  bool ran = false;
  double first_ms = NAN, steady_ms = NAN;
  double checksum = NAN;
  int64_t nnz = -1;
};

// One multiplication: returns its time in ms; when `sum` is not null it also reports the
// output's checksum and nnz (read after the timed region).
using Once = std::function<double(double* sum, int64_t* nnz)>;

// Times several systems on one problem, interleaved (round r runs every system once, starting
// with system r mod n), so that background load on the shared machine affects them alike.
// First call, one warm-up call, then >= 5 rounds (more while the problem is fast: up to
// ~0.6 s in all or 200 rounds); steady = median.
std::vector<Timing> time_systems(std::vector<Once>& systems) {
  std::vector<Timing> out(systems.size());
  std::vector<std::vector<double>> times(systems.size());
  double round_ms = 0;
  for (size_t s = 0; s < systems.size(); ++s) {
    out[s].ran = true;
    double sum = 0;
    int64_t nnz = 0;
    out[s].first_ms = systems[s](&sum, &nnz);
    out[s].checksum = sum;
    out[s].nnz = nnz;
    round_ms += systems[s](nullptr, nullptr);  // warm-up
  }
  const int rounds = static_cast<int>(std::clamp(600.0 / std::max(round_ms, 1e-3), 5.0, 200.0));
  // Each round starts with the next system: a system that always ran right after another
  // would always find the caches as that one left them (the inputs evicted by a peer with a
  // large working set, or kept warm by one that reads the same arrays).
  const size_t n = systems.size();
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < n; ++k) {
      const size_t s = (static_cast<size_t>(r) + k) % n;
      times[s].push_back(systems[s](nullptr, nullptr));
    }
  for (size_t s = 0; s < systems.size(); ++s) {
    auto& t = times[s];
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    out[s].steady_ms = t[t.size() / 2];
  }
  return out;
}

// --- ours ------------------------------------------------------------------------------------

struct Ours {
  sj_context* ctx = nullptr;
  Ours() {
    sj_config c;
    sj_config_init(&c);
    c.threads = 1;
    c.disable_disk_cache = 1;
    sj_context_create(&c, &ctx);
  }
  ~Ours() { sj_context_destroy(ctx); }
  sj_tensor* handle(const Csr& a) {
    sj_tensor* h = nullptr;
    if (sj_tensor_create_csr(ctx, a.rows, a.cols, SJ_INDEX_INT32, SJ_VALUE_F64, a.pos.data(), a.crd.data(),
                             a.val.data(), 0u, &h) != SJ_OK) {
      std::fprintf(stderr, "ours: %s\n", sj_last_error_message());
      std::exit(1);
    }
    return h;
  }
};

double sum_of(const sj_tensor* t, int64_t* nnz) {
  const void* v = nullptr;
  int64_t len = 0;
  sj_tensor_get_values(t, &v, &len);
  double s = 0;
  for (int64_t p = 0; p < len; ++p) s += static_cast<const double*>(v)[p];
  *nnz = len;
  return s;
}

// A system set up for one problem: `once` runs one multiplication; the destructor frees.
struct System {
  Once once;
  std::function<void()> cleanup;
  System() = default;
  System(Once o, std::function<void()> c) : once(std::move(o)), cleanup(std::move(c)) {}
  System(System&& o) noexcept : once(std::move(o.once)), cleanup(std::move(o.cleanup)) { o.cleanup = nullptr; }
  ~System() {
    if (cleanup) cleanup();
  }
};

// Ours through the C API: the first call creates the plan (inspect, plan) and executes it;
// every later call executes the same plan (the steady state of a caller that keeps plans).
// From its third execution on, a SpGEMM plan computes only the values over the structure it
// kept (kernels/spgemm_structure.hpp); `recompute` turns that off (options.recompute_structure),
// so that every execution computes the structure as the peers do.
System make_ours(Ours& ours, const Csr& A, const Csr& B, sj_op op, sj_schedule schedule, const Csr* M = nullptr,
                 bool recompute = false, bool complement = false) {
  struct State {
    sj_tensor *a = nullptr, *b = nullptr, *m = nullptr;
    sj_plan* plan = nullptr;
    std::vector<const sj_tensor*> operands;
    sj_op_options o;
  };
  auto st = std::make_shared<State>();
  st->a = ours.handle(A);
  st->b = ours.handle(B);
  st->m = M ? ours.handle(*M) : nullptr;
  sj_op_options_init(&st->o);
  st->o.schedule = schedule;
  st->o.recompute_structure = recompute ? 1 : 0;
  st->o.mask_complement = complement ? 1 : 0;
  if (st->m) st->operands.push_back(st->m);
  st->operands.push_back(st->a);
  st->operands.push_back(st->b);
  sj_context* ctx = ours.ctx;
  Once once = [st, ctx, op](double* sum, int64_t* nnz) {
    sj_tensor* c = nullptr;
    const int n = static_cast<int>(st->operands.size());
    const double t0 = now_ms();
    if (!st->plan && sj_plan_create(ctx, op, st->operands.data(), n, &st->o, &st->plan) != SJ_OK) {
      std::fprintf(stderr, "ours: %s\n", sj_last_error_message());
      std::exit(1);
    }
    if (sj_plan_execute(st->plan, st->operands.data(), n, &c) != SJ_OK) {
      std::fprintf(stderr, "ours: %s\n", sj_last_error_message());
      std::exit(1);
    }
    const double ms = now_ms() - t0;
    if (sum) *sum = sum_of(c, nnz);
    sj_tensor_destroy(c);
    return ms;
  };
  return System(once, [st] {
    sj_plan_destroy(st->plan);
    sj_tensor_destroy(st->a);
    sj_tensor_destroy(st->b);
    if (st->m) sj_tensor_destroy(st->m);
  });
}

// What the planner chose, and how long its inspection took (the least of 3 plans, each made on
// fresh handles so that the operand statistics are computed, not recalled: one sample is
// often stretched by a preemption on this shared machine), from the plans' explanations.
struct PlanFacts {
  std::string schedule = "?";
  double inspect_ms = NAN;
};
PlanFacts plan_facts(Ours& ours, const Csr& A, const Csr& B) {
  PlanFacts f;
  for (int rep = 0; rep < 3; ++rep) {
    sj_tensor* a = ours.handle(A);
    sj_tensor* b = ours.handle(B);
    const sj_tensor* ops[2] = {a, b};
    sj_plan* plan = nullptr;
    sj_plan_create(ours.ctx, SJ_OP_SPGEMM, ops, 2, nullptr, &plan);
    const char* text = nullptr;
    if (plan && sj_plan_explain(plan, &text) == SJ_OK && text) {
      std::string e = text;
      auto k = e.find("\"chosen\":");
      if (k != std::string::npos) {
        auto q1 = e.find('"', k + 9);
        auto q2 = e.find('"', q1 + 1);
        f.schedule = e.substr(q1 + 1, q2 - q1 - 1);
      }
      k = e.find("\"inspect\":", e.find("\"timings_ms\""));
      if (k != std::string::npos) {
        const double ms = std::strtod(e.c_str() + k + 10, nullptr);
        f.inspect_ms = std::isnan(f.inspect_ms) ? ms : std::min(f.inspect_ms, ms);
      }
    }
    sj_plan_destroy(plan);
    sj_tensor_destroy(a);
    sj_tensor_destroy(b);
  }
  return f;
}

// --- peers -----------------------------------------------------------------------------------

#ifdef SJ_BENCH_HAVE_CXSPARSE
// Our CSR arrays are the CSC arrays of the transpose: cs_multiply(B^T, A^T) = (A*B)^T in CSC,
// i.e. A*B in CSR, with the same work as A*B column by column.
System make_cxsparse(const Csr& A, const Csr& B) {
  struct State {
    std::vector<int> pa, pb;
    cs_di At, Bt;
  };
  auto st = std::make_shared<State>();
  auto as_cs = [](const Csr& x, std::vector<int>& p) {
    p.assign(x.pos.begin(), x.pos.end());
    cs_di c;
    c.nzmax = static_cast<int>(x.nnz());
    c.m = static_cast<int>(x.cols);
    c.n = static_cast<int>(x.rows);
    c.p = p.data();
    c.i = const_cast<int*>(x.crd.data());
    c.x = const_cast<double*>(x.val.data());
    c.nz = -1;
    return c;
  };
  st->At = as_cs(A, st->pa);
  st->Bt = as_cs(B, st->pb);
  return System(
      [st](double* sum, int64_t* nnz) {
        const double t0 = now_ms();
        cs_di* C = cs_di_multiply(&st->Bt, &st->At);
        const double ms = now_ms() - t0;
        if (sum) {
          double s = 0;
          for (int p = 0; p < C->p[C->n]; ++p) s += C->x[p];
          *sum = s;
          *nnz = C->p[C->n];
        }
        cs_di_spfree(C);
        return ms;
      },
      nullptr);
}
#endif

#ifdef SJ_BENCH_HAVE_EIGEN
using EigenCsr = Eigen::SparseMatrix<double, Eigen::RowMajor, int>;
EigenCsr to_eigen(const Csr& x) {
  EigenCsr m(x.rows, x.cols);
  std::vector<Eigen::Triplet<double, int>> trip;
  trip.reserve(x.nnz());
  for (int64_t i = 0; i < x.rows; ++i)
    for (int64_t p = x.pos[i]; p < x.pos[i + 1]; ++p) trip.emplace_back(static_cast<int>(i), x.crd[p], x.val[p]);
  m.setFromTriplets(trip.begin(), trip.end());
  m.makeCompressed();
  return m;
}
System make_eigen(const Csr& A, const Csr& B) {
  auto ea = std::make_shared<EigenCsr>(to_eigen(A));
  auto eb = std::make_shared<EigenCsr>(to_eigen(B));
  return System(
      [ea, eb](double* sum, int64_t* nnz) {
        const double t0 = now_ms();
        EigenCsr C = (*ea) * (*eb);
        const double ms = now_ms() - t0;
        if (sum) {
          *sum = C.coeffs().sum();
          *nnz = C.nonZeros();
        }
        return ms;
      },
      nullptr);
}
#endif

#ifdef SJ_BENCH_HAVE_GRAPHBLAS
GrB_Matrix to_grb(const Csr& x) {
  GrB_Matrix m = nullptr;
  GrB_Matrix_new(&m, GrB_FP64, x.rows, x.cols);
  GxB_Matrix_Option_set(m, GxB_FORMAT, GxB_BY_ROW);
  std::vector<GrB_Index> I(x.nnz()), J(x.nnz());
  for (int64_t i = 0; i < x.rows; ++i)
    for (int64_t p = x.pos[i]; p < x.pos[i + 1]; ++p) {
      I[p] = i;
      J[p] = x.crd[p];
    }
  GrB_Matrix_build_FP64(m, I.data(), J.data(), x.val.data(), x.nnz(), GrB_PLUS_FP64);
  GrB_Matrix_wait(m, GrB_MATERIALIZE);
  return m;
}
// With M: C<M> = A*B (structural mask, GrB_DESC_S), or C<!M> with `complement` (GrB_DESC_SC).
System make_graphblas(const Csr& A, const Csr& B, const Csr* M = nullptr, bool complement = false) {
  struct State {
    GrB_Matrix a = nullptr, b = nullptr, m = nullptr;
    GrB_Descriptor desc = nullptr;
    GrB_Index rows = 0, cols = 0;
  };
  auto st = std::make_shared<State>();
  st->a = to_grb(A);
  st->b = to_grb(B);
  if (M) {
    st->m = to_grb(*M);
    st->desc = complement ? GrB_DESC_SC : GrB_DESC_S;
  }
  st->rows = A.rows;
  st->cols = B.cols;
  return System(
      [st](double* sum, int64_t* nnz) {
        const double t0 = now_ms();
        GrB_Matrix C = nullptr;
        GrB_Matrix_new(&C, GrB_FP64, st->rows, st->cols);
        GxB_Matrix_Option_set(C, GxB_FORMAT, GxB_BY_ROW);
        GrB_mxm(C, st->m, nullptr, GrB_PLUS_TIMES_SEMIRING_FP64, st->a, st->b, st->desc);
        GrB_Matrix_wait(C, GrB_MATERIALIZE);
        const double ms = now_ms() - t0;
        if (sum) {
          double s = 0;
          GrB_Matrix_reduce_FP64(&s, nullptr, GrB_PLUS_MONOID_FP64, C, nullptr);
          GrB_Index nv = 0;
          GrB_Matrix_nvals(&nv, C);
          *sum = s;
          *nnz = static_cast<int64_t>(nv);
        }
        GrB_Matrix_free(&C);
        return ms;
      },
      [st] {
        GrB_Matrix_free(&st->a);
        GrB_Matrix_free(&st->b);
        if (st->m) GrB_Matrix_free(&st->m);
      });
}
#endif

// --- inputs ----------------------------------------------------------------------------------

std::filesystem::path data_dir() {
  if (const char* env = std::getenv("SPARSEJIT_DATA_DIR")) return std::filesystem::path(env) / "matrices";
  return std::filesystem::path(SPARSEJIT_SOURCE_DIR) / ".." / "shared" / "data" / "matrices";
}

Csr synthetic(const std::string& name, uint64_t seed, bool power_law, int64_t n, double param) {
  sj::test::Rng rng(seed);
  sj::test::MatrixOptions opt;
  opt.values = sj::test::Values::Positive;
  auto r = power_law ? sj::test::random_power_law<int32_t, double>(rng, n, n, param, 2.5, opt)
                     : sj::test::random_uniform<int32_t, double>(rng, n, n, param, opt);
  Csr c;
  c.name = name;
  c.rows = c.cols = n;
  c.pos = std::move(r.pos);
  c.crd = std::move(r.crd);
  c.val = std::move(r.val);
  return c;
}

int64_t flops_of(const Csr& A, const Csr& B) {
  int64_t f = 0;
  for (int64_t p = 0; p < A.nnz(); ++p) f += B.pos[A.crd[p] + 1] - B.pos[A.crd[p]];
  return f;
}

bool same_sum(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return true;  // not run
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter;
  bool large = true, schedules = false, masked = false, complement = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--no-large") large = false;
    else if (a == "--schedules") schedules = true;
    else if (a == "--masked") masked = true;
    else if (a == "--complement") complement = true;
    else {
      std::fprintf(stderr, "usage: %s [--filter SUBSTR] [--no-large] [--schedules] [--masked] [--complement]\n", argv[0]);
      return 2;
    }
  }
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
  GrB_init(GrB_NONBLOCKING);
  GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, 1);
#endif
#ifdef SJ_BENCH_HAVE_EIGEN
  Eigen::setNbThreads(1);
#endif

  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(data_dir()))
    for (auto& e : std::filesystem::directory_iterator(data_dir()))
      if (e.path().extension() == ".mtx") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::function<Csr()>> inputs;
  for (auto& f : files)
    inputs.push_back([f] { return from_tensor(f.stem().string(), sj::read_tensor_file(f.string(), sj::default_allocator())); });
  inputs.push_back([] { return synthetic("uniform_2k_1pct", 1, false, 2000, 0.01); });
  inputs.push_back([] { return synthetic("uniform_2k_5pct", 2, false, 2000, 0.05); });
  inputs.push_back([] { return synthetic("uniform_20k_0.1pct", 3, false, 20000, 0.001); });
  if (large) {
    inputs.push_back([] { return synthetic("uniform_100k_1M", 4, false, 100000, 1e-4); });
    inputs.push_back([] { return synthetic("uniform_200k_2M", 5, false, 200000, 5e-5); });
    inputs.push_back([] { return synthetic("powerlaw_100k_0.8M", 6, true, 100000, 8.0); });
  }

  Ours ours;
  if (complement) {
    std::printf("matrix\trows\tnnz\tflops\tout_nnz\tours_ms\tgraphblas_ms\tours_unmasked_ms\tchecksums\n");
  } else if (schedules || masked) {
    std::printf("matrix\trows\tcols\tnnz\tflops\tout_nnz\treference_ms\tgustavson-dense_ms\t%s_ms\n",
                masked ? "inner" : "gustavson-hash");
  } else {
    std::printf("matrix\trows\tcols\tnnz\tflops\tout_nnz\tchosen\tours_first_ms\tours_ms\tcxsparse_ms\teigen_ms\tgraphblas_ms\tchecksums\tours_inspect_ms\tcxsparse_first_ms\teigen_first_ms\tgraphblas_first_ms\tours_recompute_ms\n");
  }
  for (auto& make : inputs) {
    Csr A = make();
    if (!filter.empty() && A.name.find(filter) == std::string::npos) continue;
    Csr B = A.rows == A.cols ? A : transpose(A);
    if (masked && A.rows != A.cols) continue;
    const int64_t flops = flops_of(A, B);
    if (complement) {  // C<!A> = A*A (square A): ours against GraphBLAS with GrB_DESC_SC
      if (A.rows != A.cols) continue;
      std::vector<System> sys;
      sys.push_back(make_ours(ours, A, B, SJ_OP_SPGEMM_MASKED, SJ_SCHEDULE_AUTO, &A, true, true));
      sys.push_back(make_ours(ours, A, B, SJ_OP_SPGEMM, SJ_SCHEDULE_AUTO, nullptr, true));
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
      sys.push_back(make_graphblas(A, B, &A, true));
#endif
      std::vector<Once> onces;
      for (auto& x : sys) onces.push_back(x.once);
      auto t = time_systems(onces);
      const bool grb = t.size() > 2;
      const bool ok = !grb || (t[2].nnz == t[0].nnz && same_sum(t[0].checksum, t[2].checksum));
      std::printf("%s\t%lld\t%lld\t%lld\t%lld\t%.6f\t%.6f\t%.6f\t%s\n", A.name.c_str(), (long long)A.rows,
                  (long long)A.nnz(), (long long)flops, (long long)t[0].nnz, t[0].steady_ms,
                  grb ? t[2].steady_ms : NAN, t[1].steady_ms, ok ? "equal" : "DIFFER");
      std::fflush(stdout);
      continue;
    }
    if (schedules || masked) {
      const sj_op op = masked ? SJ_OP_SPGEMM_MASKED : SJ_OP_SPGEMM;
      const Csr* M = masked ? &A : nullptr;
      std::vector<System> sys;
      // The cost models describe whole products: no kept structure.
      sys.push_back(make_ours(ours, A, B, op, SJ_SCHEDULE_REFERENCE, M, true));
      sys.push_back(make_ours(ours, A, B, op, SJ_SCHEDULE_GUSTAVSON_DENSE, M, true));
      sys.push_back(make_ours(ours, A, B, op, masked ? SJ_SCHEDULE_INNER : SJ_SCHEDULE_GUSTAVSON_HASH, M, true));
      std::vector<Once> onces;
      for (auto& x : sys) onces.push_back(x.once);
      auto t = time_systems(onces);
      std::printf("%s\t%lld\t%lld\t%lld\t%lld\t%lld\t%.6f\t%.6f\t%.6f\n", A.name.c_str(), (long long)A.rows,
                  (long long)B.cols, (long long)A.nnz(), (long long)flops, (long long)t[1].nnz, t[0].steady_ms,
                  t[1].steady_ms, t[2].steady_ms);
      std::fflush(stdout);
      continue;
    }
    std::vector<System> sys;
    std::vector<int> which;  // 0 ours, 1 cxsparse, 2 eigen, 3 graphblas, 4 ours recomputing the structure
    sys.push_back(make_ours(ours, A, B, SJ_OP_SPGEMM, SJ_SCHEDULE_AUTO));
    which.push_back(0);
    sys.push_back(make_ours(ours, A, B, SJ_OP_SPGEMM, SJ_SCHEDULE_AUTO, nullptr, true));
    which.push_back(4);
#ifdef SJ_BENCH_HAVE_CXSPARSE
    sys.push_back(make_cxsparse(A, B));
    which.push_back(1);
#endif
#ifdef SJ_BENCH_HAVE_EIGEN
    sys.push_back(make_eigen(A, B));
    which.push_back(2);
#endif
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
    sys.push_back(make_graphblas(A, B));
    which.push_back(3);
#endif
    std::vector<Once> onces;
    for (auto& x : sys) onces.push_back(x.once);
    std::vector<Timing> got = time_systems(onces);
    Timing t[5];
    for (size_t s = 0; s < got.size(); ++s) t[which[s]] = got[s];
    const Timing& o = t[0];
    bool ok = true;
    for (int s = 1; s < 5; ++s)
      if (t[s].ran && (t[s].nnz != o.nnz || !same_sum(o.checksum, t[s].checksum))) ok = false;
    const PlanFacts facts = plan_facts(ours, A, B);
    std::printf("%s\t%lld\t%lld\t%lld\t%lld\t%lld\t%s\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%s\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\n", A.name.c_str(),
                (long long)A.rows, (long long)B.cols, (long long)A.nnz(), (long long)flops, (long long)o.nnz,
                facts.schedule.c_str(), o.first_ms, o.steady_ms, t[1].steady_ms, t[2].steady_ms, t[3].steady_ms,
                ok ? "equal" : "DIFFER", facts.inspect_ms, t[1].first_ms, t[2].first_ms, t[3].first_ms,
                t[4].steady_ms);
    std::fflush(stdout);
  }
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
  GrB_finalize();
#endif
  return 0;
}

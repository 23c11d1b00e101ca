// Parallel scaling (issue 6): each operation (and three index-notation expressions) with 1 and
// 2 threads (or the counts --threads lists), ours (through the C API, a plan executed
// repeatedly, schedule chosen by the planner) against SuiteSparse:GraphBLAS with the same
// thread count (GxB_NTHREADS), push SpMSpV split by row blocks, cuts and buckets, and SpGEMM on a
// skewed power-law input with static row partitioning (one equal-row chunk per thread) against
// our dynamic work-balanced chunks.
//
// Timing: WALL clock (threads), interleaved rounds (every system once per round, so load on
// the shared machine hits all alike), one warm-up, median of >= 7 rounds. The load average is
// printed before and after: numbers taken under load are noisy, and say so.
//
// Options: --quick (smaller inputs), --large (about 3x larger: inputs over 10 ms for machines
// with many cores), --threads 1,2,4,... (thread counts, default 1,2; the first is the
// speed-up's base), --rounds N, --only TEXT (only the operations whose name contains TEXT, and
// neither the push table nor the skewed-input one unless TEXT is "push" or "skewed").
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "kernels/spmspv_kernels.hpp"
#include "src/work_partition.hpp"
#include "tests/random_matrices.hpp"

#ifdef SJ_BENCH_HAVE_GRAPHBLAS
extern "C" {  // GraphBLAS.h has no C++ guard
#include <GraphBLAS.h>
}
#endif

namespace {

using Csr = sj::CsResult<int32_t, double>;

double wall_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

int g_rounds = 7;

// Median wall time of each system, rounds interleaved.
std::vector<double> time_all(const std::vector<std::function<void()>>& systems) {
  std::vector<std::vector<double>> t(systems.size());
  for (auto& s : systems) s();  // warm-up (plans, kernels, workspaces, pool threads)
  for (int r = 0; r < g_rounds; ++r)
    for (size_t i = 0; i < systems.size(); ++i) {
      const double t0 = wall_ms();
      systems[i]();
      t[i].push_back(wall_ms() - t0);
    }
  std::vector<double> med;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
  }
  return med;
}

// Zipf-by-position rows: row i has about c / (i + 1)^0.8 entries (heavy rows first, as in
// degree-ordered graphs), so the first half of the rows holds most of the work.
Csr skewed_rows(sj::test::Rng& rng, int64_t n, double total_nnz) {
  double norm = 0;
  for (int64_t i = 0; i < n; ++i) norm += std::pow(static_cast<double>(i + 1), -0.8);
  Csr m;
  m.outer = m.inner = n;
  m.pos.assign(static_cast<size_t>(n) + 1, 0);
  std::vector<int32_t> row;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = std::min<int64_t>(n, std::max<int64_t>(1, std::llround(total_nnz * std::pow(double(i + 1), -0.8) / norm)));
    row.clear();
    for (int64_t t = 0; t < len; ++t) row.push_back(static_cast<int32_t>(rng.uniform_int(0, n - 1)));
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    for (int32_t j : row) {
      m.crd.push_back(j);
      m.val.push_back(0.5 + rng.uniform01());
    }
    m.pos[i + 1] = static_cast<int64_t>(m.crd.size());
  }
  return m;
}

// ---- ours ---------------------------------------------------------------------------------

struct Ours {
  sj_context* ctx = nullptr;
  std::vector<sj_tensor*> handles;
  explicit Ours(int threads) {
    sj_config c;
    sj_config_init(&c);
    c.threads = threads;  // the pool's size: the most any call below asks for
    c.disable_disk_cache = 1;
    sj_context_create(&c, &ctx);
  }
  ~Ours() {
    for (auto* h : handles) sj_tensor_destroy(h);
    sj_context_destroy(ctx);
  }
  sj_tensor* csr(const Csr& m) {
    sj_tensor* h = nullptr;
    sj_tensor_create_csr(ctx, m.outer, m.inner, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(), m.val.data(),
                         SJ_TENSOR_COPY, &h);
    handles.push_back(h);
    return h;
  }
  sj_tensor* spvec(const sj::SpVecResult<int32_t, double>& x) {
    sj_tensor* h = nullptr;
    sj_tensor_create_sparse_vector(ctx, x.n, static_cast<int64_t>(x.idx.size()), SJ_INDEX_INT32, SJ_VALUE_F64,
                                   x.idx.data(), x.val.data(), SJ_TENSOR_COPY, &h);
    handles.push_back(h);
    return h;
  }
  sj_tensor* dense(const std::vector<double>& v) {
    sj_tensor* h = nullptr;
    const int64_t n = static_cast<int64_t>(v.size());
    sj_tensor_create_dense(ctx, 1, &n, SJ_VALUE_F64, v.data(), SJ_TENSOR_COPY, &h);
    handles.push_back(h);
    return h;
  }
  // A plan run with `threads`; returns the callable and the chosen schedule's name.
  std::function<void()> plan(sj_op op, std::vector<const sj_tensor*> ops, int threads, int transpose_b,
                             std::string* schedule, bool keep_structure = false) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.threads = threads;
    o.transpose_b = transpose_b;
    // Every execution computes the whole product, as GraphBLAS does, unless asked to keep the
    // structure (a SpGEMM plan then computes only the values from its third execution on).
    o.recompute_structure = keep_structure ? 0 : 1;
    sj_plan* p = nullptr;
    if (sj_plan_create(ctx, op, ops.data(), static_cast<int>(ops.size()), &o, &p) != SJ_OK) {
      std::fprintf(stderr, "plan failed: %s\n", sj_last_error_message());
      std::exit(1);
    }
    const char* text = nullptr;
    sj_plan_explain(p, &text);
    if (schedule) {
      const std::string s(text);
      const size_t at = s.find("\"chosen\":\"");
      *schedule = at == std::string::npos ? "?" : s.substr(at + 10, s.find('"', at + 10) - at - 10);
    }
    auto shared = std::shared_ptr<sj_plan>(p, [](sj_plan* q) { sj_plan_destroy(q); });
    return [shared, ops] {
      sj_tensor* out = nullptr;
      if (sj_plan_execute(shared.get(), ops.data(), static_cast<int>(ops.size()), &out) != SJ_OK) {
        std::fprintf(stderr, "execute failed: %s\n", sj_last_error_message());
        std::exit(1);
      }
      sj_tensor_destroy(out);
    };
  }
  // An index-notation plan (sj_einsum_plan) run with `threads`.
  std::function<void()> einsum(const char* expr, std::vector<const sj_tensor*> ops, const char* out_format, int threads,
                               std::string* schedule) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.threads = threads;
    o.recompute_structure = 1;  // a product's plan computes it whole every time, as GraphBLAS does
    sj_plan* p = nullptr;
    if (sj_einsum_plan(ctx, expr, ops.data(), static_cast<int>(ops.size()), nullptr, out_format, &o, &p) != SJ_OK) {
      std::fprintf(stderr, "einsum plan failed: %s\n", sj_last_error_message());
      std::exit(1);
    }
    if (schedule) {
      const char* text = nullptr;
      sj_plan_explain(p, &text);
      const std::string s(text);
      const size_t at = s.find("\"chosen\":\"");
      *schedule = "einsum " + (at == std::string::npos ? "?" : s.substr(at + 10, s.find('"', at + 10) - at - 10));
    }
    auto shared = std::shared_ptr<sj_plan>(p, [](sj_plan* q) { sj_plan_destroy(q); });
    return [shared, ops] {
      sj_tensor* out = nullptr;
      if (sj_plan_execute(shared.get(), ops.data(), static_cast<int>(ops.size()), &out) != SJ_OK) {
        std::fprintf(stderr, "execute failed: %s\n", sj_last_error_message());
        std::exit(1);
      }
      sj_tensor_destroy(out);
    };
  }
};

// ---- GraphBLAS ----------------------------------------------------------------------------

#ifdef SJ_BENCH_HAVE_GRAPHBLAS
GrB_Matrix grb(const Csr& m) {
  GrB_Matrix a = nullptr;
  GrB_Matrix_new(&a, GrB_FP64, m.outer, m.inner);
  GxB_Matrix_Option_set(a, GxB_FORMAT, GxB_BY_ROW);
  std::vector<GrB_Index> I(m.crd.size()), J(m.crd.size());
  for (int64_t i = 0; i < m.outer; ++i)
    for (int64_t p = m.pos[i]; p < m.pos[i + 1]; ++p) {
      I[p] = static_cast<GrB_Index>(i);
      J[p] = static_cast<GrB_Index>(m.crd[p]);
    }
  GrB_Matrix_build_FP64(a, I.data(), J.data(), m.val.data(), m.crd.size(), GrB_PLUS_FP64);
  GrB_Matrix_wait(a, GrB_MATERIALIZE);
  return a;
}
GrB_Vector grb(const sj::SpVecResult<int32_t, double>& x) {
  GrB_Vector v = nullptr;
  GrB_Vector_new(&v, GrB_FP64, x.n);
  std::vector<GrB_Index> I(x.idx.begin(), x.idx.end());
  GrB_Vector_build_FP64(v, I.data(), x.val.data(), I.size(), GrB_PLUS_FP64);
  GrB_Vector_wait(v, GrB_MATERIALIZE);
  return v;
}
GrB_Vector grb_dense(const std::vector<double>& x) {
  GrB_Vector v = nullptr;
  GrB_Vector_new(&v, GrB_FP64, x.size());
  for (size_t i = 0; i < x.size(); ++i) GrB_Vector_setElement_FP64(v, x[i], i);
  GrB_Vector_wait(v, GrB_MATERIALIZE);
  return v;
}
// Runs f with GraphBLAS set to `threads`.
std::function<void()> with_grb_threads(int threads, std::function<void()> f) {
  return [threads, f] {
    GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, threads);
    f();
  };
}
#endif

std::vector<int> g_threads{1, 2};  // --threads: the counts timed; the first is the speed-up's base

struct Row {
  std::string op, input, schedule;
  std::vector<double> ours, grb;  // median ms at each of g_threads (grb empty without GraphBLAS)
};

// One cell per thread count: "ms (speed-up over the first count)".
std::string cells(const std::vector<double>& ms) {
  std::string s;
  char buf[64];
  for (size_t i = 0; i < g_threads.size(); ++i) {
    if (i < ms.size()) std::snprintf(buf, sizeof buf, " %.2f (%.2fx) |", ms[i], ms[0] / ms[i]);
    else std::snprintf(buf, sizeof buf, " - |");
    s += buf;
  }
  return s;
}

void print(const std::vector<Row>& rows) {
  std::string head = "\n| operation | input | our schedule | system |", rule = "|---|---|---|---|";
  for (int t : g_threads) {
    head += " " + std::to_string(t) + "T ms (speed-up) |";
    rule += "---:|";
  }
  std::printf("%s ours/GrB at %dT |\n%s---:|\n", head.c_str(), g_threads.back(), rule.c_str());
  for (auto& r : rows) {
    const double ratio = r.grb.empty() ? NAN : r.ours.back() / r.grb.back();
    std::printf("| %s | %s | %s | ours |%s %.2f |\n", r.op.c_str(), r.input.c_str(), r.schedule.c_str(),
                cells(r.ours).c_str(), ratio);
    if (!r.grb.empty()) std::printf("| | | | GrB |%s |\n", cells(r.grb).c_str());
  }
}

// "1,2,4" -> {1, 2, 4}; exits on anything else (a benchmark's flags, so no recovery).
std::vector<int> parse_threads(const char* text) {
  std::vector<int> t;
  for (const char* p = text; *p;) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v < 1 || v > 4096) {
      std::fprintf(stderr, "--threads wants counts like 1,2,4 (got %s)\n", text);
      std::exit(2);
    }
    t.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
  }
  if (t.empty()) std::exit(2);
  return t;
}

std::string g_only;  // --only: a substring of the operation names to run
bool selected(const std::string& op) { return g_only.empty() || op.find(g_only) != std::string::npos; }

// Times one operation: ours (make(threads, schedule) returns a plan's execution) and, when
// `grb` is set, GraphBLAS, at every count of g_threads, all interleaved in one time_all.
Row time_row(const std::string& op, const std::string& input, const std::function<void()>& grb,
             const std::function<std::function<void()>(int, std::string*)>& make) {
  Row r{op, input, ""};
  std::vector<std::function<void()>> sys;
  for (int t : g_threads) sys.push_back(make(t, sys.empty() ? &r.schedule : nullptr));
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
  if (grb)
    for (int t : g_threads) sys.push_back(with_grb_threads(t, grb));
#endif
  const auto t = time_all(sys);
  const size_t k = g_threads.size();
  r.ours.assign(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k));
  if (t.size() > k) r.grb.assign(t.begin() + static_cast<std::ptrdiff_t>(k), t.end());
  // The progress line holds every median, so a run cut short still leaves its numbers.
  std::string line = "  " + op + " (" + r.schedule + "), " + input + ", ms at";
  for (int n : g_threads) line += " " + std::to_string(n) + "T";
  line += ": ours";
  char buf[32];
  for (size_t i = 0; i < t.size(); ++i) {
    if (i == k) line += "; GrB";
    std::snprintf(buf, sizeof buf, " %.2f", t[i]);
    line += buf;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, large = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--large")) large = true;
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) g_threads = parse_threads(argv[++i]);
    else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) g_rounds = std::max(3, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
  }
  std::printf("bench_parallel: load average before: %s\n", loadavg().c_str());
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
  GrB_init(GrB_NONBLOCKING);
  const bool have_grb = true;
#else
  const bool have_grb = false;
  std::printf("(GraphBLAS not found: its columns are empty)\n");
#endif
  sj::test::Rng rng(2026);
  const int64_t n = quick ? 20000 : large ? 200000 : 60000;
  Ours ours(*std::max_element(g_threads.begin(), g_threads.end()));
  std::vector<Row> rows;

  const Csr uni = sj::test::random_uniform<int32_t, double>(rng, n, n, 12.0 / static_cast<double>(n));
  const Csr pl = sj::test::random_power_law<int32_t, double>(rng, n, n, 12.0, 1.4);
  const int64_t nv = quick ? 200000 : large ? 2000000 : 600000;
  const Csr big = sj::test::random_uniform<int32_t, double>(rng, nv, nv, 16.0 / static_cast<double>(nv));
  const auto xs = sj::test::random_sparse_vector<int32_t, double>(rng, nv, 0.1);
  const std::vector<double> xd = sj::test::random_dense_vector<double>(rng, nv);
  const Csr big2 = sj::test::random_uniform<int32_t, double>(rng, nv, nv, 16.0 / static_cast<double>(nv));
  const Csr skew = skewed_rows(rng, quick ? 20000 : large ? 150000 : 50000, quick ? 300000.0 : large ? 2700000.0 : 900000.0);

  sj_tensor* hu = ours.csr(uni);
  sj_tensor* hp = ours.csr(pl);
  sj_tensor* hb = ours.csr(big);
  sj_tensor* hb2 = ours.csr(big2);
  sj_tensor* hx = ours.spvec(xs);
  sj_tensor* hxd = ours.dense(xd);
  sj_tensor* hs = ours.csr(skew);

  struct Op {
    std::string op, input;
    sj_op code;
    std::vector<const sj_tensor*> ops;
    int transpose_b;
    std::function<void()> grb;  // runs the GraphBLAS equivalent (threads set by the caller)
    bool keep_structure = false;  // SpGEMM: the plan computes only the values from its third execution
  };
  std::vector<Op> opsv;
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
  GrB_Matrix gu = grb(uni), gp = grb(pl), gb = grb(big), gb2 = grb(big2), gs = grb(skew);
  GrB_Vector gx = grb(xs), gxd = grb_dense(xd);
  auto mxm = [](GrB_Matrix a, GrB_Matrix b, GrB_Matrix mask) {
    return [a, b, mask] {
      GrB_Index r = 0, c = 0;
      GrB_Matrix_nrows(&r, a);
      GrB_Matrix_ncols(&c, b);
      GrB_Matrix C = nullptr;
      GrB_Matrix_new(&C, GrB_FP64, r, c);
      GxB_Matrix_Option_set(C, GxB_FORMAT, GxB_BY_ROW);
      GrB_mxm(C, mask, nullptr, GrB_PLUS_TIMES_SEMIRING_FP64, a, b, mask ? GrB_DESC_S : nullptr);
      GrB_Matrix_wait(C, GrB_MATERIALIZE);
      GrB_Matrix_free(&C);
    };
  };
  auto mxv = [](GrB_Matrix a, GrB_Vector x) {
    return [a, x] {
      GrB_Index r = 0;
      GrB_Matrix_nrows(&r, a);
      GrB_Vector y = nullptr;
      GrB_Vector_new(&y, GrB_FP64, r);
      GrB_mxv(y, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP64, a, x, nullptr);
      GrB_Vector_wait(y, GrB_MATERIALIZE);
      GrB_Vector_free(&y);
    };
  };
  auto ewise = [](GrB_Matrix a, GrB_Matrix b, bool add, bool tb) {
    return [a, b, add, tb] {
      GrB_Index r = 0, c = 0;
      GrB_Matrix_nrows(&r, a);
      GrB_Matrix_ncols(&c, a);
      GrB_Matrix C = nullptr;
      GrB_Matrix_new(&C, GrB_FP64, r, c);
      GxB_Matrix_Option_set(C, GxB_FORMAT, GxB_BY_ROW);
      if (add) GrB_Matrix_eWiseAdd_BinaryOp(C, nullptr, nullptr, GrB_PLUS_FP64, a, b, tb ? GrB_DESC_T1 : nullptr);
      else GrB_Matrix_eWiseMult_BinaryOp(C, nullptr, nullptr, GrB_TIMES_FP64, a, b, tb ? GrB_DESC_T1 : nullptr);
      GrB_Matrix_wait(C, GrB_MATERIALIZE);
      GrB_Matrix_free(&C);
    };
  };
#define WITH_GRB(x) x
#else
#define WITH_GRB(x) std::function<void()>()
#endif
  const std::string nu = "uniform " + std::to_string(n) + "^2, 12/row";
  const std::string np = "power-law " + std::to_string(n) + "^2, 12/row";
  const std::string nb = "uniform " + std::to_string(nv) + "^2, 16/row";
  opsv.push_back({"SpGEMM A*A", nu, SJ_OP_SPGEMM, {hu, hu}, 0, WITH_GRB(mxm(gu, gu, nullptr))});
  opsv.push_back({"SpGEMM A*A", np, SJ_OP_SPGEMM, {hp, hp}, 0, WITH_GRB(mxm(gp, gp, nullptr))});
  opsv.push_back({"SpGEMM A*A, values only", nu, SJ_OP_SPGEMM, {hu, hu}, 0, WITH_GRB(mxm(gu, gu, nullptr)), true});
  opsv.push_back({"masked SpGEMM A<A>=A*A", np, SJ_OP_SPGEMM_MASKED, {hp, hp, hp}, 0, WITH_GRB(mxm(gp, gp, gp))});
  opsv.push_back({"SpMSpV A*x, x 10%", nb, SJ_OP_SPMSPV, {hb, hx}, 0, WITH_GRB(mxv(gb, gx))});
  opsv.push_back({"SpMV A*x", nb, SJ_OP_SPMV, {hb, hxd}, 0, WITH_GRB(mxv(gb, gxd))});
  opsv.push_back({"ewise A.*B", nb, SJ_OP_EWISE_MULT, {hb, hb2}, 0, WITH_GRB(ewise(gb, gb2, false, false))});
  opsv.push_back({"ewise A+B", nb, SJ_OP_EWISE_ADD, {hb, hb2}, 0, WITH_GRB(ewise(gb, gb2, true, false))});
  opsv.push_back({"ewise A.*B^T", np, SJ_OP_EWISE_MULT, {hp, hp}, 1, WITH_GRB(ewise(gp, gp, false, true))});
  opsv.push_back({"ewise A+B^T", np, SJ_OP_EWISE_ADD, {hp, hp}, 1, WITH_GRB(ewise(gp, gp, true, true))});

  for (auto& o : opsv)
    if (selected(o.op))
      rows.push_back(time_row(o.op, o.input, o.grb, [&](int threads, std::string* schedule) {
        return ours.plan(o.code, o.ops, threads, o.transpose_b, schedule, o.keep_structure);
      }));
  // Index notation (issue 6 item 3): the outermost loop split where the dependence test allows.
  struct Ein {
    std::string op, input;
    const char* expr;
    std::vector<const sj_tensor*> ops;
    const char* out_format;
    std::function<void()> grb;
  };
  std::vector<Ein> einv;
  einv.push_back({"einsum y(i)=A(i,k)*x(k)", nb, "y(i) = A(i,k) * x(k)", {hb, hxd}, "dense", WITH_GRB(mxv(gb, gxd))});
  einv.push_back({"einsum C(i,j)=A(i,k)*B(k,j)", nu, "C(i,j) = A(i,k) * B(k,j)", {hu, hu}, "csr", WITH_GRB(mxm(gu, gu, nullptr))});
  einv.push_back({"einsum C(i,j)=A(i,k)*B(k,j)", np, "C(i,j) = A(i,k) * B(k,j)", {hp, hp}, "csr", WITH_GRB(mxm(gp, gp, nullptr))});
  einv.push_back({"einsum Z(i,j)=A(i,j)*B(i,j)", nb, "Z(i,j) = A(i,j) * B(i,j)", {hb, hb2}, "csr",
                  WITH_GRB(ewise(gb, gb2, false, false))});
  // A sum of two terms: each term's result assembled on its own, then summed row by row.
  einv.push_back({"einsum Z(i,j)=A(i,j)+B(i,j)", nb, "Z(i,j) = A(i,j) + B(i,j)", {hb, hb2}, "csr",
                  WITH_GRB(ewise(gb, gb2, true, false))});
  for (auto& o : einv)
    if (selected(o.op))
      rows.push_back(time_row(o.op, o.input, o.grb, [&](int threads, std::string* schedule) {
        return ours.einsum(o.expr, o.ops, o.out_format, threads, schedule);
      }));
  print(rows);

  // Push SpMSpV split by row blocks of A's CSC copy, by cuts of x's columns and by buckets of
  // x's products (kernels/spmspv_kernels.hpp, push_row_blocks_pay, push_buckets_pay), at each
  // thread count past the first.
  if (g_only.empty() || g_only == "push") {
    auto& split = sj::parallel_tuning().push_split;
    std::vector<std::function<void()>> sys{ours.plan(SJ_OP_SPMSPV, {hb, hx}, g_threads.front(), 0, nullptr)};
    for (size_t i = 1; i < g_threads.size(); ++i) {
      auto p = ours.plan(SJ_OP_SPMSPV, {hb, hx}, g_threads[i], 0, nullptr);
      for (int how : {3, 1, 2}) sys.push_back([&split, p, how] { split = how; p(); split = 0; });
    }
    const auto t = time_all(sys);
    // A is square: its mean column length is its mean row length.
    const double column = sj::spmspv::mean_column(static_cast<int64_t>(big.crd.size()), big.inner);
    std::printf("\nPush SpMSpV A*x, x 10%% (%s), %.2f ms at %dT; the rule takes buckets from %d threads on, "
                "row blocks below:\n",
                nb.c_str(), t[0], g_threads.front(), static_cast<int>(std::ceil(column / sj::spmspv::kBucketColumnPerThread)));
    std::printf("| threads | row blocks ms | speed-up | cuts ms | speed-up | buckets ms | speed-up |\n"
                "|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 1; i < g_threads.size(); ++i) {
      const double* r = &t[3 * i - 2];
      std::printf("| %d | %.2f | %.2fx | %.2f | %.2fx | %.2f | %.2fx |\n", g_threads[i], r[0], t[0] / r[0], r[1],
                  t[0] / r[1], r[2], t[0] / r[2]);
    }
  }
  // Static vs dynamic on the skewed input (heavy rows first): SpGEMM A*A at each thread count
  // past the first, against the first.
  if (!g_only.empty() && g_only != "skewed") return 0;
  auto& tune = sj::parallel_tuning();
  std::string sched;
  std::vector<std::function<void()>> sys{ours.plan(SJ_OP_SPGEMM, {hs, hs}, g_threads.front(), 0, &sched)};
  for (size_t i = 1; i < g_threads.size(); ++i) {
    auto dynamic = ours.plan(SJ_OP_SPGEMM, {hs, hs}, g_threads[i], 0, nullptr);
    sys.push_back([&tune, dynamic] {
      tune.mode = static_cast<int>(sj::PartitionMode::StaticRows);
      dynamic();
      tune.mode = static_cast<int>(sj::PartitionMode::Dynamic);
    });
    sys.push_back(dynamic);
  }
  const auto t = time_all(sys);
  std::printf("\nSkewed rows (row i has ~1/(i+1)^0.8 of the entries; %lld rows, %lld nnz), SpGEMM A*A (%s), "
              "%.2f ms at %dT:\n",
              static_cast<long long>(skew.outer), static_cast<long long>(skew.crd.size()), sched.c_str(), t[0],
              g_threads.front());
  std::printf("| threads | static (equal rows per thread) ms | speed-up | dynamic (work-balanced chunks) ms | "
              "speed-up |\n|---:|---:|---:|---:|---:|\n");
  for (size_t i = 1; i < g_threads.size(); ++i)
    std::printf("| %d | %.2f | %.2fx | %.2f | %.2fx |\n", g_threads[i], t[2 * i - 1], t[0] / t[2 * i - 1], t[2 * i],
                t[0] / t[2 * i]);
  std::printf("\nbench_parallel: load average after: %s (%u hardware threads; medians of %d interleaved rounds)\n",
              loadavg().c_str(), std::thread::hardware_concurrency(), g_rounds);
#ifdef SJ_BENCH_HAVE_GRAPHBLAS
  GrB_Matrix_free(&gu);
  GrB_Matrix_free(&gp);
  GrB_Matrix_free(&gb);
  GrB_Matrix_free(&gb2);
  GrB_Matrix_free(&gs);
  GrB_Vector_free(&gx);
  GrB_Vector_free(&gxd);
  GrB_finalize();
#endif
  return 0;
}

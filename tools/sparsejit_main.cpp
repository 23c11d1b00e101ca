// sparsejit: run an operation on real matrices and show what the runtime chose and how long
// each call took; inspect a matrix; convert between file formats.
//
//   sparsejit run OP A.mtx [B.mtx] [options]      OP: spgemm spgemm-masked spmspv spmv
//                                                     ewise-mult ewise-mult-t ewise-add
//   sparsejit inspect A.mtx
//   sparsejit convert IN OUT [--transpose]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "tools/cache_command.hpp"
#include "tools/einsum_command.hpp"
#include "src/convert.hpp"
#include "src/inspect.hpp"
#include "src/operation.hpp"
#include "src/tensor_file.hpp"
#include "src/types.hpp"

namespace {

const char* kUsage = R"(usage:
  sparsejit run OP A.mtx [B.mtx] [options]
      OP: spgemm | spgemm-masked | spmspv | spmv | ewise-mult | ewise-mult-t | ewise-add
      Without B: spgemm computes A*A (square A) or A*A^T; element-wise ops use B = A;
      spgemm-masked uses the mask M = A (or --mask FILE).
    --transpose-b          use B^T
    --mask-complement      spgemm-masked: C<!M> = A*B, the entries where M stores nothing
    --dense-out            dense result (spgemm, spmspv)
    --x X.mtx              the vector x of spmspv/spmv (1xn or nx1 Matrix Market)
    --x-density D          random sparse x with this density (default 0.01), values in [0,1)
    --seed S               seed for the random x (default 1)
    --mask M.mtx           mask of spgemm-masked
    --semiring NAME        plus-times | min-plus | max-times | or-and | plus-pair
    --repeat N             timed executions after the first call (default 10)
    --threads T            worker threads (default: the context's)
    --schedule NAME        auto | reference | gustavson-dense | gustavson-hash | inner |
                           transpose | search | densify | push | fused
    --isa NAME             auto | avx512 | avx2 | scalar
    --vector-width N       coiteration SIMD width (4, 8, 16)
    --phases MASK          coiteration phase mask, e.g. 001
    --calibrate            time the best 2-3 candidate schedules on a sample of rows, keep the
                           fastest and remember it for this statistics bucket (cache folder)
    --method NAME          coiteration block compare: auto | broadcast | rotate | native
    --explain              print the plan's explanation (readable text)
    --explain-json         print the plan's explanation as JSON (what sj_plan_explain returns)
    --output FILE.mtx      write the result
    --csv                  print exactly one CSV line:
                           op,matrix,schedule,vector_width,threads,median_ms,min_ms,nnz_out,checksum,first_call_ms
  sparsejit inspect A.mtx  format and sparsity statistics
  sparsejit convert IN OUT [--transpose]   .mtx <-> .tns (and transpose)
  sparsejit cache list|verify|clear|prune [--dir D]   the persistent kernel/plan cache
)";

struct Failure {
  int code;
};

// Prints the library's message and stops with exit status 1.
void check(sj_status s, const char* what) {
  if (s == SJ_OK) return;
  std::fprintf(stderr, "sparsejit: %s: %s\n  %s\n", what, sj_status_string(s), sj_last_error_message());
  throw Failure{1};
}

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "sparsejit: %s\n\n%s", msg.c_str(), kUsage);
  throw Failure{2};
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct RunArgs {
  std::string op, a_path, b_path, x_path, mask_path, output;
  bool transpose_b = false, mask_complement = false, dense_out = false, explain = false, explain_json = false, csv = false, calibrate = false;
  double x_density = 0.01;
  uint64_t seed = 1;
  int repeat = 10, threads = 0, vector_width = 0;
  std::string schedule = "auto", isa = "auto", phases, semiring = "plus-times", method = "auto";
};

long parse_int(const std::string& flag, const char* v, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi)
    usage_error(flag + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
  return x;
}

RunArgs parse_run(int argc, char** argv) {
  RunArgs a;
  std::vector<std::string> positional;
  for (int i = 2; i < argc; ++i) {
    std::string f = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error(f + " needs a value");
      return argv[++i];
    };
    if (f == "--transpose-b") a.transpose_b = true;
    else if (f == "--mask-complement") a.mask_complement = true;
    else if (f == "--dense-out") a.dense_out = true;
    else if (f == "--explain") a.explain = true;
    else if (f == "--calibrate") a.calibrate = true;
    else if (f == "--explain-json") a.explain_json = true;
    else if (f == "--csv") a.csv = true;
    else if (f == "--x") a.x_path = value();
    else if (f == "--mask") a.mask_path = value();
    else if (f == "--output") a.output = value();
    else if (f == "--x-density") {
      const char* v = value();
      char* end = nullptr;
      a.x_density = std::strtod(v, &end);
      if (end == v || *end || !(a.x_density >= 0 && a.x_density <= 1)) usage_error("--x-density needs a number in [0, 1]");
    } else if (f == "--seed") a.seed = parse_int(f, value(), 0, LONG_MAX);
    else if (f == "--repeat") a.repeat = parse_int(f, value(), 0, 1000000);
    else if (f == "--threads") a.threads = parse_int(f, value(), 0, 4096);
    else if (f == "--vector-width") a.vector_width = parse_int(f, value(), 1, 64);
    else if (f == "--schedule") a.schedule = value();
    else if (f == "--isa") a.isa = value();
    else if (f == "--phases") a.phases = value();
    else if (f == "--method") a.method = value();
    else if (f == "--semiring") a.semiring = value();
    else if (f.rfind("--", 0) == 0) usage_error("unknown option " + f);
    else positional.push_back(f);
  }
  if (positional.size() < 2 || positional.size() > 3) usage_error("run needs OP and one or two matrix files");
  a.op = positional[0];
  a.a_path = positional[1];
  if (positional.size() == 3) a.b_path = positional[2];
  return a;
}

// RAII for handles, so every path out of run() releases them before the context.
struct TensorHandle {
  sj_tensor* t = nullptr;
  ~TensorHandle() { sj_tensor_destroy(t); }
};

sj_tensor* random_sparse_vector(sj_context* ctx, int64_t n, double density, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int64_t> idx;
  std::vector<double> val;
  for (int64_t j = 0; j < n; ++j)
    if (u(rng) < density) {
      idx.push_back(j);
      val.push_back(u(rng));
    }
  sj_tensor* x = nullptr;
  check(sj_tensor_create_sparse_vector(ctx, n, static_cast<int64_t>(idx.size()), SJ_INDEX_INT64, SJ_VALUE_F64,
                                       idx.data(), val.data(), SJ_TENSOR_COPY, &x),
        "making the random x");
  return x;
}

// A vector read from a 1xn or nx1 Matrix Market file.
sj_tensor* vector_from_file(sj_context* ctx, const std::string& path) {
  TensorHandle m;
  check(sj_tensor_read_file(ctx, path.c_str(), &m.t), path.c_str());
  sj_tensor_info info;
  check(sj_tensor_get_info(m.t, &info), "info");
  if (info.order != 2 || (info.dims[0] != 1 && info.dims[1] != 1)) {
    std::fprintf(stderr, "sparsejit: %s: a vector must be 1xn or nx1\n", path.c_str());
    throw Failure{1};
  }
  sj_tensor* coo = nullptr;
  check(sj_tensor_convert(ctx, m.t, SJ_FORMAT_COO, nullptr, SJ_INDEX_INT64, &coo), "converting x");
  TensorHandle c{coo};
  const int64_t *pos;
  const void *r, *cc, *vals;
  int64_t nnz;
  check(sj_tensor_get_level(coo, 0, &pos, nullptr, &r, nullptr), "x level 0");
  check(sj_tensor_get_level(coo, 1, nullptr, nullptr, &cc, nullptr), "x level 1");
  check(sj_tensor_get_values(coo, &vals, &nnz), "x values");
  const int64_t* idx = static_cast<const int64_t*>(info.dims[0] == 1 ? cc : r);
  sj_tensor* x = nullptr;
  check(sj_tensor_create_sparse_vector(ctx, std::max(info.dims[0], info.dims[1]), nnz, SJ_INDEX_INT64, SJ_VALUE_F64,
                                       idx, vals, SJ_TENSOR_COPY, &x),
        path.c_str());
  return x;
}

double checksum(const sj_tensor* t) {
  const void* v;
  int64_t n;
  sj_tensor_info info;
  check(sj_tensor_get_values(t, &v, &n), "result values");
  check(sj_tensor_get_info(t, &info), "result info");
  double s = 0;
  for (int64_t p = 0; p < n; ++p) {
    double x = info.value_type == SJ_VALUE_F32 ? static_cast<const float*>(v)[p]
               : info.value_type == SJ_VALUE_F64 ? static_cast<const double*>(v)[p]
                                                  : static_cast<const uint8_t*>(v)[p];
    if (std::isfinite(x)) s += x;  // dense min-plus / max-times results hold +-inf where empty
  }
  return s;
}

int run(int argc, char** argv) {
  RunArgs a = parse_run(argc, argv);
  auto op = sj::parse_op(a.op == "ewise-mult-t" ? "ewise-mult" : a.op);
  if (!op || *op == SJ_OP_TRANSPOSE) usage_error("unknown operation '" + a.op + "'");
  sj_op_options o;
  sj_op_options_init(&o);
  auto sched = sj::parse_schedule(a.schedule);
  if (!sched) usage_error("unknown schedule '" + a.schedule + "'");
  auto isa = sj::parse_isa(a.isa);
  if (!isa) usage_error("unknown ISA '" + a.isa + "'");
  auto semiring = sj::parse_semiring(a.semiring);
  if (!semiring) usage_error("unknown semiring '" + a.semiring + "'");
  if (!a.phases.empty() && (a.phases.size() != 3 || a.phases.find_first_not_of("01") != std::string::npos))
    usage_error("--phases needs three characters of 0/1 (phases 3,2,1), e.g. 001");
  const char* methods[] = {"auto", "broadcast", "rotate", "native"};
  int method = -1;
  for (int m = 0; m < 4; ++m)
    if (a.method == methods[m]) method = m;
  if (method < 0) usage_error("unknown method '" + a.method + "' (auto, broadcast, rotate, native)");
  o.method = static_cast<sj_coiter_method>(method);
  o.schedule = *sched;
  o.isa = *isa;
  o.semiring = *semiring;
  o.vector_width = a.vector_width;
  std::snprintf(o.phases, sizeof o.phases, "%s", a.phases.c_str());
  o.threads = a.threads;
  o.dense_output = a.dense_out;
  o.transpose_b = a.transpose_b || a.op == "ewise-mult-t";
  o.mask_complement = a.mask_complement ? 1 : 0;
  o.calibrate = a.calibrate;

  sj_config cfg;
  sj_config_init(&cfg);
  cfg.threads = a.threads;
  sj_context* ctx = nullptr;
  check(sj_context_create(&cfg, &ctx), "creating the context");
  struct CtxGuard {
    sj_context* c;
    ~CtxGuard() { sj_context_destroy(c); }
  } ctx_guard{ctx};
  {
    TensorHandle A, B, M, X, C;
    double t0 = now_ms();
    check(sj_tensor_read_file(ctx, a.a_path.c_str(), &A.t), a.a_path.c_str());
    double read_ms = now_ms() - t0;
    sj_tensor_info ai;
    check(sj_tensor_get_info(A.t, &ai), "info");
    if (ai.order != 2) usage_error(a.a_path + " is not a matrix");
    if (!a.b_path.empty()) check(sj_tensor_read_file(ctx, a.b_path.c_str(), &B.t), a.b_path.c_str());
    std::vector<const sj_tensor*> operands;
    const sj_tensor* b = B.t ? B.t : A.t;
    // Without B, SpGEMM squares A (or multiplies by A^T when A is rectangular).
    if (!B.t && (*op == SJ_OP_SPGEMM || *op == SJ_OP_SPGEMM_MASKED) && ai.dims[0] != ai.dims[1]) o.transpose_b = 1;
    switch (*op) {
      case SJ_OP_SPGEMM_MASKED:
        if (!a.mask_path.empty()) check(sj_tensor_read_file(ctx, a.mask_path.c_str(), &M.t), a.mask_path.c_str());
        operands = {M.t ? M.t : A.t, A.t, b};
        break;
      case SJ_OP_SPMSPV:
      case SJ_OP_SPMV:
        X.t = a.x_path.empty() ? random_sparse_vector(ctx, ai.dims[1], *op == SJ_OP_SPMV ? 1.0 : a.x_density, a.seed)
                               : vector_from_file(ctx, a.x_path);
        if (*op == SJ_OP_SPMV) {
          sj_tensor* d = nullptr;
          check(sj_tensor_convert(ctx, X.t, SJ_FORMAT_DENSE, nullptr, SJ_INDEX_INT64, &d), "densifying x");
          sj_tensor_destroy(X.t);
          X.t = d;
        }
        operands = {A.t, X.t};
        break;
      default:
        operands = {A.t, b};
    }
    // The first call: plan (inspect, choose, build the kernel) and execute once.
    sj_plan* plan = nullptr;
    double f0 = now_ms();
    check(sj_plan_create(ctx, *op, operands.data(), static_cast<int>(operands.size()), &o, &plan), "planning");
    struct PlanGuard {
      sj_plan* p;
      ~PlanGuard() { sj_plan_destroy(p); }
    } plan_guard{plan};
    check(sj_plan_execute(plan, operands.data(), static_cast<int>(operands.size()), &C.t), "executing");
    double first_ms = now_ms() - f0;
    std::vector<double> times;
    for (int r = 0; r < a.repeat; ++r) {
      sj_tensor* out = nullptr;
      double s0 = now_ms();
      check(sj_plan_execute(plan, operands.data(), static_cast<int>(operands.size()), &out), "executing");
      times.push_back(now_ms() - s0);
      sj_tensor_destroy(out);
    }
    if (times.empty()) times.push_back(first_ms);
    std::sort(times.begin(), times.end());
    double median = times.size() % 2 ? times[times.size() / 2]
                                     : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
    double min_ms = times.front();
    const char* json = nullptr;
    check(sj_plan_explain(plan, &json), "explain");
    std::string ex(json);
    auto field = [&](const std::string& key) {
      auto p = ex.find("\"" + key + "\":\"");
      if (p == std::string::npos) return std::string("?");
      p += key.size() + 4;
      return ex.substr(p, ex.find('"', p) - p);
    };
    const std::string chosen = field("chosen");
    sj_tensor_info ci;
    check(sj_tensor_get_info(C.t, &ci), "result info");
    const double sum = checksum(C.t);
    const std::string name = std::filesystem::path(a.a_path).filename().string();
    if (a.csv) {
      std::printf("%s,%s,%s,%d,%d,%.6f,%.6f,%lld,%.17g,%.6f\n", a.op.c_str(), name.c_str(), chosen.c_str(),
                  a.vector_width, a.threads, median, min_ms, static_cast<long long>(ci.nnz), sum, first_ms);
    } else {
      std::printf("sparsejit %s  %s\n", sj_version(nullptr, nullptr, nullptr), a.op.c_str());
      std::printf("  A: %s  (%lldx%lld, nnz %lld, read in %.2f ms)\n", a.a_path.c_str(),
                  static_cast<long long>(ai.dims[0]), static_cast<long long>(ai.dims[1]),
                  static_cast<long long>(ai.nnz), read_ms);
      if (B.t) std::printf("  B: %s\n", a.b_path.c_str());
      if (o.transpose_b) std::printf("  B is transposed\n");
      if (o.mask_complement) std::printf("  the mask is complemented: C<!M>\n");
      std::printf("  schedule: %s (requested %s, semiring %s)\n", chosen.c_str(), a.schedule.c_str(), a.semiring.c_str());
      std::printf("  first call (plan + execute): %.3f ms\n", first_ms);
      std::printf("  later calls: median %.3f ms, min %.3f ms over %d runs\n", median, min_ms, a.repeat);
      std::printf("  result: %s %lldx%lld, nnz %lld, checksum %.17g\n",
                  ci.format == SJ_FORMAT_DENSE ? "dense" : ci.order == 1 ? "sparse vector" : "CSR",
                  static_cast<long long>(ci.dims[0]), static_cast<long long>(ci.order == 2 ? ci.dims[1] : 1),
                  static_cast<long long>(ci.nnz), sum);
    }
    if (a.explain) {
      const char* text = nullptr;
      check(sj_plan_explain_text(plan, &text), "explain");
      std::printf("%s", text);
    }
    if (a.explain_json) std::printf("%s\n", json);
    if (!a.output.empty()) check(sj_tensor_write_file(ctx, C.t, a.output.c_str()), a.output.c_str());
  }
  return 0;
}

int inspect(int argc, char** argv) {
  if (argc != 3) usage_error("inspect needs one file");
  sj::Tensor t = sj::read_tensor_file(argv[2], sj::default_allocator());
  std::printf("%s: %s\n", argv[2], t.describe().c_str());
  if (t.order == 2) {
    sj::MatrixStats s = sj::matrix_stats(sj::as_csr(t, false, t.index_type, sj::default_allocator()));
    std::printf("  density %.3g, row length mean %.2f stddev %.2f min %lld p50 %lld p90 %lld p99 %lld max %lld\n",
                s.density, s.row_mean, s.row_stddev, (long long)s.row_min, (long long)s.row_p50,
                (long long)s.row_p90, (long long)s.row_p99, (long long)s.row_max);
    std::printf("  empty rows %lld, bandwidth %lld\n", (long long)s.empty_rows, (long long)s.bandwidth);
    sj::Tensor c = sj::as_csr(t, false, t.index_type, sj::default_allocator());
    if (t.dims[0] == t.dims[1])
      std::printf("  SpGEMM A*A multiplies: %lld\n", (long long)sj::spgemm_flops(c, c));
  }
  return 0;
}

int convert(int argc, char** argv) {
  if (argc < 4 || argc > 5) usage_error("convert needs IN and OUT");
  bool tr = argc == 5 && std::string(argv[4]) == "--transpose";
  if (argc == 5 && !tr) usage_error(std::string("unknown option ") + argv[4]);
  sj::Tensor t = sj::read_tensor_file(argv[2], sj::default_allocator());
  if (tr) t = sj::transpose(t, sj::default_allocator());
  sj::write_tensor_file(t, argv[3]);
  std::printf("%s -> %s: %s\n", argv[2], argv[3], t.describe().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
      std::fputs(kUsage, argc < 2 ? stderr : stdout);
      std::fputs(kEinsumUsage, argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
    std::string cmd = argv[1];
    if (cmd == "run") return run(argc, argv);
    if (cmd == "inspect") return inspect(argc, argv);
    if (cmd == "convert") return convert(argc, argv);
    if (cmd == "cache") return run_cache_command(argc, argv);
    if (cmd == "einsum") return run_einsum_command(argc, argv);  // index notation (tools/einsum_command.cpp)
    usage_error("unknown command '" + cmd + "'");
  } catch (const Failure& f) {
    return f.code;
  } catch (const sj::Error& e) {
    std::fprintf(stderr, "sparsejit: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsejit: %s\n", e.what());
    return 1;
  }
}

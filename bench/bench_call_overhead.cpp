// Per-call cost of the runtime (issue 4, "per-call overhead on tiny inputs <= 2 us over the
// bare kernel" and "first call <= 1.5x the steady state for problems over 1 ms").
//
// Part 1 (Google Benchmark), tiny inputs (16x16, ~3 entries per row; x with 4 entries), for
// SpGEMM (gustavson-dense), SpMSpV (inner) and element-wise multiply (inner):
//   <op>/bare      the schedule's kernel on kernel-ready operands (result tensor allocated);
//   <op>/execute   sj_plan_execute on the same handles (+ destroying the result handle);
//   <op>/dropin    the drop-in call (sj_spgemm, ...) on the same handles, repeated (the plan
//                  kept on the operands is reused: src/plan_memo.hpp);
//   <op>/plan_each_call   sj_plan_create + execute + destroy per call: what a drop-in call
//                  cost before plans were kept (the "before" of the overhead target);
// overhead = execute (or dropin) - bare, per call. Single thread.
//
// Part 2 (--first-call), problems over 1 ms: for each input, the time of the first call on a
// fresh handle (a new handle of the same matrix: nothing cached on it; the process-wide kernel
// cache may be warm) against the median of 9 later calls on that handle, with a breakdown
// of the first call from its explain (inspect, plan incl. kernel build, first execute); and
// the process's very first call (cold kernel cache) for the first input.
//
//   bench_call_overhead --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   bench_call_overhead --first-call [matrix.mtx ...]
//
// Part 3 (--process-first ours|bare matrix.mtx), one line per fresh process: the process's
// very first SpGEMM (A*A, or A*A^T when A is rectangular) against the median of 9 later ones, either through the runtime (plan
// create + execute, then drop-in calls) or as the bare Gustavson kernel (dense accumulator,
// the schedule the runtime picks for these inputs) on the same CSR tensor. Run alternately
// in fresh processes (scripts/bench-first-call.sh): the bare kernel's ratio is what the
// process pays anyway (new memory is faulted in on first touch: here ~15 us per 4 KiB page,
// a VM), and the difference between the two is what the runtime's first call adds.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <sys/resource.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "kernels/coiter_drivers.hpp"
#include "kernels/spgemm_gustavson.hpp"
#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/work_partition.hpp"

namespace {

using sj::Tensor;

sj_context* context() {
  static sj_context* c = [] {
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.threads = 1;
    cfg.disable_disk_cache = 1;
    sj_context* ctx = nullptr;
    if (sj_context_create(&cfg, &ctx) != SJ_OK) std::abort();
    return ctx;
  }();
  return c;
}

void check(sj_status s) {
  if (s != SJ_OK) {
    std::fprintf(stderr, "error: %s\n", sj_last_error_message());
    std::abort();
  }
}

// A tiny CSR matrix: n x n, `per_row` distinct random columns per row.
sj_tensor* tiny_csr(int64_t n, int per_row, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> pos{0};
  std::vector<int32_t> crd;
  std::vector<double> val;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> row;
    while (static_cast<int>(row.size()) < per_row) {
      int32_t c = static_cast<int32_t>(rng() % n);
      if (std::find(row.begin(), row.end(), c) == row.end()) row.push_back(c);
    }
    std::sort(row.begin(), row.end());
    for (int32_t c : row) {
      crd.push_back(c);
      val.push_back(1.0 + double(rng() % 7));
    }
    pos.push_back(static_cast<int64_t>(crd.size()));
  }
  sj_tensor* t = nullptr;
  check(sj_tensor_create_csr(context(), n, n, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(),
                             SJ_TENSOR_COPY, &t));
  return t;
}

sj_tensor* tiny_vector(int64_t n, int nnz) {
  std::vector<int32_t> idx;
  std::vector<double> val;
  for (int k = 0; k < nnz; ++k) {
    idx.push_back(static_cast<int32_t>(k * (n / nnz)));
    val.push_back(0.5 + k);
  }
  sj_tensor* t = nullptr;
  check(sj_tensor_create_sparse_vector(context(), n, nnz, SJ_INDEX_INT32, SJ_VALUE_F64, idx.data(), val.data(),
                                       SJ_TENSOR_COPY, &t));
  return t;
}

constexpr int64_t kN = 16;

struct Tiny {
  sj_tensor* A = tiny_csr(kN, 3, 1);
  sj_tensor* B = tiny_csr(kN, 3, 2);
  sj_tensor* x = tiny_vector(kN, 4);
};
Tiny& tiny() {
  static Tiny t;
  return t;
}

sj_op_options forced(sj_schedule s) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = s;
  return o;
}

enum class Op { Spgemm, Spmspv, Ewise };
const char* name(Op op) { return op == Op::Spgemm ? "spgemm" : op == Op::Spmspv ? "spmspv" : "ewise_mult"; }
sj_schedule schedule_of(Op op) { return op == Op::Spgemm ? SJ_SCHEDULE_GUSTAVSON_DENSE : SJ_SCHEDULE_INNER; }
sj_op sj_op_of(Op op) { return op == Op::Spgemm ? SJ_OP_SPGEMM : op == Op::Spmspv ? SJ_OP_SPMSPV : SJ_OP_EWISE_MULT; }
sj_tensor* second(Op op) { return op == Op::Spmspv ? tiny().x : tiny().B; }

void bare(benchmark::State& state, Op op) {
  const Tensor& A = tiny().A->t;
  const Tensor& B = second(op)->t;
  const auto& alloc = sj::default_allocator();
  sj_op_options o = forced(schedule_of(op));
  sj::kernels::CoiterConfig cfg = sj::kernels::resolve_coiter(
      sj::kernels::coiter_config(o, sj::IndexType::I32, sj::ValueType::F64, 3, op == Op::Spmspv ? 4 : 3),
      sj::IndexType::I32, sj::ValueType::F64, SJ_SEMIRING_PLUS_TIMES, op == Op::Ewise);
  sj::Workers serial = sj::Workers::serial();
  for (auto _ : state) {
    Tensor r = op == Op::Spgemm   ? sj::spgemm_gustavson(A, B, SJ_SEMIRING_PLUS_TIMES, false,
                                                         sj::SpgemmAccumulator::Dense, alloc, serial)
               : op == Op::Spmspv ? sj::kernels::coiter_spmspv(A, B, SJ_SEMIRING_PLUS_TIMES, cfg, false, alloc)
                                  : sj::kernels::coiter_ewise_mult(A, B, SJ_SEMIRING_PLUS_TIMES, cfg, alloc);
    benchmark::DoNotOptimize(r.values.data());
  }
}

void execute(benchmark::State& state, Op op) {
  sj_op_options o = forced(schedule_of(op));
  const sj_tensor* ops[2] = {tiny().A, second(op)};
  sj_plan* plan = nullptr;
  check(sj_plan_create(context(), sj_op_of(op), ops, 2, &o, &plan));
  for (auto _ : state) {
    sj_tensor* r = nullptr;
    check(sj_plan_execute(plan, ops, 2, &r));
    sj_tensor_destroy(r);
  }
  sj_plan_destroy(plan);
}

// What a drop-in call cost before plans were kept on the operands: plan + execute each call.
void plan_each_call(benchmark::State& state, Op op) {
  sj_op_options o = forced(schedule_of(op));
  const sj_tensor* ops[2] = {tiny().A, second(op)};
  for (auto _ : state) {
    sj_plan* plan = nullptr;
    check(sj_plan_create(context(), sj_op_of(op), ops, 2, &o, &plan));
    sj_tensor* r = nullptr;
    check(sj_plan_execute(plan, ops, 2, &r));
    sj_tensor_destroy(r);
    sj_plan_destroy(plan);
  }
}

void dropin(benchmark::State& state, Op op) {
  sj_op_options o = forced(schedule_of(op));
  for (auto _ : state) {
    sj_tensor* r = nullptr;
    if (op == Op::Spgemm) check(sj_spgemm(context(), tiny().A, tiny().B, &o, &r));
    else if (op == Op::Spmspv) check(sj_spmspv(context(), tiny().A, tiny().x, &o, &r));
    else check(sj_ewise_mult(context(), tiny().A, tiny().B, &o, &r));
    sj_tensor_destroy(r);
  }
}

// --- part 2: first call against steady state ------------------------------------------------

// This thread's CPU time (user + system, page faults included), in ms: the machine is shared,
// and wall time there measures the other processes as much as this one. SPARSEJIT_BENCH_CLOCK=wall
// switches to the monotonic clock, for a quiet machine (a first call may also wait, e.g. on I/O).
bool wall_clock() {
  static const bool wall = [] {
    const char* v = std::getenv("SPARSEJIT_BENCH_CLOCK");
    return v != nullptr && std::string(v) == "wall";
  }();
  return wall;
}

double now_ms() {
  timespec ts;
  clock_gettime(wall_clock() ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double json_number(const std::string& j, const std::string& key) {
  auto p = j.find("\"" + key + "\":");
  return p == std::string::npos ? -1 : std::atof(j.c_str() + p + key.size() + 3);
}

sj_tensor* copy_handle(const sj_tensor* t) {
  sj_tensor* c = nullptr;
  check(sj_tensor_convert(context(), t, SJ_FORMAT_CSR, nullptr, SJ_INDEX_INT32, &c));
  return c;
}

struct FirstCall {
  double first, steady, inspect, plan, build, exec1;
  std::string chosen;
  double faults_first = 0, faults_steady = 0;  // minor page faults of the first / a later call
};

long minor_faults() {
  rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

FirstCall first_call(const sj_tensor* src) {
  // A fresh handle of the same matrix: no conversion, statistics or plan cached on it.
  sj_tensor* A = copy_handle(src);
  sj_op_options o;
  sj_op_options_init(&o);
  sj_tensor_info info;
  sj_tensor_get_info(A, &info);
  o.transpose_b = info.dims[0] != info.dims[1];  // A*A^T for a rectangular A
  const sj_tensor* ops[2] = {A, A};
  const long f0 = minor_faults();
  const double t0 = now_ms();
  sj_plan* plan = nullptr;
  check(sj_plan_create(context(), SJ_OP_SPGEMM, ops, 2, &o, &plan));
  sj_tensor* r = nullptr;
  check(sj_plan_execute(plan, ops, 2, &r));
  const double first = now_ms() - t0;
  const long faults_first = minor_faults() - f0;
  sj_tensor_destroy(r);
  const char* json = nullptr;
  check(sj_plan_explain(plan, &json));
  const std::string j = json;
  const double inspect = json_number(j, "inspect"), planms = json_number(j, "plan"),
               exec1 = json_number(j, "first_execute"), build = json_number(j, "build_ms");
  sj_plan_destroy(plan);
  std::vector<double> steady;
  long faults_steady = 0;
  for (int k = 0; k < 9; ++k) {
    const long f1 = minor_faults();
    const double t1 = now_ms();
    check(sj_spgemm(context(), A, A, &o, &r));
    steady.push_back(now_ms() - t1);
    faults_steady = minor_faults() - f1;
    sj_tensor_destroy(r);
  }
  std::sort(steady.begin(), steady.end());
  const auto chosen = j.substr(j.find("\"chosen\":") + 9, 22);
  sj_tensor_destroy(A);
  return {first, steady[steady.size() / 2], inspect, planms - inspect, build, exec1, chosen.substr(0, chosen.find(',')),
          double(faults_first), double(faults_steady)};
}

// The process's first call once, then the median over 5 fresh handles (the breakdown is the
// median of each part; the parts are measured by the plan, in wall time).
void first_call_row(const std::string& label, const sj_tensor* src, bool process_first) {
  auto print = [&](const char* f, const FirstCall& c) {
    std::printf("%-14s %s %9.3f %9.3f %5.2f | inspect %7.3f  plan %7.3f (kernel %6.3f)  exec1 %8.3f  faults %6.0f/%-6.0f| %s\n",
                label.c_str(), f, c.first, c.steady, c.first / c.steady, c.inspect, c.plan, c.build, c.exec1,
                c.faults_first, c.faults_steady, c.chosen.c_str());
  };
  if (process_first) print("P", first_call(src));
  std::vector<FirstCall> runs;
  for (int k = 0; k < 5; ++k) runs.push_back(first_call(src));
  auto med = [&](double FirstCall::*m) {
    std::vector<double> v;
    for (auto& r : runs) v.push_back(r.*m);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  FirstCall m{med(&FirstCall::first), med(&FirstCall::steady), med(&FirstCall::inspect), med(&FirstCall::plan),
              med(&FirstCall::build),  med(&FirstCall::exec1),  runs[0].chosen, med(&FirstCall::faults_first),
              med(&FirstCall::faults_steady)};
  print("H", m);
}

int first_call_mode(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i) files.push_back(argv[i]);
  if (files.empty()) {
    std::filesystem::path d = std::filesystem::path(SPARSEJIT_SOURCE_DIR) / ".." / "shared" / "data" / "matrices";
    if (const char* env = std::getenv("SPARSEJIT_DATA_DIR")) d = std::filesystem::path(env) / "matrices";
    for (const char* m : {"bcsstk13", "cage8", "bcsstk16", "mbeacxc", "tomography", "dwt_992", "olm500"})
      if (std::filesystem::exists(d / (std::string(m) + ".mtx"))) files.push_back((d / (std::string(m) + ".mtx")).string());
  }
  std::printf("SpGEMM A*A (A*A^T when rectangular), first call on a fresh handle vs the median of 9 later\n"
              "drop-in calls on it; thread CPU time, ms\n");
  std::printf("%-22s %s %9s %9s %5s | breakdown of the first call (ms)\n", "matrix", "F", "first", "steady", "ratio");
  std::printf("(F: P = the process's first call, cold kernel cache; H = a fresh handle, process warm)\n");
  bool process_first = true;
  for (const auto& f : files) {
    sj_tensor* t = nullptr;
    check(sj_tensor_read_file(context(), f.c_str(), &t));
    const std::string stem = std::filesystem::path(f).stem().string();
    first_call_row(stem, t, process_first);
    process_first = false;
    sj_tensor_destroy(t);
  }
  return 0;
}

// --- part 3: the process's first call, runtime against the bare kernel -----------------------

int process_first_mode(int argc, char** argv) {
  if (argc != 4 || (std::string(argv[2]) != "ours" && std::string(argv[2]) != "bare")) {
    std::fprintf(stderr, "usage: bench_call_overhead --process-first ours|bare matrix.mtx\n");
    return 2;
  }
  const bool ours = std::string(argv[2]) == "ours";
  sj_tensor* file = nullptr;
  check(sj_tensor_read_file(context(), argv[3], &file));
  sj_tensor* A = copy_handle(file);
  sj_tensor_destroy(file);
  sj_tensor_info info;
  sj_tensor_get_info(A, &info);
  sj_op_options o;
  sj_op_options_init(&o);
  o.transpose_b = info.dims[0] != info.dims[1];  // A*A^T for a rectangular A, as --first-call
  // The bare kernel's right operand: A, or A^T built before anything is timed.
  sj_tensor* right = A;
  if (o.transpose_b) check(sj_transpose(context(), A, &right));
  const sj_tensor* ops[2] = {A, A};
  sj::Workers serial = sj::Workers::serial();
  auto run = [&](bool first) {
    if (!ours) {
      Tensor r = sj::spgemm_gustavson(A->t, right->t, SJ_SEMIRING_PLUS_TIMES, false, sj::SpgemmAccumulator::Dense,
                                      sj::default_allocator(), serial);
      benchmark::DoNotOptimize(r.values.data());
      return;
    }
    sj_tensor* r = nullptr;
    if (first) {
      sj_plan* plan = nullptr;
      check(sj_plan_create(context(), SJ_OP_SPGEMM, ops, 2, &o, &plan));
      check(sj_plan_execute(plan, ops, 2, &r));
      sj_plan_destroy(plan);
    } else {
      check(sj_spgemm(context(), A, A, &o, &r));
    }
    sj_tensor_destroy(r);
  };
  const long f0 = minor_faults();
  const double t0 = now_ms();
  run(true);
  const double first = now_ms() - t0;
  const long faults = minor_faults() - f0;
  std::vector<double> steady;
  for (int k = 0; k < 9; ++k) {
    const double t1 = now_ms();
    run(false);
    steady.push_back(now_ms() - t1);
  }
  std::sort(steady.begin(), steady.end());
  std::printf("%s\t%s\t%.3f\t%.3f\t%.2f\t%ld\n", std::filesystem::path(argv[3]).stem().c_str(), argv[2], first,
              steady[4], first / steady[4], faults);
  if (right != A) sj_tensor_destroy(right);
  sj_tensor_destroy(A);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--first-call") return first_call_mode(argc, argv);
  if (argc >= 2 && std::string(argv[1]) == "--process-first") return process_first_mode(argc, argv);
  for (Op op : {Op::Spgemm, Op::Spmspv, Op::Ewise}) {
    benchmark::RegisterBenchmark((std::string(name(op)) + "/bare").c_str(), bare, op);
    benchmark::RegisterBenchmark((std::string(name(op)) + "/execute").c_str(), execute, op);
    benchmark::RegisterBenchmark((std::string(name(op)) + "/dropin").c_str(), dropin, op);
    benchmark::RegisterBenchmark((std::string(name(op)) + "/plan_each_call").c_str(), plan_each_call, op);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

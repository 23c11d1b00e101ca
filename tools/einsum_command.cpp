#include "tools/einsum_command.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "src/context.hpp"
#include "src/derived_forms.hpp"
#include "src/einsum_parser.hpp"
#include "src/einsum_planner.hpp"
#include "src/error.hpp"
#include "src/tensor_file.hpp"
#include "src/types.hpp"

const char* const kEinsumUsage = R"USAGE(  sparsejit einsum "EXPR" --tensor NAME=FILE[:FORMAT] ... [options]
      e.g. sparsejit einsum "a(i) = B(i,j) * C(j,i)" --tensor B=m.mtx:csr --tensor C=m.mtx:csr
      FORMAT: csr | csc | dcsr | coo | dense | csf | sparse-vector | a level list such as
              "dense(j),compressed(i)" (the access's index names); default: the file's own
    --output FILE          write the result (.mtx for vectors (n x 1) and matrices, .tns for 3-D)
    --output-format F      the result's format (default: the planner's)
    --schedule NAME        auto | inner | search | fused | transpose | reference, or for a
                           matrix product gustavson-dense | gustavson-hash (the built-in SpGEMM)
    --order i,j,k          force a loop order (index names, repeats allowed)
    --semiring NAME        plus-times | min-plus | max-times | or-and | plus-pair
    --scalar               compile without SIMD for a baseline x86-64 (ablation)
    --repeat N             timed executions after the first (default 10)
    --threads T            worker threads (default: the context's; the outermost loop is split
                           where the dependence test allows, see --explain)
    --explain              print the plan: iteration graph, candidates, loop nest, kernel source
    --csv                  one line: expression,schedule,order,kernel_source,compile_ms,median_ms,min_ms,nnz_out,checksum
)USAGE";

namespace {

struct Usage {
  std::string msg;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  for (;;) {
    size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

// Whether the plan is likely to compile a loop nest, so that loading the LLVM backend while the
// tensors are read pays. Not for a schedule that compiles nothing, nor for `auto` on a product
// of two matrices that chain into the output (C(i,j) = A(i,k) * B(k,j)), which runs the built-in
// SpGEMM when the operands are CSR, as .mtx files read. A wrong guess costs only the overlap:
// a plan that compiles loads the backend itself.
bool likely_compiles(const sj::einsum::Expression& e, sj_schedule schedule, bool scalar, bool forced_order) {
  if (schedule == SJ_SCHEDULE_REFERENCE || schedule == SJ_SCHEDULE_GUSTAVSON_DENSE ||
      schedule == SJ_SCHEDULE_GUSTAVSON_HASH || schedule == SJ_SCHEDULE_DENSIFY || schedule == SJ_SCHEDULE_PUSH)
    return false;
  if (schedule != SJ_SCHEDULE_AUTO || scalar || forced_order || e.terms.size() != 1) return true;
  const auto& f = e.terms[0].factors;
  int left = 0;
  return f.size() != 2 || !sj::einsum::chained_matrix_product(f[0].indices, f[1].indices, e.output.indices, &left);
}

int einsum_main(int argc, char** argv) {
  if (argc < 3) throw Usage{"einsum needs an expression"};
  const std::string expr = argv[2];
  std::map<std::string, std::pair<std::string, std::string>> files;  // name -> (path, format)
  std::string output, output_format, schedule = "auto", semiring = "plus-times", order;
  bool explain = false, csv = false, scalar = false;
  int repeat = 10, threads = 0;
  for (int i = 3; i < argc; ++i) {
    std::string f = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Usage{f + " needs a value"};
      return argv[++i];
    };
    if (f == "--tensor") {
      std::string v = value();
      auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) throw Usage{"--tensor wants NAME=FILE[:FORMAT], got '" + v + "'"};
      std::string name = v.substr(0, eq), rest = v.substr(eq + 1), fmt;
      // FORMAT follows the last ':' after the file's extension
      auto colon = rest.rfind(':');
      auto dot = rest.rfind('.');
      if (colon != std::string::npos && (dot == std::string::npos || colon > dot)) {
        fmt = rest.substr(colon + 1);
        rest = rest.substr(0, colon);
      }
      files[name] = {rest, fmt};
    } else if (f == "--output") output = value();
    else if (f == "--output-format") output_format = value();
    else if (f == "--schedule") schedule = value();
    else if (f == "--semiring") semiring = value();
    else if (f == "--order") order = value();
    else if (f == "--repeat") {
      std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || n < 0 || n > 1000000) throw Usage{"--repeat wants a count, got '" + v + "'"};
      repeat = static_cast<int>(n);
    } else if (f == "--threads") {
      std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || n < 0 || n > 4096) throw Usage{"--threads wants a count 0..4096, got '" + v + "'"};
      threads = static_cast<int>(n);
    } else if (f == "--explain") explain = true;
    else if (f == "--csv") csv = true;
    else if (f == "--scalar") scalar = true;
    else throw Usage{"unknown option '" + f + "'"};
  }
  auto sched = sj::parse_schedule(schedule);
  if (!sched) throw Usage{"unknown schedule '" + schedule + "'"};
  auto sr = sj::parse_semiring(semiring);
  if (!sr) throw Usage{"unknown semiring '" + semiring + "'"};

  sj::einsum::Expression e = sj::einsum::parse(expr);
  // The LLVM backend loads on a thread of its own while the tensors are read: ~55 ms of
  // mapping libLLVM that the plan would otherwise take. A plan that compiles waits for what is
  // left of it (counted in its compile time); a failed load is the plan's to explain. Joined
  // when it goes out of scope, after the context.
  std::jthread backend;
  if (likely_compiles(e, *sched, scalar, !order.empty())) backend = std::jthread([] { sj_einsum_backend_load(); });
  sj_config config;
  sj_config_init(&config);
  sj::Context ctx(config);
  std::vector<sj::Tensor> ops;
  std::vector<std::optional<std::string>> formats;
  for (auto& name : e.operands) {
    auto it = files.find(name);
    if (it == files.end()) throw Usage{"no --tensor for " + name};
    sj::Tensor t = sj::read_tensor_file(it->second.first, ctx.allocator);
    t.derived = std::make_shared<sj::DerivedForms>();
    ops.push_back(std::move(t));
    formats.push_back(it->second.second.empty() ? std::nullopt : std::optional<std::string>(it->second.second));
  }
  for (auto& [name, _] : files)
    if (std::find(e.operands.begin(), e.operands.end(), name) == e.operands.end())
      throw Usage{"--tensor " + name + " is not used by the expression"};
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = *sched;
  o.semiring = *sr;
  o.threads = threads;
  sj::einsum::EinsumTuning tuning;
  tuning.scalar_only = scalar;
  if (!order.empty()) tuning.loop_order = split(order, ',');
  sj::einsum::EinsumPlan plan(ctx, expr, ops, formats,
                              output_format.empty() ? std::nullopt : std::optional<std::string>(output_format), o, tuning);
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto t0 = now();
  sj::Tensor result = plan.execute(ops);
  double first_ms = std::chrono::duration<double, std::milli>(now() - t0).count();
  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    auto t1 = now();
    result = plan.execute(ops);
    times.push_back(std::chrono::duration<double, std::milli>(now() - t1).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times.empty() ? first_ms : times[times.size() / 2];
  const double min = times.empty() ? first_ms : times.front();
  double checksum = 0;
  {
    sj::CooTensor c = sj::to_coo(result);
    for (double v : c.values) checksum += v;
  }
  const auto& tp = plan.terms()[0];
  const std::string chosen = sj::einsum::chosen_schedule_name(tp);
  const std::string chosen_order = tp.chosen >= 0 ? sj::einsum::order_text(plan.expression(), tp.candidates[tp.chosen].order) : "-";
  double compile_ms = 0;
  for (auto& t : plan.terms()) compile_ms += t.compile_ms;
  if (explain) std::fputs(plan.explain_text().c_str(), stdout);
  if (csv) {
    std::printf("\"%s\",%s,\"%s\",%s,%.3f,%.4f,%.4f,%lld,%.17g\n", plan.expression().canonical().c_str(), chosen.c_str(),
                chosen_order.c_str(), tp.kernel_source.c_str(), compile_ms, median, min,
                static_cast<long long>(result.order == 0 ? 1 : result.nnz()), checksum);
  } else if (!explain) {
    std::printf("%s\n  schedule %s, order %s, kernel %s (%.3f ms)\n  result: %s\n  first %.3f ms, median %.4f ms, min %.4f ms over %d runs, checksum %.17g\n",
                plan.expression().canonical().c_str(), chosen.c_str(), chosen_order.c_str(), tp.kernel_source.c_str(),
                compile_ms, result.describe().c_str(), first_ms, median, min, repeat, checksum);
  }
  if (!output.empty()) {
    if (result.order == 0) throw sj::Error(SJ_ERR_INVALID_ARGUMENT, "--output: the result is a scalar (" + std::to_string(checksum) + ")");
    sj::write_tensor_file(result, output);
  }
  return 0;
}

}  // namespace

int run_einsum_command(int argc, char** argv) {
  try {
    return einsum_main(argc, argv);
  } catch (const Usage& u) {
    std::fprintf(stderr, "sparsejit einsum: %s\n\nusage:\n%s", u.msg.c_str(), kEinsumUsage);
    return 2;
  } catch (const sj::Error& e) {
    std::fprintf(stderr, "sparsejit einsum: %s: %s\n", sj_status_string(e.status()), e.what());
    return 1;
  }
}

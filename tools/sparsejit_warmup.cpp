// sparsejit-warmup: fills the persistent cache ahead of time.
//
//   sparsejit-warmup --manifest FILE [--dir D]
//       one kernel key per line (KernelKey::to_string(), what explain prints; '#' comments and
//       blank lines skipped). Keys from another build are rebased onto this one. Coiteration
//       kernels are compiled (asmjit code is not persisted: it compiles in ~40 us, barely
//       slower than a verified load, see cache/persistent_store.hpp); plan and LLVM keys need
//       operands or the LLVM backend and are reported as skipped.
//   sparsejit-warmup --matrices DIR --ops spgemm,spmspv,... [--dir D]
//       for every .mtx/.tns file in DIR and every op, plans through the public C API with a
//       context whose cache_dir is D (the plan path: inspect, choose, build, store).
//
// Progress: a bar on stderr when it is a terminal, plain lines otherwise. Exit 1 when any
// item failed, 2 on a usage error.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cache/cache_folder.hpp"
#include "cache/kernel_key.hpp"
#include "cache/persistent_store.hpp"
#include "jit/coiter_jit.hpp"
#include "sparsejit/sparsejit.h"
#include "src/error.hpp"

namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage =
    "usage: sparsejit-warmup --manifest FILE [--dir D]\n"
    "       sparsejit-warmup --matrices DIR --ops spgemm,spgemm-masked,spmspv,spmv,ewise-mult,ewise-add,transpose "
    "[--dir D]\n"
    "  --dir D  the cache folder to fill (default: the one the library uses)\n";

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Progress {
  size_t total = 0, done = 0;
  bool tty = ::isatty(2) != 0;
  void step(const std::string& what, const std::string& outcome) {
    ++done;
    if (tty) {
      constexpr int kWidth = 30;
      int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
      std::string label = what.size() > 50 ? what.substr(0, 47) + "..." : what;
      std::fprintf(stderr, "\r[%s%s] %zu/%zu %-50s", std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, '.').c_str(), done, total, label.c_str());
      if (done == total) std::fputc('\n', stderr);
    } else {
      std::fprintf(stderr, "warmup %zu/%zu: %s: %s\n", done, total, what.c_str(), outcome.c_str());
    }
    std::fflush(stderr);
  }
};

struct Counts {
  size_t compiled = 0, disk = 0, memory = 0, built_in = 0, skipped = 0, failed = 0;
  void add(const std::string& source) {
    if (source == "compiled") ++compiled;
    else if (source == "disk") ++disk;
    else if (source == "memory") ++memory;
    else ++built_in;
  }
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      if (i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

int warm_manifest(const std::string& path, Counts& counts, Progress& progress) {
  std::ifstream in(path);
  if (!in) throw sj::Error(SJ_ERR_IO, "cannot open manifest " + path);
  std::vector<std::pair<int, std::string>> lines;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    line.erase(line.find_last_not_of(" \t\r") + 1);
    lines.emplace_back(n, line.substr(b));
  }
  progress.total = lines.size();
  for (auto& [n, text] : lines) {
    std::string what = "line " + std::to_string(n);
    std::string outcome;
    try {
      sj::cache::KernelKey key = sj::cache::KernelKey::parse(text);
      if (!key.is_current_build()) key = key.with_current_build();
      switch (key.kind) {
        case sj::cache::KeyKind::Coiter: {
          auto t0 = Clock::now();
          sj::jit::CoiterKernel k = sj::jit::compile_coiter(key.coiter_spec());
          what = k.spec.to_string();
          outcome = (k.generated ? "compiled in " : "portable kernel (no codegen for this ISA), ") +
                    std::to_string(ms_since(t0)) + " ms";
          k.generated ? ++counts.compiled : ++counts.built_in;
          break;
        }
        case sj::cache::KeyKind::Plan:
          outcome = "skipped: plan decisions need operands (use --matrices)";
          ++counts.skipped;
          break;
        default:
          outcome = "skipped: no LLVM backend in this build yet";
          ++counts.skipped;
          break;
      }
    } catch (const sj::Error& e) {
      outcome = std::string("FAILED: ") + e.what();
      ++counts.failed;
      if (progress.tty) std::fprintf(stderr, "\n%s: %s: %s\n", path.c_str(), what.c_str(), e.what());
    }
    progress.step(what, outcome);
  }
  return 0;
}

// Operands for `op` built from the matrix A (owned by the caller's context).
struct Operands {
  std::vector<sj_tensor*> owned;
  std::vector<const sj_tensor*> list;
  sj_op_options options;
};

bool make_operands(sj_context* ctx, sj_op op, sj_tensor* A, Operands& out, std::string* why) {
  sj_tensor_info info;
  sj_tensor_get_info(A, &info);
  sj_op_options_init(&out.options);
  out.options.calibrate = 1;  // measure the best candidates and keep the decision in the folder
  bool square = info.order == 2 && info.dims[0] == info.dims[1];
  if (info.order != 2) return *why = "not a matrix", false;
  auto vector_operand = [&](bool sparse) -> sj_tensor* {
    int64_t n = info.dims[1];
    sj_tensor* x = nullptr;
    if (sparse) {
      int64_t step = std::max<int64_t>(1, n / std::max<int64_t>(1, n / 100));  // ~1% density
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < n; i += step) idx.push_back(i);
      std::vector<double> val(idx.size(), 1.0);
      if (info.index_type == SJ_INDEX_INT32) {
        std::vector<int32_t> i32(idx.begin(), idx.end());
        sj_tensor_create_sparse_vector(ctx, n, static_cast<int64_t>(i32.size()), SJ_INDEX_INT32, SJ_VALUE_F64,
                                       i32.data(), val.data(), SJ_TENSOR_COPY, &x);
      } else {
        sj_tensor_create_sparse_vector(ctx, n, static_cast<int64_t>(idx.size()), SJ_INDEX_INT64, SJ_VALUE_F64,
                                       idx.data(), val.data(), SJ_TENSOR_COPY, &x);
      }
    } else {
      std::vector<double> val(static_cast<size_t>(n), 1.0);
      sj_tensor_create_dense(ctx, 1, &n, SJ_VALUE_F64, val.data(), SJ_TENSOR_COPY, &x);
    }
    if (x) out.owned.push_back(x);
    return x;
  };
  switch (op) {
    case SJ_OP_SPGEMM:
      out.list = {A, A};
      if (!square) out.options.transpose_b = 1;  // A*A^T
      return true;
    case SJ_OP_SPGEMM_MASKED:
      if (!square) return *why = "masked SpGEMM warm-up needs a square matrix", false;
      out.list = {A, A, A};
      return true;
    case SJ_OP_SPMSPV:
    case SJ_OP_SPMV: {
      sj_tensor* x = vector_operand(op == SJ_OP_SPMSPV);
      if (!x) return *why = sj_last_error_message(), false;
      out.list = {A, x};
      return true;
    }
    case SJ_OP_EWISE_MULT:
    case SJ_OP_EWISE_ADD:
      out.list = {A, A};
      if (square) out.options.transpose_b = 1;  // the transposed-operand case
      return true;
    case SJ_OP_TRANSPOSE:
      out.list = {A};
      return true;
  }
  return *why = "unknown operation", false;
}

// "source":"compiled" from the explain JSON.
std::string json_string_field(const std::string& json, const std::string& name) {
  std::string pat = "\"" + name + "\":\"";
  size_t p = json.find(pat);
  if (p == std::string::npos) return "";
  p += pat.size();
  return json.substr(p, json.find('"', p) - p);
}

int warm_matrices(const std::string& dir, const std::string& ops_text, const std::string& cache_dir, Counts& counts,
                  Progress& progress) {
  std::vector<sj_op> ops;
  for (const std::string& name : split(ops_text, ',')) {
    int found = -1;
    for (int o = SJ_OP_SPGEMM; o <= SJ_OP_TRANSPOSE; ++o)
      if (name == sj::to_string(static_cast<sj_op>(o))) found = o;
    if (found < 0) throw sj::Error(SJ_ERR_INVALID_ARGUMENT, "unknown operation '" + name + "'");
    ops.push_back(static_cast<sj_op>(found));
  }
  if (ops.empty()) throw sj::Error(SJ_ERR_INVALID_ARGUMENT, "--ops lists no operation");
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (e.is_regular_file() && (ext == ".mtx" || ext == ".tns")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw sj::Error(SJ_ERR_IO, "no .mtx or .tns files in " + dir);
  progress.total = files.size() * ops.size();

  sj_config config;
  sj_config_init(&config);
  config.cache_dir = cache_dir.c_str();
  sj_context* ctx = nullptr;
  if (sj_context_create(&config, &ctx) != SJ_OK)
    throw sj::Error(SJ_ERR_CACHE, std::string("cannot create a context: ") + sj_last_error_message());
  for (const fs::path& file : files) {
    sj_tensor* A = nullptr;
    sj_status st = sj_tensor_read_file(ctx, file.c_str(), &A);
    std::string read_error = st == SJ_OK ? "" : sj_last_error_message();
    for (sj_op op : ops) {
      std::string what = std::string(sj::to_string(op)) + " " + file.filename().string();
      std::string outcome, why;
      Operands operands;
      if (!A) {
        outcome = "FAILED: " + read_error;
        ++counts.failed;
      } else if (!make_operands(ctx, op, A, operands, &why)) {
        outcome = "skipped: " + why;
        ++counts.skipped;
      } else {
        auto t0 = Clock::now();
        sj_plan* plan = nullptr;
        if (sj_plan_create(ctx, op, operands.list.data(), static_cast<int>(operands.list.size()), &operands.options,
                           &plan) == SJ_OK) {
          const char* json = nullptr;
          sj_plan_explain(plan, &json);
          std::string text = json ? json : "";
          std::string source = json_string_field(text, "source");
          counts.add(source);
          outcome = json_string_field(text, "chosen") + ", kernel " + (source.empty() ? "?" : source) + ", " +
                    std::to_string(ms_since(t0)) + " ms";
          sj_plan_destroy(plan);
        } else {
          outcome = std::string("FAILED: ") + sj_last_error_message();
          ++counts.failed;
        }
      }
      for (sj_tensor* t : operands.owned) sj_tensor_destroy(t);
      if (progress.tty && outcome.rfind("FAILED", 0) == 0) std::fprintf(stderr, "\n%s: %s\n", what.c_str(), outcome.c_str());
      progress.step(what, outcome);
    }
    sj_tensor_destroy(A);
  }
  sj_context_destroy(ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string manifest, matrices, ops, dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "sparsejit-warmup: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      out = argv[++i];
    };
    if (a == "--manifest") value(manifest);
    else if (a == "--matrices") value(matrices);
    else if (a == "--ops") value(ops);
    else if (a == "--dir") value(dir);
    else if (a == "--help" || a == "-h") return std::fputs(kUsage, stdout), 0;
    else return std::fprintf(stderr, "sparsejit-warmup: unknown argument '%s'\n%s", a.c_str(), kUsage), 2;
  }
  if (manifest.empty() == matrices.empty() || (!matrices.empty() && ops.empty())) {
    std::fprintf(stderr, "sparsejit-warmup: give either --manifest FILE or --matrices DIR --ops LIST\n%s", kUsage);
    return 2;
  }
  auto t0 = Clock::now();
  Counts counts;
  Progress progress;
  try {
    dir = sj::cache::resolve_cache_dir(dir);
    // Open (and create) the folder first: an unsafe folder is refused here, with its reason.
    sj::cache::PersistentStore store(dir);
    if (!store.enabled())
      std::fprintf(stderr, "sparsejit-warmup: %s: %s (continuing; nothing will persist)\n", dir.c_str(),
                   store.disabled_reason().c_str());
    if (!manifest.empty()) warm_manifest(manifest, counts, progress);
    else warm_matrices(matrices, ops, dir, counts, progress);
    size_t entries = store.list(false).size();
    std::printf("warm-up: %zu item%s in %.1f ms: %zu compiled, %zu from disk, %zu from memory, %zu built-in, "
                "%zu skipped, %zu failed; %s now holds %zu entr%s\n",
                progress.done, progress.done == 1 ? "" : "s", ms_since(t0), counts.compiled, counts.disk,
                counts.memory, counts.built_in, counts.skipped, counts.failed, dir.c_str(), entries,
                entries == 1 ? "y" : "ies");
  } catch (const std::exception& e) {
    if (progress.tty && progress.done && progress.done < progress.total) std::fputc('\n', stderr);
    std::fprintf(stderr, "sparsejit-warmup: %s\n", e.what());
    return 1;
  }
  return counts.failed ? 1 : 0;
}

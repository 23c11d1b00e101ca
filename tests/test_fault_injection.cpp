// Fault injection (issue 8): allocation failures at every allocation site of every operation
// (through the context's allocator hooks), a code-generation failure, and a cache folder the
// runtime cannot use. Each must end in a clean status or a correct result: SJ_ERR_OUT_OF_MEMORY
// with the caller's output untouched and nothing leaked (the hook counts live blocks; CI also
// runs this under LeakSanitizer), the portable kernel with the same result and one warning,
// and a run without the disk cache with one warning.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "jit/coiter_jit.hpp"
#include "jit/isa.hpp"
#include "sparsejit/sparsejit.h"
#include "spdlog/sinks/base_sink.h"
#include "src/logging.hpp"
#include "tests/fuzz/capi_ops_harness.hpp"  // same_bits
#include "tests/random_matrices.hpp"
#include "tests/test_util.hpp"

namespace {

namespace fs = std::filesystem;
using sj::fuzz::capi_ops_detail::same_bits;

// An allocator hook that fails its fail_at-th call (1-based; -1 = never) and counts live blocks.
struct FailingAllocator {
  std::atomic<int64_t> calls{0}, live{0}, fail_at{-1}, failures{0};
};
void* failing_alloc(size_t size, size_t align, void* user) {
  auto* f = static_cast<FailingAllocator*>(user);
  if (++f->calls == f->fail_at) {
    ++f->failures;
    return nullptr;
  }
  ++f->live;
  return std::aligned_alloc(align, size);
}
void failing_free(void* p, size_t, void* user) {
  --static_cast<FailingAllocator*>(user)->live;
  std::free(p);
}

struct Context {
  FailingAllocator hooks;
  sj_context* c = nullptr;
  explicit Context(size_t cap = 0) {
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.allocator = {failing_alloc, failing_free, &hooks};
    cfg.memory_cap_bytes = cap;
    cfg.disable_disk_cache = 1;
    cfg.threads = 1;  // one allocation order
    EXPECT_EQ(sj_context_create(&cfg, &c), SJ_OK);
  }
  ~Context() {
    EXPECT_EQ(sj_context_destroy(c), SJ_OK) << sj_last_error_message();
    EXPECT_EQ(hooks.live.load(), 0) << "blocks still allocated after the context is gone";
  }
};

using Handles = std::vector<sj_tensor*>;
void destroy_all(Handles& h) {
  for (sj_tensor* t : h) sj_tensor_destroy(t);
  h.clear();
}

sj_tensor* csr(sj_context* c, const sj::CsResult<int32_t, double>& m) {
  sj_tensor* t = nullptr;
  EXPECT_EQ(sj_tensor_create_csr(c, m.outer, m.inner, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), SJ_TENSOR_COPY, &t),
            SJ_OK)
      << sj_last_error_message();
  return t;
}

// One operation under test: `make` builds fresh operands (allocation failures off), `run`
// performs the call into *out.
struct Case {
  std::string name;
  std::function<Handles(sj_context*)> make;
  std::function<sj_status(sj_context*, const Handles&, sj_tensor**)> run;
};

// Runs `c` once to count its allocations N, then once per k = 1..N with the k-th failing
// (in a context with memory cap `cap`, 0 = none).
// Returns N (0 when the call is not served, e.g. a schedule that does not apply).
int64_t fail_each_allocation(const Case& c, size_t cap = 0) {
  SCOPED_TRACE(c.name);
  Context ctx(cap);
  FailingAllocator& h = ctx.hooks;
  Handles ops = c.make(ctx.c);
  h.calls = 0;
  sj_tensor* good = nullptr;
  sj_status s = c.run(ctx.c, ops, &good);
  const int64_t n = h.calls;
  destroy_all(ops);
  if (s == SJ_ERR_INVALID_ARGUMENT) return 0;  // the forced schedule cannot serve this call
  EXPECT_EQ(s, SJ_OK) << sj_last_error_message();
  if (s != SJ_OK) return 0;
  EXPECT_GT(n, 0) << "the result must come from the allocator hooks";
  for (int64_t k = 1; k <= n; ++k) {
    SCOPED_TRACE("allocation " + std::to_string(k) + " of " + std::to_string(n) + " fails");
    const int64_t live_before = h.live;
    Handles fresh = c.make(ctx.c);
    h.calls = 0;
    h.failures = 0;
    h.fail_at = k;
    sj_tensor* out = reinterpret_cast<sj_tensor*>(0x5eed);
    sj_status fs = c.run(ctx.c, fresh, &out);
    h.fail_at = -1;
    destroy_all(fresh);
    EXPECT_EQ(h.failures.load(), 1);
    EXPECT_EQ(fs, SJ_ERR_OUT_OF_MEMORY) << sj_last_error_message();
    EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x5eed)) << "a failed call wrote its output";
    if (fs == SJ_OK && out != reinterpret_cast<sj_tensor*>(0x5eed)) sj_tensor_destroy(out);
    EXPECT_EQ(h.live.load(), live_before) << "a failed call leaked blocks from the allocator";
  }
  // Afterwards the same call works and gives the same result.
  Handles again = c.make(ctx.c);
  sj_tensor* second = nullptr;
  EXPECT_EQ(c.run(ctx.c, again, &second), SJ_OK) << sj_last_error_message();
  if (second && good) {
    EXPECT_TRUE(same_bits(second->t, good->t));
  }
  sj_tensor_destroy(second);
  sj_tensor_destroy(good);
  destroy_all(again);
  return n;
}

const sj_schedule kSchedules[] = {SJ_SCHEDULE_AUTO,      SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE,
                                  SJ_SCHEDULE_GUSTAVSON_HASH, SJ_SCHEDULE_INNER, SJ_SCHEDULE_TRANSPOSE,
                                  SJ_SCHEDULE_SEARCH,    SJ_SCHEDULE_DENSIFY,   SJ_SCHEDULE_PUSH,
                                  SJ_SCHEDULE_FUSED};

sj::CsResult<int32_t, double> matrix(uint64_t seed, int64_t rows, int64_t cols) {
  sj::test::Rng rng(seed);
  return sj::test::random_matrix<int32_t, double>(rng, rows, cols, sj::test::Values::SmallInt);
}

// Binary operations (A, B) under every schedule that serves them.
void every_schedule(const std::string& name, int64_t m, int64_t k, int64_t n, bool vector_b,
                    std::function<sj_status(sj_context*, const sj_tensor*, const sj_tensor*, const sj_op_options*,
                                            sj_tensor**)> call,
                    sj_op_options base, int* served) {
  auto a = matrix(11, m, k), b = matrix(12, k, n);
  sj::test::Rng rng(13);
  auto x = sj::test::random_sparse_vector<int32_t, double>(rng, k, 0.3);
  for (sj_schedule s : kSchedules) {
    sj_op_options o = base;
    o.schedule = s;
    Case c{name + " schedule " + std::to_string(s),
           [&](sj_context* ctx) {
             Handles h{csr(ctx, a)};
             sj_tensor* t = nullptr;
             if (vector_b)
               EXPECT_EQ(sj_tensor_create_sparse_vector(ctx, x.n, x.idx.size(), SJ_INDEX_INT32, SJ_VALUE_F64,
                                                        x.idx.data(), x.val.data(), SJ_TENSOR_COPY, &t),
                         SJ_OK);
             else
               t = csr(ctx, b);
             h.push_back(t);
             return h;
           },
           [&](sj_context* ctx, const Handles& h, sj_tensor** out) { return call(ctx, h[0], h[1], &o, out); }};
    if (fail_each_allocation(c) > 0) ++*served;
  }
}

TEST(FaultInjection, SpgemmEverySchedule) {
  sj_op_options o;
  sj_op_options_init(&o);
  int served = 0;
  every_schedule("spgemm", 40, 30, 35, false, sj_spgemm, o, &served);
  EXPECT_GE(served, 4);  // auto, reference, gustavson-dense, gustavson-hash (inner where it applies)
  o.dense_output = 1;
  served = 0;
  every_schedule("spgemm dense output", 20, 30, 25, false, sj_spgemm, o, &served);
  EXPECT_GE(served, 2);
}

TEST(FaultInjection, MaskedSpgemm) {
  auto m = matrix(21, 30, 30), a = matrix(22, 30, 25), b = matrix(23, 25, 30);
  int served = 0;
  for (sj_schedule s : kSchedules) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = s;
    Case c{"masked schedule " + std::to_string(s),
           [&](sj_context* ctx) { return Handles{csr(ctx, m), csr(ctx, a), csr(ctx, b)}; },
           [&](sj_context* ctx, const Handles& h, sj_tensor** out) { return sj_spgemm_masked(ctx, h[0], h[1], h[2], &o, out); }};
    if (fail_each_allocation(c) > 0) ++served;
  }
  EXPECT_GE(served, 2);
}

TEST(FaultInjection, SpmspvSparseAndDenseOutput) {
  for (int dense = 0; dense < 2; ++dense) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.dense_output = dense;
    int served = 0;
    every_schedule(dense ? "spmspv dense" : "spmspv", 50, 40, 1, true, sj_spmspv, o, &served);
    EXPECT_GE(served, 2);
  }
}

TEST(FaultInjection, ElementWiseMultAndAdd) {
  sj_op_options o;
  sj_op_options_init(&o);
  for (int t = 0; t < 2; ++t) {
    o.transpose_b = t;
    int served = 0;
    every_schedule(t ? "ewise-mult B^T" : "ewise-mult", 30, 30, 30, false,
                   [](sj_context* c, const sj_tensor* a, const sj_tensor* b, const sj_op_options* op, sj_tensor** r) {
                     return sj_ewise_mult(c, a, b, op, r);
                   },
                   o, &served);
    EXPECT_GE(served, 2);
    served = 0;
    every_schedule(t ? "ewise-add B^T" : "ewise-add", 30, 30, 30, false, sj_ewise_add, o, &served);
    EXPECT_GE(served, 2);
  }
}

TEST(FaultInjection, SpmvTransposePlanExecute) {
  auto a = matrix(31, 40, 30);
  std::vector<double> xv(30, 1.5);
  int64_t xd[1] = {30};
  auto with_x = [&](sj_context* ctx) {
    Handles h{csr(ctx, a)};
    sj_tensor* x = nullptr;
    EXPECT_EQ(sj_tensor_create_dense(ctx, 1, xd, SJ_VALUE_F64, xv.data(), SJ_TENSOR_COPY, &x), SJ_OK);
    h.push_back(x);
    return h;
  };
  EXPECT_GT(fail_each_allocation({"spmv", with_x,
                                  [](sj_context* c, const Handles& h, sj_tensor** out) {
                                    return sj_spmv(c, h[0], h[1], nullptr, out);
                                  }}),
            0);
  EXPECT_GT(fail_each_allocation({"transpose", [&](sj_context* ctx) { return Handles{csr(ctx, a)}; },
                                  [](sj_context* c, const Handles& h, sj_tensor** out) { return sj_transpose(c, h[0], out); }}),
            0);
  // A plan made without faults, executed while each allocation fails in turn.
  EXPECT_GT(fail_each_allocation({"plan execute", [&](sj_context* ctx) { return Handles{csr(ctx, a)}; },
                                  [](sj_context* c, const Handles& h, sj_tensor** out) {
                                    const sj_tensor* ops[2] = {h[0], h[0]};
                                    sj_plan* p = nullptr;
                                    sj_op_options o;
                                    sj_op_options_init(&o);
                                    o.transpose_b = 1;
                                    sj_status s = sj_plan_create(c, SJ_OP_SPGEMM, ops, 2, &o, &p);
                                    if (s != SJ_OK) return s;
                                    s = sj_plan_execute(p, ops, 2, out);
                                    sj_plan_destroy(p);
                                    return s;
                                  }}),
            0);
}

// B's CSC copy for the inner schedules (SpGEMM, masked SpGEMM) comes from the context's
// allocator and is kept with B's handle: the first call on a handle allocates more than the
// next. When any of its allocations fails the call ends in SJ_ERR_OUT_OF_MEMORY and nothing is
// kept on the handle: the next call on the same handles makes the whole copy again (as many
// allocations as a first call) and gives the same result.
TEST(FaultInjection, CscCopiesGoThroughTheHooksAndAreNotKeptHalfMade) {
  auto m = matrix(71, 30, 35), a = matrix(72, 30, 25), b = matrix(73, 25, 35);
  for (bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked spgemm inner" : "spgemm inner");
    Context ctx;
    FailingAllocator& h = ctx.hooks;
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = SJ_SCHEDULE_INNER;
    auto run = [&](const Handles& hs, sj_tensor** out) {
      return masked ? sj_spgemm_masked(ctx.c, hs[0], hs[1], hs[2], &o, out) : sj_spgemm(ctx.c, hs[1], hs[2], &o, out);
    };
    auto make = [&] { return Handles{csr(ctx.c, m), csr(ctx.c, a), csr(ctx.c, b)}; };
    Handles hs = make();
    sj_tensor *good = nullptr, *again = nullptr;
    h.calls = 0;
    ASSERT_EQ(run(hs, &good), SJ_OK) << sj_last_error_message();
    const int64_t first = h.calls;
    h.calls = 0;
    ASSERT_EQ(run(hs, &again), SJ_OK) << sj_last_error_message();
    const int64_t cached = h.calls;
    // (One allocation or three: a small copy's arrays share one block, src/tensor.cpp.)
    EXPECT_GT(first, cached) << "B's CSC copy must come from the hooks";
    sj_tensor_destroy(again);
    destroy_all(hs);
    for (int64_t k = 1; k <= first; ++k) {
      SCOPED_TRACE("allocation " + std::to_string(k) + " of " + std::to_string(first) + " fails");
      const int64_t live_before = h.live;
      Handles fresh = make();
      h.calls = 0;
      h.fail_at = k;
      sj_tensor* out = reinterpret_cast<sj_tensor*>(0x5eed);
      EXPECT_EQ(run(fresh, &out), SJ_ERR_OUT_OF_MEMORY) << sj_last_error_message();
      h.fail_at = -1;
      EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x5eed));
      // The same handles again: a failure inside the copy left nothing behind, so the copy is
      // made in full; a failure after it kept the finished copy.
      h.calls = 0;
      sj_tensor* ok = nullptr;
      ASSERT_EQ(run(fresh, &ok), SJ_OK) << sj_last_error_message();
      EXPECT_EQ(h.calls.load(), k <= first - cached ? first : cached);
      EXPECT_TRUE(same_bits(ok->t, good->t));
      sj_tensor_destroy(ok);
      destroy_all(fresh);
      EXPECT_EQ(h.live.load(), live_before) << "blocks leaked";
    }
    sj_tensor_destroy(good);
  }
}

// The wide-product paths (a memory cap under the dense accumulator's size: hash accumulator,
// mask row searched) fail cleanly at each allocation too.
TEST(FaultInjection, WideProductsUnderACap) {
  auto a = matrix(81, 40, 30);
  sj::test::Rng rng(82);
  sj::CsResult<int32_t, double> b, mk;
  for (auto* mat : {&b, &mk}) {
    const int64_t rows = mat == &b ? 30 : 40;
    mat->outer = rows;
    mat->inner = 300000;
    mat->pos.push_back(0);
    for (int64_t i = 0; i < rows; ++i) {
      int32_t c = static_cast<int32_t>(rng.uniform_int(0, 1000));
      for (int t = 0; t < 6; ++t) {
        mat->crd.push_back(c);
        mat->val.push_back(static_cast<double>(rng.uniform_int(1, 5)));
        c += static_cast<int32_t>(rng.uniform_int(1, 40000));
      }
      mat->pos.push_back(static_cast<int64_t>(mat->crd.size()));
    }
  }
  int served = 0;
  for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH}) {
    for (int masked = 0; masked < 2; ++masked) {
      if (masked && s == SJ_SCHEDULE_GUSTAVSON_HASH) continue;
      sj_op_options o;
      sj_op_options_init(&o);
      o.schedule = s;
      Case c{std::string(masked ? "wide masked" : "wide spgemm") + " schedule " + std::to_string(s),
             [&](sj_context* ctx) { return Handles{csr(ctx, mk), csr(ctx, a), csr(ctx, b)}; },
             [=](sj_context* ctx, const Handles& h, sj_tensor** out) {
               return masked ? sj_spgemm_masked(ctx, h[0], h[1], h[2], &o, out) : sj_spgemm(ctx, h[1], h[2], &o, out);
             }};
      if (fail_each_allocation(c, 1 << 20) > 0) ++served;
    }
  }
  EXPECT_EQ(served, 5);
}

TEST(FaultInjection, FileReadAndConversionsAndCopies) {
  const std::string mtx = sj::test::repo_data("karate.mtx").string();
  EXPECT_GT(fail_each_allocation({"read .mtx", [](sj_context*) { return Handles{}; },
                                  [&](sj_context* c, const Handles&, sj_tensor** out) {
                                    return sj_tensor_read_file(c, mtx.c_str(), out);
                                  }}),
            0);
  char tmpl[] = "/tmp/sj-fault-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string tns = std::string(tmpl) + "/t.tns";
  std::ofstream(tns) << "1 1 1 1.5\n2 3 1 -2\n2 1 4 3\n3 3 3 1\n";
  EXPECT_GT(fail_each_allocation({"read .tns", [](sj_context*) { return Handles{}; },
                                  [&](sj_context* c, const Handles&, sj_tensor** out) {
                                    return sj_tensor_read_file(c, tns.c_str(), out);
                                  }}),
            0);
  fs::remove_all(tmpl);

  auto a = matrix(41, 25, 20);
  for (sj_format f : {SJ_FORMAT_CSR, SJ_FORMAT_CSC, SJ_FORMAT_DCSR, SJ_FORMAT_COO, SJ_FORMAT_DENSE,
                      SJ_FORMAT_DENSE_COL_MAJOR}) {
    for (sj_index_type it : {SJ_INDEX_INT32, SJ_INDEX_INT64}) {
      if (f == SJ_FORMAT_CSR && it == SJ_INDEX_INT32) continue;  // already so: shares the arrays
      EXPECT_GT(fail_each_allocation({"convert to " + std::to_string(f) + " i" + std::to_string(it),
                                      [&](sj_context* ctx) { return Handles{csr(ctx, a)}; },
                                      [=](sj_context* c, const Handles& h, sj_tensor** out) {
                                        return sj_tensor_convert(c, h[0], f, nullptr, it, out);
                                      }}),
                0);
    }
  }
  // Creation with SJ_TENSOR_COPY and from COO triplets allocates through the hooks too.
  EXPECT_GT(fail_each_allocation({"create csr copy", [](sj_context*) { return Handles{}; },
                                  [&](sj_context* c, const Handles&, sj_tensor** out) {
                                    return sj_tensor_create_csr(c, a.outer, a.inner, SJ_INDEX_INT32, SJ_VALUE_F64,
                                                                a.pos.data(), a.crd.data(), a.val.data(),
                                                                SJ_TENSOR_COPY, out);
                                  }}),
            0);
  std::vector<int32_t> ri{2, 0, 1, 0}, ci{1, 3, 2, 3};
  std::vector<double> v{1, 2, 3, 4};
  EXPECT_GT(fail_each_allocation({"create coo", [](sj_context*) { return Handles{}; },
                                  [&](sj_context* c, const Handles&, sj_tensor** out) {
                                    return sj_tensor_create_coo(c, 3, 4, 4, SJ_INDEX_INT32, SJ_VALUE_F64, ri.data(),
                                                                ci.data(), v.data(), 1, out);
                                  }}),
            0);
}

// ---------------------------------------------------------------------------------------
// Code generation fails: the portable kernel runs, the result is the same, one warning.

class CountingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::atomic<int> codegen_warnings{0};

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (std::string_view(msg.payload.data(), msg.payload.size()).find("code generation failed") != std::string_view::npos)
      ++codegen_warnings;
  }
  void flush_() override {}
};

TEST(FaultInjection, CodegenFailureRunsThePortableKernelWithOneWarning) {
  if (!sj::jit::isa_supported(SJ_ISA_AVX2)) GTEST_SKIP() << "no generated kernels on this CPU";
  auto sink = std::make_shared<CountingSink>();
  sj::global_logger().sinks().push_back(sink);
  Context ctx;
  auto a = matrix(51, 60, 60), b = matrix(52, 60, 60);
  Handles h{csr(ctx.c, a), csr(ctx.c, b)};
  sj::test::Rng rng(53);
  auto xr = sj::test::random_sparse_vector<int32_t, double>(rng, 60, 0.4);
  sj_tensor* x = nullptr;
  ASSERT_EQ(sj_tensor_create_sparse_vector(ctx.c, 60, xr.idx.size(), SJ_INDEX_INT32, SJ_VALUE_F64, xr.idx.data(),
                                           xr.val.data(), SJ_TENSOR_COPY, &x),
            SJ_OK);
  h.push_back(x);
  sj_op_options inner, ref;
  sj_op_options_init(&inner);
  inner.schedule = SJ_SCHEDULE_INNER;
  ref = inner;
  ref.schedule = SJ_SCHEDULE_REFERENCE;
  auto check = [&](const char* what, auto call) {
    SCOPED_TRACE(what);
    sj_tensor *want = nullptr, *got = nullptr;
    ASSERT_EQ(call(&ref, &want), SJ_OK) << sj_last_error_message();
    sj_status s = call(&inner, &got);
    if (s == SJ_ERR_INVALID_ARGUMENT) {  // inner does not serve this call here
      sj_tensor_destroy(want);
      return;
    }
    ASSERT_EQ(s, SJ_OK) << sj_last_error_message();
    EXPECT_TRUE(same_bits(got->t, want->t));
    sj_tensor_destroy(want);
    sj_tensor_destroy(got);
  };
  sj::jit::CoiterJit::force_codegen_failure_for_testing(true);
  for (int round = 0; round < 3; ++round) {
    check("spgemm", [&](const sj_op_options* o, sj_tensor** out) { return sj_spgemm(ctx.c, h[0], h[1], o, out); });
    check("spmspv", [&](const sj_op_options* o, sj_tensor** out) { return sj_spmspv(ctx.c, h[0], h[2], o, out); });
    check("ewise-mult", [&](const sj_op_options* o, sj_tensor** out) { return sj_ewise_mult(ctx.c, h[0], h[1], o, out); });
  }
  sj::jit::CoiterJit::force_codegen_failure_for_testing(false);
  destroy_all(h);
  auto& sinks = sj::global_logger().sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  EXPECT_EQ(sink->codegen_warnings.load(), 1) << "a code-generation failure is logged once";
}

// ---------------------------------------------------------------------------------------
// A cache folder the runtime cannot use: every call works without it, after one warning.

struct Warnings {
  std::atomic<int> count{0};
  std::string text;
};
void count_warnings(sj_log_level level, const char* message, void* user) {
  auto* w = static_cast<Warnings*>(user);
  if (level == SJ_LOG_WARN) ++w->count, w->text += std::string(message) + "\n";
}

void runs_without_disk_cache(const std::string& dir) {
  Warnings w;
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.cache_dir = dir.c_str();
  cfg.log_level = SJ_LOG_WARN;
  cfg.log_callback = count_warnings;
  cfg.log_user = &w;
  sj_context* c = nullptr;
  ASSERT_EQ(sj_context_create(&cfg, &c), SJ_OK) << sj_last_error_message();
  auto a = matrix(61, 30, 30);
  Handles h{csr(c, a)};
  sj_op_options ref;
  sj_op_options_init(&ref);
  ref.schedule = SJ_SCHEDULE_REFERENCE;
  for (int i = 0; i < 3; ++i) {
    sj_tensor *got = nullptr, *want = nullptr;
    ASSERT_EQ(sj_spgemm(c, h[0], h[0], nullptr, &got), SJ_OK) << sj_last_error_message();
    ASSERT_EQ(sj_spgemm(c, h[0], h[0], &ref, &want), SJ_OK) << sj_last_error_message();
    EXPECT_TRUE(same_bits(got->t, want->t));
    sj_tensor_destroy(got);
    sj_tensor_destroy(want);
  }
  destroy_all(h);
  EXPECT_EQ(sj_context_destroy(c), SJ_OK);
  EXPECT_EQ(w.count.load(), 1) << w.text;
  EXPECT_NE(w.text.find("disk cache off"), std::string::npos) << w.text;
}

TEST(FaultInjection, UnusableCacheFolderRunsWithoutItAfterOneWarning) {
  char tmpl[] = "/tmp/sj-fault-cache-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  // A folder that cannot exist (its parent is a regular file): like a full or broken disk.
  std::ofstream(root + "/file") << "x";
  {
    SCOPED_TRACE("folder under a regular file");
    runs_without_disk_cache(root + "/file/cache");
  }
  // A read-only folder (root writes anyway, so only a non-root run can check this one).
  if (::geteuid() != 0) {
    SCOPED_TRACE("read-only folder");
    fs::create_directory(root + "/ro");
    fs::permissions(root + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    runs_without_disk_cache(root + "/ro");
    fs::permissions(root + "/ro", fs::perms::owner_all);
  }
  fs::remove_all(root);
}

}  // namespace

// Concurrency stress (issue 8), bounded in time so it also runs under ThreadSanitizer:
//  - threads × operations on shared operands, shared plans and one context, every result
//    compared bit for bit with the reference kernel's computed beforehand;
//  - threads running the C API fuzz harness on random inputs (each result checked against
//    the reference inside the harness; a mismatch aborts);
//  - several processes warming the same cache folder at once (the sparsejit-warmup tool) while
//    another verifies it: every process succeeds, no entry is corrupt, results stay correct.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "capi/handles.hpp"
#include "sparsejit/sparsejit.h"
#include "tests/fuzz/capi_ops_harness.hpp"
#include "tests/random_matrices.hpp"
#include "tests/test_util.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using sj::fuzz::capi_ops_detail::same_bits;

constexpr int kThreads = 4;
constexpr auto kBudget = std::chrono::milliseconds(2500);  // per stress phase

sj_tensor* csr(sj_context* c, const sj::CsResult<int32_t, double>& m) {
  sj_tensor* t = nullptr;
  EXPECT_EQ(sj_tensor_create_csr(c, m.outer, m.inner, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), SJ_TENSOR_COPY, &t),
            SJ_OK);
  return t;
}

// One call shape: operands are indices into the shared handles.
struct Call {
  sj_op op;
  std::vector<int> operands;
  sj_op_options options;
};

TEST(Stress, ThreadsShareOperandsPlansAndContext) {
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.disable_disk_cache = 1;
  cfg.threads = 2;
  sj_context* ctx = nullptr;
  ASSERT_EQ(sj_context_create(&cfg, &ctx), SJ_OK);
  sj::test::Rng rng(808);
  using sj::test::Values;
  std::vector<sj_tensor*> h;
  h.push_back(csr(ctx, sj::test::random_matrix<int32_t, double>(rng, 60, 50, Values::SmallInt)));  // 0: A 60x50
  h.push_back(csr(ctx, sj::test::random_matrix<int32_t, double>(rng, 50, 70, Values::SmallInt)));  // 1: B 50x70
  h.push_back(csr(ctx, sj::test::random_matrix<int32_t, double>(rng, 60, 70, Values::SmallInt)));  // 2: M 60x70
  h.push_back(csr(ctx, sj::test::random_matrix<int32_t, double>(rng, 60, 50, Values::SmallInt)));  // 3: C 60x50
  auto x = sj::test::random_sparse_vector<int32_t, double>(rng, 50, 0.2);
  sj_tensor* xv = nullptr;
  ASSERT_EQ(sj_tensor_create_sparse_vector(ctx, 50, x.idx.size(), SJ_INDEX_INT32, SJ_VALUE_F64, x.idx.data(),
                                           x.val.data(), SJ_TENSOR_COPY, &xv),
            SJ_OK);
  h.push_back(xv);  // 4: x (50)
  sj_tensor* csc = nullptr;
  ASSERT_EQ(sj_tensor_convert(ctx, h[1], SJ_FORMAT_CSC, nullptr, SJ_INDEX_INT64, &csc), SJ_OK);
  h.push_back(csc);  // 5: B as CSC, i64

  // Every call under every schedule that serves it, with its reference result.
  std::vector<Call> calls;
  const std::vector<std::pair<sj_op, std::vector<int>>> shapes = {
      {SJ_OP_SPGEMM, {0, 1}},  {SJ_OP_SPGEMM, {0, 5}},     {SJ_OP_SPGEMM_MASKED, {2, 0, 1}},
      {SJ_OP_SPMSPV, {0, 4}},  {SJ_OP_EWISE_MULT, {0, 3}}, {SJ_OP_EWISE_ADD, {0, 3}},
      {SJ_OP_TRANSPOSE, {0}}};
  std::vector<sj_plan*> plans;
  std::vector<sj_tensor*> want;
  for (auto& [op, ops] : shapes)
    for (int s = SJ_SCHEDULE_AUTO; s <= SJ_SCHEDULE_FUSED; ++s)
      for (int dense = 0; dense < 2; ++dense) {
        Call c{op, ops, {}};
        sj_op_options_init(&c.options);
        c.options.schedule = static_cast<sj_schedule>(s);
        c.options.dense_output = dense;
        std::vector<const sj_tensor*> operands;
        for (int i : ops) operands.push_back(h[i]);
        sj_plan* p = nullptr;
        if (sj_plan_create(ctx, op, operands.data(), static_cast<int>(operands.size()), &c.options, &p) != SJ_OK)
          continue;
        sj_op_options ro = c.options;
        ro.schedule = SJ_SCHEDULE_REFERENCE;
        sj_plan* rp = nullptr;
        sj_tensor* w = nullptr;
        ASSERT_EQ(sj_plan_create(ctx, op, operands.data(), static_cast<int>(operands.size()), &ro, &rp), SJ_OK);
        ASSERT_EQ(sj_plan_execute(rp, operands.data(), static_cast<int>(operands.size()), &w), SJ_OK);
        sj_plan_destroy(rp);
        calls.push_back(c);
        plans.push_back(p);
        want.push_back(w);
      }
  ASSERT_GE(calls.size(), 14u);

  std::atomic<int64_t> done{0}, mismatches{0}, failures{0};
  const auto stop = Clock::now() + kBudget;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      sj::test::Rng r(9000 + t);
      while (Clock::now() < stop) {
        const size_t i = r.uniform_int(0, static_cast<int64_t>(calls.size()) - 1);
        std::vector<const sj_tensor*> operands;
        for (int o : calls[i].operands) operands.push_back(h[o]);
        sj_tensor* got = nullptr;
        // Alternate between the shared plan and a fresh drop-in plan.
        sj_status s;
        if (r.bernoulli(0.5)) {
          s = sj_plan_execute(plans[i], operands.data(), static_cast<int>(operands.size()), &got);
        } else {
          sj_plan* p = nullptr;
          s = sj_plan_create(ctx, calls[i].op, operands.data(), static_cast<int>(operands.size()), &calls[i].options, &p);
          if (s == SJ_OK) s = sj_plan_execute(p, operands.data(), static_cast<int>(operands.size()), &got);
          sj_plan_destroy(p);
        }
        if (s != SJ_OK) {
          ++failures;
          continue;
        }
        if (!same_bits(got->t, want[i]->t)) ++mismatches;
        sj_tensor_destroy(got);
        ++done;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(done.load(), kThreads);
  std::printf("stress: %lld calls on %d threads over %zu call shapes, all equal to the reference\n",
              static_cast<long long>(done.load()), kThreads, calls.size());
  for (sj_plan* p : plans) sj_plan_destroy(p);
  for (sj_tensor* w : want) sj_tensor_destroy(w);
  for (sj_tensor* t : h) sj_tensor_destroy(t);
  EXPECT_EQ(sj_context_destroy(ctx), SJ_OK);
}

TEST(Stress, ThreadsRunRandomCallsAgainstTheReference) {
  std::atomic<int64_t> done{0};
  const auto stop = Clock::now() + kBudget;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      sj::test::Rng r(4242 + t);
      std::vector<uint8_t> bytes(400);
      while (Clock::now() < stop) {
        for (auto& b : bytes) b = static_cast<uint8_t>(r.next());
        sj::fuzz::capi_ops(bytes.data(), bytes.size());  // aborts on a mismatch with the reference
        ++done;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_GT(done.load(), kThreads);
  std::printf("stress: %lld random calls on %d threads\n", static_cast<long long>(done.load()), kThreads);
}

// ---------------------------------------------------------------------------------------
// Several processes warming one cache folder at once.

int run(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  std::string text;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) text.append(buf.data(), n);
  int st = ::pclose(p);
  if (out) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string csv_checksum(const std::string& csv) {  // op,matrix,schedule,...,nnz_out,checksum,first_call_ms
  std::vector<std::string> f;
  size_t at = 0, comma;
  std::string line = csv.substr(0, csv.find('\n'));
  while ((comma = line.find(',', at)) != std::string::npos) f.push_back(line.substr(at, comma - at)), at = comma + 1;
  f.push_back(line.substr(at));
  return f.size() >= 9 ? f[7] + "," + f[8] : "unparsed: " + csv;
}

TEST(Stress, ProcessesWarmOneCacheFolderAtOnce) {
  const fs::path cli = SPARSEJIT_CLI_PATH;
  const fs::path warmup = cli.parent_path() / "sparsejit-warmup";
  if (!fs::exists(warmup)) GTEST_SKIP() << warmup << " is not built";
  char tmpl[] = "/tmp/sj-stress-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = tmpl, dir = root + "/cache", data = root + "/data";
  fs::create_directory(data);
  for (const char* m : {"karate.mtx", "lp_afiro.mtx", "west0479.mtx"})
    fs::copy_file(sj::test::repo_data(m), data + "/" + m);

  constexpr int kProcesses = 4;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcesses + 1; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::setenv("SPARSEJIT_CACHE_DIR", dir.c_str(), 1);
      const int quiet = ::open("/dev/null", O_WRONLY);  // the exit status is what is checked
      if (quiet >= 0) ::dup2(quiet, 1), ::dup2(quiet, 2);
      if (i < kProcesses)
        ::execl(warmup.c_str(), "sparsejit-warmup", "--matrices", data.c_str(), "--ops",
                "spgemm,spmspv,ewise-mult,transpose", "--dir", dir.c_str(), static_cast<char*>(nullptr));
      else  // one more process verifies while the others write
        ::execl(cli.c_str(), "sparsejit", "cache", "verify", "--dir", dir.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    pids.push_back(pid);
  }
  for (size_t i = 0; i < pids.size(); ++i) {
    int st = 0;
    ASSERT_EQ(::waitpid(pids[i], &st, 0), pids[i]);
    ASSERT_TRUE(WIFEXITED(st));
    // The verifier may find no folder yet (exit 0 either way when nothing is bad).
    EXPECT_EQ(WEXITSTATUS(st), 0) << (i < kProcesses ? "warm-up" : "verify") << " process " << i;
  }
  std::string out;
  EXPECT_EQ(run(cli.string() + " cache verify --dir " + dir, &out), 0) << out;
  EXPECT_NE(out.find(", 0 bad"), std::string::npos) << out;
  EXPECT_EQ(out.find("[BAD]"), std::string::npos) << out;
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all) << "folder must stay 0700";
  for (auto& e : fs::directory_iterator(dir))
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << "leftover temporary " << e.path();
  // Results through the warmed folder equal results without any disk cache.
  for (const char* m : {"karate.mtx", "west0479.mtx"}) {
    std::string with, without;
    const std::string args = " run spgemm " + data + "/" + m + " --csv";
    ASSERT_EQ(run("SPARSEJIT_CACHE_DIR=" + dir + " " + cli.string() + args, &with), 0) << with;
    ASSERT_EQ(run("SPARSEJIT_CACHE_DIR=" + root + "/other " + cli.string() + args, &without), 0) << without;
    EXPECT_EQ(csv_checksum(with), csv_checksum(without)) << m;
  }
  fs::remove_all(root);
}

}  // namespace

// The sparsejit command: its output formats, its errors, and `run spgemm X.mtx --output`
// agreeing with an independent product on real matrices.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cache/cache_folder.hpp"
#include "src/convert.hpp"
#include "src/frostt.hpp"
#include "src/matrix_market.hpp"
#include "tests/test_util.hpp"

namespace {

struct Result {
  int status;
  std::string out;
};

// Runs the CLI with `args` (stderr folded into the output), with `env` ("NAME=value ...") set.
Result run_cli(const std::string& args, const std::string& env = "") {
  std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(SPARSEJIT_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string repo(const std::string& name) { return sj::test::repo_data(name).string(); }

TEST(Cli, RunPrintsChoiceAndTimings) {
  Result r = run_cli("run spgemm " + repo("cage8.mtx") + " --repeat 3");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("schedule: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first call"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("median"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nnz 55175"), std::string::npos) << r.out;
  r = run_cli("run spgemm " + repo("cage8.mtx") + " --repeat 1 --explain");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("candidates:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("* "), std::string::npos) << "the chosen candidate is marked: " << r.out;
  r = run_cli("run spgemm " + repo("cage8.mtx") + " --repeat 1 --explain-json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("\"candidates\":["), std::string::npos) << r.out;
}

TEST(Cli, CsvIsOneLineWithTheDocumentedColumns) {
  Result r = run_cli("run ewise-mult-t " + repo("west0479.mtx") + " --csv --repeat 2");
  ASSERT_EQ(r.status, 0) << r.out;
  ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  std::vector<std::string> cols;
  std::stringstream ss(r.out.substr(0, r.out.size() - 1));
  for (std::string c; std::getline(ss, c, ',');) cols.push_back(c);
  ASSERT_EQ(cols.size(), 10u) << r.out;
  EXPECT_EQ(cols[0], "ewise-mult-t");
  EXPECT_EQ(cols[1], "west0479.mtx");
  EXPECT_FALSE(cols[2].empty());
  EXPECT_GT(std::stoll(cols[7]), 0);
}

TEST(Cli, EveryOperationRuns) {
  for (std::string op : {"spgemm", "spgemm-masked", "spmspv", "spmv", "ewise-mult", "ewise-mult-t", "ewise-add"}) {
    Result r = run_cli("run " + op + " " + repo("karate.mtx") + " --repeat 1 --csv");
    EXPECT_EQ(r.status, 0) << op << ": " << r.out;
  }
  Result d = run_cli("run spgemm " + repo("lp_afiro.mtx") + " --dense-out --repeat 1");
  EXPECT_EQ(d.status, 0) << d.out;
  EXPECT_NE(d.out.find("dense 27x27"), std::string::npos) << d.out;
}

TEST(Cli, BadArgumentsAreClearErrors) {
  Result r = run_cli("run spgemm " + repo("karate.mtx") + " --schedule fastest");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("unknown schedule 'fastest'"), std::string::npos) << r.out;
  r = run_cli("run spgemm " + repo("karate.mtx") + " --schedule push");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("schedule 'push' cannot serve spgemm"), std::string::npos) << r.out;
  r = run_cli("run frobnicate " + repo("karate.mtx"));
  EXPECT_EQ(r.status, 2);
  r = run_cli("run spgemm /nonexistent.mtx");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("SJ_ERR_IO"), std::string::npos) << r.out;
  r = run_cli("run spgemm " + repo("karate.mtx") + " --repeat many");
  EXPECT_EQ(r.status, 2);
  r = run_cli("run spgemm " + repo("lp_afiro.mtx") + " " + repo("karate.mtx"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("SJ_ERR_SHAPE_MISMATCH"), std::string::npos) << r.out;
}

// `sparsejit cache prune` removes the default folders of other builds and versions: their
// entries and lock file, then the emptied folder. A folder stays whole when it holds anything
// else, is not private, or is the folder SPARSEJIT_CACHE_DIR names; symlinks (the parent, a
// folder) are never followed; this build's folder and names not like builds are not touched;
// `list` counts what prune would take, also when this build has no folder yet.
TEST(Cli, CachePruneRemovesOnlyOtherBuildsEntries) {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/sj-prune-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path root = tmpl, xdg = root / "xdg", parent = xdg / "sparsejit";
  auto make = [](const fs::path& dir, std::initializer_list<const char*> files) {
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
    for (const char* f : files) std::ofstream(dir / f) << "x";
  };
  const fs::path old_build = parent / "0.1.0-0123456789ab-20260101000000";
  const fs::path old_version = parent / "0.0.9-nogit-20250101000000-abcdef012345";
  const fs::path with_notes = parent / "0.1.0-fedcba987654-20260102000000";
  const fs::path with_tmp = parent / "1.2.3-rc1";
  const fs::path group_writable = parent / "0.1.0-aaaaaaaaaaaa-20260103000000";
  const fs::path configured = parent / "0.1.0-pinned";
  const fs::path linked = parent / "0.1.0-linked", link_target = root / "target";
  const fs::path not_a_build = parent / "photos";
  const fs::path busy = parent / "0.1.0-busy";
  make(busy, {"e.sje", ".lock"});
  fs::permissions(busy / ".lock", fs::perms::owner_read, fs::perm_options::replace);  // prune only reads it
  make(old_build, {"a.sje", "b.sje", ".lock", ".tmp-4242-7-0123abcd.sje"});  // (a crashed writer's)
  make(old_version, {"c.sje"});
  make(with_notes, {"d.sje", ".lock", "notes.txt"});
  make(with_tmp, {".tmp-work"});
  make(group_writable, {"h.sje"});
  fs::permissions(group_writable, fs::perms::group_write, fs::perm_options::add);
  make(configured, {"g.sje"});
  make(link_target, {"t.sje"});
  fs::create_directory_symlink(link_target, linked);
  make(not_a_build, {"f.sje"});
  const std::string env = "XDG_CACHE_HOME=" + xdg.string();

  // This build has no folder here yet: list says so, and counts the four prune would take.
  Result list = run_cli("cache list", env + " SPARSEJIT_CACHE_DIR=");
  EXPECT_NE(list.out.find("no cache here"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("(4 folders of other builds in " + parent.string()), std::string::npos) << list.out;

  const int writer = ::open((busy / ".lock").c_str(), O_RDONLY);  // as a writer of that build holds it
  ASSERT_GE(writer, 0);
  ASSERT_EQ(::flock(writer, LOCK_EX), 0);
  Result r = run_cli("cache prune", env + " SPARSEJIT_CACHE_DIR=" + configured.string());
  ::close(writer);
  EXPECT_NE(r.out.find("kept " + busy.string() + ": a program is writing to it"), std::string::npos) << r.out;
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("removed " + old_build.string() + " (3 entries)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("removed " + old_version.string() + " (1 entry)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept " + with_notes.string() + ": it holds 'notes.txt', which is no cache entry"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept " + with_tmp.string() + ": it holds '.tmp-work'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept " + group_writable.string() + ": others may write to it"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept " + configured.string() + ": it is the folder this process is configured to use"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 folders of other builds removed, 5 kept"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(old_build));
  EXPECT_FALSE(fs::exists(old_version));
  for (const fs::path& f : {with_notes / "d.sje", with_notes / "notes.txt", with_tmp / ".tmp-work",
                            group_writable / "h.sje", configured / "g.sje", link_target / "t.sje",
                            not_a_build / "f.sje"})
    EXPECT_TRUE(fs::exists(f)) << f;
  EXPECT_TRUE(fs::is_symlink(linked));

  // Without SPARSEJIT_CACHE_DIR the pinned folder goes too; the others stay as they were.
  r = run_cli("cache prune", env + " SPARSEJIT_CACHE_DIR=");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(fs::exists(configured));
  EXPECT_FALSE(fs::exists(busy));
  EXPECT_TRUE(fs::exists(with_notes / "d.sje"));

  // A relative XDG_CACHE_HOME is ignored (HOME's .cache then), so is a relative HOME, and a
  // symlinked parent is left alone.
  const fs::path home = root / "home";
  make(home / ".cache" / "sparsejit" / "0.1.0-fromhome", {"x.sje"});
  r = run_cli("cache prune", "XDG_CACHE_HOME=relative HOME=" + home.string() + " SPARSEJIT_CACHE_DIR=");
  EXPECT_NE(r.out.find("removed " + (home / ".cache/sparsejit/0.1.0-fromhome").string()), std::string::npos) << r.out;
  r = run_cli("cache prune", "XDG_CACHE_HOME=relative HOME=relative SPARSEJIT_CACHE_DIR=");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("neither XDG_CACHE_HOME nor HOME is an absolute path"), std::string::npos) << r.out;
  const fs::path other_xdg = root / "other";
  fs::create_directories(other_xdg);
  fs::create_directory_symlink(parent, other_xdg / "sparsejit");
  r = run_cli("cache prune", "XDG_CACHE_HOME=" + other_xdg.string() + " SPARSEJIT_CACHE_DIR=");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("is a symlink: left alone"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(with_notes / "d.sje"));

  EXPECT_EQ(run_cli("cache prune --dir " + configured.string(), env).status, 2);
  fs::permissions(group_writable, fs::perms::owner_all, fs::perm_options::replace);
  fs::remove_all(root);
}

// A library environment variable set to a value it does not take is reported once on stderr,
// naming it, what it takes and what applies instead, and the run goes on with the default;
// accepted values print nothing (the variables are read once per process: one child each).
TEST(Cli, EnvironmentMistakesAreReported) {
  // cage8: its product (55k entries) takes blocks over 512 KiB, where huge pages are decided.
  const std::string args = "run spgemm " + repo("cage8.mtx") + " --repeat 2 --csv";
  const std::pair<std::string, std::string> bad[] = {
      {"SPARSEJIT_HUGE_PAGES=yes", "SPARSEJIT_HUGE_PAGES='yes' is not one of auto|on|off; using auto"},
      {"SPARSEJIT_POOL_MB=lots", "SPARSEJIT_POOL_MB='lots' is not a whole number of MiB; using 256"},
      {"SPARSEJIT_POOL_MB=-1", "SPARSEJIT_POOL_MB='-1' is not a whole number of MiB"},
      {"SPARSEJIT_POOL_MB=99999999999999999999", "is not a whole number of MiB"},
      {"SPARSEJIT_PARTITION=stat", "SPARSEJIT_PARTITION='stat' is not one of dynamic|static; using dynamic"},
      {"SPARSEJIT_LOG=verbose", "SPARSEJIT_LOG='verbose' is not one of trace|debug|info|warn|warning|error|off"},
      {"SPARSEJIT_ISA=sse4", "SPARSEJIT_ISA='sse4' is not one of auto|avx512|avx2|scalar; using auto"},
  };
  for (const auto& [env, message] : bad) {
    Result r = run_cli(args, env);
    EXPECT_EQ(r.status, 0) << env << "\n" << r.out;
    EXPECT_NE(r.out.find("sparsejit [warning] "), std::string::npos) << env << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << env << "\n" << r.out;
    const size_t first = r.out.find("[warning]");
    EXPECT_EQ(r.out.find("[warning]", first + 1), std::string::npos) << "reported once: " << env << "\n" << r.out;
    EXPECT_NE(r.out.find("spgemm,"), std::string::npos) << "the run went on: " << env << "\n" << r.out;
  }
  for (const char* env : {"SPARSEJIT_HUGE_PAGES=off", "SPARSEJIT_POOL_MB=0", "SPARSEJIT_PARTITION=static",
                          "SPARSEJIT_LOG=error", "SPARSEJIT_ISA=scalar", "SPARSEJIT_HUGE_PAGES="}) {
    Result r = run_cli(args, env);
    EXPECT_EQ(r.status, 0) << env << "\n" << r.out;
    EXPECT_EQ(r.out.find("[warning]"), std::string::npos) << env << "\n" << r.out;
  }
  // The index-notation lane, read whenever a loop-nest kernel is made or looked up.
  const std::string einsum = "einsum 'a(i) = B(i,j) * C(j,i)' --tensor B=" + repo("cage8.mtx") + ":csr --tensor C=" +
                             repo("cage8.mtx") + " --repeat 1";
  Result r = run_cli(einsum, "SPARSEJIT_EINSUM_LANE=w32");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("SPARSEJIT_EINSUM_LANE='w32' is not one of off|w4|w4b|w4n|w8|w8b|w8n|w16|w16b|w16n; using the "
                       "default lane"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("checksum"), std::string::npos) << "the run went on\n" << r.out;
  for (const char* env : {"SPARSEJIT_EINSUM_LANE=w8", "SPARSEJIT_EINSUM_LANE=off"}) {
    r = run_cli(einsum, env);
    EXPECT_EQ(r.status, 0) << env << "\n" << r.out;
    EXPECT_EQ(r.out.find("[warning]"), std::string::npos) << env << "\n" << r.out;
  }
}

TEST(Cli, InspectAndConvert) {
  Result r = run_cli("inspect " + repo("cage8.mtx"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("bandwidth"), std::string::npos);
  auto out = std::filesystem::temp_directory_path() / ("sj_cli_" + std::to_string(getpid()) + ".tns");
  r = run_cli("convert " + repo("karate.mtx") + " " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(sj::read_frostt(out.string()).nnz(), 156);
  std::filesystem::remove(out);
}

// `sparsejit run spgemm X.mtx --output` against a product computed here from the file.
TEST(Cli, SpgemmOutputAgreesWithIndependentProduct) {
  std::vector<std::filesystem::path> files = {sj::test::repo_data("cage8.mtx"), sj::test::repo_data("lp_afiro.mtx")};
  for (auto& f : sj::test::shared_matrices()) {
    std::string n = f.filename().string();
    if (n == "bcsstk13.mtx" || n == "add32.mtx" || n == "luxembourg.mtx" || n == "lp_share1b.mtx") files.push_back(f);
  }
  for (auto& f : files) {
    auto out = std::filesystem::temp_directory_path() / ("sj_cli_out_" + std::to_string(getpid()) + ".mtx");
    Result r = run_cli("run spgemm " + f.string() + " --repeat 0 --output " + out.string());
    ASSERT_EQ(r.status, 0) << r.out;
    sj::CooTensor a = sj::read_matrix_market(f.string());
    sj::CooTensor c = sj::read_matrix_market(out.string());
    std::filesystem::remove(out);
    bool square = a.dims[0] == a.dims[1];
    // Sum duplicates of the file first, as the reader's users do.
    std::map<std::pair<int64_t, int64_t>, double> am;
    for (int64_t e = 0; e < a.nnz(); ++e) am[{a.coords[0][e], a.coords[1][e]}] += a.values[e];
    std::vector<std::vector<std::pair<int64_t, double>>> brows(square ? a.dims[0] : a.dims[1]);
    for (auto& [ij, v] : am) {
      if (square) brows[ij.first].push_back({ij.second, v});
      else brows[ij.second].push_back({ij.first, v});
    }
    std::map<std::pair<int64_t, int64_t>, double> want;
    for (auto& [ik, v] : am)
      for (auto [j, w] : brows[ik.second]) want[{ik.first, j}] += v * w;
    ASSERT_EQ(static_cast<size_t>(c.nnz()), want.size()) << f;
    for (int64_t e = 0; e < c.nnz(); ++e) {
      auto it = want.find({c.coords[0][e], c.coords[1][e]});
      ASSERT_NE(it, want.end()) << f;
      EXPECT_NEAR(c.values[e], it->second, 1e-9 * (1 + std::abs(it->second))) << f;
    }
  }
}

}  // namespace

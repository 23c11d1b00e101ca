// The default thread count (src/available_cpus.hpp): the affinity mask and cgroup CPU quotas
// (on fake cgroup trees), SPARSEJIT_THREADS, and the limit on config.threads.
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sparsejit/sparsejit.h"
#include "src/available_cpus.hpp"
#include "src/context.hpp"

namespace fs = std::filesystem;

namespace {

class FakeRoot {
 public:
  FakeRoot() {
    std::string tmpl = (fs::temp_directory_path() / "sj-cgroup-XXXXXX").string();
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
  }
  ~FakeRoot() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((fs::path(path_ + rel)).parent_path());
    std::ofstream(path_ + rel) << text;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr const char* kV2Mount = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
// Hybrid v1 (this project's VM): the cpu controller on its own mount, v2 without it.
constexpr const char* kV1Mounts =
    "25 24 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "28 25 0:25 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "29 25 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

}  // namespace

TEST(AvailableCpus, ParsesCgroupQuotaFiles) {
  EXPECT_EQ(sj::cpus_from_cgroup2_max("max 100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(sj::cpus_from_cgroup2_max("150000 100000\n").value(), 1.5);
  EXPECT_DOUBLE_EQ(sj::cpus_from_cgroup2_max("200000").value(), 2.0);  // period defaults to 100000
  EXPECT_EQ(sj::cpus_from_cgroup2_max("0 100000"), std::nullopt);
  EXPECT_EQ(sj::cpus_from_cgroup2_max("lots 100000"), std::nullopt);
  EXPECT_EQ(sj::cpus_from_cgroup2_max(""), std::nullopt);
  EXPECT_EQ(sj::cpus_from_cgroup1("-1\n", "100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(sj::cpus_from_cgroup1("50000\n", "100000\n").value(), 0.5);
  EXPECT_EQ(sj::cpus_from_cgroup1("50000", "0"), std::nullopt);
}

TEST(AvailableCpus, V2QuotaIsTheLeastAlongThePathToTheMount) {
  FakeRoot r;
  r.write("/sys/fs/cgroup/user.slice/app/cpu.max", "max 100000\n");
  r.write("/sys/fs/cgroup/user.slice/cpu.max", "250000 100000\n");
  std::string file;
  auto q = sj::cgroup_cpu_quota(kV2Mount, "0::/user.slice/app\n", r.path(), &file);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(*q, 2.5);
  EXPECT_EQ(file, r.path() + "/sys/fs/cgroup/user.slice/cpu.max");
  r.write("/sys/fs/cgroup/user.slice/app/cpu.max", "120000 100000\n");  // tighter inside
  q = sj::cgroup_cpu_quota(kV2Mount, "0::/user.slice/app\n", r.path(), &file);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(*q, 1.2);
  EXPECT_EQ(file, r.path() + "/sys/fs/cgroup/user.slice/app/cpu.max");
  // No limit anywhere, and no such cgroup folder: nothing.
  r.write("/sys/fs/cgroup/user.slice/app/cpu.max", "max 100000\n");
  r.write("/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
  EXPECT_EQ(sj::cgroup_cpu_quota(kV2Mount, "0::/user.slice/app\n", r.path()), std::nullopt);
  EXPECT_EQ(sj::cgroup_cpu_quota(kV2Mount, "0::/elsewhere\n", r.path()), std::nullopt);
}

TEST(AvailableCpus, ContainerMountOfItsOwnCgroup) {
  // Inside a container the mount's root is the container's cgroup; its files sit at the mount
  // point, and the path past the root is the sub-cgroup.
  FakeRoot r;
  const std::string mount = "40 30 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
  r.write("/sys/fs/cgroup/cpu.max", "100000 100000\n");
  EXPECT_DOUBLE_EQ(sj::cgroup_cpu_quota(mount, "0::/docker/abc\n", r.path()).value(), 1.0);
  r.write("/sys/fs/cgroup/job/cpu.max", "50000 100000\n");
  EXPECT_DOUBLE_EQ(sj::cgroup_cpu_quota(mount, "0::/docker/abc/job\n", r.path()).value(), 0.5);
  // A path outside the mount's root (another namespace's view): the mount point only.
  EXPECT_DOUBLE_EQ(sj::cgroup_cpu_quota(mount, "0::/other\n", r.path()).value(), 1.0);
}

TEST(AvailableCpus, V1CpuControllerAndEscapedMountPoints) {
  FakeRoot r;
  const std::string proc = "4:memory:/x\n3:cpuset:/\n2:cpu,cpuacct:/batch\n0::/\n";
  r.write("/sys/fs/cgroup/cpu,cpuacct/batch/cpu.cfs_quota_us", "-1\n");
  r.write("/sys/fs/cgroup/cpu,cpuacct/batch/cpu.cfs_period_us", "100000\n");
  r.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  r.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(sj::cgroup_cpu_quota(kV1Mounts, proc, r.path()), std::nullopt);
  r.write("/sys/fs/cgroup/cpu,cpuacct/batch/cpu.cfs_quota_us", "300000\n");
  EXPECT_DOUBLE_EQ(sj::cgroup_cpu_quota(kV1Mounts, proc, r.path()).value(), 3.0);
  // mountinfo writes a space in a path as \040.
  const std::string spaced = "27 25 0:24 / /mnt/cg\\040cpu rw - cgroup cgroup rw,cpu\n";
  r.write("/mnt/cg cpu/batch/cpu.cfs_quota_us", "150000\n");
  r.write("/mnt/cg cpu/batch/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(sj::cgroup_cpu_quota(spaced, proc, r.path()).value(), 1.5);
  // No cgroup mounts at all.
  EXPECT_EQ(sj::cgroup_cpu_quota("", proc, r.path()), std::nullopt);
  EXPECT_EQ(sj::cgroup_cpu_quota("garbage\n\n- -\n", "nonsense", r.path()), std::nullopt);
}

TEST(AvailableCpus, AffinityMaskLimitsTheDefaultThreads) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &saved)) first = c;
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const sj::CpuBudget b = sj::available_cpus();
  sj_config cfg;
  sj_config_init(&cfg);
  sj::Context ctx(cfg);
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(b.affinity, 1);
  EXPECT_EQ(b.usable, 1);
  EXPECT_EQ(ctx.threads, 1);
  if (b.online > 1) EXPECT_NE(ctx.threads_source.find("affinity mask"), std::string::npos) << ctx.threads_source;
  // With the whole mask back, the default is the mask's size (or less under a quota).
  const sj::CpuBudget all = sj::available_cpus();
  EXPECT_EQ(all.affinity, CPU_COUNT(&saved));
  EXPECT_LE(all.usable, all.affinity);
  EXPECT_GE(all.usable, 1);
}

TEST(AvailableCpus, EnvironmentAndConfigOverrideTheCpus) {
  sj_config cfg;
  sj_config_init(&cfg);
  ASSERT_EQ(setenv("SPARSEJIT_THREADS", "3", 1), 0);
  {
    sj::Context ctx(cfg);
    EXPECT_EQ(ctx.threads, 3);
    EXPECT_EQ(ctx.threads_source, "SPARSEJIT_THREADS=3");
    cfg.threads = 5;  // the config wins over the environment
    sj::Context ctx5(cfg);
    EXPECT_EQ(ctx5.threads, 5);
    EXPECT_EQ(ctx5.threads_source, "sj_config.threads");
    cfg.threads = 0;
  }
  for (const char* bad : {"0", "-2", "two", "99999"}) {
    ASSERT_EQ(setenv("SPARSEJIT_THREADS", bad, 1), 0);
    sj::Context ctx(cfg);  // reported on stderr; the CPUs decide
    EXPECT_EQ(ctx.threads, sj::available_cpus().usable) << bad;
  }
  unsetenv("SPARSEJIT_THREADS");
}

TEST(AvailableCpus, ConfigThreadsOverTheLimitIsRefused) {
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.threads = sj::kMaxThreads + 1;
  sj_context* ctx = nullptr;
  EXPECT_EQ(sj_context_create(&cfg, &ctx), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(std::string(sj_last_error_message()).find("config.threads is 4097"), std::string::npos)
      << sj_last_error_message();
  cfg.threads = sj::kMaxThreads;  // the limit itself is allowed (threads start on first use)
  ASSERT_EQ(sj_context_create(&cfg, &ctx), SJ_OK);
  sj_context_destroy(ctx);
}

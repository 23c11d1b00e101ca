// How many CPUs this process may use: the default thread count of a context (sj_config.threads
// = 0). std::thread::hardware_concurrency counts the machine's online CPUs, but a process
// started under taskset or a cpuset sees fewer (its affinity mask), and one in a container may
// be held to a CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us) on any
// number of CPUs. One worker per machine CPU would then oversubscribe the CPUs it really has:
// every parallel call's last chunk waits for a descheduled worker.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace sj {

struct CpuBudget {
  int online = 1;                // std::thread::hardware_concurrency (at least 1)
  int affinity = 1;              // CPUs in this thread's affinity mask (online if unknown)
  std::optional<double> quota;   // CPUs' worth of time per period the cgroup allows, if limited
  std::string quota_file;        // the cgroup file that set `quota`
  int usable = 1;                // min(affinity, ceil(quota)), at least 1
  std::string why() const;       // e.g. "2 CPUs in the affinity mask" or "... capped by a cgroup quota of 1.5 CPUs (FILE)"
};

// Read now (the affinity of the calling thread, the cgroups of the calling process).
CpuBudget available_cpus();

// The pieces, exposed for tests. `cgroup_cpu_quota` reads the cgroup files under `root` (""
// for the real file system): `mountinfo` is /proc/self/mountinfo's text, `proc_cgroup`
// /proc/self/cgroup's. The limit of a cgroup is the least quota along its path to the mount
// point (a parent's limit covers its children). nullopt when nothing limits the CPU time.
std::optional<double> cpus_from_cgroup2_max(std::string_view cpu_max);  // "150000 100000" -> 1.5; "max ..." -> none
std::optional<double> cpus_from_cgroup1(std::string_view quota_us, std::string_view period_us);  // "-1" -> none
std::optional<double> cgroup_cpu_quota(std::string_view mountinfo, std::string_view proc_cgroup,
                                       const std::string& root, std::string* file = nullptr);

}  // namespace sj

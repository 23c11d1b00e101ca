#include "src/available_cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace sj {
namespace {

// Debian's Abseil has its own string_view type (it is built as C++14), so text crosses over.
absl::string_view as_absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }
std::string_view as_std(absl::string_view s) { return std::string_view(s.data(), s.size()); }

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// CPUs in the calling thread's affinity mask; the mask's size is grown for machines with more
// CPUs than the default cpu_set_t holds (1024).
std::optional<int> affinity_count() {
  for (int n = 1024; n <= (1 << 20); n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    if (!set) return std::nullopt;
    const size_t bytes = CPU_ALLOC_SIZE(n);
    const int rc = sched_getaffinity(0, bytes, set);
    const int count = rc == 0 ? CPU_COUNT_S(bytes, set) : 0;
    CPU_FREE(set);
    if (rc == 0) return count > 0 ? std::optional<int>(count) : std::nullopt;
    if (errno != EINVAL) return std::nullopt;
  }
  return std::nullopt;
}

// mountinfo writes a space, tab, newline or backslash in a path as \ooo (octal).
std::string unescape_mount_path(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

struct CgroupMount {
  std::string root, point;
};

// The cgroup mounts that hold the CPU controller: v2 ("cgroup2"), or v1 ("cgroup" with "cpu"
// among its super options).
void cpu_mounts(std::string_view mountinfo, std::vector<CgroupMount>& v1, std::vector<CgroupMount>& v2) {
  for (absl::string_view line : absl::StrSplit(as_absl(mountinfo), '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const absl::string_view fstype = dash[1], options = dash[3];
    CgroupMount m{unescape_mount_path(as_std(f[3])), unescape_mount_path(as_std(f[4]))};
    if (fstype == "cgroup2") {
      v2.push_back(std::move(m));
    } else if (fstype == "cgroup") {
      for (absl::string_view o : absl::StrSplit(options, ','))
        if (o == "cpu") {
          v1.push_back(std::move(m));
          break;
        }
    }
  }
}

// The process's cgroup path in the v2 hierarchy ("0::/path") or the v1 one with the cpu
// controller ("N:cpu,cpuacct:/path").
std::optional<std::string> cgroup_path(std::string_view proc_cgroup, bool v2) {
  for (absl::string_view line : absl::StrSplit(as_absl(proc_cgroup), '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    if (v2 && f[0] == "0" && f[1].empty()) return std::string(as_std(f[2]));
    if (!v2)
      for (absl::string_view c : absl::StrSplit(f[1], ','))
        if (c == "cpu") return std::string(as_std(f[2]));
  }
  return std::nullopt;
}

// The folders from the process's cgroup up to the mount point, innermost first. A mount of a
// sub-tree (a container's, whose root is its own cgroup) holds the path past its root.
std::vector<std::string> cgroup_dirs(const CgroupMount& m, const std::string& path, const std::string& root) {
  std::string rel = path;
  if (m.root != "/") {
    if (path.rfind(m.root, 0) == 0 && (path.size() == m.root.size() || path[m.root.size()] == '/'))
      rel = path.substr(m.root.size());
    else
      rel.clear();  // not under this mount's root (another namespace's view): only the mount point
  }
  std::vector<std::string> dirs;
  while (!rel.empty() && rel != "/") {
    dirs.push_back(root + m.point + rel);
    rel.resize(rel.rfind('/'));
  }
  dirs.push_back(root + m.point);
  return dirs;
}

void keep_least(std::optional<double>& best, std::string* best_file, std::optional<double> q, const std::string& file) {
  if (q && (!best || *q < *best)) {
    best = q;
    if (best_file) *best_file = file;
  }
}

}  // namespace

std::optional<double> cpus_from_cgroup2_max(std::string_view cpu_max) {
  const std::vector<absl::string_view> f = absl::StrSplit(absl::StripAsciiWhitespace(as_absl(cpu_max)), ' ', absl::SkipEmpty());
  double quota = 0, period = 100000;
  if (f.empty() || f[0] == "max" || !absl::SimpleAtod(f[0], &quota)) return std::nullopt;
  if (f.size() > 1 && !absl::SimpleAtod(f[1], &period)) return std::nullopt;
  if (!(quota > 0) || !(period > 0)) return std::nullopt;
  return quota / period;
}

std::optional<double> cpus_from_cgroup1(std::string_view quota_us, std::string_view period_us) {
  double quota = 0, period = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(as_absl(quota_us)), &quota) ||
      !absl::SimpleAtod(absl::StripAsciiWhitespace(as_absl(period_us)), &period) || !(quota > 0) || !(period > 0))
    return std::nullopt;  // -1: no quota
  return quota / period;
}

std::optional<double> cgroup_cpu_quota(std::string_view mountinfo, std::string_view proc_cgroup,
                                       const std::string& root, std::string* file) {
  std::vector<CgroupMount> v1, v2;
  cpu_mounts(mountinfo, v1, v2);
  std::optional<double> best;
  if (const auto path = cgroup_path(proc_cgroup, true); path && !v2.empty())
    for (const std::string& d : cgroup_dirs(v2.front(), *path, root)) {
      const std::string f = d + "/cpu.max";
      if (const auto text = read_text(f)) keep_least(best, file, cpus_from_cgroup2_max(*text), f);
    }
  if (const auto path = cgroup_path(proc_cgroup, false); path && !v1.empty())
    for (const std::string& d : cgroup_dirs(v1.front(), *path, root)) {
      const auto quota = read_text(d + "/cpu.cfs_quota_us");
      const auto period = read_text(d + "/cpu.cfs_period_us");
      if (quota && period) keep_least(best, file, cpus_from_cgroup1(*quota, *period), d + "/cpu.cfs_quota_us");
    }
  return best;
}

std::string CpuBudget::why() const {
  std::string s = affinity < online ? absl::StrCat(affinity, " of the ", online, " online CPUs in the affinity mask")
                                    : absl::StrCat(online, " online CPUs");
  if (quota && usable < affinity) absl::StrAppend(&s, ", capped by a cgroup quota of ", absl::StrFormat("%.2f", *quota),
                                                  " CPUs (", quota_file, ")");
  return s;
}

CpuBudget available_cpus() {
  CpuBudget b;
  b.online = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  b.affinity = affinity_count().value_or(b.online);
  const auto mountinfo = read_text("/proc/self/mountinfo");
  const auto proc_cgroup = read_text("/proc/self/cgroup");
  if (mountinfo && proc_cgroup) b.quota = cgroup_cpu_quota(*mountinfo, *proc_cgroup, "", &b.quota_file);
  b.usable = b.affinity;
  // A quota of 1.5 CPUs lets two threads run, each part of the time: round up.
  if (b.quota) b.usable = std::min(b.usable, static_cast<int>(std::max(1.0, std::ceil(*b.quota - 1e-9))));
  b.usable = std::max(1, b.usable);
  return b;
}

}  // namespace sj

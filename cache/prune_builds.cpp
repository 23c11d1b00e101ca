#include "cache/prune_builds.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "cache/cache_folder.hpp"
#include "cache/persistent_store.hpp"
#include "src/error.hpp"

namespace sj::cache {

namespace {

// "<digits>.<digits>.<digits>-" and then only the id's characters (build_folder_name()).
bool is_build_folder_name(std::string_view n) {
  size_t i = 0;
  for (int part = 0; part < 3; ++part) {
    const size_t start = i;
    while (i < n.size() && n[i] >= '0' && n[i] <= '9') ++i;
    if (i == start || i >= n.size() || n[i] != (part < 2 ? '.' : '-')) return false;
    ++i;
  }
  if (i == n.size()) return false;
  for (; i < n.size(); ++i)
    if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'z') || n[i] == '-')) return false;
  return true;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// Why a folder (already opened without following a link) is not this user's alone, or "".
std::string not_private(const struct stat& st) {
  if (st.st_uid != ::geteuid()) return cat("it is owned by uid ", static_cast<long>(st.st_uid));
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "others may write to it";
  return {};
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Removes one folder (see the header), or says why it stays. The lock comes first: writers
// hold it from creating their temporary file to renaming it, so while prune holds it nothing
// is added, and a temporary file left there is a crashed writer's (it ends in .sje: removed).
void prune_one(int parent_fd, const std::string& name, bool dry_run, const struct stat* keep, PruneOutcome* o) {
  auto keep_for_error = [o](std::string why) {
    o->kept_why = std::move(why);
    o->error = true;
  };
  Fd dir{::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  struct stat st;
  if (dir.fd < 0 || ::fstat(dir.fd, &st) != 0) return keep_for_error(cat("cannot open it: ", std::strerror(errno)));
  if (keep && st.st_dev == keep->st_dev && st.st_ino == keep->st_ino) {
    o->kept_why = "it is the folder this process is configured to use";
    return;
  }
  if (std::string why = not_private(st); !why.empty()) {
    o->kept_why = why;
    return;
  }
  Fd lock{::openat(dir.fd, kLockName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)};  // (flock needs no write access)
  if (lock.fd < 0 && errno != ENOENT) return keep_for_error(cat("cannot open its ", kLockName, ": ", std::strerror(errno)));
  if (!dry_run && lock.fd >= 0 && ::flock(lock.fd, LOCK_EX | LOCK_NB) != 0) {
    o->kept_why = "a program is writing to it";
    return;
  }
  bool listed = false;
  std::vector<std::string> entries;
  for (std::string& n : folder_entry_names(dir.fd, &listed)) {
    struct stat fst;
    const bool regular = ::fstatat(dir.fd, n.c_str(), &fst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(fst.st_mode);
    if (regular && ends_with(n, kEntrySuffix)) entries.push_back(std::move(n));
    else if (!regular || n != kLockName) {
      o->kept_why = cat("it holds '", n, "', which is no cache entry");
      return;
    }
  }
  if (!listed) return keep_for_error(cat("cannot list it: ", std::strerror(errno)));
  o->entries = entries.size();
  if (dry_run) return;
  for (const std::string& n : entries)
    if (::unlinkat(dir.fd, n.c_str(), 0) != 0 && errno != ENOENT)
      return keep_for_error(cat("cannot remove ", n, ": ", std::strerror(errno)));
  if (::unlinkat(dir.fd, kLockName, 0) != 0 && errno != ENOENT)
    return keep_for_error(cat("cannot remove ", kLockName, ": ", std::strerror(errno)));
  if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0)
    return keep_for_error(cat("cannot remove it: ", std::strerror(errno)));
  o->removed = true;
}

}  // namespace

std::vector<PruneOutcome> prune_other_builds(bool dry_run, std::string* problem) {
  std::vector<PruneOutcome> out;
  const std::string parent = default_cache_parent();
  if (parent.empty()) {
    *problem = "no default cache folder (neither XDG_CACHE_HOME nor HOME is an absolute path)";
    return out;
  }
  struct stat pst;
  if (::lstat(parent.c_str(), &pst) == 0 && S_ISLNK(pst.st_mode)) {
    *problem = cat(parent, " is a symlink: left alone");
    return out;
  }
  Fd pfd{::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  if (pfd.fd < 0 || ::fstat(pfd.fd, &pst) != 0) {
    if (errno != ENOENT) *problem = cat(parent, ": ", std::strerror(errno));
    return out;
  }
  if (std::string why = not_private(pst); !why.empty()) {
    *problem = cat(parent, ": ", why, "; left alone");
    return out;
  }
  // The folder this process would use (SPARSEJIT_CACHE_DIR may name one of these).
  struct stat keep;
  const std::string configured = resolve_cache_dir();
  const bool have_keep = !configured.empty() && ::stat(configured.c_str(), &keep) == 0;
  std::vector<std::string> names = folder_entry_names(pfd.fd);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (!is_build_folder_name(name) || name == build_folder_name()) continue;
    struct stat lst;
    if (::fstatat(pfd.fd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(lst.st_mode)) continue;
    PruneOutcome o;
    o.path = parent + "/" + name;
    prune_one(pfd.fd, name, dry_run, have_keep ? &keep : nullptr, &o);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace sj::cache

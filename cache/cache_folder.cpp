#include "cache/cache_folder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sparsejit_build_info.hpp"
#include "src/build_id.hpp"
#include "src/error.hpp"

namespace sj::cache {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

std::string errno_text(int e) { return std::strerror(e); }

// mkdir -p with 0700 for every folder it creates. Returns 0 or an errno.
int make_dirs(const std::string& path) {
  if (path.empty()) return ENOENT;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    int e = make_dirs(path.substr(0, slash));
    if (e) return e;
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return errno;
  return 0;
}

}  // namespace

std::string build_folder_name() { return std::string(SPARSEJIT_VERSION_STRING) + "-" + kBuildId; }

std::string default_cache_parent() {
  // (a relative XDG_CACHE_HOME is invalid and ignored, as the XDG base directory spec says; so
  // is a relative HOME, which would put the cache under whatever folder the process is in)
  if (std::string x = env("XDG_CACHE_HOME"); !x.empty() && x[0] == '/') return x + "/sparsejit";
  if (std::string h = env("HOME"); !h.empty() && h[0] == '/') return h + "/.cache/sparsejit";
  return {};
}

std::string resolve_cache_dir(std::string_view configured) {
  if (!configured.empty()) return std::string(configured);
  if (std::string d = env("SPARSEJIT_CACHE_DIR"); !d.empty()) return d;
  if (std::string p = default_cache_parent(); !p.empty()) return p + "/" + build_folder_name();
  return {};
}

std::vector<std::string> folder_entry_names(int dir_fd, bool* listed) {
  std::vector<std::string> names;
  if (listed) *listed = false;
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return names;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return names;
  }
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  const int e = errno;  // readdir's end (0) or failure
  ::closedir(d);
  if (listed) *listed = e == 0;
  errno = e;
  return names;
}

CacheFolder open_cache_folder(const std::string& path, bool create) {
  CacheFolder out;
  out.path = path;
  if (path.empty()) {
    out.problem = "no cache folder (set SPARSEJIT_CACHE_DIR, or XDG_CACHE_HOME or HOME to an absolute path)";
    return out;
  }
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();  // "dir/" must not follow a symlink either
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) {
    int e = errno;
    if (e != ENOENT || !create) {
      out.problem = cat("cannot use cache folder ", path, ": ", errno_text(e));
      return out;
    }
    size_t slash = p.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
      if (int pe = make_dirs(p.substr(0, slash))) {
        out.problem = cat("cannot create cache folder ", path, ": ", errno_text(pe));
        return out;
      }
    }
    if (::mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) {
      out.problem = cat("cannot create cache folder ", path, ": ", errno_text(errno));
      return out;
    }
    if (::lstat(p.c_str(), &st) != 0) {
      out.problem = cat("cannot use cache folder ", path, ": ", errno_text(errno));
      return out;
    }
  }
  if (S_ISLNK(st.st_mode))
    fail(SJ_ERR_CACHE, "cache folder ", path,
         " is a symbolic link; refusing it (whoever controls the link controls the code loaded from it)");
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP) fail(SJ_ERR_CACHE, "cache folder ", path, " is a symbolic link; refusing it");
    out.problem = cat("cannot open cache folder ", path, ": ", errno_text(e));
    return out;
  }
  if (::fstat(fd, &st) != 0) {
    out.problem = cat("cannot stat cache folder ", path, ": ", errno_text(errno));
    ::close(fd);
    return out;
  }
  auto refuse = [&](auto... why) {
    ::close(fd);
    fail(SJ_ERR_CACHE, "cache folder ", path, " ", why...,
         "; refusing it (others could plant code there). Use a private folder: mkdir -m 700, "
         "or set SPARSEJIT_CACHE_DIR / sj_config.cache_dir, or disable_disk_cache");
  };
  if (!S_ISDIR(st.st_mode)) refuse("is not a directory");
  if (st.st_uid != ::geteuid())
    refuse("is owned by uid ", static_cast<long>(st.st_uid), ", not by this process (uid ",
           static_cast<long>(::geteuid()), ")");
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    refuse("has mode ", mode, " (writable by ", (st.st_mode & S_IWOTH) ? "everyone" : "its group", ")");
  }
  out.fd = fd;
  return out;
}

}  // namespace sj::cache

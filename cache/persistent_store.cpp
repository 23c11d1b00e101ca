#include "cache/persistent_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "cache/cache_folder.hpp"
#include "spdlog/logger.h"
#include "src/error.hpp"
#include "src/logging.hpp"

namespace sj::cache {

namespace {

std::atomic<int> g_inject_write_errno{0};
std::atomic<uint64_t> g_tmp_counter{0};

constexpr const char* kTmpPrefix = ".tmp-";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Reads exactly n bytes (or fewer at end of file); returns bytes read or -1.
ssize_t read_full(int fd, void* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::read(fd, static_cast<char*>(buf) + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(done);
}

int write_full(int fd, const void* buf, size_t n) {
  if (int e = g_inject_write_errno.load()) return e;
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd, static_cast<const char*>(buf) + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    done += static_cast<size_t>(w);
  }
  return 0;
}

uint64_t header_seed(const EntryHeader& h) { return hash64(&h, offsetof(EntryHeader, checksum)); }

EntryHeader make_header(const KernelKey& key, const void* data, size_t size) {
  EntryHeader h{};  // no padding (static_assert): every byte is zero or set below
  std::memcpy(h.magic, kEntryMagic, sizeof h.magic);
  h.format = kEntryFormatVersion;
  h.header_size = sizeof(EntryHeader);
  KernelKey cur = KernelKey::make(KeyKind::None);
  std::memcpy(h.version, cur.version, sizeof h.version);
  std::memcpy(h.build_id, cur.build_id, sizeof h.build_id);
  h.key = key;
  h.payload_size = size;
  h.checksum = hash64(data, size, header_seed(h));
  return h;
}

// What reading one entry found.
struct Reading {
  std::string problem;  // "" = every check passed
  bool stale = false;   // intact, but another build made it
  bool have_header = false;
  EntryHeader header{};
  uint64_t file_size = 0;
  int64_t mtime = 0;
  bool missing = false;  // ENOENT
};

// Opens and checks `name` in `dir_fd`. expected: the key the caller looks for (null: the key
// inside must be the one the file name says). With payload, reads and checksums it.
Reading read_entry(int dir_fd, const std::string& name, const KernelKey* expected, bool check_payload,
                   std::vector<uint8_t>* payload) {
  Reading r;
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) r.missing = true, r.problem = "missing";
    else if (e == ELOOP) r.problem = "is a symbolic link";
    else r.problem = cat("cannot open: ", std::strerror(e));
    return r;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return r.problem = cat("cannot stat: ", std::strerror(errno)), r;
  r.file_size = static_cast<uint64_t>(st.st_size);
  r.mtime = static_cast<int64_t>(st.st_mtime);
  if (!S_ISREG(st.st_mode)) return r.problem = "is not a regular file", r;
  if (st.st_uid != ::geteuid()) return r.problem = cat("is owned by uid ", static_cast<long>(st.st_uid)), r;
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return r.problem = "is writable by others", r;
  if (r.file_size < sizeof(EntryHeader)) return r.problem = cat("truncated (", r.file_size, " bytes)"), r;
  EntryHeader& h = r.header;
  if (read_full(fd, &h, sizeof h) != static_cast<ssize_t>(sizeof h)) return r.problem = "truncated header", r;
  if (std::memcmp(h.magic, kEntryMagic, sizeof h.magic) != 0) return r.problem = "not a sparsejit cache entry (bad magic)", r;
  if (h.format != kEntryFormatVersion || h.header_size != sizeof(EntryHeader))
    return r.problem = cat("entry format ", h.format, " (this build reads ", kEntryFormatVersion, ")"), r;
  r.have_header = true;
  KernelKey cur = KernelKey::make(KeyKind::None);
  bool same_build = std::memcmp(h.version, cur.version, sizeof h.version) == 0 &&
                    std::memcmp(h.build_id, cur.build_id, sizeof h.build_id) == 0;
  // A KernelKey that is not field-for-field consistent with the header's build is foreign.
  bool key_build_matches = std::memcmp(h.key.version, h.version, sizeof h.version) == 0 &&
                           std::memcmp(h.key.build_id, h.build_id, sizeof h.build_id) == 0;
  if (name != h.key.file_name()) return r.problem = "file name does not match the key inside (foreign entry)", r;
  if (expected && !(h.key == *expected)) return r.problem = "holds a different key", r;
  if (!key_build_matches) return r.problem = "key and header disagree on the build (foreign entry)", r;
  if (!same_build) {
    r.stale = true;
    r.problem = cat("made by another build (", std::string_view(h.version, strnlen(h.version, sizeof h.version)), "+",
                    std::string_view(h.build_id, strnlen(h.build_id, sizeof h.build_id)), ")");
    return r;
  }
  if (h.payload_size > kMaxPayloadBytes) return r.problem = cat("payload of ", h.payload_size, " bytes is too large"), r;
  if (r.file_size != sizeof(EntryHeader) + h.payload_size)
    return r.problem = cat(r.file_size < sizeof(EntryHeader) + h.payload_size ? "truncated" : "has trailing bytes", " (",
                           r.file_size, " bytes, header says ", sizeof(EntryHeader) + h.payload_size, ")"),
           r;
  if (!check_payload) return r;
  std::vector<uint8_t> data(h.payload_size);
  if (read_full(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) return r.problem = "truncated payload", r;
  uint8_t extra;
  if (read_full(fd, &extra, 1) != 0) return r.problem = "has trailing bytes", r;
  if (hash64(data.data(), data.size(), header_seed(h)) != h.checksum) return r.problem = "checksum mismatch (corrupt)", r;
  if (payload) *payload = std::move(data);
  return r;
}

}  // namespace

void PersistentStore::inject_write_error_for_testing(int err) { g_inject_write_errno.store(err); }

PersistentStore::PersistentStore(const std::string& dir) : PersistentStore(dir, Options{}) {}

PersistentStore::PersistentStore(const std::string& dir, Options options) : dir_(dir), logger_(std::move(options.logger)) {
  CacheFolder folder = open_cache_folder(dir, options.create);  // throws when unsafe
  dir_fd_ = folder.fd;
  if (dir_fd_ < 0) {
    bool quiet = !options.create && !folder.problem.empty();
    std::lock_guard<std::mutex> lock(mutex_);
    reason_ = folder.problem;
    if (!quiet) (logger_ ? *logger_ : global_logger()).warn("sparsejit: disk cache off: {}", reason_);
    return;
  }
  // The lock file doubles as the writability probe: a read-only folder cannot create it.
  lock_fd_ = ::openat(dir_fd_, kLockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock_fd_ < 0 && !options.create) lock_fd_ = ::openat(dir_fd_, kLockName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (lock_fd_ < 0) {
    int e = errno;
    enabled_ = true;  // so that disable() warns
    disable(cat("cache folder ", dir_, " is not writable (", std::strerror(e), ")"));
    return;
  }
  enabled_ = true;
}

PersistentStore::~PersistentStore() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::shared_ptr<PersistentStore> PersistentStore::open(std::string_view configured_dir,
                                                       std::shared_ptr<spdlog::logger> logger) {
  Options o;
  o.logger = std::move(logger);
  return std::make_shared<PersistentStore>(resolve_cache_dir(configured_dir), std::move(o));
}

std::string PersistentStore::disabled_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reason_;
}

void PersistentStore::disable(const std::string& why) {
  if (!enabled_.exchange(false)) return;  // already off: the one warning was given
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reason_ = why;
  }
  (logger_ ? *logger_ : global_logger()).warn("sparsejit: disk cache off: {}; carrying on without it", why);
}

void PersistentStore::reject(const std::string& name, const std::string& why) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.rejected;
    first = reported_.insert(name).second;
  }
  if (first)
    (logger_ ? *logger_ : global_logger())
        .warn("sparsejit: ignoring cache entry {}/{}: {}; it will be rebuilt and replaced", dir_, name, why);
}

int PersistentStore::lock_exclusive() const {
  while (::flock(lock_fd_, LOCK_EX) != 0)
    if (errno != EINTR) return errno;
  return 0;
}

std::string PersistentStore::entry_path(const KernelKey& key) const { return dir_ + "/" + key.file_name(); }

std::optional<std::vector<uint8_t>> PersistentStore::load(const KernelKey& key) {
  if (!enabled()) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.lookups;
  }
  std::string name = key.file_name();
  std::vector<uint8_t> payload;
  Reading r = read_entry(dir_fd_, name, &key, /*check_payload=*/true, &payload);
  if (r.missing) return std::nullopt;
  if (!r.problem.empty()) {
    reject(name, r.problem);
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.hits;
  return payload;
}

bool PersistentStore::store(const KernelKey& key, const void* data, size_t size) {
  if (!enabled()) return false;
  if (size > kMaxPayloadBytes) return false;
  EntryHeader h = make_header(key, data, size);
  std::string name = key.file_name();
  char tmp[96];
  std::snprintf(tmp, sizeof tmp, "%s%ld-%llu-%s", kTmpPrefix, static_cast<long>(::getpid()),
                static_cast<unsigned long long>(g_tmp_counter.fetch_add(1)), name.c_str());
  auto failed = [&](const char* step, int e) {
    ::unlinkat(dir_fd_, tmp, 0);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.store_failures;
    }
    disable(cat("cannot ", step, " in ", dir_, ": ", std::strerror(e)));
    return false;
  };
  if (int e = lock_exclusive()) return failed("lock the cache folder", e);
  struct Unlocker {
    int fd;
    ~Unlocker() { ::flock(fd, LOCK_UN); }
  } unlocker{lock_fd_};
  int fd = ::openat(dir_fd_, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return failed("create a cache entry", errno);
  int e = write_full(fd, &h, sizeof h);
  if (!e && size) e = write_full(fd, data, size);
  if (!e && ::fsync(fd) != 0) e = errno;
  if (::close(fd) != 0 && !e) e = errno;
  if (e) return failed("write a cache entry", e);
  if (::renameat(dir_fd_, tmp, dir_fd_, name.c_str()) != 0) return failed("rename a cache entry", errno);
  ::fsync(dir_fd_);  // the rename itself survives a crash
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.stores;
  reported_.erase(name);  // a later corruption of the new entry is news again
  return true;
}

std::vector<EntryInfo> PersistentStore::list(bool verify) const {
  std::vector<EntryInfo> out;
  if (dir_fd_ < 0) return out;
  int64_t now = static_cast<int64_t>(std::time(nullptr));
  for (const std::string& name : folder_entry_names(dir_fd_)) {
    // A writer's temporary file ends like an entry too; it is not one until it is renamed.
    if (!ends_with(name, kEntrySuffix) || starts_with(name, kTmpPrefix)) continue;
    Reading r = read_entry(dir_fd_, name, nullptr, verify, nullptr);
    if (r.missing) continue;  // removed meanwhile
    EntryInfo e;
    e.file = name;
    e.file_size = r.file_size;
    e.age_s = r.mtime ? now - r.mtime : 0;
    if (r.have_header) {
      e.key = r.header.key.to_string();
      e.payload_size = r.header.payload_size;
    }
    e.ok = r.problem.empty();
    e.stale = r.stale;
    e.problem = r.problem;
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const EntryInfo& a, const EntryInfo& b) { return a.file < b.file; });
  return out;
}

size_t PersistentStore::clear() {
  if (dir_fd_ < 0) return 0;
  bool locked = lock_fd_ >= 0 && lock_exclusive() == 0;
  size_t removed = 0;
  for (const std::string& name : folder_entry_names(dir_fd_))
    if (ends_with(name, kEntrySuffix) || starts_with(name, kTmpPrefix))
      if (::unlinkat(dir_fd_, name.c_str(), 0) == 0) ++removed;
  if (locked) ::flock(lock_fd_, LOCK_UN);
  std::lock_guard<std::mutex> lock(mutex_);
  reported_.clear();
  return removed;
}

StoreStats PersistentStore::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace sj::cache

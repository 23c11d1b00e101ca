// PersistentStore: opaque blobs on disk, one file per KernelKey, in a private folder
// (cache/cache_folder.hpp). Holds plan and calibration decisions now, LLVM objects later.
//
// An entry is  EntryHeader (magic, format version, library version and build id, the full
// key, payload length, checksum over header and payload)  followed by the payload. It is
// written to a temporary file in the folder (O_EXCL, 0600, fsync) and renamed over the
// final name while holding an advisory lock (flock on "<dir>/.lock"), so processes sharing a
// folder never see a half-written entry. Entries are opened with O_NOFOLLOW and must be
// regular files owned by us, not writable by others.
//
// load() verifies everything; an entry that is truncated, corrupt, from another build, for
// another key (right name, wrong key inside), a symlink or otherwise foreign is ignored —
// logged once per entry and per store — and never returned; the next store() replaces it.
// A folder that cannot be written (read-only, full, vanished) disables the store with one
// warning; every call then does nothing and the runtime carries on without a disk cache.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cache/kernel_key.hpp"

namespace spdlog {
class logger;
}

namespace sj::cache {

inline constexpr char kEntryMagic[8] = {'S', 'J', 'C', 'A', 'C', 'H', 'E', '1'};
inline constexpr uint32_t kEntryFormatVersion = 1;
inline constexpr uint64_t kMaxPayloadBytes = uint64_t(1) << 30;  // larger = not ours
inline constexpr const char* kEntrySuffix = ".sje";
// The folder's lock file (writers hold it exclusively while they write).
inline constexpr const char* kLockName = ".lock";

struct EntryHeader {
  char magic[8];
  uint32_t format;        // kEntryFormatVersion
  uint32_t header_size;   // sizeof(EntryHeader)
  char version[16];       // SPARSEJIT_VERSION_STRING of the writer
  char build_id[48];      // the writer's build id (src/build_id.hpp)
  KernelKey key;          // the full key (the file name is only its hash)
  uint64_t payload_size;
  uint64_t checksum;      // hash64(payload, hash64(every header byte before this field))
};
static_assert(std::has_unique_object_representations_v<EntryHeader>);
static_assert(sizeof(EntryHeader) == 192);

struct StoreStats {
  uint64_t lookups = 0;   // load() calls on an enabled store
  uint64_t hits = 0;      // verified entries returned
  uint64_t rejected = 0;  // entries found but refused (corrupt, stale, foreign, ...)
  uint64_t stores = 0;    // entries written
  uint64_t store_failures = 0;
};

// One entry as `sparsejit cache list|verify` sees it.
struct EntryInfo {
  std::string file;         // name in the folder
  std::string key;          // KernelKey::to_string() from the header ("" when unreadable)
  uint64_t file_size = 0;
  uint64_t payload_size = 0;
  int64_t age_s = 0;        // now - mtime
  bool ok = false;          // verified (header, checksum, name, this build)
  bool stale = false;       // intact but made by another build (never used by this one)
  std::string problem;      // why not ok
};

class PersistentStore {
 public:
  struct Options {
    bool create = true;                       // create the folder when missing
    std::shared_ptr<spdlog::logger> logger;   // null: sj::global_logger()
  };

  // Opens `dir` (see open_cache_folder). Throws sj::Error(SJ_ERR_CACHE) when the folder is
  // unsafe; an unusable folder gives a disabled store (one warning, unless !create and the
  // folder is simply missing).
  explicit PersistentStore(const std::string& dir);
  PersistentStore(const std::string& dir, Options options);
  ~PersistentStore();
  PersistentStore(const PersistentStore&) = delete;
  PersistentStore& operator=(const PersistentStore&) = delete;

  // The store for a context: folder = resolve_cache_dir(configured_dir).
  static std::shared_ptr<PersistentStore> open(std::string_view configured_dir,
                                               std::shared_ptr<spdlog::logger> logger = nullptr);

  bool enabled() const { return enabled_.load(); }
  const std::string& dir() const { return dir_; }
  std::string disabled_reason() const;

  // The verified payload stored for `key`, or nullopt (absent, refused or disabled).
  std::optional<std::vector<uint8_t>> load(const KernelKey& key);
  // Writes (or replaces) the entry. False when disabled or the write failed (which disables).
  bool store(const KernelKey& key, const void* data, size_t size);
  bool store(const KernelKey& key, std::string_view data) { return store(key, data.data(), data.size()); }

  // Every "*.sje" in the folder; with verify, checksums too (else header checks only).
  std::vector<EntryInfo> list(bool verify) const;
  // Removes every entry and leftover temporary file (the folder and lock file stay). Returns
  // how many files were removed.
  size_t clear();

  // The path of the entry file for `key` (whether or not it exists).
  std::string entry_path(const KernelKey& key) const;

  StoreStats stats() const;

  // Test hook: while nonzero, writes fail with this errno (e.g. ENOSPC) as if the disk did.
  static void inject_write_error_for_testing(int err);

 private:
  void disable(const std::string& why);  // one warning, then off
  void reject(const std::string& name, const std::string& why);
  int lock_exclusive() const;            // returns the errno or 0

  std::string dir_;
  std::shared_ptr<spdlog::logger> logger_;
  int dir_fd_ = -1;
  int lock_fd_ = -1;
  std::atomic<bool> enabled_{false};
  mutable std::mutex mutex_;             // guards reason_, reported_, stats_
  std::string reason_;
  std::set<std::string> reported_;       // entries already logged as refused
  StoreStats stats_;
};

}  // namespace sj::cache

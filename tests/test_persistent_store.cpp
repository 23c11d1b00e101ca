// The persistent store: round trips, and every way an entry or the folder can be bad —
// each detected, ignored (never returned), logged once and replaced by the next store.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cache/cache_folder.hpp"
#include "cache/kernel_key.hpp"
#include "cache/persistent_store.hpp"
#include "src/error.hpp"
#include "src/logging.hpp"

namespace fs = std::filesystem;

namespace sj_store_tests {
using namespace sj;
using namespace sj::cache;
using Store = sj::cache::PersistentStore;  // the fixture below takes the name for the test prefix

struct Warnings {
  std::atomic<int> count{0};
  std::string last;
};

void count_warning(sj_log_level level, const char* message, void* user) {
  auto* w = static_cast<Warnings*>(user);
  if (level == SJ_LOG_WARN) {
    ++w->count;
    w->last = message;
  }
}

KernelKey key(uint64_t n) {
  KernelKey k = KernelKey::make(KeyKind::Plan);
  k.op = SJ_OP_SPMSPV;
  k.formats[0] = KeyFormat::Csr;
  k.formats[1] = KeyFormat::SparseVector;
  k.detail = n;
  return k;
}

std::string payload_for(uint64_t n, size_t size = 300) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>((n * 131 + i * 7) & 0xff);
  return s;
}

std::string as_string(const std::optional<std::vector<uint8_t>>& v) {
  return v ? std::string(v->begin(), v->end()) : std::string("<none>");
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_file(const std::string& p, const std::string& data) {
  fs::remove(p);
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0) << p;
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ::close(fd);
}

class PersistentStore : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sj-store-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/cache";
    logger_ = make_logger(SJ_LOG_WARN, count_warning, &warnings_);
  }
  void TearDown() override {
    Store::inject_write_error_for_testing(0);
    ::chmod(dir_.c_str(), 0700);
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::unique_ptr<Store> open(const std::string& dir, bool create = true) {
    Store::Options o;
    o.logger = logger_;
    o.create = create;
    return std::make_unique<Store>(dir, o);
  }
  // Checks that `key` is refused (one warning, counted), then that a store replaces it.
  void expect_refused_then_rebuilt(Store& store, const KernelKey& k, const char* what) {
    int before = warnings_.count.load();
    uint64_t rejected = store.stats().rejected;
    EXPECT_EQ(as_string(store.load(k)), "<none>") << what;
    EXPECT_EQ(store.stats().rejected, rejected + 1) << what;
    EXPECT_EQ(warnings_.count.load(), before + 1) << what;
    EXPECT_NE(warnings_.last.find("ignoring cache entry"), std::string::npos) << warnings_.last;
    // Logged once: a second look is refused silently.
    EXPECT_EQ(as_string(store.load(k)), "<none>") << what;
    EXPECT_EQ(warnings_.count.load(), before + 1) << what;
    // The next store replaces it; the entry is good again.
    ASSERT_TRUE(store.store(k, payload_for(k.detail))) << what;
    EXPECT_EQ(as_string(store.load(k)), payload_for(k.detail)) << what;
    struct stat st;
    ASSERT_EQ(::lstat(store.entry_path(k).c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << what;
  }

  std::string root_, dir_;
  Warnings warnings_;
  std::shared_ptr<spdlog::logger> logger_;
};

TEST_F(PersistentStore, RoundTripAndPrivateFolder) {
  std::string nested = root_ + "/a/b/cache";
  auto store = open(nested);
  ASSERT_TRUE(store->enabled()) << store->disabled_reason();
  struct stat st;
  ASSERT_EQ(::stat(nested.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(as_string(store->load(key(1))), "<none>");
  EXPECT_TRUE(store->store(key(1), payload_for(1)));
  EXPECT_TRUE(store->store(key(2), payload_for(2, 100000)));
  EXPECT_TRUE(store->store(key(3), std::string_view()));
  EXPECT_EQ(as_string(store->load(key(1))), payload_for(1));
  EXPECT_EQ(as_string(store->load(key(2))), payload_for(2, 100000));
  auto empty = store->load(key(3));
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(store->store(key(1), payload_for(11)));  // replace
  EXPECT_EQ(as_string(store->load(key(1))), payload_for(11));
  ASSERT_EQ(::stat(store->entry_path(key(1)).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(store->entry_path(key(1)), nested + "/" + key(1).file_name());
  // Another store on the same folder (another process, later) reads the same entries.
  auto again = open(nested);
  EXPECT_EQ(as_string(again->load(key(2))), payload_for(2, 100000));
  StoreStats s = store->stats();
  EXPECT_EQ(s.stores, 4u);
  EXPECT_EQ(s.hits, 4u);
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(warnings_.count.load(), 0);
  // No temporary files are left behind.
  for (auto& e : fs::directory_iterator(nested))
    EXPECT_TRUE(e.path().extension() == ".sje" || e.path().filename() == ".lock") << e.path();
}

TEST_F(PersistentStore, FolderComesFromConfigThenEnvironment) {
  const char* names[] = {"SPARSEJIT_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::optional<std::string>> saved;
  for (const char* n : names) saved.push_back(std::getenv(n) ? std::optional<std::string>(std::getenv(n)) : std::nullopt);
  ::setenv("SPARSEJIT_CACHE_DIR", "/x/env", 1);
  ::setenv("XDG_CACHE_HOME", "/x/xdg", 1);
  ::setenv("HOME", "/x/home", 1);
  EXPECT_EQ(resolve_cache_dir("/x/config"), "/x/config");
  EXPECT_EQ(resolve_cache_dir(), "/x/env");
  ::unsetenv("SPARSEJIT_CACHE_DIR");
  EXPECT_EQ(resolve_cache_dir(), "/x/xdg/sparsejit/" + build_folder_name());
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(resolve_cache_dir(), "/x/home/.cache/sparsejit/" + build_folder_name());
  // A relative XDG_CACHE_HOME or HOME counts as unset (XDG base directory spec).
  ::setenv("XDG_CACHE_HOME", "relative/xdg", 1);
  EXPECT_EQ(resolve_cache_dir(), "/x/home/.cache/sparsejit/" + build_folder_name());
  ::setenv("HOME", "relative/home", 1);
  EXPECT_EQ(resolve_cache_dir(), "");
  EXPECT_NE(build_folder_name().find('-'), std::string::npos);
  for (size_t i = 0; i < 3; ++i)
    if (saved[i]) ::setenv(names[i], saved[i]->c_str(), 1);
    else ::unsetenv(names[i]);
}

TEST_F(PersistentStore, TruncatedEntryIgnoredAndRebuilt) {
  auto store = open(dir_);
  for (size_t cut : {size_t(0), size_t(10), sizeof(EntryHeader) - 1, sizeof(EntryHeader), sizeof(EntryHeader) + 150}) {
    ASSERT_TRUE(store->store(key(1), payload_for(1)));
    std::string path = store->entry_path(key(1));
    ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(cut)), 0);
    expect_refused_then_rebuilt(*store, key(1), "truncated");
  }
  // Trailing bytes appended are as bad as missing ones.
  std::string path = store->entry_path(key(1));
  write_file(path, read_file(path) + "x");
  expect_refused_then_rebuilt(*store, key(1), "appended");
}

TEST_F(PersistentStore, FlippedByteInPayloadOrHeaderIgnoredAndRebuilt) {
  auto store = open(dir_);
  ASSERT_TRUE(store->store(key(1), payload_for(1)));
  std::string path = store->entry_path(key(1));
  const std::string good = read_file(path);
  ASSERT_EQ(good.size(), sizeof(EntryHeader) + 300);
  std::vector<size_t> offsets = {0,                                         // magic
                                 offsetof(EntryHeader, format),
                                 offsetof(EntryHeader, header_size),
                                 offsetof(EntryHeader, version),
                                 offsetof(EntryHeader, build_id) + 3,
                                 offsetof(EntryHeader, key) + 2,             // key: op
                                 offsetof(EntryHeader, key) + 24,            // key: detail
                                 offsetof(EntryHeader, payload_size),
                                 offsetof(EntryHeader, checksum) + 5,
                                 sizeof(EntryHeader),                        // first payload byte
                                 sizeof(EntryHeader) + 150,
                                 good.size() - 1};                           // last payload byte
  for (size_t off : offsets) {
    std::string bad = good;
    bad[off] = static_cast<char>(bad[off] ^ 0x10);
    write_file(path, bad);
    expect_refused_then_rebuilt(*store, key(1), ("flipped byte at " + std::to_string(off)).c_str());
  }
}

// A well-formed entry (valid checksum) for `k` claiming to come from `version`/`build`.
std::string crafted_entry(const KernelKey& k, const std::string& payload, const char* version, const char* build,
                          bool key_too) {
  EntryHeader h{};
  std::memcpy(h.magic, kEntryMagic, sizeof h.magic);
  h.format = kEntryFormatVersion;
  h.header_size = sizeof h;
  std::strncpy(h.version, version, sizeof h.version - 1);
  std::strncpy(h.build_id, build, sizeof h.build_id - 1);
  h.key = k;
  if (key_too) {
    std::memset(h.key.version, 0, sizeof h.key.version);
    std::memset(h.key.build_id, 0, sizeof h.key.build_id);
    std::strncpy(h.key.version, version, sizeof h.key.version - 1);
    std::strncpy(h.key.build_id, build, sizeof h.key.build_id - 1);
  }
  h.payload_size = payload.size();
  h.checksum = hash64(payload.data(), payload.size(), hash64(&h, offsetof(EntryHeader, checksum)));
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + payload;
}

TEST_F(PersistentStore, WrongVersionOrBuildIgnoredAndRebuilt) {
  auto store = open(dir_);
  KernelKey k = key(7);
  std::string path = store->entry_path(k);
  // Header from another build, key ours: at our file name, checksum valid.
  write_file(path, crafted_entry(k, "evil", "0.1.0", "someone-else", false));
  expect_refused_then_rebuilt(*store, k, "other build id");
  write_file(path, crafted_entry(k, "evil", "9.9.9", k.build_id, false));
  expect_refused_then_rebuilt(*store, k, "other version");
  // Both header and key from another build, placed at our name.
  write_file(path, crafted_entry(k, "evil", "0.1.0", "someone-else", true));
  expect_refused_then_rebuilt(*store, k, "stale entry at our name");
  // A genuine stale entry at its own name is never looked up; list reports it as stale.
  KernelKey old = k;
  std::memset(old.build_id, 0, sizeof old.build_id);
  std::strcpy(old.build_id, "older-build");
  write_file(dir_ + "/" + old.file_name(), crafted_entry(old, "old", k.version, "older-build", false));
  bool seen = false;
  for (const EntryInfo& e : store->list(true))
    if (e.file == old.file_name()) {
      seen = true;
      EXPECT_TRUE(e.stale) << e.problem;
      EXPECT_FALSE(e.ok);
    }
  EXPECT_TRUE(seen);
}

TEST_F(PersistentStore, RightNameDifferentKeyIgnoredAndRebuilt) {
  auto store = open(dir_);
  ASSERT_TRUE(store->store(key(2), payload_for(2)));
  // Key 2's intact entry copied to key 1's name.
  write_file(store->entry_path(key(1)), read_file(store->entry_path(key(2))));
  expect_refused_then_rebuilt(*store, key(1), "right name, wrong key");
  // A crafted entry whose key differs only in a field the name's hash covers.
  KernelKey other = key(1);
  other.schedule = SJ_SCHEDULE_PUSH;
  write_file(store->entry_path(key(1)), crafted_entry(other, "evil", key(1).version, key(1).build_id, false));
  expect_refused_then_rebuilt(*store, key(1), "crafted wrong key");
  EXPECT_EQ(as_string(store->load(key(2))), payload_for(2));
}

TEST_F(PersistentStore, SymlinkEntryIgnoredAndReplacedNotFollowed) {
  auto store = open(dir_);
  // A valid entry elsewhere, linked in under the right name: never read through the link.
  auto elsewhere = open(root_ + "/elsewhere");
  ASSERT_TRUE(elsewhere->store(key(3), "planted"));
  std::string target = elsewhere->entry_path(key(3));
  ASSERT_EQ(::symlink(target.c_str(), store->entry_path(key(3)).c_str()), 0);
  expect_refused_then_rebuilt(*store, key(3), "symlink");
  EXPECT_EQ(as_string(elsewhere->load(key(3))), "planted");  // the link's target was not written
  // Entries writable by others, or not regular files, are refused too.
  ASSERT_TRUE(store->store(key(4), payload_for(4)));
  ASSERT_EQ(::chmod(store->entry_path(key(4)).c_str(), 0666), 0);
  expect_refused_then_rebuilt(*store, key(4), "mode 0666 entry");
  ASSERT_EQ(::unlink(store->entry_path(key(5)).c_str()) == 0 || errno == ENOENT, true);
  ASSERT_EQ(::mkfifo(store->entry_path(key(5)).c_str(), 0600), 0);
  expect_refused_then_rebuilt(*store, key(5), "fifo");
}

TEST_F(PersistentStore, FolderOthersCanWriteIsRefused) {
  for (mode_t mode : {mode_t(0777), mode_t(0770), mode_t(0702)}) {
    std::string d = root_ + "/open-" + std::to_string(mode);
    ASSERT_EQ(::mkdir(d.c_str(), 0700), 0);
    ASSERT_EQ(::chmod(d.c_str(), mode), 0);
    try {
      open(d);
      ADD_FAILURE() << "accepted a folder with mode " << std::oct << mode;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), SJ_ERR_CACHE);
      EXPECT_NE(std::string(e.what()).find("refusing"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(d), std::string::npos) << e.what();
    }
  }
  // A symlink to a private folder is refused (whoever owns the link decides where code comes from).
  ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
  std::string link = root_ + "/link";
  ASSERT_EQ(::symlink(dir_.c_str(), link.c_str()), 0);
  for (const std::string& p : {link, link + "/"}) {
    try {
      open(p);
      ADD_FAILURE() << "accepted a symlinked folder " << p;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), SJ_ERR_CACHE);
      EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    }
  }
  // A folder owned by another user (only root can make one to test with).
  if (::geteuid() == 0) {
    std::string theirs = root_ + "/theirs";
    ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    EXPECT_THROW(open(theirs), Error);
  } else {
    std::printf("[ note ] not root: the other-owner folder case needs chown, skipped\n");
  }
  EXPECT_EQ(warnings_.count.load(), 0);
}

TEST_F(PersistentStore, UnwritableFolderDisablesWithOneWarning) {
  // (1) A folder that cannot exist: its parent is a regular file (fails for root too).
  std::string file = root_ + "/plain-file";
  write_file(file, "x");
  auto store = open(file + "/cache");
  EXPECT_FALSE(store->enabled());
  EXPECT_EQ(warnings_.count.load(), 1);
  EXPECT_NE(store->disabled_reason().find("cannot"), std::string::npos) << store->disabled_reason();
  EXPECT_FALSE(store->store(key(1), "x"));
  EXPECT_EQ(as_string(store->load(key(1))), "<none>");
  EXPECT_TRUE(store->list(true).empty());
  EXPECT_EQ(warnings_.count.load(), 1);

  // (2) A full disk (or any write error) while running: the first failure disables the
  //     store with one warning; the runtime carries on and later stores do nothing.
  warnings_.count = 0;
  auto full = open(dir_);
  ASSERT_TRUE(full->enabled());
  ASSERT_TRUE(full->store(key(1), payload_for(1)));
  Store::inject_write_error_for_testing(ENOSPC);
  EXPECT_FALSE(full->store(key(2), payload_for(2)));
  EXPECT_FALSE(full->enabled());
  EXPECT_EQ(warnings_.count.load(), 1);
  EXPECT_NE(full->disabled_reason().find("No space"), std::string::npos) << full->disabled_reason();
  EXPECT_FALSE(full->store(key(3), payload_for(3)));
  EXPECT_EQ(warnings_.count.load(), 1);
  Store::inject_write_error_for_testing(0);
  for (auto& e : fs::directory_iterator(dir_))  // the failed write left no temporary file
    EXPECT_EQ(e.path().filename().string().rfind(".tmp-", 0), std::string::npos) << e.path();

  // (3) A read-only folder (mode 0500). Root writes anyway, so only a non-root run can check it.
  warnings_.count = 0;
  std::string ro = root_ + "/readonly";
  ASSERT_EQ(::mkdir(ro.c_str(), 0500), 0);
  auto read_only = open(ro);
  if (::geteuid() == 0) {
    std::printf("[ note ] running as root: permission bits do not stop root, so the mode-0500 case is "
                "covered by (1) and (2) above\n");
  } else {
    EXPECT_FALSE(read_only->enabled());
    EXPECT_EQ(warnings_.count.load(), 1);
    EXPECT_FALSE(read_only->store(key(1), "x"));
    EXPECT_EQ(warnings_.count.load(), 1);
  }
  ::chmod(ro.c_str(), 0700);
}

TEST_F(PersistentStore, ListVerifyClear) {
  auto store = open(dir_);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store->store(key(i), payload_for(i, 100 + i)));
  std::string bad_path = store->entry_path(key(2));
  std::string bytes = read_file(bad_path);
  bytes.back() ^= 1;
  write_file(bad_path, bytes);
  // A writer's temporary file is named after the entry it becomes: listing must skip it.
  write_file(dir_ + "/.tmp-123-0-" + key(5).file_name(), "partial");
  auto header_only = store->list(false);  // header checks only: the flipped payload byte passes
  ASSERT_EQ(header_only.size(), 4u);
  for (auto& e : header_only) EXPECT_TRUE(e.ok) << e.file << ": " << e.problem;
  auto verified = store->list(true);
  ASSERT_EQ(verified.size(), 4u);
  int ok = 0;
  for (auto& e : verified) {
    EXPECT_FALSE(e.key.empty());
    EXPECT_EQ(e.key.rfind("plan op=spmspv", 0), 0u) << e.key;
    EXPECT_GE(e.age_s, 0);
    if (e.ok) {
      ++ok;
      EXPECT_EQ(e.file_size, sizeof(EntryHeader) + e.payload_size);
    } else {
      EXPECT_EQ(e.file, key(2).file_name());
      EXPECT_NE(e.problem.find("checksum"), std::string::npos) << e.problem;
    }
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(store->clear(), 5u);  // four entries and the leftover temporary file
  EXPECT_TRUE(store->list(true).empty());
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(store->store(key(1), "after clear"));
  EXPECT_EQ(as_string(store->load(key(1))), "after clear");
  // Opening without create does not make a missing folder and is quietly off.
  auto missing = open(root_ + "/missing", /*create=*/false);
  EXPECT_FALSE(missing->enabled());
  EXPECT_FALSE(fs::exists(root_ + "/missing"));
  EXPECT_EQ(warnings_.count.load(), 0);
}

// Self-describing payloads: a torn or mixed write cannot pass check_payload.
std::string writer_payload(int writer, int iteration, int k) {
  size_t size = 64 + static_cast<size_t>((iteration * 977 + k * 131 + writer * 7919) % 40000);
  std::string s = std::to_string(writer) + ":" + std::to_string(iteration) + ":" + std::to_string(k) + ":" +
                  std::to_string(size) + ";";
  uint32_t x = static_cast<uint32_t>(writer * 1000003 + iteration * 10007 + k);
  while (s.size() < size) x = x * 1664525u + 1013904223u, s += static_cast<char>('a' + (x >> 24) % 26);
  return s;
}
bool payload_consistent(const std::string& s) {
  int w, it, k;
  size_t size;
  if (std::sscanf(s.c_str(), "%d:%d:%d:%zu;", &w, &it, &k, &size) != 4) return false;
  return writer_payload(w, it, k) == s;
}

TEST_F(PersistentStore, TwoProcessesWritingSameKeysLeaveNoCorruptEntry) {
  { auto s = open(dir_); }  // create the folder
  constexpr int kKeys = 10, kIterations = 20;
  std::vector<pid_t> children;
  for (int writer = 0; writer < 2; ++writer) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        Store store(dir_);
        for (int it = 0; it < kIterations && status == 0; ++it)
          for (int k = 0; k < kKeys; ++k) {
            if (!store.store(key(k), writer_payload(writer, it, k))) status = 2;
            auto got = store.load(key((k + 5) % kKeys));
            if (got && !payload_consistent(std::string(got->begin(), got->end()))) status = 3;
            if (store.stats().rejected) status = 4;
          }
      } catch (...) {
        status = 5;
      }
      std::_Exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0) << "child failed (2 store, 3 inconsistent load, 4 rejected, 5 threw)";
  }
  auto store = open(dir_);
  auto entries = store->list(true);
  EXPECT_EQ(entries.size(), static_cast<size_t>(kKeys));
  for (auto& e : entries) EXPECT_TRUE(e.ok) << e.file << ": " << e.problem;
  for (int k = 0; k < kKeys; ++k) {
    auto got = store->load(key(k));
    ASSERT_TRUE(got.has_value()) << k;
    std::string s(got->begin(), got->end());
    EXPECT_TRUE(payload_consistent(s)) << k;
    EXPECT_NE(s.find(":" + std::to_string(kIterations - 1) + ":" + std::to_string(k) + ":"), std::string::npos)
        << "entry " << k << " is not from a last iteration";
  }
  for (auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().rfind(".tmp-", 0), std::string::npos) << e.path();
  EXPECT_EQ(warnings_.count.load(), 0);
}

}  // namespace sj_store_tests

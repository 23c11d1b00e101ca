// Fuzz harness for the persistent-cache loader: the bytes become the file of one entry in a
// private temporary folder, then PersistentStore::load() and list(verify) read it. The
// invariant: an entry is returned only when its file is byte for byte what this build's
// store() writes for that key and payload — anything else (foreign key, other build,
// altered code, a bad checksum) is refused and never used. Mode bytes steer the input:
//   0: raw bytes as the entry;  1: a genuine entry with bytes overwritten at fuzzed offsets,
//   then cut or extended;  2: a genuine entry for a fuzzed key, placed at our key's name;
//   3: KernelKey::parse of the bytes as manifest text.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cache/kernel_key.hpp"
#include "cache/persistent_store.hpp"
#include "src/error.hpp"
#include "src/logging.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace sj::fuzz {

namespace cache_entry_detail {

struct Folders {
  std::string root, dir, twin;
  std::unique_ptr<cache::PersistentStore> store, twin_store;
  Folders() {
    // $SPARSEJIT_FUZZ_TMP (scripts/ci-fuzz.sh removes it afterwards: libFuzzer may end the
    // process without running destructors), else tmpfs where there is one (every store()
    // fsyncs, which a disk makes slow), else /tmp.
    std::string base = std::getenv("SPARSEJIT_FUZZ_TMP") ? std::getenv("SPARSEJIT_FUZZ_TMP") : "/dev/shm";
    std::string first = base + "/sj-fuzz-cache-XXXXXX";
    char tmp[] = "/tmp/sj-fuzz-cache-XXXXXX";
    const char* made = ::mkdtemp(first.data());
    if (!made) made = ::mkdtemp(tmp);
    if (!made) broken("mkdtemp failed");
    root = made;
    dir = root + "/store";
    twin = root + "/twin";
    cache::PersistentStore::Options o;
    o.logger = make_logger(SJ_LOG_OFF, nullptr, nullptr);
    store = std::make_unique<cache::PersistentStore>(dir, o);
    twin_store = std::make_unique<cache::PersistentStore>(twin, o);
    if (!store->enabled() || !twin_store->enabled()) broken("cannot open the fuzz cache folders");
  }
  ~Folders() { std::string cmd = "rm -rf '" + root + "'"; (void)std::system(cmd.c_str()); }
};

inline cache::KernelKey our_key() {
  cache::KernelKey k = cache::KernelKey::make(cache::KeyKind::Plan);
  k.op = SJ_OP_SPGEMM;
  k.formats[0] = cache::KeyFormat::Csr;
  k.formats[1] = cache::KeyFormat::Csr;
  k.detail = 42;
  return k;
}

inline std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const void* p, size_t n) {
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) broken("cannot write the fuzz entry");
  if (n && ::write(fd, p, n) != static_cast<ssize_t>(n)) broken("short write of the fuzz entry");
  ::close(fd);
}

}  // namespace cache_entry_detail

inline int cache_entry(const uint8_t* data, size_t size) {
  using namespace cache_entry_detail;
  static Folders folders;
  ByteReader r{data, size};
  const cache::KernelKey key = our_key();
  const std::string path = folders.store->entry_path(key);
  const uint8_t mode = r.u8() % 4;
  const uint8_t* rest = data + (size ? 1 : 0);
  const size_t rest_n = size ? size - 1 : 0;

  if (mode == 3) {  // manifest text
    try {
      cache::KernelKey k = cache::KernelKey::parse(std::string_view(reinterpret_cast<const char*>(rest), rest_n));
      // Whatever parses prints and parses back to the same key.
      SJ_FUZZ_CHECK(cache::KernelKey::parse(k.to_string()) == k, "to_string/parse round trip");
    } catch (const Error& e) {
      SJ_FUZZ_CHECK(e.status() != SJ_ERR_INTERNAL, e.what());
    }
    return 0;
  }
  if (mode == 0) {
    write_bytes(path, rest, rest_n);
  } else if (mode == 1) {
    const uint8_t payload_n = r.u8();
    std::string payload(payload_n, 'p');
    for (auto& c : payload) c = static_cast<char>(r.u8());
    folders.store->store(key, payload);
    std::string bytes = file_bytes(path);
    const uint8_t edits = r.u8() % 8;
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      size_t at = (size_t(r.u8()) | size_t(r.u8()) << 8) % bytes.size();
      bytes[at] = static_cast<char>(r.u8());
    }
    const int8_t resize = r.i8();
    if (resize < 0) bytes.resize(bytes.size() - std::min<size_t>(bytes.size(), size_t(-resize)));
    else if (resize > 100) bytes.append(size_t(resize - 100), static_cast<char>(r.u8()));
    write_bytes(path, bytes.data(), bytes.size());
  } else {  // mode 2: a genuine entry for a fuzzed key, renamed to ours
    cache::KernelKey other = key;
    uint8_t raw[sizeof other];
    std::memcpy(raw, &other, sizeof raw);
    const uint8_t edits = r.u8() % 6;
    for (int e = 0; e < edits; ++e) raw[r.u8() % sizeof raw] = r.u8();
    std::memcpy(&other, raw, sizeof raw);
    std::string payload(r.u8(), 'q');
    folders.twin_store->store(other, payload);
    std::string bytes = file_bytes(folders.twin_store->entry_path(other));
    ::unlink(folders.twin_store->entry_path(other).c_str());
    write_bytes(path, bytes.data(), bytes.size());
  }

  const std::string on_disk = file_bytes(path);
  std::optional<std::vector<uint8_t>> got = folders.store->load(key);
  auto listed = folders.store->list(/*verify=*/true);
  bool listed_ok = false;
  for (auto& e : listed)
    if (e.file == key.file_name()) listed_ok = e.ok;
  SJ_FUZZ_CHECK(listed_ok == got.has_value(), "list(verify) and load() disagree");
  if (got) {
    // Accepted: it must be exactly what this build writes for this key and payload.
    folders.twin_store->store(key, got->data(), got->size());
    std::string genuine = file_bytes(folders.twin_store->entry_path(key));
    SJ_FUZZ_CHECK(genuine == on_disk, "an entry this build did not write for this key was accepted");
  }
  return 0;
}

}  // namespace sj::fuzz

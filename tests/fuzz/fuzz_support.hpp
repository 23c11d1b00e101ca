// What every fuzz harness shares: the memory cap that keeps one input from asking for
// gigabytes (a clean SJ_ERR_OUT_OF_MEMORY instead), and the check that aborts when an
// invariant breaks (libFuzzer records the input as a crash; the regression test replays it).
#pragma once
#include <cstdio>
#include <cstdlib>

#include "sparsejit/sparsejit.h"
#include "src/allocator.hpp"

namespace sj::fuzz {

// Results larger than this fail with SJ_ERR_OUT_OF_MEMORY before allocating.
inline constexpr size_t kMemoryCap = size_t(64) << 20;

inline const Allocator& capped_allocator() {
  static const Allocator a = [] {
    Allocator x;
    x.set_memory_cap(kMemoryCap);
    return x;
  }();
  return a;
}

[[noreturn]] inline void broken(const char* what, const char* detail = "") {
  std::fprintf(stderr, "fuzz invariant broken: %s %s\n", what, detail);
  std::abort();
}

// The context every C API harness runs in: no disk cache, no logging, the fuzz memory cap, one
// thread (a harness keeps one for the whole process).
struct Context {
  sj_context* c = nullptr;
  Context() {
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.disable_disk_cache = 1;
    cfg.log_level = SJ_LOG_OFF;
    cfg.memory_cap_bytes = kMemoryCap;
    cfg.threads = 1;
    if (sj_context_create(&cfg, &c) != SJ_OK) broken("cannot create a context");
  }
};

#define SJ_FUZZ_CHECK(cond, detail) \
  do {                              \
    if (!(cond)) ::sj::fuzz::broken(#cond, detail); \
  } while (0)

// Reads fuzz bytes front to back; past the end every read gives zero.
struct ByteReader {
  const uint8_t* p;
  size_t n;
  size_t at = 0;
  bool empty() const { return at >= n; }
  uint8_t u8() { return at < n ? p[at++] : 0; }
  int8_t i8() { return static_cast<int8_t>(u8()); }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(u8()) << (8 * i);
    return v;
  }
};

}  // namespace sj::fuzz

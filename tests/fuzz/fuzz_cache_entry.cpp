// libFuzzer target: cache entry files through the persistent-cache loader
// (tests/fuzz/cache_entry_harness.hpp).
#include "tests/fuzz/cache_entry_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return sj::fuzz::cache_entry(data, size); }

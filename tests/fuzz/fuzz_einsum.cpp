// libFuzzer target: index-notation text through sj::einsum::parse (tests/fuzz/einsum_harness.hpp).
#include "tests/fuzz/einsum_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return sj::fuzz::einsum(data, size); }

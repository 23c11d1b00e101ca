// libFuzzer target: operation dispatch through the C API against the reference kernel
// (tests/fuzz/capi_ops_harness.hpp).
#include "tests/fuzz/capi_ops_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return sj::fuzz::capi_ops(data, size); }

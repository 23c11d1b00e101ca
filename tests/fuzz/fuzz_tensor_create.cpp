// libFuzzer target: tensor descriptions through sj_tensor_create (tests/fuzz/tensor_create_harness.hpp).
#include "tests/fuzz/tensor_create_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return sj::fuzz::tensor_create(data, size); }

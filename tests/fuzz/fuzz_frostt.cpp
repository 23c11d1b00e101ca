// libFuzzer target: a .tns file through the reader (tests/fuzz/read_text_harness.hpp).
#include "tests/fuzz/read_text_harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sj::fuzz::read_text(data, size, "fuzz.tns");
}

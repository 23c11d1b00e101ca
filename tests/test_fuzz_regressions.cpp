// Replays every committed fuzz input — the seeds in tests/fuzz/corpus/<target>/ and each
// crasher found while fuzzing, kept in tests/fuzz/regressions/<target>/ — through the same
// harness the libFuzzer target runs (tests/fuzz/*_harness.hpp), so the normal suite (and
// its ASan/UBSan run) keeps every fixed crash fixed. A harness aborts on a broken invariant.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/cache_entry_harness.hpp"
#include "tests/fuzz/capi_ops_harness.hpp"
#include "tests/fuzz/einsum_harness.hpp"
#include "tests/fuzz/read_text_harness.hpp"
#include "tests/fuzz/tensor_create_harness.hpp"

namespace {

namespace fs = std::filesystem;

// Feeds every file under corpus/<target> and regressions/<target>; returns how many.
template <class F> int replay(const std::string& target, F&& run) {
  int n = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    fs::path dir = fs::path(SPARSEJIT_SOURCE_DIR) / "tests" / "fuzz" / kind / target;
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> files;
    for (auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      SCOPED_TRACE(f.string());
      run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++n;
    }
  }
  return n;
}

TEST(FuzzRegressions, MatrixMarket) {
  EXPECT_GT(replay("fuzz_matrix_market", [](auto d, auto n) { sj::fuzz::read_text(d, n, "fuzz.mtx"); }), 0);
}
TEST(FuzzRegressions, Frostt) {
  EXPECT_GT(replay("fuzz_frostt", [](auto d, auto n) { sj::fuzz::read_text(d, n, "fuzz.tns"); }), 0);
}
TEST(FuzzRegressions, TensorCreate) {
  EXPECT_GT(replay("fuzz_tensor_create", [](auto d, auto n) { sj::fuzz::tensor_create(d, n); }), 0);
}
TEST(FuzzRegressions, CacheEntry) {
  EXPECT_GT(replay("fuzz_cache_entry", [](auto d, auto n) { sj::fuzz::cache_entry(d, n); }), 0);
}
TEST(FuzzRegressions, Einsum) {
  EXPECT_GT(replay("fuzz_einsum", [](auto d, auto n) { sj::fuzz::einsum(d, n); }), 0);
}
TEST(FuzzRegressions, CapiOps) {
  EXPECT_GT(replay("fuzz_capi_ops", [](auto d, auto n) { sj::fuzz::capi_ops(d, n); }), 0);
}

}  // namespace

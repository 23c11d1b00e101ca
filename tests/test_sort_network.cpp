// The AVX2 sorting networks that put SpGEMM rows of 5-256 columns in order
// (kernels/sort_network_avx2.hpp): every length, keys from the whole int32 range (0 and
// INT32_MAX included), repeated keys, and nothing past the n keys read as data or written.
#include "kernels/sort_network_avx2.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#if defined(SJ_SORT_NETWORK_AVAILABLE)
namespace {

TEST(SortNetwork, EveryLengthMatchesStdSort) {
  if (!sj::sort_network::available()) GTEST_SKIP() << "CPU lacks AVX2";
  std::mt19937 rng(42);
  constexpr int32_t kGuard = -7;  // below every key: a write past n, or a read of it, shows
  for (int round = 0; round < 400; ++round) {
    for (int64_t n = 0; n <= sj::sort_network::kMaxKeys; ++n) {
      std::vector<int32_t> a(static_cast<size_t>(n) + 16, kGuard);
      for (int64_t i = 0; i < n; ++i) {
        switch (round % 4) {
          case 0: a[i] = static_cast<int32_t>(rng() & 0x7fffffff); break;           // whole range
          case 1: a[i] = static_cast<int32_t>(rng() % 8); break;                    // many repeats
          case 2: a[i] = std::numeric_limits<int32_t>::max() - static_cast<int32_t>(rng() % 3); break;
          default: a[i] = static_cast<int32_t>(n - i); break;                       // descending
        }
      }
      std::vector<int32_t> want = a;
      std::sort(want.begin(), want.begin() + n);
      sj::sort_network::sort_keys(a.data(), n);
      ASSERT_EQ(a, want) << "n = " << n << ", round " << round;
    }
  }
}

}  // namespace
#endif

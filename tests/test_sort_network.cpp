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

// The 16-bit lanes: keys within kMaxOffsetSpan of a least key anywhere in the int32 range
// (negative, 0, and up against INT32_MAX), the span's both ends included.
TEST(SortNetwork, OffsetsInSixteenBitLanesMatchStdSort) {
  if (!sj::sort_network::available()) GTEST_SKIP() << "CPU lacks AVX2";
  std::mt19937 rng(7);
  constexpr int32_t kGuard = std::numeric_limits<int32_t>::min();  // below every key
  constexpr int64_t kSpan = sj::sort_network::kMaxOffsetSpan;
  const int64_t bases[] = {0, -5, -int64_t(1) << 31 | 1, std::numeric_limits<int32_t>::max() - kSpan, 123456789};
  for (int round = 0; round < 200; ++round) {
    const int64_t lo = bases[round % 5];
    for (int64_t n = 0; n <= sj::sort_network::kMaxKeys; ++n) {
      std::vector<int32_t> a(static_cast<size_t>(n) + 16, kGuard);
      for (int64_t i = 0; i < n; ++i) {
        int64_t off = 0;
        switch (round / 5 % 4) {
          case 0: off = static_cast<int64_t>(rng() % (kSpan + 1)); break;  // the whole span
          case 1: off = static_cast<int64_t>(rng() % 8); break;             // many repeats
          case 2: off = kSpan - static_cast<int64_t>(rng() % 3); break;     // the top of the span
          default: off = (n - i) % (kSpan + 1); break;                      // descending
        }
        a[i] = static_cast<int32_t>(lo + off);
      }
      if (n >= 2) {  // both ends of the span present
        a[0] = static_cast<int32_t>(lo);
        a[n - 1] = static_cast<int32_t>(lo + kSpan);
      }
      std::vector<int32_t> want = a;
      std::sort(want.begin(), want.begin() + n);
      sj::sort_network::sort_keys16(a.data(), n, static_cast<int32_t>(lo));
      ASSERT_EQ(a, want) << "n = " << n << ", lo = " << lo << ", round " << round;
    }
  }
}

// The dispatch: sort() takes the 16-bit lanes only where the span allows, and is right on both
// sides of that limit.
TEST(SortNetwork, SortChoosesTheLanesByTheSpan) {
  if (!sj::sort_network::available()) GTEST_SKIP() << "CPU lacks AVX2";
  constexpr int64_t kSpan = sj::sort_network::kMaxOffsetSpan;
  EXPECT_LT(sj::sort_network::cost<int32_t>(32, 0, kSpan), sj::sort_network::cost<int32_t>(32, 0, kSpan + 1));
  EXPECT_EQ(sj::sort_network::cost<int64_t>(32, 0, 10), 0);
  std::mt19937 rng(3);
  for (int64_t span : {kSpan, kSpan + 1, kSpan + 2}) {
    for (int64_t n = 9; n <= sj::sort_network::kMaxKeys; n += 7) {
      std::vector<int32_t> a(static_cast<size_t>(n));
      for (auto& x : a) x = static_cast<int32_t>(100 + static_cast<int64_t>(rng() % (span + 1)));
      a[0] = 100;
      a[1] = static_cast<int32_t>(100 + span);
      std::vector<int32_t> want = a;
      std::sort(want.begin(), want.end());
      sj::sort_network::sort(a.data(), n, 100, 100 + span);
      ASSERT_EQ(a, want) << "n = " << n << ", span " << span;
    }
  }
}

}  // namespace
#endif

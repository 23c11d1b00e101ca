// Whether this build runs under AddressSanitizer (GCC defines __SANITIZE_ADDRESS__, clang
// answers __has_feature). Such a build keeps every array of a matrix result in a block of its
// own and reuses no destroyed result, so that ASan reports a write past an array or a use after
// sj_tensor_destroy; pooled blocks are poisoned (src/block_pool.cpp).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SJ_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SJ_ASAN 1
#endif
#endif

namespace sj {
#ifdef SJ_ASAN
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif
}  // namespace sj

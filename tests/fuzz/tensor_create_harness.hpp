// Fuzz harness for tensor validation: a tensor description decoded from the bytes (order,
// dims, level kinds, mode order, types, positions, coordinates, values) handed to
// sj_tensor_create. The harness keeps the one promise a caller must keep — every array is
// as long as the description says (positions: parents + 1, coordinates and values: the last
// position) — and everything else is arbitrary. An accepted tensor must be safe to use:
// it is described, read back, converted to every format that fits and transposed.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "tests/fuzz/fuzz_support.hpp"

namespace sj::fuzz {

namespace tensor_create_detail {

inline constexpr int64_t kMaxEntries = 4096;  // the arrays the harness can back

inline int64_t dim_from(ByteReader& r) {
  uint8_t b = r.u8();
  switch (b) {  // mostly small; a few escapes reach the edges of int32 and int64
    case 0xF0: return int64_t(INT32_MAX);
    case 0xF1: return int64_t(INT32_MAX) + 1;
    case 0xF2: return INT64_MAX;
    case 0xF3: return -1;
    case 0xF4: return int64_t(1) << 62;
    case 0xF5: return static_cast<int64_t>(r.u64());
    default: return b % 17;
  }
}
inline int64_t small_or_raw(ByteReader& r) {
  int8_t b = r.i8();
  if (b == -128) return static_cast<int64_t>(r.u64());
  return b;
}

inline void expect_clean(sj_status s) {
  SJ_FUZZ_CHECK(s != SJ_ERR_INTERNAL, sj_last_error_message());
}

}  // namespace tensor_create_detail

inline int tensor_create(const uint8_t* data, size_t size) {
  using namespace tensor_create_detail;
  static Context ctx;
  ByteReader r{data, size};
  const uint8_t head = r.u8();
  sj_tensor_desc d{};
  d.order = 1 + head % 4;
  if (head & 0x80) d.order = (head >> 4) - 4;  // sometimes outside 1..4
  int order = d.order >= 1 && d.order <= 4 ? d.order : 4;
  int64_t dims[4];
  int mode_order[4];
  sj_level_kind levels[4];
  for (int m = 0; m < 4; ++m) dims[m] = dim_from(r);
  const uint8_t shape = r.u8();
  for (int l = 0; l < 4; ++l) {
    levels[l] = static_cast<sj_level_kind>((shape >> (2 * l)) & 3);
    mode_order[l] = l;
  }
  const uint8_t perm = r.u8();
  if (perm & 1) {  // a permutation from the byte, or (bit 1) any numbers at all
    for (int l = order - 1; l > 0; --l) std::swap(mode_order[l], mode_order[(perm >> 2) % (l + 1)]);
    if (perm & 2) mode_order[(perm >> 4) % order] = static_cast<int8_t>(r.u8()) % 6;
  }
  const uint8_t types = r.u8();
  d.index_type = static_cast<sj_index_type>(types & 1);
  d.value_type = static_cast<sj_value_type>((types >> 1) % 3);
  if (types == 0xFF) d.index_type = static_cast<sj_index_type>(7), d.value_type = static_cast<sj_value_type>(9);
  const uint32_t flags = (types & 0x40) ? SJ_TENSOR_COPY : 0;  // never TRUSTED: that skips the checks
  d.dims = dims;
  d.levels = levels;
  d.mode_order = (perm & 1) ? mode_order : nullptr;

  // Arrays, level by level, as long as the library will read them (the caller's promise).
  std::vector<int64_t> pos[4];
  std::vector<int64_t> crd64[4];
  std::vector<int32_t> crd32[4];
  const int64_t* pos_ptr[4] = {};
  const void* crd_ptr[4] = {};
  int64_t parents = 1;
  for (int l = 0; l < order; ++l) {
    int mode = (perm & 1) ? mode_order[l] : l;
    if (mode < 0 || mode >= order) return 0;  // the library refuses before reading arrays
    const int64_t dim = dims[mode];
    switch (levels[l]) {
      case SJ_LEVEL_DENSE:
        if (dim < 0 || (dim != 0 && parents > kMaxEntries / dim)) return 0;
        parents *= dim;
        break;
      case SJ_LEVEL_COMPRESSED:
      case SJ_LEVEL_COMPRESSED_NONUNIQUE: {
        pos[l].resize(parents + 1);
        int64_t at = (r.u8() == 0x55) ? small_or_raw(r) : 0;
        for (int64_t p = 0; p <= parents; ++p) {
          // Wrapping add: the harness must not overflow itself; the library sees wild values.
          if (p) at = static_cast<int64_t>(static_cast<uint64_t>(at) + static_cast<uint64_t>(small_or_raw(r)));
          pos[l][p] = at;
        }
        int64_t count = pos[l][parents];
        if (count > kMaxEntries) return 0;
        parents = count < 0 ? 0 : count;  // negative: refused before any read of crd
        break;
      }
      case SJ_LEVEL_SINGLETON:
        break;
    }
    if (levels[l] != SJ_LEVEL_DENSE) {
      crd64[l].resize(parents);
      for (auto& c : crd64[l]) c = small_or_raw(r);
      crd32[l].assign(crd64[l].begin(), crd64[l].end());
      crd_ptr[l] = d.index_type == SJ_INDEX_INT64 ? static_cast<const void*>(crd64[l].data()) : crd32[l].data();
      if (r.u8() == 0xEE) crd_ptr[l] = nullptr;
      pos_ptr[l] = pos[l].empty() ? nullptr : pos[l].data();
    }
  }
  std::vector<uint8_t> values(parents * 8 + 8);
  for (int64_t p = 0; p < parents; ++p) {
    int8_t v = r.i8();
    switch (d.value_type) {
      case SJ_VALUE_F32: { float f = v; std::memcpy(&values[4 * p], &f, 4); break; }
      case SJ_VALUE_F64: { double f = v; std::memcpy(&values[8 * p], &f, 8); break; }
      default: values[p] = static_cast<uint8_t>(v); break;
    }
  }
  d.pos = pos_ptr;
  d.crd = crd_ptr;
  d.values = r.u8() == 0xEE ? nullptr : values.data();

  sj_tensor* t = reinterpret_cast<sj_tensor*>(0x1);
  sj_status s = sj_tensor_create(ctx.c, &d, flags, &t);
  expect_clean(s);
  if (s != SJ_OK) {
    SJ_FUZZ_CHECK(t == reinterpret_cast<sj_tensor*>(0x1), "a failed create wrote its output");
    return 0;
  }
  // Accepted: everything that reads it must work or fail cleanly.
  sj_tensor_info info;
  SJ_FUZZ_CHECK(sj_tensor_get_info(t, &info) == SJ_OK, sj_last_error_message());
  for (int l = 0; l < info.order; ++l) {
    const int64_t* p;
    const void* c;
    int64_t np, nc;
    SJ_FUZZ_CHECK(sj_tensor_get_level(t, l, &p, &np, &c, &nc) == SJ_OK, sj_last_error_message());
  }
  static const sj_format formats[] = {SJ_FORMAT_CSR, SJ_FORMAT_CSC, SJ_FORMAT_DCSR, SJ_FORMAT_COO,
                                      SJ_FORMAT_SPARSE_VECTOR, SJ_FORMAT_DENSE, SJ_FORMAT_CSF,
                                      SJ_FORMAT_DENSE_COL_MAJOR};
  for (sj_format f : formats) {
    for (sj_index_type it : {SJ_INDEX_INT32, SJ_INDEX_INT64}) {
      sj_tensor* c = nullptr;
      sj_status cs = sj_tensor_convert(ctx.c, t, f, nullptr, it, &c);
      expect_clean(cs);
      if (cs != SJ_OK) continue;
      sj_tensor_info ci;
      SJ_FUZZ_CHECK(sj_tensor_get_info(c, &ci) == SJ_OK, "");
      // Conversion keeps every stored entry; a dense target stores every position.
      int64_t expect = info.nnz;
      if (f == SJ_FORMAT_DENSE || f == SJ_FORMAT_DENSE_COL_MAJOR) {
        expect = 1;
        for (int m = 0; m < info.order; ++m) expect *= info.dims[m];
      }
      SJ_FUZZ_CHECK(ci.nnz == expect, "conversion changed the number of entries");
      sj_tensor_destroy(c);
    }
  }
  if (info.order == 2) {
    sj_tensor* tt = nullptr;
    sj_status ts = sj_transpose(ctx.c, t, &tt);
    expect_clean(ts);
    sj_tensor_destroy(tt);
  }
  sj_tensor_destroy(t);
  return 0;
}

}  // namespace sj::fuzz

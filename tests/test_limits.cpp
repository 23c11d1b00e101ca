// Limits (issue 8): sizes near and past the int32 and int64 limits, SpGEMM output sizes that
// overflow, and outputs larger than sj_config.memory_cap_bytes. Each ends in a clear status
// (SJ_ERR_OVERFLOW / SJ_ERR_OUT_OF_MEMORY / a validation error) before any large allocation:
// huge tensors here are described with compressed levels, so their arrays stay tiny, and no
// array a dimension would size is ever allocated.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <tuple>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "sparsejit/sparsejit.h"
#include "tests/fuzz/capi_ops_harness.hpp"  // same_bits
#include "tests/random_matrices.hpp"

// Under a sanitizer a request for terabytes would abort the process; the sanitizer builds'
// programs let it return null like a real allocator (tools/sanitizer_default_options.c), so the
// library's SJ_ERR_OUT_OF_MEMORY is what these tests see.

namespace {

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

std::string msg() { return sj_last_error_message(); }

struct Ctx {
  sj_context* c = nullptr;
  explicit Ctx(size_t cap = 0, int threads = 1) {
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.disable_disk_cache = 1;
    cfg.memory_cap_bytes = cap;
    cfg.threads = threads;
    EXPECT_EQ(sj_context_create(&cfg, &c), SJ_OK);
  }
  ~Ctx() { EXPECT_EQ(sj_context_destroy(c), SJ_OK) << msg(); }
};
struct T {
  sj_tensor* t = nullptr;
  ~T() { sj_tensor_destroy(t); }
};

// A DCSR matrix (compressed rows, compressed columns) with int64 coordinates: any dimensions,
// arrays only as long as the entries. entries: (row, col) sorted.
struct Dcsr {
  int64_t dims[2];
  std::vector<int64_t> pos0, crd0, pos1, crd1;
  std::vector<double> val;
  Dcsr(int64_t rows, int64_t cols, std::vector<std::pair<int64_t, int64_t>> entries) : dims{rows, cols} {
    pos0 = {0};
    pos1 = {0};
    for (auto [r, c] : entries) {
      if (crd0.empty() || crd0.back() != r) {
        crd0.push_back(r);
        pos1.push_back(pos1.back());
      }
      crd1.push_back(c);
      ++pos1.back();
      val.push_back(1.0 + static_cast<double>(val.size()));
    }
    pos0.push_back(static_cast<int64_t>(crd0.size()));
  }
  sj_status create(sj_context* c, sj_tensor** out) const {
    static const sj_level_kind levels[2] = {SJ_LEVEL_COMPRESSED, SJ_LEVEL_COMPRESSED};
    const int64_t* pos[2] = {pos0.data(), pos1.data()};
    const void* crd[2] = {crd0.data(), crd1.data()};
    sj_tensor_desc d{2, dims, nullptr, levels, SJ_INDEX_INT64, SJ_VALUE_F64, pos, crd, val.data()};
    return sj_tensor_create(c, &d, SJ_TENSOR_COPY, out);
  }
};

bool clean_size_error(sj_status s) { return s == SJ_ERR_OVERFLOW || s == SJ_ERR_OUT_OF_MEMORY; }

TEST(Limits, Int32CoordinatesAtAndPastTheLimit) {
  Ctx ctx;
  // 2 x 2^31: the last column, INT32_MAX, still fits int32 coordinates.
  std::vector<int64_t> pos{0, 1, 2};
  std::vector<int32_t> crd{0, static_cast<int32_t>(kI32Max)};
  std::vector<double> val{1, 2};
  T a;
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, 2, kI32Max + 1, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), 0,
                                 &a.t),
            SJ_OK)
      << msg();
  // One more column does not fit int32.
  T b;
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, 2, kI32Max + 2, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), 0,
                                 &b.t),
            SJ_ERR_OVERFLOW);
  EXPECT_NE(msg().find("does not fit"), std::string::npos) << msg();
  // A coordinate past the dimension, or negative (an int32 that wrapped), is refused.
  std::vector<int32_t> bad{0, -2147483647 - 1};
  EXPECT_EQ(sj_tensor_create_csr(ctx.c, 2, kI32Max + 1, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), bad.data(), val.data(), 0,
                                 &b.t),
            SJ_ERR_INVALID_TENSOR);
  // COO triplets and sparse vectors check the same way.
  std::vector<int32_t> ri{0}, ci{0};
  EXPECT_EQ(sj_tensor_create_coo(ctx.c, kI32Max + 2, 3, 1, SJ_INDEX_INT32, SJ_VALUE_F64, ri.data(), ci.data(), val.data(), 0,
                                 &b.t),
            SJ_ERR_OVERFLOW);
  std::vector<int32_t> idx{static_cast<int32_t>(kI32Max)};
  EXPECT_EQ(sj_tensor_create_sparse_vector(ctx.c, kI32Max + 1, 1, SJ_INDEX_INT32, SJ_VALUE_F64, idx.data(), val.data(), 0,
                                           &b.t),
            SJ_OK)
      << msg();
  sj_tensor_destroy(b.t);
  b.t = nullptr;
  EXPECT_EQ(sj_tensor_create_sparse_vector(ctx.c, kI32Max + 2, 1, SJ_INDEX_INT32, SJ_VALUE_F64, idx.data(), val.data(), 0,
                                           &b.t),
            SJ_ERR_OVERFLOW);
  // Work on the 2 x 2^31 matrix that needs no array sized by its columns is exact: A .* A.
  T c;
  ASSERT_EQ(sj_ewise_mult(ctx.c, a.t, a.t, nullptr, &c.t), SJ_OK) << msg();
  sj_tensor_info info;
  ASSERT_EQ(sj_tensor_get_info(c.t, &info), SJ_OK);
  EXPECT_EQ(info.dims[1], kI32Max + 1);
  EXPECT_EQ(info.nnz, 2);
  // Its CSC form needs 2^31 + 1 positions (16 GiB): refused by a capped context's memory cap
  // before anything is allocated, and the caller's output stays as it was.
  Ctx capped(64 << 20);
  T a2, csc;
  ASSERT_EQ(sj_tensor_create_csr(capped.c, 2, kI32Max + 1, SJ_INDEX_INT32, SJ_VALUE_F64, pos.data(), crd.data(),
                                 val.data(), 0, &a2.t),
            SJ_OK);
  csc.t = reinterpret_cast<sj_tensor*>(0x77);
  EXPECT_EQ(sj_tensor_convert(capped.c, a2.t, SJ_FORMAT_CSC, nullptr, SJ_INDEX_INT32, &csc.t), SJ_ERR_OUT_OF_MEMORY);
  EXPECT_NE(msg().find("memory cap"), std::string::npos) << msg();
  EXPECT_EQ(csc.t, reinterpret_cast<sj_tensor*>(0x77));
  csc.t = reinterpret_cast<sj_tensor*>(0x77);
  EXPECT_EQ(sj_transpose(capped.c, a2.t, &csc.t), SJ_ERR_OUT_OF_MEMORY) << msg();
  EXPECT_EQ(csc.t, reinterpret_cast<sj_tensor*>(0x77));
  csc.t = nullptr;
}

TEST(Limits, Int64DimensionsAtAndPastTheLimit) {
  Ctx ctx;
  // INT64_MAX x INT64_MAX with entries at both corners: valid (coordinates up to INT64_MAX - 1).
  Dcsr huge(kI64Max, kI64Max, {{0, 0}, {kI64Max - 1, kI64Max - 1}});
  T a;
  ASSERT_EQ(huge.create(ctx.c, &a.t), SJ_OK) << msg();
  // Transposing a DCSR keeps it DCSR: no array sized by a dimension, so it works.
  T at;
  ASSERT_EQ(sj_transpose(ctx.c, a.t, &at.t), SJ_OK) << msg();
  // Anything that needs an array per row (CSR, CSC, dense, an operation's CSR operand) is
  // refused cleanly: INT64_MAX + 1 positions do not even have a size in bytes.
  for (sj_format f : {SJ_FORMAT_CSR, SJ_FORMAT_CSC, SJ_FORMAT_DENSE}) {
    sj_tensor* out = reinterpret_cast<sj_tensor*>(0x77);
    sj_status s = sj_tensor_convert(ctx.c, a.t, f, nullptr, SJ_INDEX_INT64, &out);
    EXPECT_TRUE(clean_size_error(s)) << f << ": " << s << " " << msg();
    EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x77));
  }
  // To int32 coordinates: does not fit.
  sj_tensor* out = nullptr;
  EXPECT_EQ(sj_tensor_convert(ctx.c, a.t, SJ_FORMAT_DCSR, nullptr, SJ_INDEX_INT32, &out), SJ_ERR_OVERFLOW) << msg();
  T prod;
  EXPECT_TRUE(clean_size_error(sj_spgemm(ctx.c, a.t, a.t, nullptr, &prod.t))) << msg();
  // 2^62 rows: 8 * (2^62 + 1) bytes of positions wraps around 2^64 to 8 bytes unless checked.
  for (int64_t rows : {int64_t(1) << 62, (int64_t(1) << 61) + 1, kI64Max / 8}) {
    Dcsr tall(rows, 4, {{0, 1}, {rows - 1, 3}});
    T t;
    ASSERT_EQ(tall.create(ctx.c, &t.t), SJ_OK) << msg();
    sj_tensor* csr = reinterpret_cast<sj_tensor*>(0x77);
    EXPECT_TRUE(clean_size_error(sj_tensor_convert(ctx.c, t.t, SJ_FORMAT_CSR, nullptr, SJ_INDEX_INT64, &csr))) << msg();
    EXPECT_EQ(csr, reinterpret_cast<sj_tensor*>(0x77));
    // Its transpose as CSR (4 rows, 2^62 columns) is fine; that one's CSC would wrap again.
    T tt, back;
    ASSERT_EQ(sj_transpose(ctx.c, t.t, &tt.t), SJ_OK) << msg();
    ASSERT_EQ(sj_tensor_convert(ctx.c, tt.t, SJ_FORMAT_CSR, nullptr, SJ_INDEX_INT64, &back.t), SJ_OK) << msg();
    sj_tensor* csc = reinterpret_cast<sj_tensor*>(0x77);
    EXPECT_TRUE(clean_size_error(sj_tensor_convert(ctx.c, back.t, SJ_FORMAT_CSC, nullptr, SJ_INDEX_INT64, &csc))) << msg();
    T flipped;
    EXPECT_TRUE(clean_size_error(sj_transpose(ctx.c, back.t, &flipped.t))) << msg();
  }
  // Negative dimensions and positions that overflow the count are refused before any read.
  Dcsr neg(-1, 4, {});
  T n;
  EXPECT_EQ(neg.create(ctx.c, &n.t), SJ_ERR_INVALID_ARGUMENT);
  Dcsr overflowing(4, 4, {{0, 0}});
  overflowing.pos0 = {0, kI64Max};
  EXPECT_NE(overflowing.create(ctx.c, &n.t), SJ_OK);
}

TEST(Limits, DenseSizesThatOverflow) {
  Ctx ctx;
  double v[4] = {1, 2, 3, 4};
  for (auto dims : std::vector<std::array<int64_t, 2>>{{int64_t(1) << 32, int64_t(1) << 32},
                                                       {int64_t(1) << 31, int64_t(1) << 31},
                                                       {kI64Max, 2}}) {
    T t;
    EXPECT_EQ(sj_tensor_create_dense(ctx.c, 2, dims.data(), SJ_VALUE_F64, v, 0, &t.t), SJ_ERR_OVERFLOW) << msg();
  }
}

TEST(Limits, HeaderNumbersInFilesNeverSizeAnAllocation) {
  Ctx ctx;
  char tmpl[] = "/tmp/sj-limits-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto read = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    T t;
    sj_status s = sj_tensor_read_file(ctx.c, (dir + "/" + name).c_str(), &t.t);
    return s;
  };
  // Dimensions at INT64_MAX: a CSR needs INT64_MAX + 1 positions — a clean size error.
  EXPECT_TRUE(clean_size_error(read("a.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                             "9223372036854775807 3 1\n1 1 1\n")))
      << msg();
  // 2^62 rows: the position array's byte count would wrap to a few bytes.
  EXPECT_TRUE(clean_size_error(read("b.mtx", "%%MatrixMarket matrix coordinate real general\n"
                                             "4611686018427387904 3 1\n1 1 1\n")))
      << msg();
  // A .tns coordinate of 2^62 in the dense first mode of CSF: the same, from one line.
  EXPECT_TRUE(clean_size_error(read("c.tns", "4611686018427387904 1 1 2.5\n"))) << msg();
  // Dimensions past int64: a parse error naming the line.
  const sj_status past = read("d.mtx", "%%MatrixMarket matrix coordinate real general\n9223372036854775808 3 1\n1 1 1\n");
  EXPECT_TRUE(past == SJ_ERR_PARSE || past == SJ_ERR_OVERFLOW) << past;
  EXPECT_NE(msg().find(":2:"), std::string::npos) << msg();
  std::filesystem::remove_all(dir);
}

long max_rss_kib() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// A (n x 1) * B (1 x n), all ones: n^2 outputs from 2n inputs.
void outer_product_over_cap(int threads, sj_schedule schedule, bool dense_output) {
  constexpr int64_t n = 2500;  // 6.25e6 outputs: 75 MB sparse, 50 MB dense
  constexpr size_t cap = 8 << 20;
  Ctx ctx(cap, threads);
  std::vector<int64_t> apos(n + 1), bpos{0, n};
  std::vector<int32_t> acrd(n, 0), bcrd(n);
  std::vector<double> ones(n, 1.0);
  for (int64_t i = 0; i <= n; ++i) apos[i] = i;
  for (int64_t j = 0; j < n; ++j) bcrd[j] = static_cast<int32_t>(j);
  T a, b, c;
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, n, 1, SJ_INDEX_INT32, SJ_VALUE_F64, apos.data(), acrd.data(), ones.data(), 0, &a.t),
            SJ_OK);
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, 1, n, SJ_INDEX_INT32, SJ_VALUE_F64, bpos.data(), bcrd.data(), ones.data(), 0, &b.t),
            SJ_OK);
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = schedule;
  o.dense_output = dense_output;
  const long before = max_rss_kib();
  c.t = reinterpret_cast<sj_tensor*>(0x77);
  sj_status s = sj_spgemm(ctx.c, a.t, b.t, &o, &c.t);
  const long grew_mib = (max_rss_kib() - before) / 1024;
  if (s == SJ_ERR_INVALID_ARGUMENT) {  // the forced schedule does not serve this call
    c.t = nullptr;
    return;
  }
  EXPECT_EQ(s, SJ_ERR_OUT_OF_MEMORY) << msg();
  EXPECT_NE(msg().find("memory cap"), std::string::npos) << msg();
  EXPECT_EQ(c.t, reinterpret_cast<sj_tensor*>(0x77));
  c.t = nullptr;
  // Refused before the output (50-75 MB) or anything like it was allocated and touched.
  EXPECT_LT(grew_mib, 32) << "peak memory grew by " << grew_mib << " MiB before the refusal";
}

TEST(Limits, SpgemmOutputLargerThanTheMemoryCap) {
  for (int threads : {1, 2})
    // The reference and inner schedules build a sparse result in std::vector: they charge an
    // upper bound (or, over the cap, the exact symbolic count) against the cap first.
    for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH,
                          SJ_SCHEDULE_INNER})
      for (bool dense : {false, true}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " schedule " + std::to_string(s) +
                     (dense ? " dense" : " sparse"));
        outer_product_over_cap(threads, s, dense);
      }
}

TEST(Limits, SpgemmOutputSizeThatOverflows) {
  // A (4 x 2) * B (2 x 2^62), i64, CSR: the dense output would have 2^64 entries.
  Ctx ctx(64 << 20);
  const int64_t cols = int64_t(1) << 62;
  std::vector<int64_t> apos{0, 1, 2, 2, 3}, acrd{0, 1, 0}, bpos{0, 2, 3}, bcrd{0, cols - 1, 5};
  std::vector<double> av{1, 2, 3}, bv{4, 5, 6};
  T a, b;
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, 4, 2, SJ_INDEX_INT64, SJ_VALUE_F64, apos.data(), acrd.data(), av.data(), 0, &a.t),
            SJ_OK);
  ASSERT_EQ(sj_tensor_create_csr(ctx.c, 2, cols, SJ_INDEX_INT64, SJ_VALUE_F64, bpos.data(), bcrd.data(), bv.data(), 0, &b.t),
            SJ_OK);
  sj_op_options o;
  sj_op_options_init(&o);
  o.dense_output = 1;
  T c;
  EXPECT_TRUE(clean_size_error(sj_spgemm(ctx.c, a.t, b.t, &o, &c.t))) << msg();
  // A sparse output is small (5 entries): every schedule computes it or refuses cleanly, and
  // Gustavson computes it without a workspace sized by the 2^62 columns.
  o.dense_output = 0;
  for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH,
                        SJ_SCHEDULE_INNER}) {
    o.schedule = s;
    T sparse;
    const sj_status st = sj_spgemm(ctx.c, a.t, b.t, &o, &sparse.t);
    if (s == SJ_SCHEDULE_GUSTAVSON_DENSE || s == SJ_SCHEDULE_GUSTAVSON_HASH || s == SJ_SCHEDULE_AUTO) {
      ASSERT_EQ(st, SJ_OK) << s << ": " << msg();
      sj_tensor_info info;
      ASSERT_EQ(sj_tensor_get_info(sparse.t, &info), SJ_OK);
      EXPECT_EQ(info.nnz, 5);
    } else {
      EXPECT_TRUE(clean_size_error(st)) << s << ": " << msg();
    }
  }
}


// ---------------------------------------------------------------------------------------
// Huge declared dimensions with few entries: every operation either gives the right result
// with small memory or refuses with SJ_ERR_OUT_OF_MEMORY naming the memory cap before any
// large allocation. A counting allocator hook records the largest single request.

using sj::fuzz::capi_ops_detail::same_bits;

struct CountingHooks {
  std::atomic<size_t> largest{0};
  std::atomic<int64_t> live{0};
};
void* counting_alloc(size_t size, size_t align, void* user) {
  auto* h = static_cast<CountingHooks*>(user);
  size_t seen = h->largest.load();
  while (size > seen && !h->largest.compare_exchange_weak(seen, size)) {
  }
  void* p = std::aligned_alloc(align, size);
  if (p) ++h->live;
  return p;
}
void counting_free(void* p, size_t, void* user) {
  --static_cast<CountingHooks*>(user)->live;
  std::free(p);
}

struct CountingCtx {
  CountingHooks hooks;
  sj_context* c = nullptr;
  CountingCtx(size_t cap, int threads) {
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.disable_disk_cache = 1;
    cfg.memory_cap_bytes = cap;
    cfg.threads = threads;
    cfg.allocator = {counting_alloc, counting_free, &hooks};
    EXPECT_EQ(sj_context_create(&cfg, &c), SJ_OK);
  }
  ~CountingCtx() {
    EXPECT_EQ(sj_context_destroy(c), SJ_OK) << msg();
    EXPECT_EQ(hooks.live.load(), 0);
  }
};

using Entries = std::map<std::pair<int64_t, int64_t>, double>;

// The stored entries of a CSR matrix or sparse vector result (f64; int32 or int64 coordinates).
Entries entries_of(const sj_tensor* t) {
  sj_tensor_info info;
  EXPECT_EQ(sj_tensor_get_info(t, &info), SJ_OK);
  const void* vals = nullptr;
  int64_t nv = 0;
  EXPECT_EQ(sj_tensor_get_values(t, &vals, &nv), SJ_OK);
  auto crd_at = [&](const void* crd, int64_t p) {
    return info.index_type == SJ_INDEX_INT32 ? static_cast<int64_t>(static_cast<const int32_t*>(crd)[p])
                                             : static_cast<const int64_t*>(crd)[p];
  };
  Entries e;
  const int64_t* pos = nullptr;
  const void* crd = nullptr;
  if (info.order == 1) {
    EXPECT_EQ(sj_tensor_get_level(t, 0, &pos, nullptr, &crd, nullptr), SJ_OK);
    for (int64_t p = 0; p < nv; ++p) e[{crd_at(crd, p), 0}] = static_cast<const double*>(vals)[p];
    return e;
  }
  EXPECT_EQ(info.format, SJ_FORMAT_CSR);
  EXPECT_EQ(sj_tensor_get_level(t, 1, &pos, nullptr, &crd, nullptr), SJ_OK);
  for (int64_t i = 0; i < info.dims[0]; ++i)
    for (int64_t p = pos[i]; p < pos[i + 1]; ++p) {
      EXPECT_TRUE(p == pos[i] || crd_at(crd, p) > crd_at(crd, p - 1)) << "row " << i << " not sorted";
      e[{i, crd_at(crd, p)}] = static_cast<const double*>(vals)[p];
    }
  return e;
}

template <class I>
sj_status make_csr(sj_context* c, int64_t rows, int64_t cols, const std::vector<std::tuple<int64_t, int64_t, double>>& es,
                   sj_tensor** out) {
  std::vector<int64_t> pos(static_cast<size_t>(rows) + 1, 0);
  std::vector<I> crd;
  std::vector<double> val;
  for (auto [r, cc, v] : es) {
    ++pos[static_cast<size_t>(r) + 1];
    crd.push_back(static_cast<I>(cc));
    val.push_back(v);
  }
  for (int64_t r = 0; r < rows; ++r) pos[r + 1] += pos[r];
  const sj_index_type it = sizeof(I) == 4 ? SJ_INDEX_INT32 : SJ_INDEX_INT64;
  return sj_tensor_create_csr(c, rows, cols, it, SJ_VALUE_F64, pos.data(), crd.data(), val.data(), SJ_TENSOR_COPY, out);
}

const sj_schedule kAllSchedules[] = {SJ_SCHEDULE_AUTO,  SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE,
                                     SJ_SCHEDULE_GUSTAVSON_HASH, SJ_SCHEDULE_INNER, SJ_SCHEDULE_TRANSPOSE,
                                     SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_DENSIFY,   SJ_SCHEDULE_PUSH,
                                     SJ_SCHEDULE_FUSED};

// One call on huge-dimension operands: a correct result, or a clean refusal (out of memory
// naming the cap; or, for a forced schedule that does not serve the call, invalid argument),
// with no single allocation at or above the cap and little growth of the process's memory.
// Returns whether a result came back.
bool small_or_refused(CountingCtx& ctx, size_t cap, const std::string& what, const Entries* want,
                      const std::function<sj_status(sj_tensor**)>& call) {
  SCOPED_TRACE(what);
  ctx.hooks.largest = 0;
  const long before = max_rss_kib();
  sj_tensor* out = reinterpret_cast<sj_tensor*>(0x77);
  const sj_status s = call(&out);
  const long grew_mib = (max_rss_kib() - before) / 1024;
  EXPECT_LT(ctx.hooks.largest.load(), cap) << "an allocation of " << ctx.hooks.largest.load() << " bytes";
  EXPECT_LT(grew_mib, 64) << "peak memory grew by " << grew_mib << " MiB";
  if (s == SJ_OK) {
    if (want) {
      EXPECT_EQ(entries_of(out), *want);
    }
    sj_tensor_destroy(out);
    return true;
  }
  EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x77)) << "a failed call wrote its output";
  if (s == SJ_ERR_INVALID_ARGUMENT) return false;  // a forced schedule that does not serve it
  EXPECT_EQ(s, SJ_ERR_OUT_OF_MEMORY) << msg();
  EXPECT_NE(msg().find("memory cap"), std::string::npos) << msg();
  return false;
}

// A (2 x 3) * B (3 x n) with B's entries at both ends of its n columns, and the same B as the
// matrix of SpMSpV / element-wise operations. Row 0 of A has three entries (the accumulator's
// path), row 1 one.
template <class I> void huge_columns_every_operation(int64_t n, int threads) {
  constexpr size_t cap = 16 << 20;
  CountingCtx ctx(cap, threads);
  T a, b, m, x, b2;
  ASSERT_EQ(make_csr<I>(ctx.c, 2, 3, {{0, 0, 1}, {0, 1, 10}, {0, 2, 2}, {1, 1, 3}}, &a.t), SJ_OK) << msg();
  ASSERT_EQ(make_csr<I>(ctx.c, 3, n, {{0, 5, 5}, {0, n - 1, 4}, {1, 0, 7}, {2, 5, 6}}, &b.t), SJ_OK) << msg();
  ASSERT_EQ(make_csr<I>(ctx.c, 3, n, {{0, 5, 1}, {1, 0, 2}, {1, n - 2, 3}, {2, n - 1, 4}}, &b2.t), SJ_OK) << msg();
  ASSERT_EQ(make_csr<I>(ctx.c, 2, n, {{0, 5, 1}, {0, n - 1, 1}, {1, 0, 1}, {1, 7, 1}}, &m.t), SJ_OK) << msg();
  std::vector<I> xi{0, 5, static_cast<I>(n - 1)};
  std::vector<double> xv{2, 3, 0.5};
  const sj_index_type it = sizeof(I) == 4 ? SJ_INDEX_INT32 : SJ_INDEX_INT64;
  ASSERT_EQ(sj_tensor_create_sparse_vector(ctx.c, n, 3, it, SJ_VALUE_F64, xi.data(), xv.data(), SJ_TENSOR_COPY, &x.t),
            SJ_OK)
      << msg();
  const Entries product{{{0, 0}, 70}, {{0, 5}, 17}, {{0, n - 1}, 4}, {{1, 0}, 21}};
  const Entries masked{{{0, 5}, 17}, {{0, n - 1}, 4}, {{1, 0}, 21}};
  const Entries spmspv{{{0, 0}, 17}, {{1, 0}, 14}, {{2, 0}, 18}};
  const Entries mult{{{0, 5}, 5}, {{1, 0}, 14}};
  const Entries add{{{0, 5}, 6}, {{0, n - 1}, 4}, {{1, 0}, 9}, {{1, n - 2}, 3}, {{2, 5}, 6}, {{2, n - 1}, 4}};
  int served = 0;
  for (sj_schedule sch : kAllSchedules) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = sch;
    const std::string s = " schedule " + std::to_string(sch);
    served += small_or_refused(ctx, cap, "spgemm" + s, &product, [&](sj_tensor** out) { return sj_spgemm(ctx.c, a.t, b.t, &o, out); });
    served += small_or_refused(ctx, cap, "masked spgemm" + s, &masked,
                               [&](sj_tensor** out) { return sj_spgemm_masked(ctx.c, m.t, a.t, b.t, &o, out); });
    served += small_or_refused(ctx, cap, "spmspv" + s, &spmspv, [&](sj_tensor** out) { return sj_spmspv(ctx.c, b.t, x.t, &o, out); });
    served += small_or_refused(ctx, cap, "ewise-mult" + s, &mult, [&](sj_tensor** out) { return sj_ewise_mult(ctx.c, b.t, b2.t, &o, out); });
    served += small_or_refused(ctx, cap, "ewise-add" + s, &add, [&](sj_tensor** out) { return sj_ewise_add(ctx.c, b.t, b2.t, &o, out); });
    o.dense_output = 1;
    // Dense outputs of 2 x n: refused (or, for SpMSpV's 3 rows, computed).
    small_or_refused(ctx, cap, "spgemm dense" + s, nullptr, [&](sj_tensor** out) { return sj_spgemm(ctx.c, a.t, b.t, &o, out); });
    small_or_refused(ctx, cap, "spmspv dense" + s, nullptr, [&](sj_tensor** out) { return sj_spmspv(ctx.c, b.t, x.t, &o, out); });
  }
  // The automatic choice and the Gustavson schedules compute the wide product; the masked one
  // by saxpy; SpMSpV row-wise; element-wise by merging rows.
  EXPECT_GE(served, 5 + 1 + 3);
  // Transposing needs n + 1 positions: refused.
  small_or_refused(ctx, cap, "transpose", nullptr, [&](sj_tensor** out) { return sj_transpose(ctx.c, b.t, out); });
  // Gustavson computes it without a cap too, still with small memory (hash accumulator).
  CountingCtx uncapped(0, threads);
  T a3, b3;
  ASSERT_EQ(make_csr<I>(uncapped.c, 2, 3, {{0, 0, 1}, {0, 1, 10}, {0, 2, 2}, {1, 1, 3}}, &a3.t), SJ_OK) << msg();
  ASSERT_EQ(make_csr<I>(uncapped.c, 3, n, {{0, 5, 5}, {0, n - 1, 4}, {1, 0, 7}, {2, 5, 6}}, &b3.t), SJ_OK) << msg();
  for (sj_schedule sch : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH}) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = sch;
    EXPECT_TRUE(small_or_refused(uncapped, size_t(64) << 20, "uncapped spgemm schedule " + std::to_string(sch), &product,
                                 [&](sj_tensor** out) { return sj_spgemm(uncapped.c, a3.t, b3.t, &o, out); }));
  }
}

TEST(Limits, HugeColumnsFewEntriesEveryOperation) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    {
      SCOPED_TRACE("int32, 2^31 - 1 columns");
      huge_columns_every_operation<int32_t>(kI32Max, threads);
    }
    {
      SCOPED_TRACE("int64, 2^40 columns");
      huge_columns_every_operation<int64_t>(int64_t(1) << 40, threads);
    }
  }
}

// Random sparse matrices with entries scattered over `cols` columns (a few per row).
sj::CsResult<int32_t, double> scattered(uint64_t seed, int64_t rows, int64_t cols, int per_row) {
  sj::test::Rng rng(seed);
  sj::CsResult<int32_t, double> m;
  m.outer = rows;
  m.inner = cols;
  m.pos.push_back(0);
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<int32_t> cs;
    const int64_t len = rng.uniform_int(0, per_row);
    for (int64_t t = 0; t < len; ++t) cs.push_back(static_cast<int32_t>(rng.uniform_int(0, cols - 1)));
    std::sort(cs.begin(), cs.end());
    cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
    for (int32_t c : cs) {
      m.crd.push_back(c);
      m.val.push_back(rng.uniform01() * 4 - 2);
    }
    m.pos.push_back(static_cast<int64_t>(m.crd.size()));
  }
  return m;
}

sj_tensor* handle(sj_context* c, const sj::CsResult<int32_t, double>& m) {
  sj_tensor* t = nullptr;
  EXPECT_EQ(sj_tensor_create_csr(c, m.outer, m.inner, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), SJ_TENSOR_COPY, &t),
            SJ_OK)
      << msg();
  return t;
}

// The paths taken for wide products (hash accumulator without the column bitmap, the mask row
// searched) give the reference kernel's result bit for bit. A 1 MiB cap makes 300,000 columns
// wide (the dense accumulator would be 3.6 MB); the reference runs without a cap.
TEST(Limits, WideProductsMatchTheReference) {
  const int64_t cols = 300000;
  // A's columns index B's 40 rows, a few to many per row of A (rows of 1, 2 and more entries).
  auto am = scattered(1, 80, 40, 12), bm = scattered(2, 40, cols, 30), mm = scattered(3, 80, cols, 200);
  // Put some of the product's columns into the mask, so the masked result is not empty.
  Ctx plain;
  T a0, b0, m0, want, want_masked;
  a0.t = handle(plain.c, am);
  b0.t = handle(plain.c, bm);
  m0.t = handle(plain.c, mm);
  sj_op_options ref;
  sj_op_options_init(&ref);
  ref.schedule = SJ_SCHEDULE_REFERENCE;
  ASSERT_EQ(sj_spgemm(plain.c, a0.t, b0.t, &ref, &want.t), SJ_OK) << msg();
  {
    // A mask of every other product entry plus M's own.
    Entries e = entries_of(want.t), me;
    int t = 0;
    for (auto& [ij, v] : e)
      if (t++ % 2 == 0) me[ij] = 1;
    for (int64_t i = 0; i < mm.outer; ++i)
      for (int64_t p = mm.pos[i]; p < mm.pos[i + 1]; ++p) me[{i, mm.crd[p]}] = 1;
    std::vector<std::tuple<int64_t, int64_t, double>> list;
    for (auto& [ij, v] : me) list.emplace_back(ij.first, ij.second, v);
    sj_tensor_destroy(m0.t);
    ASSERT_EQ(make_csr<int32_t>(plain.c, mm.outer, cols, list, &m0.t), SJ_OK) << msg();
  }
  ASSERT_EQ(sj_spgemm_masked(plain.c, m0.t, a0.t, b0.t, &ref, &want_masked.t), SJ_OK) << msg();
  ASSERT_GT(entries_of(want_masked.t).size(), 10u);
  for (int threads : {1, 2}) {
    CountingCtx capped(1 << 20, threads);
    T a, b, m;
    a.t = handle(capped.c, am);
    b.t = handle(capped.c, bm);
    ASSERT_EQ(sj_tensor_convert(capped.c, m0.t, SJ_FORMAT_CSR, nullptr, SJ_INDEX_INT32, &m.t), SJ_OK) << msg();
    for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " schedule " + std::to_string(s));
      sj_op_options o;
      sj_op_options_init(&o);
      o.schedule = s;
      T got;
      capped.hooks.largest = 0;
      ASSERT_EQ(sj_spgemm(capped.c, a.t, b.t, &o, &got.t), SJ_OK) << msg();
      EXPECT_TRUE(same_bits(got.t->t, want.t->t));
      EXPECT_LT(capped.hooks.largest.load(), size_t(1) << 20);
      if (s == SJ_SCHEDULE_GUSTAVSON_HASH) continue;
      T gm;
      ASSERT_EQ(sj_spgemm_masked(capped.c, m.t, a.t, b.t, &o, &gm.t), SJ_OK) << msg();
      EXPECT_TRUE(same_bits(gm.t->t, want_masked.t->t));
    }
    // The plan explains why the dense accumulator is not used.
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = SJ_SCHEDULE_GUSTAVSON_DENSE;
    const sj_tensor* ops[2] = {a.t, b.t};
    sj_plan* p = nullptr;
    ASSERT_EQ(sj_plan_create(capped.c, SJ_OP_SPGEMM, ops, 2, &o, &p), SJ_OK) << msg();
    const char* text = nullptr;
    ASSERT_EQ(sj_plan_explain_text(p, &text), SJ_OK);
    EXPECT_NE(std::string(text).find("hash accumulator without column bitmap"), std::string::npos) << text;
    sj_plan_destroy(p);
  }
}

// The cap against the exact size of a result, (rows + 1) * 8 + nnz * (4 + 8) bytes for a CSR
// int32/f64 one: a cap of that size plus a little (Gustavson keeps 4 entries of slack) lets
// every schedule compute it; one byte less refuses it, naming the cap, output untouched.
TEST(Limits, MemoryCapJustAboveAndBelowTheExactOutput) {
  sj::test::Rng rng(7);
  auto am = sj::test::random_matrix<int32_t, double>(rng, 150, 120, sj::test::Values::SmallInt);
  auto bm = sj::test::random_matrix<int32_t, double>(rng, 120, 140, sj::test::Values::SmallInt);
  Ctx plain;
  T a0, b0, want, want_dense;
  a0.t = handle(plain.c, am);
  b0.t = handle(plain.c, bm);
  sj_op_options ref;
  sj_op_options_init(&ref);
  ref.schedule = SJ_SCHEDULE_REFERENCE;
  ASSERT_EQ(sj_spgemm(plain.c, a0.t, b0.t, &ref, &want.t), SJ_OK) << msg();
  sj_tensor_info info;
  ASSERT_EQ(sj_tensor_get_info(want.t, &info), SJ_OK);
  const size_t exact = (150 + 1) * 8 + static_cast<size_t>(info.nnz) * 12;
  const size_t dense_exact = 150 * 140 * 8;
  ASSERT_GT(info.nnz, 1000);
  for (int threads : {1, 2})
    for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE,
                          SJ_SCHEDULE_GUSTAVSON_HASH, SJ_SCHEDULE_INNER})
      for (bool dense : {false, true}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " schedule " + std::to_string(s) +
                     (dense ? " dense" : " sparse"));
        const size_t size = dense ? dense_exact : exact;
        for (size_t cap : {size + 4096, size - 1}) {
          Ctx ctx(cap, threads);
          T a, b;
          a.t = handle(ctx.c, am);
          b.t = handle(ctx.c, bm);
          sj_op_options o;
          sj_op_options_init(&o);
          o.schedule = s;
          o.dense_output = dense;
          sj_tensor* out = reinterpret_cast<sj_tensor*>(0x77);
          const sj_status st = sj_spgemm(ctx.c, a.t, b.t, &o, &out);
          if (cap > size) {
            ASSERT_EQ(st, SJ_OK) << "cap " << cap << ": " << msg();
            if (!dense) EXPECT_TRUE(same_bits(out->t, want.t->t));
            sj_tensor_destroy(out);
          } else {
            EXPECT_EQ(st, SJ_ERR_OUT_OF_MEMORY) << "cap " << cap;
            EXPECT_NE(msg().find("memory cap of " + std::to_string(cap)), std::string::npos) << msg();
            EXPECT_EQ(out, reinterpret_cast<sj_tensor*>(0x77));
          }
        }
      }
}

// A .* B where A's entries lie in the top half of the rows and B's in the bottom: the result
// is empty, but min(nnz A, nnz B) would bound it at 50 k entries (760 KB). A one-thread call
// sizes it by that cheap bound only while the cap allows; under a 400 KB cap it succeeds as
// a two-thread call (bounds summed per chunk) does.
TEST(Limits, ElementWiseBoundUnderTheMemoryCap) {
  sj::CsResult<int32_t, double> am, bm;
  am.outer = bm.outer = 20000;
  am.inner = bm.inner = 100;
  for (auto* m : {&am, &bm}) m->pos.assign(1, 0);
  for (int64_t i = 0; i < 20000; ++i)
    for (auto* m : {&am, &bm}) {
      if ((i < 10000) == (m == &am))
        for (int32_t c = 0; c < 5; ++c) {
          m->crd.push_back(c * 17 + static_cast<int32_t>(i % 10));
          m->val.push_back(1.0 + c);
        }
      m->pos.push_back(static_cast<int64_t>(m->crd.size()));
    }
  for (int threads : {1, 2})
    for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_INNER}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " schedule " + std::to_string(s));
      Ctx ctx(400 << 10, threads);
      T a, b, c;
      a.t = handle(ctx.c, am);
      b.t = handle(ctx.c, bm);
      sj_op_options o;
      sj_op_options_init(&o);
      o.schedule = s;
      ASSERT_EQ(sj_ewise_mult(ctx.c, a.t, b.t, &o, &c.t), SJ_OK) << msg();
      sj_tensor_info info;
      ASSERT_EQ(sj_tensor_get_info(c.t, &info), SJ_OK);
      EXPECT_EQ(info.nnz, 0);
    }
}

}  // namespace

// The context's allocator hooks serve every array the library hands to a caller: each result
// of every operation, conversion, file read, copied tensor and index-notation plan (orders 0
// to 3) has its positions, coordinates and values inside blocks that the host's hook
// returned and has not freed, and a pending caller-owned result releases its copy at the fill.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "tests/schedule_test_util.hpp"
#include "tests/test_util.hpp"

namespace {

using H = sj::test::H;

// Records every live block the hooks handed out.
struct Blocks {
  std::mutex mutex;
  std::map<uintptr_t, size_t> live;
  int64_t allocations = 0;

  bool holds(const void* p, size_t bytes) {
    std::lock_guard lock(mutex);
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = live.upper_bound(a);
    if (it == live.begin()) return false;
    --it;
    return a >= it->first && a + bytes <= it->first + it->second;
  }
  size_t count() {
    std::lock_guard lock(mutex);
    return live.size();
  }
};
void* block_alloc(size_t size, size_t align, void* user) {
  auto* b = static_cast<Blocks*>(user);
  void* p = std::aligned_alloc(align, size);
  if (!p) return nullptr;
  std::lock_guard lock(b->mutex);
  b->live[reinterpret_cast<uintptr_t>(p)] = size;
  ++b->allocations;
  return p;
}
void block_free(void* p, size_t size, void* user) {
  auto* b = static_cast<Blocks*>(user);
  {
    std::lock_guard lock(b->mutex);
    auto it = b->live.find(reinterpret_cast<uintptr_t>(p));
    EXPECT_NE(it, b->live.end()) << "freed a block the hook did not hand out";
    if (it != b->live.end()) {
      EXPECT_EQ(it->second, size) << "free got another size than alloc";
      b->live.erase(it);
    }
  }
  std::free(p);
}

struct HookedCtx {
  Blocks blocks;
  sj_context* c = nullptr;
  HookedCtx() {
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.allocator = {block_alloc, block_free, &blocks};
    cfg.disable_disk_cache = 1;
    EXPECT_EQ(sj_context_create(&cfg, &c), SJ_OK) << sj_last_error_message();
  }
  ~HookedCtx() {
    EXPECT_EQ(sj_context_destroy(c), SJ_OK) << sj_last_error_message();
    EXPECT_EQ(blocks.count(), 0u) << "blocks still live after the context is gone";
  }
};

size_t index_bytes(sj_index_type t) { return t == SJ_INDEX_INT32 ? 4 : 8; }
size_t value_bytes(sj_value_type t) { return t == SJ_VALUE_F32 ? 4 : t == SJ_VALUE_F64 ? 8 : 1; }

// Every array of `t` lies in a live block from the hooks, and the tensor owns its arrays.
void expect_from_hooks(Blocks& blocks, const sj_tensor* t, const std::string& what) {
  SCOPED_TRACE(what);
  sj_tensor_info info;
  ASSERT_EQ(sj_tensor_get_info(t, &info), SJ_OK);
  EXPECT_EQ(info.owns_arrays, 1);
  int arrays = 0;
  for (int l = 0; l < info.order; ++l) {
    const int64_t* pos = nullptr;
    const void* crd = nullptr;
    int64_t pos_len = 0, crd_len = 0;
    ASSERT_EQ(sj_tensor_get_level(t, l, &pos, &pos_len, &crd, &crd_len), SJ_OK);
    if (pos_len) {
      EXPECT_TRUE(blocks.holds(pos, sizeof(int64_t) * pos_len)) << "level " << l << " pos";
      ++arrays;
    }
    if (crd_len) {
      EXPECT_TRUE(blocks.holds(crd, index_bytes(info.index_type) * crd_len)) << "level " << l << " crd";
      ++arrays;
    }
  }
  const void* values = nullptr;
  int64_t n = 0;
  ASSERT_EQ(sj_tensor_get_values(t, &values, &n), SJ_OK);
  if (n) {
    EXPECT_TRUE(blocks.holds(values, value_bytes(info.value_type) * n)) << "values";
    ++arrays;
  }
  EXPECT_GT(arrays, 0) << "a result with no arrays checks nothing";
}

// A small CSR (copied) and a 3-D CSF (copied) built through the hooked context.
void make_operands(sj_context* c, H& A, H& B, H& X, H& x, H& d) {
  const int64_t pos[] = {0, 2, 3, 5, 6};
  const int32_t crd[] = {0, 3, 1, 0, 2, 3};
  const double val[] = {1, 2, 3, 4, 5, 6};
  ASSERT_EQ(sj_tensor_create_csr(c, 4, 4, SJ_INDEX_INT32, SJ_VALUE_F64, pos, crd, val, SJ_TENSOR_COPY, &A.t), SJ_OK);
  const int64_t bpos[] = {0, 1, 3, 4, 6};
  const int32_t bcrd[] = {2, 0, 3, 1, 0, 2};
  ASSERT_EQ(sj_tensor_create_csc(c, 4, 4, SJ_INDEX_INT32, SJ_VALUE_F64, bpos, bcrd, val, SJ_TENSOR_COPY, &B.t), SJ_OK);
  const int64_t dims[] = {2, 3, 4};
  const sj_level_kind kinds[] = {SJ_LEVEL_DENSE, SJ_LEVEL_COMPRESSED, SJ_LEVEL_COMPRESSED};
  const int64_t p1[] = {0, 2, 3}, p2[] = {0, 2, 3, 5};
  const int32_t c1[] = {0, 2, 1}, c2[] = {1, 3, 0, 0, 2};
  const int64_t* xp[] = {nullptr, p1, p2};
  const void* xc[] = {nullptr, c1, c2};
  const double xv[] = {1, 2, 3, 4, 5};
  sj_tensor_desc desc{};
  desc.order = 3;
  desc.dims = dims;
  desc.levels = kinds;
  desc.index_type = SJ_INDEX_INT32;
  desc.value_type = SJ_VALUE_F64;
  desc.pos = xp;
  desc.crd = xc;
  desc.values = xv;
  ASSERT_EQ(sj_tensor_create(c, &desc, SJ_TENSOR_COPY, &X.t), SJ_OK) << sj_last_error_message();
  const int32_t vi[] = {1, 3};
  const double vv[] = {2, 5};
  ASSERT_EQ(sj_tensor_create_sparse_vector(c, 4, 2, SJ_INDEX_INT32, SJ_VALUE_F64, vi, vv, SJ_TENSOR_COPY, &x.t),
            SJ_OK);
  const int64_t ddims[] = {4};
  const double dv[] = {1, 2, 3, 4};
  ASSERT_EQ(sj_tensor_create_dense(c, 1, ddims, SJ_VALUE_F64, dv, SJ_TENSOR_COPY, &d.t), SJ_OK);
}

TEST(EmbeddingAllocator, EveryResultArrayComesFromTheHooks) {
  HookedCtx ctx;
  sj_context* c = ctx.c;
  Blocks& blocks = ctx.blocks;
  {
    H A, B, X, x, d;
    make_operands(c, A, B, X, x, d);
    expect_from_hooks(blocks, A.t, "CSR copy");
    expect_from_hooks(blocks, B.t, "CSC copy");
    expect_from_hooks(blocks, X.t, "CSF copy");
    expect_from_hooks(blocks, x.t, "sparse vector copy");
    expect_from_hooks(blocks, d.t, "dense copy");
    {
      const int64_t r[] = {2, 0, 2}, cc[] = {1, 3, 1};
      const double v[] = {1, 2, 3};
      H coo;
      ASSERT_EQ(sj_tensor_create_coo(c, 3, 4, 3, SJ_INDEX_INT64, SJ_VALUE_F64, r, cc, v, 1, &coo.t), SJ_OK);
      expect_from_hooks(blocks, coo.t, "COO triplets");
    }
    // Files: Matrix Market and FROSTT, read back after writing through the library.
    {
      H m;
      ASSERT_EQ(sj_tensor_read_file(c, sj::test::repo_data("karate.mtx").c_str(), &m.t), SJ_OK);
      expect_from_hooks(blocks, m.t, "read .mtx");
      auto path = std::filesystem::temp_directory_path() / ("sj_alloc_" + std::to_string(::getpid()) + ".tns");
      ASSERT_EQ(sj_tensor_write_file(c, X.t, path.c_str()), SJ_OK) << sj_last_error_message();
      H t;
      ASSERT_EQ(sj_tensor_read_file(c, path.c_str(), &t.t), SJ_OK) << sj_last_error_message();
      std::filesystem::remove(path);
      expect_from_hooks(blocks, t.t, "read .tns");
    }
    // Conversions.
    for (sj_format f : {SJ_FORMAT_CSC, SJ_FORMAT_DCSR, SJ_FORMAT_COO, SJ_FORMAT_DENSE, SJ_FORMAT_DENSE_COL_MAJOR}) {
      H r;
      ASSERT_EQ(sj_tensor_convert(c, A.t, f, nullptr, SJ_INDEX_INT64, &r.t), SJ_OK) << sj_last_error_message();
      expect_from_hooks(blocks, r.t, "convert to format " + std::to_string(f));
    }
    {
      const int order[] = {2, 0, 1};
      H r;
      ASSERT_EQ(sj_tensor_convert(c, X.t, SJ_FORMAT_CSF, order, SJ_INDEX_INT32, &r.t), SJ_OK) << sj_last_error_message();
      expect_from_hooks(blocks, r.t, "CSF in mode order 2,0,1");
    }
    // Operations, each schedule that serves SpGEMM, sparse and dense outputs.
    for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE,
                          SJ_SCHEDULE_GUSTAVSON_HASH, SJ_SCHEDULE_INNER}) {
      for (int dense : {0, 1}) {
        sj_op_options o;
        sj_op_options_init(&o);
        o.schedule = s;
        o.dense_output = dense;
        H r;
        ASSERT_EQ(sj_spgemm(c, A.t, B.t, &o, &r.t), SJ_OK) << sj_last_error_message();
        expect_from_hooks(blocks, r.t, "spgemm schedule " + std::to_string(s) + " dense " + std::to_string(dense));
      }
    }
    {
      H r;
      ASSERT_EQ(sj_spgemm_masked(c, A.t, A.t, B.t, nullptr, &r.t), SJ_OK) << sj_last_error_message();
      expect_from_hooks(blocks, r.t, "masked spgemm");
    }
    for (int dense : {0, 1}) {
      sj_op_options o;
      sj_op_options_init(&o);
      o.dense_output = dense;
      H r;
      ASSERT_EQ(sj_spmspv(c, A.t, x.t, &o, &r.t), SJ_OK) << sj_last_error_message();
      expect_from_hooks(blocks, r.t, "spmspv dense " + std::to_string(dense));
    }
    {
      H r;
      ASSERT_EQ(sj_spmv(c, A.t, d.t, nullptr, &r.t), SJ_OK) << sj_last_error_message();
      expect_from_hooks(blocks, r.t, "spmv");
    }
    {
      H m, a, t1, t2;
      ASSERT_EQ(sj_ewise_mult(c, A.t, B.t, nullptr, &m.t), SJ_OK) << sj_last_error_message();
      expect_from_hooks(blocks, m.t, "ewise mult");
      ASSERT_EQ(sj_ewise_add(c, A.t, B.t, nullptr, &a.t), SJ_OK) << sj_last_error_message();
      expect_from_hooks(blocks, a.t, "ewise add");
      ASSERT_EQ(sj_transpose(c, A.t, &t1.t), SJ_OK);
      expect_from_hooks(blocks, t1.t, "transpose CSR");
      ASSERT_EQ(sj_transpose(c, B.t, &t2.t), SJ_OK);
      expect_from_hooks(blocks, t2.t, "transpose CSC");
    }
    {  // A plan executed twice: each result from the hooks.
      sj_plan* plan = nullptr;
      const sj_tensor* ops[] = {A.t, A.t};
      ASSERT_EQ(sj_plan_create(c, SJ_OP_SPGEMM, ops, 2, nullptr, &plan), SJ_OK);
      for (int k = 0; k < 2; ++k) {
        H r;
        ASSERT_EQ(sj_plan_execute(plan, ops, 2, &r.t), SJ_OK);
        expect_from_hooks(blocks, r.t, "plan execute");
      }
      sj_plan_destroy(plan);
    }
    // Index notation: matrix, vector, scalar, 3-D CSF and 3-D dense results.
    struct E {
      const char* expr;
      std::vector<const sj_tensor*> ops;
      const char* out;
    } cases[] = {
        {"C(i,j) = A(i,k) * B(k,j)", {A.t, B.t}, nullptr},
        {"y(i) = A(i,j) * x(j)", {A.t, x.t}, nullptr},
        {"s = A(i,j) * B(i,j)", {A.t, B.t}, nullptr},
        {"Y(i,j,k) = X(i,j,k) * X(i,j,k)", {X.t}, nullptr},
        {"Y(i,j,r) = X(i,j,k) * A(k,r)", {X.t, A.t}, "csf"},
        {"Y(i,j,k) = X(i,j,k)", {X.t}, "dense"},
    };
    for (auto& e : cases) {
      H r;
      ASSERT_EQ(sj_einsum(c, e.expr, e.ops.data(), static_cast<int>(e.ops.size()), nullptr, e.out, nullptr, &r.t),
                SJ_OK)
          << e.expr << ": " << sj_last_error_message();
      expect_from_hooks(blocks, r.t, e.expr);
    }
  }
}

// Between the two passes the result lives in blocks from the hooks; the fill releases them at
// once (before sj_pending_destroy), for a flat and for a per-level result.
TEST(EmbeddingAllocator, PendingResultsAreHeldInHookBlocksAndReleasedByTheFill) {
  HookedCtx ctx;
  sj_context* c = ctx.c;
  H A, B, X, x, d;
  make_operands(c, A, B, X, x, d);
  struct Case {
    const char* expr;
    std::vector<const sj_tensor*> ops;
  } cases[] = {{"C(i,j) = A(i,k) * A(k,j)", {A.t}}, {"Y(i,j,k) = X(i,j,k) * X(i,j,k)", {X.t}}};
  // A matrix product's plan keeps the product's structure from its second execution on
  // (sharing the result's arrays, kernels/spgemm_structure.hpp): asked not to, so that every
  // block of a result is the caller's to release.
  sj_op_options o;
  sj_op_options_init(&o);
  o.recompute_structure = 1;
  for (auto& k : cases) {
    SCOPED_TRACE(k.expr);
    sj_plan* plan = nullptr;
    ASSERT_EQ(sj_einsum_plan(c, k.expr, k.ops.data(), static_cast<int>(k.ops.size()), nullptr, nullptr, &o, &plan),
              SJ_OK)
        << sj_last_error_message();
    {  // a first run makes whatever the plan keeps with the operands (converted forms)
      H warm;
      ASSERT_EQ(sj_plan_execute(plan, k.ops.data(), static_cast<int>(k.ops.size()), &warm.t), SJ_OK);
    }
    const size_t before = ctx.blocks.count();
    sj_output_sizes s{};
    s.struct_size = sizeof s;
    sj_pending* pending = nullptr;
    ASSERT_EQ(sj_plan_execute_sizes(plan, k.ops.data(), static_cast<int>(k.ops.size()), &s, &pending), SJ_OK);
    EXPECT_GT(ctx.blocks.count(), before) << "the pending result is held in blocks from the hooks";
    sj_output_levels lv{};
    lv.struct_size = sizeof lv;
    ASSERT_EQ(sj_pending_get_levels(pending, &lv), SJ_OK);
    std::vector<std::vector<int64_t>> pos(4);
    std::vector<std::vector<int64_t>> crd(4);  // int64 storage, big enough for either index type
    std::vector<double> values(static_cast<size_t>(lv.values_len));
    sj_output_level_buffers b{};
    b.struct_size = sizeof b;
    for (int l = 0; l < lv.order; ++l) {
      pos[l].resize(static_cast<size_t>(lv.pos_len[l]));
      crd[l].resize(static_cast<size_t>(lv.crd_len[l]));
      b.pos[l] = pos[l].data();
      b.pos_capacity[l] = lv.pos_len[l];
      b.crd[l] = crd[l].data();
      b.crd_capacity[l] = lv.crd_len[l];
    }
    b.values = values.data();
    b.values_capacity = lv.values_len;
    ASSERT_EQ(sj_pending_fill_levels(pending, &b), SJ_OK) << sj_last_error_message();
    EXPECT_EQ(ctx.blocks.count(), before) << "the fill releases the library's copy at once";
    sj_pending_destroy(pending);
    sj_plan_destroy(plan);
  }
}

}  // namespace

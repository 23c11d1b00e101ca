// sj_plan_execute_into: a plan executed straight into the caller's buffers. The SpMSpV
// schedules write their sparse y there without a result tensor; every other result is made and
// copied. Checked here: coordinate types either way, several threads and chunks, a buffer too
// small (nothing written, the sizes needed reported, the retry works), bad arguments, no
// allocation per call on the SpMSpV path, concurrent calls, and explain's execution count.
// (Every operation and schedule is also compared with sj_plan_execute in
// test_caller_outputs.cpp and test_spmspv_schedules.cpp.)
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/schedule_test_util.hpp"

namespace {

using namespace sj::test;

struct Plan {
  sj_plan* p = nullptr;
  ~Plan() { sj_plan_destroy(p); }
};

sj_plan* plan_of(sj_context* c, sj_op op, const std::vector<const sj_tensor*>& ops, const sj_op_options* o) {
  sj_plan* p = nullptr;
  EXPECT_EQ(sj_plan_create(c, op, ops.data(), static_cast<int>(ops.size()), o, &p), SJ_OK) << msg();
  return p;
}

// Buffers for a sparse vector of up to `cap` entries of index type `it`, filled with a pattern.
struct VecBuffers {
  std::vector<unsigned char> crd, val;
  sj_output_buffers b{};
  VecBuffers(int64_t crd_cap, int64_t val_cap, sj_index_type it) {
    crd.assign(static_cast<size_t>(crd_cap) * (it == SJ_INDEX_INT32 ? 4 : 8), 0xAB);
    val.assign(static_cast<size_t>(val_cap) * 8, 0xCD);
    b.struct_size = sizeof b;
    b.crd = crd.empty() ? nullptr : crd.data();
    b.crd_capacity = crd_cap;
    b.values = val.empty() ? nullptr : val.data();
    b.values_capacity = val_cap;
  }
  bool untouched() const {
    for (unsigned char v : crd)
      if (v != 0xAB) return false;
    for (unsigned char v : val)
      if (v != 0xCD) return false;
    return true;
  }
};

sj_output_sizes sizes() {
  sj_output_sizes s{};
  s.struct_size = sizeof s;
  return s;
}

// A CSR handle from random rows (some empty, some long) and a sparse x of the given density.
struct Operands {
  H A, x;
  Operands(sj_context* c, Rng& rng, int64_t m, int64_t n, double density, bool i64) {
    if (i64) {
      A.t = csr_handle(c, random_power_law<int64_t, double>(rng, m, n, 6.0, 1.4, {0.2, 0.1, Values::Real}));
      x.t = vec_handle(c, random_sparse_vector<int64_t, double>(rng, n, density, Values::Real));
    } else {
      A.t = csr_handle(c, random_power_law<int32_t, double>(rng, m, n, 6.0, 1.4, {0.2, 0.1, Values::Real}));
      x.t = vec_handle(c, random_sparse_vector<int32_t, double>(rng, n, density, Values::Real));
    }
  }
};

TEST(ExecuteInto, SpmspvEverySchedulesCoordinateTypesAndThreads) {
  Ctx ctx;
  Rng rng(71);
  for (bool i64 : {false, true})
    for (int threads : {1, 2, 4})
      for (int64_t m : {1, 37, 3000}) {
        Operands in(ctx.c, rng, m, 2 * m + 3, m > 100 ? 0.05 : 0.4, i64);
        const std::vector<const sj_tensor*> ops{in.A.t, in.x.t};
        for (sj_schedule sc : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_PUSH, SJ_SCHEDULE_DENSIFY, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_INNER})
          for (int out_it : {-1, static_cast<int>(SJ_INDEX_INT32), static_cast<int>(SJ_INDEX_INT64)}) {
            const std::string where = std::string(i64 ? "i64" : "i32") + " threads " + std::to_string(threads) +
                                      " m " + std::to_string(m) + " schedule " + std::to_string(sc) +
                                      " output index " + std::to_string(out_it);
            sj_op_options o;
            sj_op_options_init(&o);
            o.schedule = sc;
            o.threads = threads;
            o.output_index_type = out_it;
            Plan plan;
            plan.p = plan_of(ctx.c, SJ_OP_SPMSPV, ops, &o);
            ASSERT_NE(plan.p, nullptr) << where;
            H want;
            ASSERT_EQ(sj_plan_execute(plan.p, ops.data(), 2, &want.t), SJ_OK) << where << ": " << msg();
            for (int k = 0; k < 3; ++k) EXPECT_TRUE(into_matches(plan.p, ops.data(), 2, want.t->t)) << where;
          }
      }
}

// Buffers that can hold a y of every row: the push writes y into them itself (no copy). The
// result equals sj_plan_execute's, and nothing past its length is touched.
TEST(ExecuteInto, BuffersForEveryRowTakeTheKernelsWritesDirectly) {
  Ctx ctx;
  Rng rng(29);
  for (bool i64 : {false, true})
    for (int64_t m : {1, 9, 700})
      for (double d : {0.0, 0.02, 0.3, 1.0}) {
        Operands in(ctx.c, rng, m, m + 5, d, i64);
        const std::vector<const sj_tensor*> ops{in.A.t, in.x.t};
        for (int threads : {1, 2}) {
          const std::string where = std::string(i64 ? "i64" : "i32") + " m " + std::to_string(m) + " density " +
                                    std::to_string(d) + " threads " + std::to_string(threads);
          sj_op_options o;
          sj_op_options_init(&o);
          o.schedule = SJ_SCHEDULE_PUSH;
          o.threads = threads;
          Plan plan;
          plan.p = plan_of(ctx.c, SJ_OP_SPMSPV, ops, &o);
          H want;
          ASSERT_EQ(sj_plan_execute(plan.p, ops.data(), 2, &want.t), SJ_OK) << where << ": " << msg();
          const int64_t nnz = want.t->t.nnz();
          const size_t isz = i64 ? 8 : 4;
          for (int round = 0; round < 2; ++round) {
            VecBuffers buf(m + 2, m + 2, i64 ? SJ_INDEX_INT64 : SJ_INDEX_INT32);
            sj_output_sizes s = sizes();
            ASSERT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &buf.b, &s), SJ_OK) << where << ": " << msg();
            ASSERT_EQ(s.values_len, nnz) << where;
            ASSERT_EQ(s.crd_len, nnz) << where;
            if (nnz) {
              EXPECT_EQ(std::memcmp(buf.crd.data(), want.t->t.levels[0].crd.data(), isz * nnz), 0) << where;
              EXPECT_EQ(std::memcmp(buf.val.data(), want.t->t.values.data(), 8 * nnz), 0) << where;
            }
            for (size_t k = isz * nnz; k < buf.crd.size(); ++k) ASSERT_EQ(buf.crd[k], 0xAB) << where << " crd byte " << k;
            for (size_t k = 8 * nnz; k < buf.val.size(); ++k) ASSERT_EQ(buf.val[k], 0xCD) << where << " value byte " << k;
          }
        }
      }
}

TEST(ExecuteInto, TooSmallBuffersWriteNothingAndReportTheSizes) {
  Ctx ctx;
  Rng rng(5);
  Operands in(ctx.c, rng, 200, 150, 0.3, false);
  const std::vector<const sj_tensor*> ops{in.A.t, in.x.t};
  for (sj_schedule sc : {SJ_SCHEDULE_PUSH, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_REFERENCE}) {  // direct and copied
    SCOPED_TRACE(std::to_string(sc));
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = sc;
    Plan plan;
    plan.p = plan_of(ctx.c, SJ_OP_SPMSPV, ops, &o);
    H want;
    ASSERT_EQ(sj_plan_execute(plan.p, ops.data(), 2, &want.t), SJ_OK) << msg();
    const int64_t nnz = want.t->t.nnz();
    ASSERT_GT(nnz, 1);
    for (int which = 0; which < 2; ++which) {  // crd one short, then values one short
      VecBuffers buf(nnz - (which == 0), nnz - (which == 1), SJ_INDEX_INT32);
      sj_output_sizes s = sizes();
      EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &buf.b, &s), SJ_ERR_INVALID_ARGUMENT);
      EXPECT_NE(std::string(msg()).find(which == 0 ? "crd_capacity is" : "values_capacity is"), std::string::npos)
          << msg();
      EXPECT_TRUE(buf.untouched());
      EXPECT_EQ(s.crd_len, nnz);
      EXPECT_EQ(s.values_len, nnz);
      EXPECT_EQ(s.format, SJ_FORMAT_SPARSE_VECTOR);
      EXPECT_EQ(s.dims[0], 200);
    }
    {  // NULL where the result has entries
      VecBuffers buf(nnz, nnz, SJ_INDEX_INT32);
      buf.b.crd = nullptr;
      sj_output_sizes s = sizes();
      EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &buf.b, &s), SJ_ERR_NULL_POINTER);
      EXPECT_TRUE(buf.untouched());
      EXPECT_EQ(s.crd_len, nnz);
    }
    // No buffers at all: the sizes still come back, and the retry with them succeeds.
    VecBuffers none(0, 0, SJ_INDEX_INT32);
    sj_output_sizes s = sizes();
    EXPECT_NE(sj_plan_execute_into(plan.p, ops.data(), 2, &none.b, &s), SJ_OK);
    ASSERT_EQ(s.values_len, nnz);
    EXPECT_TRUE(into_matches(plan.p, ops.data(), 2, want.t->t));
  }
  // A result with no entries needs no arrays at all.
  H empty_x;
  std::vector<int32_t> no_idx;
  std::vector<double> no_val;
  ASSERT_EQ(sj_tensor_create_sparse_vector(ctx.c, 150, 0, SJ_INDEX_INT32, SJ_VALUE_F64, no_idx.data(), no_val.data(),
                                           SJ_TENSOR_COPY, &empty_x.t),
            SJ_OK);
  const std::vector<const sj_tensor*> ops0{in.A.t, empty_x.t};
  Plan plan0;
  plan0.p = plan_of(ctx.c, SJ_OP_SPMSPV, ops0, nullptr);
  VecBuffers none(0, 0, SJ_INDEX_INT32);
  sj_output_sizes s = sizes();
  ASSERT_EQ(sj_plan_execute_into(plan0.p, ops0.data(), 2, &none.b, &s), SJ_OK) << msg();
  EXPECT_EQ(s.values_len, 0);
  EXPECT_EQ(s.crd_len, 0);
}

TEST(ExecuteInto, CopiedResultsTooSmallWriteNothing) {
  // SpGEMM has no direct way into the buffers: its result is made, then checked and copied.
  Ctx ctx;
  Rng rng(9);
  H A;
  A.t = csr_handle(ctx.c, random_matrix<int32_t, double>(rng, 30, 30, Values::Real));
  const std::vector<const sj_tensor*> ops{A.t, A.t};
  Plan plan;
  plan.p = plan_of(ctx.c, SJ_OP_SPGEMM, ops, nullptr);
  H want;
  ASSERT_EQ(sj_plan_execute(plan.p, ops.data(), 2, &want.t), SJ_OK);
  std::vector<int64_t> pos(30, -7);  // one short of rows + 1
  std::vector<int32_t> crd(static_cast<size_t>(want.t->t.nnz()) + 1, -7);
  std::vector<double> val(crd.size(), -7);
  sj_output_buffers b{};
  b.struct_size = sizeof b;
  b.pos = pos.data();
  b.pos_capacity = 30;
  b.crd = crd.data();
  b.crd_capacity = static_cast<int64_t>(crd.size());
  b.values = val.data();
  b.values_capacity = static_cast<int64_t>(val.size());
  sj_output_sizes s = sizes();
  EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &b, &s), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(msg()).find("pos_capacity is 30"), std::string::npos) << msg();
  EXPECT_EQ(s.pos_len, 31);
  EXPECT_EQ(s.crd_len, want.t->t.nnz());
  for (int64_t v : pos) EXPECT_EQ(v, -7);
  for (int32_t v : crd) EXPECT_EQ(v, -7);
  EXPECT_TRUE(into_matches(plan.p, ops.data(), 2, want.t->t));
}

TEST(ExecuteInto, BadArgumentsAreRefused) {
  Ctx ctx;
  Rng rng(3);
  Operands in(ctx.c, rng, 20, 20, 0.5, false);
  const std::vector<const sj_tensor*> ops{in.A.t, in.x.t};
  Plan plan;
  plan.p = plan_of(ctx.c, SJ_OP_SPMSPV, ops, nullptr);
  VecBuffers buf(20, 20, SJ_INDEX_INT32);
  sj_output_sizes s = sizes();
  EXPECT_EQ(sj_plan_execute_into(nullptr, ops.data(), 2, &buf.b, &s), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, nullptr, &s), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &buf.b, nullptr), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_plan_execute_into(plan.p, nullptr, 2, &buf.b, &s), SJ_ERR_NULL_POINTER);
  EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 1, &buf.b, &s), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 4, &buf.b, &s), SJ_ERR_INVALID_ARGUMENT);
  const std::vector<const sj_tensor*> null_x{in.A.t, nullptr};
  EXPECT_EQ(sj_plan_execute_into(plan.p, null_x.data(), 2, &buf.b, &s), SJ_ERR_NULL_POINTER);
  sj_output_sizes bad_s = sizes();
  bad_s.struct_size = 8;
  EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &buf.b, &bad_s), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(msg()).find("sizes.struct_size"), std::string::npos) << msg();
  VecBuffers bad_b(20, 20, SJ_INDEX_INT32);
  bad_b.b.struct_size = 8;
  EXPECT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &bad_b.b, &s), SJ_ERR_INVALID_ARGUMENT);
  // Operands unlike the planned ones (x of another length; x and A swapped).
  Operands other(ctx.c, rng, 20, 21, 0.5, false);
  const std::vector<const sj_tensor*> wrong{in.A.t, other.x.t};
  EXPECT_EQ(sj_plan_execute_into(plan.p, wrong.data(), 2, &buf.b, &s), SJ_ERR_SHAPE_MISMATCH);
  const std::vector<const sj_tensor*> swapped{in.x.t, in.A.t};
  EXPECT_EQ(sj_plan_execute_into(plan.p, swapped.data(), 2, &buf.b, &s), SJ_ERR_SHAPE_MISMATCH);
  EXPECT_TRUE(buf.untouched());
  EXPECT_TRUE(bad_b.untouched());
}

// The context's allocator counts its calls: after the first execution, SpMSpV into the caller's
// buffers asks it for nothing, while sj_plan_execute allocates its result every time.
std::atomic<int64_t> g_allocations{0};
void* counting_alloc(size_t size, size_t align, void*) {
  g_allocations.fetch_add(1);
  return std::aligned_alloc(align, (size + align - 1) / align * align);
}
void counting_free(void* p, size_t, void*) { std::free(p); }

TEST(ExecuteInto, SpmspvAllocatesNothingPerCall) {
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.allocator = {counting_alloc, counting_free, nullptr};
  cfg.disable_disk_cache = 1;
  cfg.threads = 1;
  sj_context* c = nullptr;
  ASSERT_EQ(sj_context_create(&cfg, &c), SJ_OK) << msg();
  {
    Rng rng(17);
    Operands in(c, rng, 500, 400, 0.05, false);
    const std::vector<const sj_tensor*> ops{in.A.t, in.x.t};
    for (sj_schedule sc : {SJ_SCHEDULE_PUSH, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_DENSIFY})
     for (int dense = 0; dense < 2; ++dense) {
      SCOPED_TRACE(std::to_string(sc) + (dense ? " dense" : " sparse"));
      sj_op_options o;
      sj_op_options_init(&o);
      o.schedule = sc;
      o.dense_output = dense;
      Plan plan;
      plan.p = plan_of(c, SJ_OP_SPMSPV, ops, &o);
      VecBuffers buf(500, 500, SJ_INDEX_INT32);
      sj_output_sizes s = sizes();
      ASSERT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &buf.b, &s), SJ_OK) << msg();
      ASSERT_GT(s.values_len, 0);
      const int64_t before = g_allocations.load();
      for (int k = 0; k < 50; ++k) ASSERT_EQ(sj_plan_execute_into(plan.p, ops.data(), 2, &buf.b, &s), SJ_OK);
      EXPECT_EQ(g_allocations.load(), before) << "allocations in 50 calls into the caller's buffers";
      // The control: the ordinary execution allocates its result from the same allocator.
      for (int k = 0; k < 5; ++k) {
        sj_tensor* y = nullptr;
        ASSERT_EQ(sj_plan_execute(plan.p, ops.data(), 2, &y), SJ_OK);
        sj_tensor_destroy(y);
      }
      EXPECT_GT(g_allocations.load(), before) << "the control made no allocation: the check above proves nothing";
    }
  }
  ASSERT_EQ(sj_context_destroy(c), SJ_OK) << msg();
}

// The push's direct route (a serial push written into the caller's buffers, none of the
// general layers) is taken exactly where it applies, and gives sj_plan_execute's bits.
TEST(ExecuteInto, DirectRouteOnlyWhereItApplies) {
  Ctx ctx;
  Rng rng(41);
  for (bool i64 : {false, true}) {
    const std::string where = i64 ? "i64" : "i32";
    Operands in(ctx.c, rng, 300, 400, 0.05, i64);
    const std::vector<const sj_tensor*> ops{in.A.t, in.x.t};
    auto push_plan = [&](auto&& set) {
      sj_op_options o;
      sj_op_options_init(&o);
      o.schedule = SJ_SCHEDULE_PUSH;
      o.threads = 1;
      set(o);
      return plan_of(ctx.c, SJ_OP_SPMSPV, ops, &o);
    };
    Plan plan;
    plan.p = push_plan([](sj_op_options&) {});
    H want;
    ASSERT_EQ(sj_plan_execute(plan.p, ops.data(), 2, &want.t), SJ_OK) << msg();
    ASSERT_GT(want.t->t.nnz(), 0) << where;
    ASSERT_LT(want.t->t.nnz(), 300) << where;  // so that exactly sized buffers are smaller than m
    for (int k = 0; k < 2; ++k) {  // the first builds A's CSC copy, the second reuses it
      EXPECT_TRUE(into_every_row_matches(plan.p, ops.data(), 2, want.t->t)) << where;
      EXPECT_TRUE(last_execution_direct(plan.p)) << where;
    }
    // Buffers that might not hold every result take the general path.
    EXPECT_TRUE(into_matches(plan.p, ops.data(), 2, want.t->t)) << where;
    EXPECT_FALSE(last_execution_direct(plan.p)) << where;
    // sj_plan_execute takes the route into a new result, and explain says so.
    H again;
    ASSERT_EQ(sj_plan_execute(plan.p, ops.data(), 2, &again.t), SJ_OK) << msg();
    EXPECT_TRUE(last_execution_direct(plan.p)) << where;
    EXPECT_TRUE(same_bits(want.t->t, again.t->t)) << where;
    // Other handles of the same shapes (other entries and values): their own CSC copy.
    Operands other(ctx.c, rng, 300, 400, 0.05, i64);
    const std::vector<const sj_tensor*> ops2{other.A.t, other.x.t};
    H want2;
    {
      Plan p2;
      p2.p = push_plan([](sj_op_options&) {});
      ASSERT_EQ(sj_plan_execute(p2.p, ops2.data(), 2, &want2.t), SJ_OK) << msg();
    }
    EXPECT_TRUE(into_every_row_matches(plan.p, ops2.data(), 2, want2.t->t)) << where;
    EXPECT_TRUE(last_execution_direct(plan.p)) << where;
    // A dense y: taken into a values buffer of m, not into a shorter one (which is refused
    // with nothing written, by the general path's check).
    {
      Plan p;
      p.p = push_plan([](sj_op_options& o) { o.dense_output = 1; });
      H w;
      ASSERT_EQ(sj_plan_execute(p.p, ops.data(), 2, &w.t), SJ_OK) << msg();
      EXPECT_TRUE(into_matches(p.p, ops.data(), 2, w.t->t)) << where << " dense";
      EXPECT_TRUE(last_execution_direct(p.p)) << where << " dense";
      VecBuffers shorter(0, 299, SJ_INDEX_INT32);
      sj_output_sizes s = sizes();
      EXPECT_EQ(sj_plan_execute_into(p.p, ops.data(), 2, &shorter.b, &s), SJ_ERR_INVALID_ARGUMENT) << where;
      EXPECT_EQ(s.values_len, 300) << where;
      EXPECT_TRUE(shorter.untouched()) << where;
    }
    // Options and operands the route does not serve: it is not even offered.
    const char* not_offered[] = {"i64 output", "", "transposed A"};
    for (int c = 0; c < 3; ++c) {
      if ((c == 0 && i64) || c == 1) continue;
      Plan p;
      if (c == 0) p.p = push_plan([&](sj_op_options& o) { o.output_index_type = SJ_INDEX_INT64; });
      if (c == 2) {  // A^T x needs an x of length m
        H xt;
        xt.t = i64 ? vec_handle(ctx.c, random_sparse_vector<int64_t, double>(rng, 300, 0.05, Values::Real))
                   : vec_handle(ctx.c, random_sparse_vector<int32_t, double>(rng, 300, 0.05, Values::Real));
        const std::vector<const sj_tensor*> opsT{in.A.t, xt.t};
        sj_op_options o;
        sj_op_options_init(&o);
        o.schedule = SJ_SCHEDULE_PUSH;
        o.transpose_a = 1;
        p.p = plan_of(ctx.c, SJ_OP_SPMSPV, opsT, &o);
        H w;
        ASSERT_EQ(sj_plan_execute(p.p, opsT.data(), 2, &w.t), SJ_OK) << msg();
        EXPECT_TRUE(into_every_row_matches(p.p, opsT.data(), 2, w.t->t)) << where << " " << not_offered[c];
      } else {
        H w;
        ASSERT_EQ(sj_plan_execute(p.p, ops.data(), 2, &w.t), SJ_OK) << msg();
        EXPECT_TRUE(into_every_row_matches(p.p, ops.data(), 2, w.t->t)) << where << " " << not_offered[c];
      }
      const char* json = nullptr;
      ASSERT_EQ(sj_plan_explain(p.p, &json), SJ_OK);
      EXPECT_NE(std::string(json).find("\"direct_route\":false"), std::string::npos) << where << " " << not_offered[c];
    }
    // A given column-wise: the push reads it in place through the general path.
    H Acsc;
    ASSERT_EQ(sj_tensor_convert(ctx.c, in.A.t, SJ_FORMAT_CSC, nullptr, i64 ? SJ_INDEX_INT64 : SJ_INDEX_INT32, &Acsc.t),
              SJ_OK);
    const std::vector<const sj_tensor*> opsC{Acsc.t, in.x.t};
    Plan pc;
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = SJ_SCHEDULE_PUSH;
    pc.p = plan_of(ctx.c, SJ_OP_SPMSPV, opsC, &o);
    EXPECT_TRUE(into_every_row_matches(pc.p, opsC.data(), 2, want.t->t)) << where << " CSC A";
    EXPECT_FALSE(last_execution_direct(pc.p)) << where << " CSC A";
  }
  // Work for several threads takes the general (parallel) path; small work on the same plan
  // takes the route.
  Operands big(ctx.c, rng, 20000, 20000, 0.5, false);
  Operands small(ctx.c, rng, 20000, 20000, 0.0005, false);
  const std::vector<const sj_tensor*> opsB{big.A.t, big.x.t};
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_PUSH;
  o.threads = 2;
  Plan plan;
  plan.p = plan_of(ctx.c, SJ_OP_SPMSPV, opsB, &o);
  H want;
  ASSERT_EQ(sj_plan_execute(plan.p, opsB.data(), 2, &want.t), SJ_OK) << msg();
  EXPECT_TRUE(into_every_row_matches(plan.p, opsB.data(), 2, want.t->t));
  EXPECT_FALSE(last_execution_direct(plan.p));
  const std::vector<const sj_tensor*> opsS{big.A.t, small.x.t};
  H want_small;
  ASSERT_EQ(sj_plan_execute(plan.p, opsS.data(), 2, &want_small.t), SJ_OK) << msg();
  EXPECT_TRUE(into_every_row_matches(plan.p, opsS.data(), 2, want_small.t->t));
  EXPECT_TRUE(last_execution_direct(plan.p));
}

TEST(ExecuteInto, ConcurrentCallsIntoTheirOwnBuffers) {
  Ctx ctx;
  Rng rng(23);
  Operands in(ctx.c, rng, 2000, 1500, 0.05, false);
  const std::vector<const sj_tensor*> ops{in.A.t, in.x.t};
  sj_op_options o;
  sj_op_options_init(&o);
  o.threads = 2;
  Plan plan;
  plan.p = plan_of(ctx.c, SJ_OP_SPMSPV, ops, &o);
  H want;
  ASSERT_EQ(sj_plan_execute(plan.p, ops.data(), 2, &want.t), SJ_OK);
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      for (int k = 0; k < 25; ++k)  // exactly sized buffers, and room for every row (the direct route)
        if (!(k % 2 ? into_every_row_matches : into_matches)(plan.p, ops.data(), 2, want.t->t)) bad.fetch_add(1);
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(bad.load(), 0);
  // Every execution counted (explain's time is sampled, the count is not).
  const char* json = nullptr;
  ASSERT_EQ(sj_plan_explain(plan.p, &json), SJ_OK);
  EXPECT_NE(std::string(json).find("\"executions\":101"), std::string::npos) << json;
  EXPECT_EQ(std::string(json).find("\"last_execute\":0,"), std::string::npos) << json;
}

}  // namespace

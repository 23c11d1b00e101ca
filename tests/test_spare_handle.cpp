// A destroyed result handle is kept by its thread for the next result (capi/spare_handle.hpp),
// and a kept sparse vector's block is refilled in place when the next one fits
// (init_sparse_vector). Checked here: results of growing and shrinking sizes stay equal to the
// reference kernel's; the block really is reused where it fits, and never kept past its size
// limit or while anything else holds it (a pending caller-owned copy, an operand's derived
// forms, a copy of the tensor); a host's allocator hooks still see every block; the memory cap
// still applies; results made on one thread and destroyed on another, on several threads at
// once, and across contexts; a thread's kept result freed when it ends; a double destroy.
// Under AddressSanitizer nothing is kept, so the reuse checks are skipped there and the rest
// still runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/reference_spmspv.hpp"
#include "src/sanitizers.hpp"
#include "src/semiring.hpp"
#include "tests/schedule_test_util.hpp"

namespace {

using namespace sj::test;
using Vec = sj::SpVecResult<int32_t, double>;
using Mat = sj::CsResult<int32_t, double>;

struct Plan {
  sj_plan* p = nullptr;
  ~Plan() { sj_plan_destroy(p); }
};

Vec reference_y(const Mat& a, const Vec& x) { return sj::ref::spmspv<sj::PlusTimes<double>>(view(a), view(x)); }

::testing::AssertionResult equals(const sj_tensor* y, const Vec& want) {
  const sj::Tensor t = sj::to_tensor(sj::default_allocator(), want, sj::ValueType::F64);
  return same_bits(y->t, t);
}

// x with exactly `k` entries, spread over [0, n).
Vec x_of(Rng& rng, int64_t n, int64_t k) {
  Vec x;
  x.n = n;
  for (int64_t j = 0; j < k; ++j) {
    x.idx.push_back(static_cast<int32_t>(j * n / k));
    x.val.push_back(1.0 + static_cast<double>(rng.uniform_int(0, 7)));
  }
  return x;
}

// A: 600 x 400, 5 entries a row on average, some rows empty.
struct Problem {
  Mat a;
  H A;
  Plan plan;
  Problem(sj_context* c, Rng& rng) {
    a = random_uniform<int32_t, double>(rng, 600, 400, 0.0125, {0.2, 0.0, Values::Real});
    A.t = csr_handle(c, a);
    const Vec x0 = x_of(rng, 400, 4);
    H x;
    x.t = vec_handle(c, x0);
    const sj_tensor* ops[2] = {A.t, x.t};
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = SJ_SCHEDULE_PUSH;  // the route that writes y in place (push_direct)
    EXPECT_EQ(sj_plan_create(c, SJ_OP_SPMSPV, ops, 2, &o, &plan.p), SJ_OK) << msg();
  }
  // y = A x through the plan; the caller destroys it.
  sj_tensor* run(sj_context* c, const Vec& xv) {
    H x;
    x.t = vec_handle(c, xv);
    const sj_tensor* ops[2] = {A.t, x.t};
    sj_tensor* y = nullptr;
    EXPECT_EQ(sj_plan_execute(plan.p, ops, 2, &y), SJ_OK) << msg();
    return y;
  }
};

TEST(SpareHandle, ResultsOfChangingSizesMatchTheReference) {
  Ctx ctx;
  Rng rng(5);
  Problem p(ctx.c, rng);
  // Empty x (an empty y), one entry, growing, past the kept block's limit, shrinking again.
  for (int64_t k : {0, 1, 2, 1, 7, 40, 400, 40, 3, 0, 200, 1}) {
    const Vec x = x_of(rng, 400, k);
    sj_tensor* y = p.run(ctx.c, x);
    ASSERT_NE(y, nullptr);
    EXPECT_TRUE(equals(y, reference_y(p.a, x))) << "x with " << k << " entries";
    sj_tensor_destroy(y);
  }
}

TEST(SpareHandle, ABlockIsRefilledOnlyWhereTheNewVectorFits) {
  if (sj::kUnderAsan) GTEST_SKIP() << "nothing is kept under AddressSanitizer";
  Ctx ctx;
  Rng rng(6);
  Problem p(ctx.c, rng);
  const Vec x3 = x_of(rng, 400, 3), x2 = x_of(rng, 400, 2), xbig = x_of(rng, 400, 300);
  // The block is watched, not compared by address: malloc may hand a freed one out again.
  sj_tensor* y = p.run(ctx.c, x3);
  ASSERT_TRUE(last_execution_direct(p.plan.p)) << "the push's direct route writes y in place";
  const std::weak_ptr<void> block = y->t.levels[0].pos.watch_owner();
  const int64_t n3 = y->t.nnz();
  sj_tensor_destroy(y);
  EXPECT_FALSE(block.expired()) << "the destroyed result is kept";
  y = p.run(ctx.c, x3);  // the same size: the same block
  EXPECT_EQ(y->t.levels[0].pos.watch_owner().lock(), block.lock());
  EXPECT_TRUE(equals(y, reference_y(p.a, x3)));
  sj_tensor_destroy(y);
  y = p.run(ctx.c, x2);  // fewer entries: still the same block
  ASSERT_LE(y->t.nnz(), n3);
  EXPECT_EQ(y->t.levels[0].pos.watch_owner().lock(), block.lock());
  EXPECT_TRUE(equals(y, reference_y(p.a, x2)));
  sj_tensor_destroy(y);
  y = p.run(ctx.c, xbig);  // many more: a new block, and the right result
  ASSERT_GT(y->t.nnz(), 64);
  EXPECT_TRUE(block.expired());
  EXPECT_TRUE(equals(y, reference_y(p.a, xbig)));
  sj_tensor_destroy(y);
}

TEST(SpareHandle, ABlockStillHeldElsewhereIsNeverRefilled) {
  Ctx ctx;
  Rng rng(7);
  Problem p(ctx.c, rng);
  const Vec x1 = x_of(rng, 400, 5), x2 = x_of(rng, 400, 6), x3 = x_of(rng, 400, 4);
  const Vec y2 = reference_y(p.a, x2);

  // A pending caller-owned result shares the arrays of the handle it came from, which is
  // destroyed inside sj_plan_execute_sizes; later results must not write into them.
  H x;
  x.t = vec_handle(ctx.c, x2);
  const sj_tensor* ops[2] = {p.A.t, x.t};
  sj_pending* pending = nullptr;
  sj_output_sizes sz{};
  sz.struct_size = sizeof sz;
  ASSERT_EQ(sj_plan_execute_sizes(p.plan.p, ops, 2, &sz, &pending), SJ_OK) << msg();
  for (int r = 0; r < 3; ++r) sj_tensor_destroy(p.run(ctx.c, x3));
  std::vector<int32_t> crd(static_cast<size_t>(sz.crd_len) + 1);
  std::vector<double> val(static_cast<size_t>(sz.values_len) + 1);
  sj_output_buffers b{};
  b.struct_size = sizeof b;
  b.crd = crd.data();
  b.crd_capacity = sz.crd_len;
  b.values = val.data();
  b.values_capacity = sz.values_len;
  ASSERT_EQ(sj_pending_fill(pending, &b), SJ_OK) << msg();
  sj_pending_destroy(pending);
  ASSERT_EQ(sz.crd_len, static_cast<int64_t>(y2.idx.size()));
  EXPECT_EQ(std::memcmp(crd.data(), y2.idx.data(), y2.idx.size() * sizeof(int32_t)), 0);
  EXPECT_EQ(std::memcmp(val.data(), y2.val.data(), y2.val.size() * sizeof(double)), 0);

  // A result used as an operand (it then has derived forms) and destroyed: not kept, and the
  // next results are right.
  sj_tensor* used = p.run(ctx.c, x1);
  H B;  // 5 x 600, taking y as its x
  B.t = csr_handle(ctx.c, random_uniform<int32_t, double>(rng, 5, 600, 0.1, {0.0, 0.0, Values::Real}));
  sj_tensor* z = nullptr;
  ASSERT_EQ(sj_spmspv(ctx.c, B.t, used, nullptr, &z), SJ_OK) << msg();
  EXPECT_NE(used->t.derived, nullptr);
  const std::weak_ptr<void> used_block = used->t.levels[0].pos.watch_owner();
  sj_tensor_destroy(used);
  EXPECT_TRUE(used_block.expired()) << "a result used as an operand is not kept";
  sj_tensor* y = p.run(ctx.c, x3);
  EXPECT_TRUE(equals(y, reference_y(p.a, x3)));
  sj_tensor_destroy(y);
  sj_tensor_destroy(z);
}

TEST(SpareHandle, ABlockOverTheLimitIsNotKept) {
  Ctx ctx;
  Rng rng(11);
  // y of ~3000 entries: 64 + 12 KB of coordinates + 24 KB of values, over the 16 KiB kept.
  const Mat a = random_uniform<int32_t, double>(rng, 4000, 300, 0.02, {0.0, 0.0, Values::Real});
  H A;
  A.t = csr_handle(ctx.c, a);
  const Vec x = x_of(rng, 300, 100);
  H xh;
  xh.t = vec_handle(ctx.c, x);
  sj_tensor* y = nullptr;
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, xh.t, nullptr, &y), SJ_OK) << msg();
  ASSERT_GT(y->t.nnz(), 1400);
  EXPECT_TRUE(equals(y, reference_y(a, x)));
  const std::weak_ptr<void> block = y->t.levels[0].pos.watch_owner();
  sj_tensor_destroy(y);
  EXPECT_TRUE(block.expired());
}

TEST(SpareHandle, DestroyedTwiceIsHarmless) {
  // A caller's bug, but one that glibc used to report as a double free; with the kept handle it
  // must not hand the thread's next result a freed handle. (Under ASan nothing is kept, and
  // ASan reports the second destroy, as it should.)
  if (sj::kUnderAsan) GTEST_SKIP() << "a real double free there";
  Ctx ctx;
  Rng rng(12);
  Problem p(ctx.c, rng);
  const Vec x = x_of(rng, 400, 3);
  sj_tensor* y = p.run(ctx.c, x);
  sj_tensor_destroy(y);
  sj_tensor_destroy(y);
  for (int r = 0; r < 3; ++r) {
    sj_tensor* z = p.run(ctx.c, x);
    EXPECT_TRUE(equals(z, reference_y(p.a, x)));
    sj_tensor_destroy(z);
  }
}

// The host's hooks (test_embedding_allocator.cpp has the full check of every array).
struct Counted {
  std::mutex mutex;
  std::map<void*, size_t> live;
  int64_t allocations = 0;
};
void* counted_alloc(size_t size, size_t align, void* user) {
  auto* c = static_cast<Counted*>(user);
  void* p = std::aligned_alloc(align, (size + align - 1) / align * align);
  std::lock_guard lock(c->mutex);
  c->live[p] = size;
  ++c->allocations;
  return p;
}
void counted_free(void* p, size_t, void* user) {
  auto* c = static_cast<Counted*>(user);
  {
    std::lock_guard lock(c->mutex);
    c->live.erase(p);
  }
  std::free(p);
}

TEST(SpareHandle, AHostAllocatorSeesEveryResultBlock) {
  Counted counted;
  Rng rng(8);
  Ctx plain;  // its results are kept between calls on this thread
  Problem p0(plain.c, rng);
  {
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.allocator = {counted_alloc, counted_free, &counted};
    cfg.disable_disk_cache = 1;
    sj_context* hooked = nullptr;
    ASSERT_EQ(sj_context_create(&cfg, &hooked), SJ_OK) << msg();
    {
      Problem p(hooked, rng);
      const Vec x = x_of(rng, 400, 3);
      const Vec want = reference_y(p.a, x);
      sj_tensor_destroy(p.run(hooked, x));  // the first call also makes A's CSC copy, kept with A
      for (int r = 0; r < 6; ++r) {
        sj_tensor_destroy(p0.run(plain.c, x));  // leaves a kept default-allocator result
        const int64_t before = counted.allocations;
        const size_t live_before = counted.live.size();
        sj_tensor* y = p.run(hooked, x);
        EXPECT_GT(counted.allocations, before) << "a hooked context's result must come from its hooks";
        EXPECT_TRUE(equals(y, want));
        sj_tensor_destroy(y);
        EXPECT_EQ(counted.live.size(), live_before) << "a hooked context's result must go back to its hooks";
      }
    }
    ASSERT_EQ(sj_context_destroy(hooked), SJ_OK) << msg();
  }
  EXPECT_TRUE(counted.live.empty());
}

// init_sparse_vector on a kept vector, below the C API.
sj::Tensor vector_of(const sj::Allocator& alloc, int64_t nnz) {
  sj::Tensor t;
  sj::init_sparse_vector(t, alloc, 1000, nnz, sj::IndexType::I32, sj::ValueType::F64);
  for (int64_t k = 0; k < nnz; ++k) {
    t.levels[0].crd.as_mut<int32_t>()[k] = static_cast<int32_t>(3 * k);
    t.values.as_mut<double>()[k] = 0.5 * static_cast<double>(k);
  }
  return t;
}

TEST(SpareHandle, RefillKeepsTheLayoutAndTheMemoryCap) {
  if (sj::kUnderAsan) GTEST_SKIP() << "nothing is refilled under AddressSanitizer";
  const sj::Allocator& alloc = sj::default_allocator();
  sj::Tensor t = vector_of(alloc, 50);  // block: 64 + 256 + 400 bytes
  ASSERT_TRUE(sj::is_refillable_sparse_vector(t, 1u << 14));
  EXPECT_FALSE(sj::is_refillable_sparse_vector(t, 700)) << "over the size asked for";
  const void* block = t.levels[0].pos.data();
  const std::weak_ptr<void> owner = t.levels[0].pos.watch_owner();  // a freed block's address may come back
  sj::init_sparse_vector(t, alloc, 77, 40, sj::IndexType::I32, sj::ValueType::F64);
  EXPECT_FALSE(owner.expired());
  EXPECT_EQ(t.levels[0].pos.data(), block);
  EXPECT_EQ(t.dims[0], 77);
  EXPECT_EQ(t.nnz(), 40);
  EXPECT_EQ(t.levels[0].pos.as<int64_t>()[0], 0);
  EXPECT_EQ(t.levels[0].crd.as<char>(), static_cast<const char*>(block) + 64);
  EXPECT_EQ(t.values.as<char>(), static_cast<const char*>(block) + 64 + 192);  // 40 * 4 rounded to 64
  EXPECT_EQ(t.values.bytes(), 40u * 8);
  // Types change with the layout: 40 i64 coordinates and f32 values (544 bytes) still fit the
  // 576 the 40-entry vector used.
  sj::init_sparse_vector(t, alloc, 77, 40, sj::IndexType::I64, sj::ValueType::F32);
  EXPECT_EQ(t.levels[0].pos.data(), block);
  EXPECT_EQ(t.index_type, sj::IndexType::I64);
  EXPECT_EQ(t.values.as<char>(), static_cast<const char*>(block) + 64 + 320);
  // Larger than the block: a new one.
  sj::init_sparse_vector(t, alloc, 77, 60, sj::IndexType::I32, sj::ValueType::F64);
  EXPECT_TRUE(owner.expired());
  EXPECT_EQ(t.nnz(), 60);

  // A cap the new vector is over fails even where the block would hold it, and leaves t as
  // it was.
  sj::Tensor u = vector_of(alloc, 50);
  sj::Allocator capped;
  capped.set_memory_cap(300);
  const void* u_block = u.levels[0].pos.data();
  const std::weak_ptr<void> u_owner = u.levels[0].pos.watch_owner();
  try {
    sj::init_sparse_vector(u, capped, 1000, 40, sj::IndexType::I32, sj::ValueType::F64);
    ADD_FAILURE() << "no SJ_ERR_OUT_OF_MEMORY";
  } catch (const sj::Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_OUT_OF_MEMORY);
  }
  EXPECT_FALSE(u_owner.expired());
  EXPECT_EQ(u.levels[0].pos.data(), u_block);
  EXPECT_EQ(u.nnz(), 50);
}

TEST(SpareHandle, NoRefillOfSharedBlocksOrForeignAllocators) {
  const sj::Allocator& alloc = sj::default_allocator();
  {  // a copy of the tensor holds the block
    sj::Tensor t = vector_of(alloc, 10);
    const sj::Tensor copy = t;
    EXPECT_FALSE(sj::is_refillable_sparse_vector(t, 1u << 14));
    sj::init_sparse_vector(t, alloc, 1000, 5, sj::IndexType::I32, sj::ValueType::F64);
    EXPECT_FALSE(t.levels[0].pos.shares_owner(copy.levels[0].pos));
    EXPECT_EQ(copy.nnz(), 10);
    EXPECT_EQ(copy.values.as<double>()[9], 4.5);
  }
  {  // one array held alone
    sj::Tensor t = vector_of(alloc, 10);
    const sj::Buffer values = t.values;
    EXPECT_FALSE(sj::is_refillable_sparse_vector(t, 1u << 14));
  }
  {  // derived forms
    sj::Tensor t = vector_of(alloc, 10);
    t.derived = std::make_shared<sj::DerivedForms>();
    EXPECT_FALSE(sj::is_refillable_sparse_vector(t, 1u << 14));
  }
  {  // a borrowed vector
    std::vector<int64_t> pos{0, 1};
    std::vector<int32_t> crd{4};
    std::vector<double> val{1.0};
    sj::Tensor t;
    t.order = 1;
    t.dims = {10, 0, 0, 0};
    t.levels.resize(1);
    t.levels[0].kind = sj::LevelKind::Compressed;
    t.levels[0].pos = sj::Buffer::borrow(pos.data(), 16);
    t.levels[0].crd = sj::Buffer::borrow(crd.data(), 4);
    t.values = sj::Buffer::borrow(val.data(), 8);
    EXPECT_FALSE(sj::is_refillable_sparse_vector(t, 1u << 14));
  }
  {  // another allocator than the default: a block of its own
    sj::Tensor t = vector_of(alloc, 10);
    ASSERT_EQ(sj::is_refillable_sparse_vector(t, 1u << 14), !sj::kUnderAsan);
    const std::weak_ptr<void> owner = t.levels[0].pos.watch_owner();
    Counted counted;
    const sj::Allocator hooked(sj_allocator{counted_alloc, counted_free, &counted});
    sj::init_sparse_vector(t, hooked, 1000, 5, sj::IndexType::I32, sj::ValueType::F64);
    EXPECT_TRUE(owner.expired());
    EXPECT_EQ(counted.allocations, 1);
    t = sj::Tensor{};
    EXPECT_TRUE(counted.live.empty());
  }
}

TEST(SpareHandle, ResultsMadeOnOneThreadAndDestroyedOnAnother) {
  Ctx ctx;
  Rng rng(10);
  Problem p(ctx.c, rng);
  std::vector<Vec> xs;
  std::vector<Vec> want;
  for (int64_t k : {1, 3, 9, 27, 2}) {
    xs.push_back(x_of(rng, 400, k));
    want.push_back(reference_y(p.a, xs.back()));
  }
  // Thread 1 makes results, thread 2 checks and destroys them (so its spare holds thread 1's
  // blocks) and makes its own from them.
  for (int round = 0; round < 20; ++round) {
    std::vector<sj_tensor*> made(xs.size());
    std::thread maker([&] {
      for (size_t i = 0; i < xs.size(); ++i) made[i] = p.run(ctx.c, xs[i]);
    });
    maker.join();
    std::thread user([&] {
      for (size_t i = 0; i < xs.size(); ++i) {
        EXPECT_TRUE(equals(made[i], want[i]));
        sj_tensor_destroy(made[i]);
        sj_tensor* y = p.run(ctx.c, xs[(i + 1) % xs.size()]);
        EXPECT_TRUE(equals(y, want[(i + 1) % xs.size()]));
        sj_tensor_destroy(y);
      }
    });
    user.join();
  }
}

TEST(SpareHandle, ConcurrentThreadsContextsAndThreadExit) {
  Rng rng(13);
  Ctx ctx;
  Problem p(ctx.c, rng);
  std::vector<Vec> xs;
  std::vector<Vec> want;
  for (int64_t k : {1, 2, 5, 9, 3, 7}) {
    xs.push_back(x_of(rng, 400, k));
    want.push_back(reference_y(p.a, xs.back()));
  }
  // Four threads make and destroy results of one plan at once; each thread's kept result is
  // freed when it ends.
  std::vector<std::weak_ptr<void>> last(4);
  std::vector<std::thread> threads;
  for (size_t w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      for (int r = 0; r < 200; ++r) {
        const size_t i = (w + static_cast<size_t>(r)) % xs.size();
        sj_tensor* y = p.run(ctx.c, xs[i]);
        EXPECT_TRUE(equals(y, want[i]));
        if (r == 199) last[w] = y->t.levels[0].pos.watch_owner();
        sj_tensor_destroy(y);
      }
    });
  for (auto& t : threads) t.join();
  for (size_t w = 0; w < 4; ++w) EXPECT_TRUE(last[w].expired()) << "thread " << w << "'s kept result";

  // A result of one context kept, then taken by another context's result on this thread;
  // both contexts are then destroyed (nothing counted live).
  sj_context* other = nullptr;
  ASSERT_EQ(sj_context_create(nullptr, &other), SJ_OK) << msg();
  {
    Problem q(other, rng);
    sj_tensor_destroy(q.run(other, xs[1]));
    sj_tensor* y = p.run(ctx.c, xs[2]);
    EXPECT_EQ(y->ctx, ctx.c);
    EXPECT_TRUE(equals(y, want[2]));
    sj_tensor_destroy(y);
  }
  EXPECT_EQ(sj_context_destroy(other), SJ_OK) << msg();
}

}  // namespace

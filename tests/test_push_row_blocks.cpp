// Row blocks of A's CSC copy for a split push SpMSpV (kernels/push_row_blocks.hpp): the blocks
// hold exactly A's CSC columns, each block only its rows, for any block count (more blocks
// than rows, empty rows and columns, both coordinate types); and a split call through handles
// walks them (explain says so) with results bit-identical to one thread, sparse and dense y,
// x from empty to full, also when the partition is not the blocks' (the static-rows ablation
// falls back to cuts of the whole copy).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "kernels/push_row_blocks.hpp"
#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/work_partition.hpp"
#include "tests/random_matrices.hpp"
#include "tests/schedule_test_util.hpp"
#include "tests/test_util.hpp"

namespace {

using sj::Tensor;
using sj::test::Rng;
using sj::test::SplitSmallInputs;


template <class I> void check_blocks(const sj::CsResult<I, double>& a, int64_t k) {
  SCOPED_TRACE(::testing::Message() << a.outer << "x" << a.inner << ", " << k << " blocks, i" << 8 * sizeof(I));
  const Tensor csr = sj::to_tensor(sj::default_allocator(), true, a, sj::ValueType::F64);
  const Tensor csc = sj::flip_orientation(csr, sj::default_allocator());
  const auto want = sj::cs_view<I, double>(csc);
  sj::Workers w = sj::Workers::serial();
  const auto got = sj::spmspv::make_push_row_blocks<I, double>(csr, k, sj::default_allocator(), w);
  const sj::Partition part = sj::partition_into(a.pos.data(), a.outer, k);
  ASSERT_EQ(std::vector<int64_t>(got.part.bounds.begin(), got.part.bounds.end()),
            std::vector<int64_t>(part.bounds.begin(), part.bounds.end()));
  ASSERT_EQ(got.views.size(), static_cast<size_t>(part.chunks()));
  EXPECT_EQ(got.whole.outer, a.inner);
  EXPECT_EQ(got.whole.inner, a.outer);
  for (int64_t j = 0; j <= a.inner; ++j) ASSERT_EQ(got.whole.pos[j], want.pos[j]) << "column " << j;
  for (int64_t j = 0; j < a.inner; ++j) {
    std::vector<I> rows;
    std::vector<double> vals;
    for (int64_t b = 0; b < part.chunks(); ++b) {
      const auto& v = got.views[static_cast<size_t>(b)];
      ASSERT_EQ(v.outer, a.inner);
      ASSERT_EQ(v.inner, a.outer);
      for (int64_t q = v.pos[j]; q < v.pos[j + 1]; ++q) {
        ASSERT_GE(v.crd[q], part.begin(b)) << "column " << j << ", block " << b;
        ASSERT_LT(v.crd[q], part.end(b)) << "column " << j << ", block " << b;
        rows.push_back(v.crd[q]);
        vals.push_back(v.val[q]);
      }
    }
    // Element by element: an empty column's arrays may be null (no pointer arithmetic on them).
    const int64_t b0 = want.pos[j], len = want.pos[j + 1] - want.pos[j];
    ASSERT_EQ(static_cast<int64_t>(rows.size()), len) << "column " << j;
    for (int64_t q = 0; q < len; ++q) {
      ASSERT_EQ(rows[q], want.crd[b0 + q]) << "column " << j;
      ASSERT_EQ(std::bit_cast<uint64_t>(vals[q]), std::bit_cast<uint64_t>(want.val[b0 + q])) << "column " << j;
    }
  }
}

TEST(PushRowBlocks, BlocksHoldEachColumnsRowsOfTheirRange) {
  Rng rng(31);
  sj::test::MatrixOptions holes;
  holes.empty_row_fraction = 0.3;
  holes.empty_col_fraction = 0.3;
  for (int64_t k : {1, 2, 3, 7, 64}) {
    check_blocks(sj::test::random_uniform<int32_t, double>(rng, 200, 150, 0.05), k);
    check_blocks(sj::test::random_uniform<int64_t, double>(rng, 120, 300, 0.04, holes), k);
    check_blocks(sj::test::random_power_law<int32_t, double>(rng, 250, 250, 5.0, 1.3), k);
    check_blocks(sj::test::random_uniform<int32_t, double>(rng, 5, 40, 0.3), k);   // more blocks than rows
    check_blocks(sj::test::random_uniform<int32_t, double>(rng, 0, 10, 0.3), k);   // no rows
    check_blocks(sj::test::random_uniform<int32_t, double>(rng, 10, 0, 0.3), k);   // no columns
    check_blocks(sj::test::random_uniform<int32_t, double>(rng, 30, 30, 0.0), k);  // no entries
  }
}

std::string explain_of(sj_plan* p) {
  const char* json = nullptr;
  EXPECT_EQ(sj_plan_explain(p, &json), SJ_OK) << sj_last_error_message();
  return json ? json : "";
}

// y = A x through a push plan on `threads` threads (sparse or dense y); the plan's explain.
sj_tensor* push(sj_context* ctx, const sj_tensor* A, const sj_tensor* x, int threads, bool dense, std::string* explain) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.threads = threads;
  o.schedule = SJ_SCHEDULE_PUSH;
  o.dense_output = dense ? 1 : 0;
  const sj_tensor* ops[2] = {A, x};
  sj_plan* p = nullptr;
  EXPECT_EQ(sj_plan_create(ctx, SJ_OP_SPMSPV, ops, 2, &o, &p), SJ_OK) << sj_last_error_message();
  sj_tensor* y = nullptr;
  // Twice: the first execution builds the blocks, the second finds them kept.
  for (int round = 0; round < 2; ++round) {
    sj_tensor_destroy(y);
    y = nullptr;
    EXPECT_EQ(sj_plan_execute(p, ops, 2, &y), SJ_OK) << sj_last_error_message();
  }
  if (explain) *explain = explain_of(p);
  sj_plan_destroy(p);
  return y;
}

// Every x density, sparse and dense y, at `threads` (or 2, 3 and 7) against one thread;
// whether the split calls walked row blocks must be `expect_blocks`.
template <class I>
void check_split_calls(sj_context* ctx, Rng& rng, const sj::CsResult<I, double>& a, bool expect_blocks, int threads = 0) {
  sj_tensor* A = sj::test::csr_handle(ctx, a);
  for (double density : {0.0, -1.0, 0.05, 0.4, 1.0}) {  // -1: one entry
    sj::SpVecResult<I, double> xr;
    if (density < 0) {
      xr.n = a.inner;
      if (a.inner > 0) {
        xr.idx.push_back(static_cast<I>(a.inner / 2));
        xr.val.push_back(-1.5);
      }
    } else {
      xr = sj::test::random_sparse_vector<I, double>(rng, a.inner, density);
    }
    sj_tensor* x = sj::test::vec_handle(ctx, xr);
    for (bool dense : {false, true}) {
      SCOPED_TRACE(::testing::Message() << a.outer << "x" << a.inner << ", x " << xr.idx.size() << " entries"
                                        << (dense ? ", dense y" : ", sparse y"));
      sj_tensor* want = push(ctx, A, x, 1, dense, nullptr);
      for (int t : {2, 3, 7}) {
        if (threads && t != threads) continue;
        std::string text;
        sj_tensor* y = push(ctx, A, x, t, dense, &text);
        ASSERT_NE(y, nullptr);
        EXPECT_TRUE(sj::test::same_bits(want->t, y->t)) << t << " threads";
        const bool walked_blocks = text.find("its own row block") != std::string::npos;
        if (!expect_blocks) EXPECT_FALSE(walked_blocks) << t << " threads: " << text;
        else if (xr.idx.size() > 1 && a.outer > 1) EXPECT_TRUE(walked_blocks) << t << " threads: " << text;
        sj_tensor_destroy(y);
      }
      sj_tensor_destroy(want);
    }
    sj_tensor_destroy(x);
  }
  sj_tensor_destroy(A);
}

// Forces how a split push reads A for one scope (ParallelTuning::push_split).
struct ForcePushSplit {
  explicit ForcePushSplit(int how) { sj::parallel_tuning().push_split = how; }
  ~ForcePushSplit() { sj::parallel_tuning().push_split = 0; }
};

TEST(PushRowBlocks, SplitCallsThroughHandlesMatchOneThread) {
  SplitSmallInputs split;
  ForcePushSplit blocks(3);  // the rule takes buckets for these short columns at 3 and 7 threads
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.threads = 7;
  cfg.disable_disk_cache = 1;
  sj_context* ctx = nullptr;
  ASSERT_EQ(sj_context_create(&cfg, &ctx), SJ_OK);
  Rng rng(32);
  sj::test::MatrixOptions holes;
  holes.empty_row_fraction = 0.3;
  holes.empty_col_fraction = 0.2;
  check_split_calls(ctx, rng, sj::test::random_uniform<int32_t, double>(rng, 300, 200, 0.04), true);
  check_split_calls(ctx, rng, sj::test::random_power_law<int32_t, double>(rng, 400, 400, 6.0, 1.3), true);
  check_split_calls(ctx, rng, sj::test::random_uniform<int64_t, double>(rng, 250, 250, 0.05, holes), true);
  check_split_calls(ctx, rng, sj::test::random_uniform<int32_t, double>(rng, 3, 50, 0.5), true);  // 3 rows, 7 threads
  // Equal rows per chunk (the static-rows ablation) are not the blocks' cut: cuts of the
  // whole copy serve those calls, with the same bits.
  sj::parallel_tuning().mode = static_cast<int>(sj::PartitionMode::StaticRows);
  check_split_calls(ctx, rng, sj::test::random_power_law<int32_t, double>(rng, 400, 400, 6.0, 1.3), false);
  sj::parallel_tuning().mode = static_cast<int>(sj::PartitionMode::Dynamic);
  // By the rule: row blocks at 2 threads (16 per column), buckets at 7.
  sj::parallel_tuning().push_split = 0;
  check_split_calls(ctx, rng, sj::test::random_uniform<int32_t, double>(rng, 600, 600, 16.0 / 600), false, 7);
  check_split_calls(ctx, rng, sj::test::random_uniform<int32_t, double>(rng, 600, 600, 16.0 / 600), true, 2);
  sj_context_destroy(ctx);
}

}  // namespace

// Parallel execution (src/thread_pool.hpp, src/work_partition.hpp, kernels/sparse_assembly.hpp):
// the pool runs every chunk once and turns a worker's exception into the call's error, also
// when many threads use it at once; every schedule of every operation gives bit-identical
// results with 1, 2, 3 and 7 threads (and equal to the reference schedule's) on uniform,
// skewed power-law and empty-row inputs and on real matrices; one context serves many
// threads at once (plans made and executed concurrently, one plan shared, JIT kernels built
// once under contention).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "kernels/ewise_kernels.hpp"
#include "kernels/sparse_assembly.hpp"
#include "kernels/spmspv_kernels.hpp"
#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/plan.hpp"
#include "src/semiring.hpp"
#include "src/tensor_file.hpp"
#include "src/thread_pool.hpp"
#include "src/work_partition.hpp"
#include "tests/random_matrices.hpp"
#include "tests/schedule_test_util.hpp"
#include "tests/test_util.hpp"

namespace {

using sj::Tensor;
using sj::test::Rng;
using sj::test::same_bits;

constexpr int kThreadCounts[] = {1, 2, 3, 7};

using sj::test::SplitSmallInputs;

const sj::Context& context(int threads) {
  static std::vector<std::unique_ptr<sj::Context>> all = [] {
    std::vector<std::unique_ptr<sj::Context>> v;
    for (int t = 1; t <= 8; ++t) {
      sj_config c;
      sj_config_init(&c);
      c.threads = t;
      c.disable_disk_cache = 1;
      v.push_back(std::make_unique<sj::Context>(c));
    }
    return v;
  }();
  return *all[static_cast<size_t>(threads) - 1];
}

// ---- the pool ------------------------------------------------------------------------------

TEST(ThreadPool, RunsEveryChunkOnce) {
  sj::ThreadPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  for (int threads : {1, 2, 4, 9}) {
    std::vector<std::atomic<int>> hits(1000);
    pool.parallel_for(1000, threads, [&](int64_t c) { hits[static_cast<size_t>(c)].fetch_add(1); });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads";
  }
  pool.parallel_for(0, 4, [](int64_t) { FAIL() << "no chunk to run"; });
}

TEST(ThreadPool, WorkerExceptionBecomesTheCallsError) {
  sj::ThreadPool pool(3);
  std::atomic<int> ran{0};
  try {
    pool.parallel_for(200, 3, [&](int64_t c) {
      ran.fetch_add(1);
      if (c == 17) throw std::runtime_error("chunk 17 failed");
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk 17 failed");
  }
  EXPECT_LE(ran.load(), 200);
  // The pool still works afterwards.
  std::atomic<int> n{0};
  pool.parallel_for(50, 3, [&](int64_t) { n.fetch_add(1); });
  EXPECT_EQ(n.load(), 50);
}

TEST(ThreadPool, ManyCallersAndNestedCalls) {
  sj::ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < 6; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 20; ++round)
        pool.parallel_for(16, 3, [&](int64_t) {
          // a call from inside a worker (or a caller): must not deadlock
          pool.parallel_for(4, 2, [&](int64_t) { total.fetch_add(1); });
        });
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 6 * 20 * 16 * 4);
}

// ---- partitions and assembly --------------------------------------------------------------

TEST(WorkPartition, ChunksCoverRowsAndBalanceWork) {
  SplitSmallInputs split;
  // Power-law work: a few heavy rows, many empty ones.
  Rng rng(7);
  const int64_t n = 5000;
  std::vector<int64_t> prefix(n + 1, 0);
  int64_t heaviest = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t w = rng.bernoulli(0.3) ? 0 : std::min<int64_t>(200, static_cast<int64_t>(std::pow(1.0 - rng.uniform01(), -1.5)));
    heaviest = std::max(heaviest, w);
    prefix[i + 1] = prefix[i] + w;
  }
  for (int threads : kThreadCounts) {
    sj::Workers w = sj::Workers::for_call(context(threads), 0);
    const sj::Partition p = sj::partition_by_prefix(prefix.data(), n, w, "test");
    ASSERT_EQ(p.bounds.front(), 0);
    ASSERT_EQ(p.bounds.back(), n);
    for (int64_t c = 0; c < p.chunks(); ++c) ASSERT_LT(p.begin(c), p.end(c));
    if (threads == 1) {
      EXPECT_EQ(p.chunks(), 1);
      continue;
    }
    EXPECT_GT(p.chunks(), threads);  // more chunks than threads: dynamic balancing has room
    const int64_t share = prefix[n] / p.chunks();
    for (int64_t c = 0; c < p.chunks(); ++c)
      EXPECT_LE(prefix[p.end(c)] - prefix[p.begin(c)], share + heaviest + 1) << "chunk " << c;
  }
}

// A prefix given as a function (element-wise work read from A's and B's positions) splits
// exactly as the same prefix given as an array, in either mode, from any base, and both put
// each boundary where a linear scan of the prefix does.
TEST(WorkPartition, PrefixFunctionSplitsAsItsArray) {
  SplitSmallInputs split;
  Rng rng(8);
  for (int64_t n : {1, 2, 3, 17, 4000}) {
    std::vector<int64_t> prefix(n + 1, 0);
    prefix[0] = rng.bernoulli(0.5) ? 0 : 12345;  // a view whose positions do not start at 0
    for (int64_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + (rng.bernoulli(0.4) ? 0 : rng.uniform_int(1, 300));
    int64_t reads = 0;
    auto at = [&](int64_t i) {
      ++reads;
      EXPECT_GE(i, 0);
      EXPECT_LE(i, n);
      return prefix[static_cast<size_t>(i)];
    };
    for (int mode : {0, 1}) {
      sj::parallel_tuning().mode = mode;
      for (int threads : kThreadCounts) {
        sj::Workers wa = sj::Workers::for_call(context(threads), 0), wf = wa;
        const sj::Partition a = sj::partition_by_prefix(prefix.data(), n, wa, "array");
        const sj::Partition f = sj::partition_by(n, wf, "array", at);
        EXPECT_EQ(std::vector<int64_t>(a.bounds.begin(), a.bounds.end()),
                  std::vector<int64_t>(f.bounds.begin(), f.bounds.end()))
            << "n " << n << ", mode " << mode << ", " << threads << " threads";
        EXPECT_STREQ(wa.basis, wf.basis);
      }
      for (int64_t k : {1, 2, 5, 64}) {
        // The boundaries by brute force: boundary c is the first row whose prefix reaches c/k
        // of the total (a linear scan), kept when it advances and is not the end.
        std::vector<int64_t> want{0};
        const int64_t kk = std::min(k, n), total = prefix[n] - prefix[0];
        for (int64_t c = 1; kk > 1 && c < kk; ++c) {
          const int64_t target = prefix[0] + static_cast<int64_t>(static_cast<__int128>(total) * c / kk);
          int64_t b = 0;
          while (b <= n && prefix[b] < target) ++b;
          b = std::min(b, n);
          if (b > want.back() && b < n) want.push_back(b);
        }
        want.push_back(std::max<int64_t>(0, n));
        const sj::Partition a = sj::partition_into(prefix.data(), n, k);
        reads = 0;
        const sj::Partition f = sj::partition_into_by(n, k, at);
        EXPECT_EQ(std::vector<int64_t>(a.bounds.begin(), a.bounds.end()), want) << "n " << n << ", k " << k;
        EXPECT_EQ(std::vector<int64_t>(a.bounds.begin(), a.bounds.end()),
                  std::vector<int64_t>(f.bounds.begin(), f.bounds.end()))
            << "n " << n << ", k " << k;
        EXPECT_LE(reads, 2 + k * 14);  // a binary search per boundary, not a pass over the rows
      }
    }
    sj::parallel_tuning().mode = 0;
  }
}

// Push SpMSpV over `part` on `threads` threads, sparse y then dense y: the sparse indices, and
// the bits of the sparse values followed by the dense ones (-0.0 and 0.0 told apart).
template <class I>
std::pair<std::vector<I>, std::vector<uint64_t>> push_sparse_and_dense(const sj::CsView<I, double>& A,
                                                                       const sj::SpVecView<I, double>& x,
                                                                       const sj::Partition& part, int threads) {
  const int64_t m = A.inner;
  sj::Workers w = sj::Workers::for_call(context(threads), 0);
  std::vector<I> idx(m);
  std::vector<double> v(m), dense(m);
  sj::spmspv::RowSink<I, double> sink;
  sink.idx = idx.data();
  sink.val = v.data();
  sj::spmspv::push_sparse<sj::PlusTimes<double>>(A, x, part, w, sink);
  std::vector<I> oi(sink.count);
  std::vector<double> ov(sink.count);
  sink.gather(oi.data(), ov.data());
  sj::spmspv::push_dense<sj::PlusTimes<double>>(A, x, dense.data(), part, w);
  std::vector<uint64_t> bits;
  for (double d : ov) bits.push_back(std::bit_cast<uint64_t>(d));
  for (double d : dense) bits.push_back(std::bit_cast<uint64_t>(d));
  return {oi, bits};
}

// Forces how a split push reads x for one scope (ParallelTuning::push_split), restored even
// when an assertion throws.
struct ForcePushSplit {
  explicit ForcePushSplit(int how) { sj::parallel_tuning().push_split = how; }
  ~ForcePushSplit() { sj::parallel_tuning().push_split = 0; }
};

// Push SpMSpV chunks. Where cuts pay (few threads, long columns: push_buckets_pay) every chunk
// walks all of x's columns, so a split call takes one chunk per thread: a 600k x 600k A with
// 16 per row, x at 10% on 2 and 3 threads (16 chunks made 2 threads 3x slower than one, 4
// were 1.2-1.4x slower than 2), and x at 100 of 1000 columns (9600 products each) on every
// thread count. Where buckets pay (7 threads, 16 per column) a chunk reads only its bucket of
// x's products, so the call takes chunks_per_thread chunks per thread, but no more than its
// expected products (nnz(A) nx / n) fill: 320k products, just past min_parallel_work, give
// 320k / min_chunk_work. Few products stay serial either way.
TEST(WorkPartition, PushChunksFollowTheirWalk) {
  const int64_t m = 600000;
  std::vector<int64_t> row_pos(m + 1);
  for (int64_t i = 0; i <= m; ++i) row_pos[static_cast<size_t>(i)] = 16 * i;
  const int per_thread = sj::parallel_tuning().chunks_per_thread.load();
  const int64_t by_products = 320000 / sj::parallel_tuning().min_chunk_work.load();
  for (int threads : {2, 3, 7}) {
    sj::Workers w = sj::Workers::for_call(context(threads), 0);
    const bool buckets = sj::spmspv::push_buckets_pay(w, 16.0);
    EXPECT_EQ(buckets, threads == 7);
    EXPECT_FALSE(sj::spmspv::push_buckets_pay(w, 9600.0));
    const int64_t many = buckets ? threads * per_thread : threads;
    EXPECT_EQ(sj::spmspv::push_partition(row_pos.data(), m, 60000, 600000, w).chunks(), many);
    EXPECT_EQ(sj::spmspv::push_partition(row_pos.data(), m, 600, 600000, w).chunks(), 1);
    const sj::Partition p = sj::spmspv::push_partition(row_pos.data(), m, 100, 1000, w);
    EXPECT_EQ(p.chunks(), threads);
    EXPECT_EQ(p.bounds.back(), m);
    EXPECT_EQ(sj::spmspv::push_partition(row_pos.data(), m, 20000, 600000, w).chunks(),
              buckets ? std::min<int64_t>(many, by_products) : threads);
  }
}

// Push SpMSpV over any cut of the rows gives the serial arrays, with cuts (each chunk walks its
// part of each of x's columns) and with buckets (each chunk adds its bucket of products, in
// increasing j). Columns with rows only below, only at or above, or exactly on a chunk's first
// row, empty columns, empty chunks.
TEST(WorkPartition, PushChunksMatchSerialAtEveryCut) {
  Rng rng(21);
  const int64_t m = 37, n = 23;  // A is m x n, given by column (CSC)
  std::vector<int64_t> pos{0};
  std::vector<int32_t> crd;
  std::vector<double> val;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<int32_t> rows;
    if (j == 7) rows = {0, 3, 17};         // only below row 18
    else if (j == 8) rows = {18, 25, 36};  // only at or above it
    else if (j == 9) rows = {17, 18, 19};  // across it
    else if (j != 5)                       // column 5 empty
      for (int32_t i = 0; i < m; ++i)
        if (rng.uniform01() < 0.3) rows.push_back(i);
    for (int32_t i : rows) crd.push_back(i), val.push_back(0.1 * static_cast<double>(rng.uniform_int(-40, 40)));
    pos.push_back(static_cast<int64_t>(crd.size()));
  }
  const sj::CsView<int32_t, double> A{n, m, pos.data(), crd.data(), val.data()};
  std::vector<int32_t> xi;
  std::vector<double> xv;
  for (int32_t j = 0; j < n; ++j)
    if (j == 5 || j == 7 || j == 8 || j == 9 || rng.uniform01() < 0.6) xi.push_back(j), xv.push_back(0.3 + 0.1 * j);
  const sj::SpVecView<int32_t, double> x{n, static_cast<int64_t>(xi.size()), xi.data(), xv.data()};
  auto run = [&](const sj::Partition& part, int threads) { return push_sparse_and_dense(A, x, part, threads); };
  sj::Partition serial;
  serial.bounds = {0, m};
  const auto want = run(serial, 1);
  ASSERT_FALSE(want.first.empty());
  const std::vector<std::vector<int64_t>> cuts{{0, 18, m}, {0, 1, m}, {0, m - 1, m}, {0, 0, m}, {0, m, m},
                                               {0, 17, 19, m}, {0, 9, 18, 30, m}, {0, 18, 18, m}};
  for (int how : {2, 1})  // buckets at every thread count, then cuts at every one
    for (const auto& b : cuts)
      for (int threads : {1, 2, 3}) {
        ForcePushSplit force(how);
        sj::Partition part;
        part.bounds.assign(b.begin(), b.end());
        const auto got = run(part, threads);
        const std::string what = std::string(how == 2 ? "buckets, " : "cuts, ") + std::to_string(b.size() - 1) +
                                 " chunks, " + std::to_string(b[1]) + ", " + std::to_string(threads) + " threads";
        EXPECT_EQ(got.first, want.first) << what;
        EXPECT_EQ(got.second, want.second) << what;
      }
  // Some of the rows with neither cuts nor buckets is a bug, refused before any row is marked
  // (either end of the rows), as are cuts or buckets for a partition that does not cover every
  // row; the next call on this thread's workspace still gives y.
  std::vector<int32_t> oi(m);
  std::vector<double> ov(m);
  auto status_of = [](const std::function<void()>& call) {
    const auto f = sj::test::failure_of(call);
    return f ? f->status : SJ_OK;
  };
  using S = sj::PlusTimes<double>;
  EXPECT_EQ(status_of([&] { sj::spmspv::push_chunk_sparse<S, int32_t, double>(A, x, nullptr, 0, 0, 18, oi.data(), ov.data()); }),
            SJ_ERR_INTERNAL);
  EXPECT_EQ(status_of([&] { sj::spmspv::push_chunk_sparse<S, int32_t, double>(A, x, nullptr, 1, 18, m, oi.data(), ov.data()); }),
            SJ_ERR_INTERNAL);
  sj::Partition partial;
  partial.bounds = {5, 18, 30};
  sj::Workers w1 = sj::Workers::for_call(context(1), 0);
  EXPECT_EQ(status_of([&] { sj::spmspv::PushCuts<int32_t, double>(A, x, partial, w1); }), SJ_ERR_INTERNAL);
  EXPECT_EQ(status_of([&] { sj::spmspv::PushBuckets<S, int32_t, double>(A, x, partial, w1); }), SJ_ERR_INTERNAL);
  EXPECT_EQ(run(serial, 1), want);
}

// Bucketed push on a tall A (70001 rows: the row -> chunk table then covers 8 rows a block, so
// chunk ends inside a block are stepped over) with both index types, 200 rows per column and x
// at 60% (~360k products, ~5 a row: the dense accumulator on the large chunks, the sparse one
// on the small), and
// -0.0 and 0.0 among the values: sparse and dense y bit for bit the serial ones, over cuts
// with an empty chunk, a one-row chunk and unaligned ends, and over the partition push_partition
// makes for 3 threads.
template <class I> void push_buckets_match_serial() {
  Rng rng(33);
  const int64_t m = 70001, n = 3000;
  auto csc = sj::test::random_uniform<I, double>(rng, n, m, 200.0 / static_cast<double>(m));  // outer = columns
  for (size_t q = 0; q < csc.val.size(); q += 7) csc.val[q] = q % 14 ? -0.0 : 0.0;
  const sj::CsView<I, double> A{n, m, csc.pos.data(), csc.crd.data(), csc.val.data()};
  std::vector<I> xi;
  std::vector<double> xv;
  for (int64_t j = 0; j < n; ++j)
    if (rng.uniform01() < 0.6) xi.push_back(static_cast<I>(j)), xv.push_back(j % 9 ? 0.25 * static_cast<double>(j % 13) - 1 : -0.0);
  const sj::SpVecView<I, double> x{n, static_cast<int64_t>(xi.size()), xi.data(), xv.data()};
  std::vector<int64_t> row_pos(m + 1, 0);  // A's CSR positions, for push_partition
  for (I i : csc.crd) ++row_pos[static_cast<size_t>(i) + 1];
  for (int64_t i = 0; i < m; ++i) row_pos[i + 1] += row_pos[i];
  auto run = [&](const sj::Partition& part, int threads) { return push_sparse_and_dense(A, x, part, threads); };
  sj::Partition serial;
  serial.bounds = {0, m};
  const auto want = run(serial, 1);
  ASSERT_GT(want.first.size(), static_cast<size_t>(m / 2));
  ForcePushSplit buckets(2);
  std::vector<sj::Partition> parts(2);
  parts[0].bounds = {0, 4100, 4100, 20000, 20001, 65539, m};
  sj::Workers w3 = sj::Workers::for_call(context(3), 0);
  parts[1] = sj::spmspv::push_partition(row_pos.data(), m, x.nnz, n, w3);
  ASSERT_GT(parts[1].chunks(), 3);
  for (const auto& part : parts)
    for (int threads : {1, 3}) {
      const auto got = run(part, threads);
      EXPECT_EQ(got.first, want.first) << part.chunks() << " chunks, " << threads << " threads";
      EXPECT_EQ(got.second, want.second) << part.chunks() << " chunks, " << threads << " threads";
    }
}
// A sparse y's chunks (segments at their rows' offsets, empty ones among them) copied into
// one array: on several threads once the entries are many (RowSink::gather), in order, the
// same as one thread copies them, also converted to i64 coordinates.
TEST(WorkPartition, PushSinkGathersLargeResultsInOrder) {
  Rng rng(41);
  const int64_t m = 600000;
  std::vector<int32_t> idx(m);
  std::vector<double> val(m);
  for (int64_t i = 0; i < m; ++i) {
    idx[i] = static_cast<int32_t>(i);
    val[i] = rng.uniform01() - 0.5;
  }
  for (int chunks : {1, 2, 5, 16}) {
    sj::spmspv::RowSink<int32_t, double> sink;
    sink.idx = idx.data();
    sink.val = val.data();
    for (int c = 0; c < chunks; ++c) {  // chunk c of m / chunks rows keeps a random prefix of them
      const int64_t r0 = m * c / chunks, r1 = m * (c + 1) / chunks;
      const int64_t n = c == 1 ? 0 : static_cast<int64_t>(rng.uniform01() * static_cast<double>(r1 - r0));
      sink.segments.push_back({r0, n});
      sink.count += n;
    }
    std::vector<int32_t> want_i(sink.count);
    std::vector<double> want_v(sink.count);
    sink.gather(want_i.data(), want_v.data());
    for (int threads : kThreadCounts) {
      sj::Workers w = sj::Workers::for_call(context(threads), 0);
      std::vector<int32_t> gi(sink.count, -1);
      std::vector<double> gv(sink.count, 0);
      std::vector<int64_t> wide(sink.count, -1);
      std::vector<double> wv(sink.count, 0);
      sink.gather(gi.data(), gv.data(), w);
      sink.gather_as<int64_t>(wide.data(), wv.data(), w);
      EXPECT_EQ(gi, want_i) << chunks << " chunks, " << threads << " threads";
      EXPECT_EQ(0, std::memcmp(gv.data(), want_v.data(), sizeof(double) * gv.size())) << chunks << " chunks";
      EXPECT_EQ(std::vector<int64_t>(want_i.begin(), want_i.end()), wide) << chunks << " chunks, " << threads << " threads";
      EXPECT_EQ(0, std::memcmp(wv.data(), want_v.data(), sizeof(double) * wv.size())) << chunks << " chunks";
      EXPECT_EQ(w.chunks, 1) << "explain's chunk count is the kernel's, not the copy's";
    }
  }
}

TEST(WorkPartition, PushBucketsMatchSerialOnTallInputsBothIndexTypes) {
  push_buckets_match_serial<int32_t>();
  push_buckets_match_serial<int64_t>();
}

// Row i holds columns (i*7 + t) % cols for t < i % 6: the pieces and two-pass assembly give
// the same arrays as one thread.
TEST(SparseAssembly, PiecesAndTwoPassMatchSerial) {
  SplitSmallInputs split;
  const int64_t rows = 3001, cols = 50;
  auto len = [](int64_t i) { return i % 6; };
  std::vector<int64_t> bound(rows + 1, 0);
  for (int64_t i = 0; i < rows; ++i) bound[i + 1] = bound[i] + len(i) + 1;
  auto fill_rows = [&](int64_t r0, int64_t r1, int32_t* oc, double* ov, int64_t* ends) {
    int64_t q = 0;
    for (int64_t i = r0; i < r1; ++i) {
      for (int64_t t = 0; t < len(i); ++t, ++q) {
        oc[q] = static_cast<int32_t>((i * 7 + t) % cols);
        ov[q] = static_cast<double>(i) + 0.25 * static_cast<double>(t);
      }
      ends[i] = q;
    }
    return q;
  };
  Tensor want;
  for (int threads : kThreadCounts) {
    sj::Workers w = sj::Workers::for_call(context(threads), 0);
    const sj::Partition p = sj::partition_by_prefix(bound.data(), rows, w, "test");
    Tensor a = sj::assemble_by_pieces<int32_t, double>(w, p, rows, cols, bound.data(), 0, sj::default_allocator(),
                                                       sj::ValueType::F64, false, fill_rows);
    Tensor b = sj::assemble_two_pass<int32_t, double>(
        w, p, rows, cols, 0, sj::default_allocator(), sj::ValueType::F64,
        [&](int64_t r0, int64_t r1, int64_t* counts) {
          for (int64_t i = r0; i < r1; ++i) counts[i] = len(i);
        },
        [&](int64_t r0, int64_t r1, int32_t* crd, double* val, const int64_t* pos) {
          std::vector<int64_t> ends(rows);
          fill_rows(r0, r1, crd + pos[r0], val + pos[r0], ends.data());
        });
    if (threads == 1) want = a;
    EXPECT_TRUE(same_bits(want, a)) << threads << " threads";
    EXPECT_TRUE(same_bits(want, b)) << threads << " threads";
    if (threads > 1) {
      EXPECT_GT(w.chunks, 1);
    }
  }
}

// The pieces are moved down in row order, each once the chunks before it are done, by
// whichever thread completes that prefix: chunks that finish out of order (the first one last,
// or at random) give the same arrays, and a chunk that fails makes the call fail cleanly.
TEST(SparseAssembly, PiecesFinishingInAnyOrderAreJoinedInRowOrder) {
  SplitSmallInputs split;
  const int64_t rows = 2000, cols = 64;
  auto len = [](int64_t i) { return (i * 13) % 5; };
  std::vector<int64_t> bound(rows + 1, 0);
  for (int64_t i = 0; i < rows; ++i) bound[i + 1] = bound[i] + len(i) + (i % 3);  // gaps of 0-2 per row
  std::atomic<int64_t> finished{0};
  auto fill_rows = [&](int64_t r0, int64_t r1, int32_t* oc, double* ov, int64_t* ends, int order) {
    // order 1: the chunk of row 0 waits (up to a second) until every other chunk is done;
    // order 2: each chunk waits a pseudo-random while first.
    if (order == 1 && r0 == 0)
      for (int spin = 0; spin < 1000 && finished.load() == 0; ++spin) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (order == 2) std::this_thread::sleep_for(std::chrono::microseconds((r0 * 7919) % 300));
    int64_t q = 0;
    for (int64_t i = r0; i < r1; ++i) {
      for (int64_t t = 0; t < len(i); ++t, ++q) {
        oc[q] = static_cast<int32_t>((i * 11 + t) % cols);
        ov[q] = static_cast<double>(i) - 0.5 * static_cast<double>(t);
      }
      ends[i] = q;
    }
    return q;
  };
  auto build = [&](int threads, int order) {
    sj::Workers w = sj::Workers::for_call(context(threads), 0);
    const sj::Partition p = sj::partition_by_prefix(bound.data(), rows, w, "test");
    finished = 0;
    return sj::assemble_by_pieces<int32_t, double>(
        w, p, rows, cols, bound.data(), 0, sj::default_allocator(), sj::ValueType::F64, false,
        [&](int64_t r0, int64_t r1, int32_t* oc, double* ov, int64_t* ends) {
          const int64_t n = fill_rows(r0, r1, oc, ov, ends, order);
          if (r1 == rows) finished = 1;
          return n;
        });
  };
  const Tensor want = build(1, 0);
  ASSERT_EQ(want.nnz(), [&] { int64_t n = 0; for (int64_t i = 0; i < rows; ++i) n += len(i); return n; }());
  for (int threads : {2, 3, 7})
    for (int order : {0, 1, 2}) EXPECT_TRUE(same_bits(want, build(threads, order))) << threads << " threads, order " << order;
  // A chunk that fails: the call throws its error, whatever the others did.
  for (int threads : {2, 3}) {
    sj::Workers w = sj::Workers::for_call(context(threads), 0);
    const sj::Partition p = sj::partition_by_prefix(bound.data(), rows, w, "test");
    ASSERT_GT(p.chunks(), 2);
    const int64_t bad = p.begin(p.chunks() / 2);
    auto failing = [&](int64_t r0, int64_t r1, int32_t* oc, double* ov, int64_t* ends) {
      if (r0 == bad) sj::fail(SJ_ERR_INTERNAL, "chunk failed on purpose");
      return fill_rows(r0, r1, oc, ov, ends, 0);
    };
    auto call = [&] {
      return sj::assemble_by_pieces<int32_t, double>(w, p, rows, cols, bound.data(), 0, sj::default_allocator(),
                                                     sj::ValueType::F64, false, failing);
    };
    EXPECT_THROW(call(), sj::Error) << threads << " threads";
  }
}

// Joins large enough to be copied by all the threads (kParallelCopyMin entries): chunks left
// unmoved when the last one is filled are moved by all threads (tight bounds: only the heads
// that land below a chunk's source are copied aside), copied in parallel to an exact-size
// result (shrink, a loose bound), or moved in order (a loose bound without shrink); with gaps
// that put whole chunks below their source. Every way gives the one-thread arrays.
TEST(SparseAssembly, LargeJoinsMovedByAllThreadsMatchSerial) {
  SplitSmallInputs split;
  const int64_t rows = 60000, cols = 1000;
  std::vector<int64_t> len(rows);
  Rng rng(11);
  for (int64_t i = 0; i < rows; ++i) len[i] = (i / 5000) % 4 == 3 ? 0 : static_cast<int64_t>(rng.next() % 7);
  for (int64_t i = 55000; i < rows; ++i) len[i] = i % 100 == 0;  // few entries, for gaps 3
  ASSERT_GT([&] { int64_t n = 0; for (int64_t l : len) n += l; return n; }(), 2 * sj::kParallelCopyMin);
  double salt = 0;  // differs between the (gaps, shrink) cases: no case finds another's values in reused memory
  auto fill_rows = [&](int64_t r0, int64_t r1, int32_t* oc, double* ov, int64_t* ends, int order) {
    if (order == 1 && r0 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // nothing moves early
    if (order == 2) std::this_thread::sleep_for(std::chrono::microseconds((r0 * 7919) % 300));
    int64_t q = 0;
    for (int64_t i = r0; i < r1; ++i) {
      for (int64_t t = 0; t < len[i]; ++t, ++q) {
        oc[q] = static_cast<int32_t>((i * 13 + t) % cols);
        ov[q] = static_cast<double>(i) + 0.125 * static_cast<double>(t) + salt;
      }
      ends[i] = q;
    }
    return q;
  };
  // Gaps: 0 tight (one spare entry every 97 rows), 1 loose (3x + 1), 2 mostly tight with
  // bursts of up to 400 spare entries, 3 tight but 3 spare per row from row 55000 on (chunks
  // there land wholly below their source: all head).
  for (int gaps : {0, 1, 2, 3}) {
    std::vector<int64_t> bound(rows + 1, 0);
    Rng g(29);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t spare = gaps == 0   ? (i % 97 == 0)
                            : gaps == 1 ? 2 * len[i] + 1
                            : gaps == 2 ? (g.next() % 500 == 0 ? g.next() % 400 : 0)
                                        : 3 * (i >= 55000);
      bound[i + 1] = bound[i] + len[i] + spare;
    }
    for (bool shrink : {false, true}) {
      salt += 1e6;
      auto build = [&](int threads, int order) {
        sj::Workers w = sj::Workers::for_call(context(threads), 0);
        const sj::Partition p = sj::partition_by_prefix(bound.data(), rows, w, "test");
        if (threads > 1) EXPECT_GT(p.chunks(), 2);
        return sj::assemble_by_pieces<int32_t, double>(
            w, p, rows, cols, bound.data(), 0, sj::default_allocator(), sj::ValueType::F64, shrink,
            [&](int64_t r0, int64_t r1, int32_t* oc, double* ov, int64_t* ends) { return fill_rows(r0, r1, oc, ov, ends, order); });
      };
      // Every result is kept to the end, so that none is built in memory an equal one left.
      std::vector<Tensor> built{build(1, 0)};
      for (int threads : {2, 3, 7})
        for (int order : {0, 1, 2}) {
          built.push_back(build(threads, order));
          EXPECT_TRUE(same_bits(built.front(), built.back()))
              << threads << " threads, order " << order << ", gaps " << gaps << ", shrink " << shrink;
        }
    }
  }
}

// ---- every operation and schedule, 1/2/3/7 threads ------------------------------------------

sj_op_options options(sj_schedule s, bool dense = false, bool tb = false) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = s;
  o.dense_output = dense ? 1 : 0;
  o.transpose_b = tb ? 1 : 0;
  return o;
}

struct Case {
  std::string name;
  sj_op op;
  std::vector<Tensor> operands;
  sj_op_options opt;
};

// Runs the case with each thread count; every result must equal the one-thread result and
// the reference schedule's, bit for bit. With several threads, the plan must have split.
void check_case(const Case& c, bool expect_split = true) {
  SCOPED_TRACE(c.name);
  sj_op_options ref = c.opt;
  ref.schedule = SJ_SCHEDULE_REFERENCE;
  sj::Plan rp(context(1), sj::OpRequest{c.op, c.operands, ref});
  const Tensor want = rp.execute(c.operands);
  for (int threads : kThreadCounts) {
    sj::Plan plan(context(threads), sj::OpRequest{c.op, c.operands, c.opt});
    ASSERT_EQ(plan.schedule(), c.opt.schedule);
    const Tensor got = plan.execute(c.operands);
    EXPECT_TRUE(same_bits(want, got)) << threads << " threads";
    const std::string text = plan.explain_text();
    EXPECT_NE(text.find("threads: " + std::to_string(threads)), std::string::npos) << text;
    if (threads > 1 && expect_split) {
      EXPECT_NE(text.find("chunks taken dynamically"), std::string::npos) << text;
    }
  }
}

template <class I, class V> Tensor T(const sj::CsResult<I, V>& m) {
  return sj::to_tensor(sj::default_allocator(), true, m, sj::ValueType::F64);
}

std::vector<sj::CsResult<int32_t, double>> inputs(Rng& rng, int64_t n) {
  sj::test::MatrixOptions empty;
  empty.empty_row_fraction = 0.4;
  return {
      sj::test::random_uniform<int32_t, double>(rng, n, n, 0.05),
      sj::test::random_power_law<int32_t, double>(rng, n, n, 6.0, 1.2),  // skewed rows
      sj::test::random_uniform<int32_t, double>(rng, n, n, 0.08, empty),  // many empty rows
  };
}

TEST(ParallelDeterminism, SpgemmEverySchedule) {
  SplitSmallInputs split;
  Rng rng(11);
  for (auto& a : inputs(rng, 240)) {
    auto b = sj::test::random_power_law<int32_t, double>(rng, 240, 260, 5.0, 1.3);
    std::vector<Tensor> ops{T(a), T(b)};
    for (sj_schedule s : {SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH, SJ_SCHEDULE_INNER}) {
      check_case({"spgemm " + std::to_string(s), SJ_OP_SPGEMM, ops, options(s)}, s != SJ_SCHEDULE_INNER);
      if (s == SJ_SCHEDULE_GUSTAVSON_DENSE)
        check_case({"spgemm dense output", SJ_OP_SPGEMM, ops, options(s, true)});
    }
  }
}

// Products too small for two chunks stay off the parallel drivers (whose pass for every row's
// bound made a small product 1.14-1.42x slower at 2 threads than at 1), but exactly as those
// drivers' partitions would decide: with min_parallel_work set to a product's work it splits,
// one unit more and it runs serially. Work: multiplies plus 4 per entry and per row of A
// (Gustavson, both accumulators, and the complemented mask); for saxpy-then-mask, 1 per row
// plus the mask row and its multiplies where the mask row is not empty.
TEST(ParallelDeterminism, SmallProductsSplitExactlyAtMinParallelWork) {
  struct Knobs {
    int64_t chunk = sj::parallel_tuning().min_chunk_work.load();
    int64_t parallel = sj::parallel_tuning().min_parallel_work.load();
    ~Knobs() {
      sj::parallel_tuning().min_chunk_work = chunk;
      sj::parallel_tuning().min_parallel_work = parallel;
    }
  } knobs;
  sj::parallel_tuning().min_chunk_work = 1;
  Rng rng(29);
  sj::test::MatrixOptions empty;
  empty.empty_row_fraction = 0.2;
  const auto a = sj::test::random_power_law<int32_t, double>(rng, 300, 280, 4.0, 1.3, empty);
  const auto b = sj::test::random_uniform<int32_t, double>(rng, 280, 310, 0.02);
  const auto m = sj::test::random_uniform<int32_t, double>(rng, 300, 310, 0.05, empty);
  int64_t product_work = 0, masked_work = 0;
  for (int64_t i = 0; i < a.outer; ++i) {
    int64_t f = 0;
    for (int64_t p = a.pos[i]; p < a.pos[i + 1]; ++p) f += b.pos[a.crd[p] + 1] - b.pos[a.crd[p]];
    product_work += f + 4 * (a.pos[i + 1] - a.pos[i]) + 4;
    const int64_t mlen = m.pos[i + 1] - m.pos[i];
    masked_work += 1 + (mlen ? mlen + f : 0);
  }
  const std::vector<Tensor> product{T(a), T(b)}, masked{T(m), T(a), T(b)};
  sj_op_options complement = options(SJ_SCHEDULE_GUSTAVSON_DENSE);
  complement.mask_complement = 1;
  const Case cases[] = {
      {"gustavson dense", SJ_OP_SPGEMM, product, options(SJ_SCHEDULE_GUSTAVSON_DENSE)},
      {"gustavson hash", SJ_OP_SPGEMM, product, options(SJ_SCHEDULE_GUSTAVSON_HASH)},
      {"mask complemented", SJ_OP_SPGEMM_MASKED, masked, complement},
      {"saxpy-then-mask", SJ_OP_SPGEMM_MASKED, masked, options(SJ_SCHEDULE_GUSTAVSON_DENSE)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t work = c.op == SJ_OP_SPGEMM_MASKED && !c.opt.mask_complement ? masked_work : product_work;
    sj_op_options ref = c.opt;
    ref.schedule = SJ_SCHEDULE_REFERENCE;
    const Tensor want = sj::Plan(context(1), sj::OpRequest{c.op, c.operands, ref}).execute(c.operands);
    for (int64_t threshold : {work, work + 1}) {
      sj::parallel_tuning().min_parallel_work = threshold;
      sj::Plan plan(context(2), sj::OpRequest{c.op, c.operands, c.opt});
      EXPECT_TRUE(same_bits(want, plan.execute(c.operands))) << "min_parallel_work " << threshold;
      const std::string text = plan.explain_text();
      const bool split = text.find("chunks taken dynamically") != std::string::npos;
      EXPECT_EQ(split, threshold == work) << "min_parallel_work " << threshold << " (work " << work << ")\n" << text;
    }
  }
}

// `op` by each of `schedules` at every thread count under a memory cap that the exact result
// fits and its upper bound does not, so that each row is counted first: bit-identical to the
// reference (options `o` otherwise, e.g. a complemented mask).
void check_counting_first(sj_op op, const std::vector<Tensor>& ops, const std::vector<sj_schedule>& schedules,
                          sj_op_options o = options(SJ_SCHEDULE_REFERENCE)) {
  o.schedule = SJ_SCHEDULE_REFERENCE;
  const Tensor want = sj::Plan(context(1), sj::OpRequest{op, ops, o}).execute(ops);
  const int64_t nnz = want.levels[1].pos.as<int64_t>()[want.dims[0]];
  ASSERT_GT(nnz, 0);
  const size_t cap = static_cast<size_t>(nnz * 12 + (want.dims[0] + 1) * 8) * 3 / 2 + 4096;
  for (sj_schedule s : schedules)
    for (int threads : kThreadCounts) {
      sj_config c;
      sj_config_init(&c);
      c.threads = threads;
      c.disable_disk_cache = 1;
      c.memory_cap_bytes = cap;
      sj::Context ctx(c);
      o.schedule = s;
      sj::Plan plan(ctx, sj::OpRequest{op, ops, o});
      EXPECT_TRUE(same_bits(want, plan.execute(ops))) << threads << " threads under a cap, schedule " << s;
    }
}

// Gustavson (dense and hash) counting first.
void check_spgemm_counting_first(const std::vector<Tensor>& ops) {
  check_counting_first(SJ_OP_SPGEMM, ops, {SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH});
}

// Under a memory cap that the output bound exceeds, Gustavson counts each row first and the
// chunks fill one shared array (assemble_two_pass). A row may write a few entries past its end
// (kRowSlack): rows whose slack reaches the next chunk go through a scratch row. Short rows
// (0-3 columns) put many chunk ends next to rows that are dense in their span.
TEST(ParallelDeterminism, SpgemmTwoPassUnderMemoryCap) {
  SplitSmallInputs split;
  Rng rng(13);
  sj::test::MatrixOptions empty;
  empty.empty_row_fraction = 0.3;
  const auto a = sj::test::random_power_law<int32_t, double>(rng, 400, 300, 3.0, 1.3, empty);
  const auto b = sj::test::random_banded<int32_t, double>(rng, 300, 300, 6, 6, 0.8);
  check_spgemm_counting_first({T(a), T(b)});
}

// A B whose columns and values pass 1 MiB: Gustavson prefetches B's rows ahead of the row it
// computes (BRowPrefetch, into the next rows and past each chunk's end), in the serial and
// parallel drivers, with the upper-bound arrays and (under a memory cap) counting first.
TEST(ParallelDeterminism, SpgemmWithLargeBMatchesTheReference) {
  SplitSmallInputs split;
  Rng rng(17);
  sj::test::MatrixOptions empty;
  empty.empty_row_fraction = 0.2;
  const auto a = sj::test::random_power_law<int32_t, double>(rng, 2000, 30000, 4.0, 1.3, empty);
  const auto b = sj::test::random_uniform<int32_t, double>(rng, 30000, 30000, 1.2e-4);
  ASSERT_GT(b.crd.size() * 12, size_t(1) << 20);
  std::vector<Tensor> ops{T(a), T(b)};
  for (sj_schedule s : {SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH})
    check_case({"spgemm, large B, schedule " + std::to_string(s), SJ_OP_SPGEMM, ops, options(s)});
  check_spgemm_counting_first(ops);
}

TEST(ParallelDeterminism, MaskedSpgemmEverySchedule) {
  SplitSmallInputs split;
  Rng rng(12);
  for (auto& a : inputs(rng, 200)) {
    auto b = sj::test::random_uniform<int32_t, double>(rng, 200, 200, 0.06);
    auto m = sj::test::random_power_law<int32_t, double>(rng, 200, 200, 20.0, 1.3);
    std::vector<Tensor> ops{T(m), T(a), T(b)};
    for (sj_schedule s : {SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_INNER})
      check_case({"masked " + std::to_string(s), SJ_OP_SPGEMM_MASKED, ops, options(s)}, s != SJ_SCHEDULE_INNER);
    sj_op_options comp = options(SJ_SCHEDULE_GUSTAVSON_DENSE);
    comp.mask_complement = 1;
    check_case({"masked, mask complemented", SJ_OP_SPGEMM_MASKED, ops, comp});
  }
}

// C<!M> = A*B too wide for a dense workspace (2^22 columns): the hash accumulator with each
// product's column searched in the mask row, at every thread count.
TEST(ParallelDeterminism, MaskComplementWideProduct) {
  SplitSmallInputs split;
  Rng rng(23);
  constexpr int64_t kCols = int64_t(1) << 22;
  auto spread = [&](int64_t rows, int64_t every, int64_t shift) {  // columns s * 2^16 + shift
    sj::CsResult<int32_t, double> r;
    r.outer = rows, r.inner = kCols;
    r.pos.push_back(0);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t c = 0; c < 64; ++c)
        if (rng.uniform_int(0, every - 1) == 0) {
          r.crd.push_back(static_cast<int32_t>(c * (kCols / 64) + shift + (c % 3 == 0)));
          r.val.push_back(static_cast<double>(rng.uniform_int(1, 9)));
        }
      r.pos.push_back(static_cast<int64_t>(r.crd.size()));
    }
    return r;
  };
  const auto a = sj::test::random_uniform<int32_t, double>(rng, 120, 40, 0.15);
  const auto b = spread(40, 5, 7), m = spread(120, 3, 7);
  sj_op_options comp = options(SJ_SCHEDULE_GUSTAVSON_DENSE);
  comp.mask_complement = 1;
  check_case({"masked, mask complemented, wide", SJ_OP_SPGEMM_MASKED, {T(m), T(a), T(b)}, comp});
}

// C<!M> = A*B under a memory cap that its exact result fits and its upper bound does not (rows
// counted first, then filled), at every thread count: bit-identical to the reference.
TEST(ParallelDeterminism, MaskComplementCountsFirstUnderMemoryCap) {
  SplitSmallInputs split;
  Rng rng(19);
  sj::test::MatrixOptions empty;
  empty.empty_row_fraction = 0.3;
  const auto a = sj::test::random_power_law<int32_t, double>(rng, 400, 300, 3.0, 1.3, empty);
  const auto b = sj::test::random_banded<int32_t, double>(rng, 300, 300, 6, 6, 0.8);
  const auto m = sj::test::random_banded<int32_t, double>(rng, 400, 300, 3, 3, 0.7);
  sj_op_options o = options(SJ_SCHEDULE_REFERENCE);
  o.mask_complement = 1;
  check_counting_first(SJ_OP_SPGEMM_MASKED, {T(m), T(a), T(b)}, {SJ_SCHEDULE_GUSTAVSON_DENSE}, o);
}

TEST(ParallelDeterminism, SpmspvAndSpmvEverySchedule) {
  SplitSmallInputs split;
  Rng rng(13);
  for (auto& a : inputs(rng, 400)) {
    for (double density : {0.02, 0.3}) {
      auto xr = sj::test::random_sparse_vector<int32_t, double>(rng, 400, density);
      std::vector<Tensor> ops{T(a), sj::to_tensor(sj::default_allocator(), xr, sj::ValueType::F64)};
      for (sj_schedule s : {SJ_SCHEDULE_PUSH, SJ_SCHEDULE_DENSIFY, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_INNER})
        for (bool dense : {false, true})
          check_case({"spmspv " + std::to_string(s) + (dense ? " dense" : ""), SJ_OP_SPMSPV, ops, options(s, dense)},
                     s != SJ_SCHEDULE_INNER);
    }
    const std::vector<double> xd = sj::test::random_dense_vector<double>(rng, 400);
    const int64_t n = 400;
    Tensor x = sj::make_dense(sj::default_allocator(), 1, &n, sj::ValueType::F64);
    std::memcpy(x.values.mutable_data(), xd.data(), sizeof(double) * xd.size());
    check_case({"spmv", SJ_OP_SPMV, {T(a), x}, options(SJ_SCHEDULE_DENSIFY)});
  }
}

// A push whose single chunk has over 4096 rows takes the dense accumulator, and its chunks
// at more threads (under 4096 rows each) the sparse one: the same bits either way.
TEST(ParallelDeterminism, SpmspvPushEitherAccumulator) {
  SplitSmallInputs split;
  Rng rng(15);
  const auto a = sj::test::random_uniform<int32_t, double>(rng, 20000, 2000, 0.002);
  for (double density : {0.3, 0.05}) {  // ~1.2 and ~0.2 products per output row
    auto xr = sj::test::random_sparse_vector<int32_t, double>(rng, 2000, density);
    // A's CSC shape and nnz (all the choice reads): one chunk of all rows picks the dense
    // accumulator at x 30%, and neither a 4000-row chunk nor x at 5% does.
    std::vector<int64_t> csc_pos(2001, 0);
    csc_pos.back() = a.pos.back();
    const sj::CsView<int32_t, double> csc{2000, 20000, csc_pos.data(), nullptr, nullptr};
    const int64_t nx = static_cast<int64_t>(xr.idx.size());
    EXPECT_EQ(sj::spmspv::push_dense_accumulator(csc, nx, 0, 20000), density > 0.1);
    EXPECT_FALSE(sj::spmspv::push_dense_accumulator(csc, nx, 8000, 12000));
    std::vector<Tensor> ops{T(a), sj::to_tensor(sj::default_allocator(), xr, sj::ValueType::F64)};
    for (bool dense : {false, true})
      check_case({"spmspv push x " + std::to_string(density) + (dense ? " dense" : ""), SJ_OP_SPMSPV, ops,
                  options(SJ_SCHEDULE_PUSH, dense)});
  }
}

TEST(ParallelDeterminism, ElementWiseEverySchedule) {
  SplitSmallInputs split;
  Rng rng(14);
  for (auto& a : inputs(rng, 300)) {
    auto b = sj::test::random_power_law<int32_t, double>(rng, 300, 300, 8.0, 1.2);
    std::vector<Tensor> ops{T(a), T(b)};
    check_case({"mult inner", SJ_OP_EWISE_MULT, ops, options(SJ_SCHEDULE_INNER)}, false);
    check_case({"mult transpose", SJ_OP_EWISE_MULT, ops, options(SJ_SCHEDULE_TRANSPOSE, false, true)}, false);
    check_case({"mult search", SJ_OP_EWISE_MULT, ops, options(SJ_SCHEDULE_SEARCH, false, true)});
    check_case({"add inner", SJ_OP_EWISE_ADD, ops, options(SJ_SCHEDULE_INNER)});
    check_case({"add transpose", SJ_OP_EWISE_ADD, ops, options(SJ_SCHEDULE_TRANSPOSE, false, true)});
  }
}

// NaN * NaN keeps one side's payload, and the generated kernels and the compiled products may
// keep different sides. So the route of long pairs (generated kernel or AVX-512 blocks) is
// decided once per call, from a sample of the whole call, never per chunk. The first half's
// long rows share most of their coordinates, the second half's one in 300 (a NaN on both sides):
// a sample of the whole call (its first runs) picks the kernel, one of the second half alone
// would pick the blocks. With short rows between and NaNs of distinct payloads, every thread
// count must give the same bits.
TEST(ParallelDeterminism, ElementWiseNanPayloadsDoNotDependOnThreads) {
  SplitSmallInputs split;
  Rng rng(41);
  const int64_t n = 600, cols = 4096;
  sj::CsResult<int32_t, double> a, b;
  a.outer = b.outer = n;
  a.inner = b.inner = cols;
  a.pos.push_back(0);
  b.pos.push_back(0);
  uint64_t payload = 1;
  auto nan = [&] { return std::bit_cast<double>(0x7ff8000000000000ull | (payload++ & 0x7ffffull)); };
  auto value = [&] { return rng.uniform01() < 0.3 ? nan() : rng.uniform01() + 0.5; };
  for (int64_t i = 0; i < n; ++i) {
    if (i % 3 == 0 && i >= n / 2) {  // 300 a side, A on even columns, B on odd, one shared
      const int32_t shared = static_cast<int32_t>(2 * rng.uniform_int(0, 299));
      for (int32_t c = 0; c < 600; ++c) {
        if (c % 2 == 0) a.crd.push_back(c), a.val.push_back(c == shared ? nan() : value());
        if (c % 2 == 1 || c == shared) b.crd.push_back(c), b.val.push_back(c == shared ? nan() : value());
      }
    } else {
      const int64_t len = i % 3 == 0 ? 300 : rng.uniform_int(0, 39);
      for (int32_t c = 0; c < cols && static_cast<int64_t>(a.crd.size()) - a.pos.back() < len &&
                          static_cast<int64_t>(b.crd.size()) - b.pos.back() < len;
           c += 1 + static_cast<int32_t>(rng.uniform_int(0, 3))) {
        const double u = rng.uniform01();
        if (u < 0.6) a.crd.push_back(c), a.val.push_back(value());
        if (u > 0.2) b.crd.push_back(c), b.val.push_back(value());
      }
    }
    a.pos.push_back(static_cast<int64_t>(a.crd.size()));
    b.pos.push_back(static_cast<int64_t>(b.crd.size()));
  }
  // Any kernel threshold up to 300 gives these routes (short rows never count as long).
  const sj::CsView<int32_t, double> av{n, cols, a.pos.data(), a.crd.data(), a.val.data()};
  const sj::CsView<int32_t, double> bv{n, cols, b.pos.data(), b.crd.data(), b.val.data()};
  const sj::CsView<int32_t, double> a2{n - n / 2, cols, a.pos.data() + n / 2, a.crd.data(), a.val.data()};
  const sj::CsView<int32_t, double> b2{n - n / 2, cols, b.pos.data() + n / 2, b.crd.data(), b.val.data()};
  if (sj::intersect_avx512::available()) {
    EXPECT_EQ(sj::ewise::long_pair_route(av, bv, 24, true), sj::ewise::LongRoute::LongToGenerated);
    EXPECT_EQ(sj::ewise::long_pair_route(a2, b2, 24, true), sj::ewise::LongRoute::LongToBlocks);
  }
  std::vector<Tensor> ops{T(a), T(b)};
  for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_INNER}) {
    std::vector<Tensor> got;
    for (int threads : kThreadCounts) {
      sj::Plan plan(context(threads), sj::OpRequest{SJ_OP_EWISE_MULT, ops, options(s)});
      got.push_back(plan.execute(ops));
      EXPECT_TRUE(same_bits(got.front(), got.back())) << threads << " threads, schedule " << s;
    }
    const double* v = got.front().values.as<double>();
    int64_t nans = 0;
    for (int64_t k = 0; k < got.front().nnz(); ++k) nans += std::isnan(v[k]);
    EXPECT_GT(nans, 100) << "the products include NaN * NaN and NaN * x";
  }
}

TEST(ParallelDeterminism, RealMatrices) {
  SplitSmallInputs split;
  std::vector<std::filesystem::path> picked;
  for (const auto& p : sj::test::shared_matrices())
    if (std::filesystem::file_size(p) < 400000) picked.push_back(p);
  if (picked.empty()) GTEST_SKIP() << "no shared matrices";
  std::sort(picked.begin(), picked.end());
  if (picked.size() > 4) picked.resize(4);
  for (const auto& path : picked) {
    Tensor a = sj::read_tensor_file(path.string(), sj::default_allocator());
    if (a.order != 2 || a.dims[0] != a.dims[1] || a.value_type != sj::ValueType::F64) continue;
    a = sj::as_csr(a, false, a.index_type, sj::default_allocator());
    SCOPED_TRACE(path.filename().string());
    std::vector<Tensor> ops{a, a};
    for (sj_schedule s : {SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH})
      check_case({"spgemm", SJ_OP_SPGEMM, ops, options(s)});
    check_case({"masked", SJ_OP_SPGEMM_MASKED, {a, a, a}, options(SJ_SCHEDULE_GUSTAVSON_DENSE)});
    sj_op_options comp = options(SJ_SCHEDULE_GUSTAVSON_DENSE);
    comp.mask_complement = 1;
    check_case({"masked, mask complemented", SJ_OP_SPGEMM_MASKED, {a, a, a}, comp});
    check_case({"add A + A^T", SJ_OP_EWISE_ADD, ops, options(SJ_SCHEDULE_TRANSPOSE, false, true)});
    Rng rng(3);
    auto xr = sj::test::random_sparse_vector<int32_t, double>(rng, a.dims[1], 0.2);
    if (a.index_type != sj::IndexType::I32) continue;
    check_case({"spmspv push", SJ_OP_SPMSPV, {a, sj::to_tensor(sj::default_allocator(), xr, sj::ValueType::F64)},
                options(SJ_SCHEDULE_PUSH)});
  }
}

// ---- one context, many threads -------------------------------------------------------------

struct Handles {
  std::vector<sj_tensor*> t;
  ~Handles() {
    for (auto* h : t) sj_tensor_destroy(h);
  }
};

TEST(ParallelContext, ManyThreadsShareOneContext) {
  SplitSmallInputs split;
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.threads = 3;
  cfg.disable_disk_cache = 1;
  sj_context* ctx = nullptr;
  ASSERT_EQ(sj_context_create(&cfg, &ctx), SJ_OK);
  Rng rng(21);
  auto a = sj::test::random_power_law<int32_t, double>(rng, 300, 300, 6.0, 1.3);
  auto xr = sj::test::random_sparse_vector<int32_t, double>(rng, 300, 0.2);
  Handles h;
  h.t.push_back(sj::test::csr_handle(ctx, a));
  h.t.push_back(sj::test::vec_handle(ctx, xr));
  sj_tensor* A = h.t[0];
  sj_tensor* x = h.t[1];

  // Expected results, one thread.
  sj_op_options one;
  sj_op_options_init(&one);
  one.threads = 1;
  sj_tensor* want_c = nullptr;
  sj_tensor* want_y = nullptr;
  ASSERT_EQ(sj_spgemm(ctx, A, A, &one, &want_c), SJ_OK) << sj_last_error_message();
  ASSERT_EQ(sj_spmspv(ctx, A, x, &one, &want_y), SJ_OK) << sj_last_error_message();
  h.t.push_back(want_c);
  h.t.push_back(want_y);

  // One plan shared by every thread, plus per-thread drop-in calls and plans.
  const sj_tensor* ops[2] = {A, A};
  sj_plan* shared = nullptr;
  ASSERT_EQ(sj_plan_create(ctx, SJ_OP_SPGEMM, ops, 2, nullptr, &shared), SJ_OK);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 4; ++round) {
        sj_tensor* c = nullptr;
        if (sj_plan_execute(shared, ops, 2, &c) != SJ_OK || !same_bits(want_c->t, c->t)) bad.fetch_add(1);
        sj_tensor_destroy(c);
        sj_op_options o;
        sj_op_options_init(&o);
        o.threads = 1 + (t + round) % 3;
        o.schedule = (t % 2) ? SJ_SCHEDULE_GUSTAVSON_HASH : SJ_SCHEDULE_GUSTAVSON_DENSE;
        c = nullptr;
        if (sj_spgemm(ctx, A, A, &o, &c) != SJ_OK || !same_bits(want_c->t, c->t)) bad.fetch_add(1);
        sj_tensor_destroy(c);
        o.schedule = (t % 2) ? SJ_SCHEDULE_PUSH : SJ_SCHEDULE_DENSIFY;
        sj_tensor* y = nullptr;
        if (sj_spmspv(ctx, A, x, &o, &y) != SJ_OK || !same_bits(want_y->t, y->t)) bad.fetch_add(1);
        sj_tensor_destroy(y);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);

  // A result handle gets its store of kept forms at its first use as an operand
  // (capi/handles.hpp): fresh results, each first used by six threads at once (SpMSpV keeps a
  // CSC copy of A in that store, SpGEMM statistics), give every thread the one-thread result.
  for (int round = 0; round < 3; ++round) {
    sj_tensor* C = nullptr;  // a result never used as an operand yet
    ASSERT_EQ(sj_spgemm(ctx, A, A, &one, &C), SJ_OK) << sj_last_error_message();
    h.t.push_back(C);
    sj_tensor* want_cx = nullptr;
    sj_tensor* want_cc = nullptr;
    {  // expected results from a copy, so that C itself stays unused
      sj_tensor* C2 = nullptr;
      ASSERT_EQ(sj_tensor_convert(ctx, C, SJ_FORMAT_CSR, nullptr, SJ_INDEX_INT32, &C2), SJ_OK) << sj_last_error_message();
      h.t.push_back(C2);
      ASSERT_EQ(sj_spmspv(ctx, C2, x, &one, &want_cx), SJ_OK) << sj_last_error_message();
      ASSERT_EQ(sj_spgemm(ctx, C2, C2, &one, &want_cc), SJ_OK) << sj_last_error_message();
      h.t.push_back(want_cx);
      h.t.push_back(want_cc);
    }
    ASSERT_EQ(C->t.derived, nullptr) << "round " << round;  // not made with the handle
    std::vector<std::thread> users;
    for (int t = 0; t < 6; ++t)
      users.emplace_back([&, t] {
        sj_op_options o;
        sj_op_options_init(&o);
        o.threads = 1 + t % 2;
        o.schedule = SJ_SCHEDULE_PUSH;
        sj_tensor* y = nullptr;
        if (sj_spmspv(ctx, C, x, &o, &y) != SJ_OK || !same_bits(want_cx->t, y->t)) bad.fetch_add(1);
        sj_tensor_destroy(y);
        o.schedule = SJ_SCHEDULE_AUTO;
        sj_tensor* cc = nullptr;
        if (sj_spgemm(ctx, C, C, &o, &cc) != SJ_OK || !same_bits(want_cc->t, cc->t)) bad.fetch_add(1);
        sj_tensor_destroy(cc);
      });
    for (auto& th : users) th.join();
    EXPECT_NE(C->t.derived, nullptr) << "round " << round;
  }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(sj_plan_destroy(shared), SJ_OK);
  for (auto* t : h.t) sj_tensor_destroy(t);
  h.t.clear();
  EXPECT_EQ(sj_context_destroy(ctx), SJ_OK);
}

// Plans that need the same fresh JIT kernel, made by six threads at once, build it once.
TEST(ParallelContext, KernelBuiltOnceUnderContention) {
  Rng rng(22);
  auto a = sj::test::random_uniform<int32_t, double>(rng, 120, 120, 0.2);
  std::vector<Tensor> ops{T(a), T(a)};
  auto opts = [](sj_semiring s) {
    sj_op_options o = options(SJ_SCHEDULE_INNER);
    o.semiring = s;
    o.vector_width = 4;
    std::strcpy(o.phases, "011");
    return o;
  };
  auto& cache = sj::cache::KernelCache::global();
  // How many builds one plan needs (serially, with a spec no other test uses).
  const uint64_t b0 = cache.stats().builds;
  sj::Plan probe(context(2), sj::OpRequest{SJ_OP_SPGEMM, ops, opts(SJ_SEMIRING_MAX_TIMES)});
  const uint64_t per_plan = cache.stats().builds - b0;

  const uint64_t b1 = cache.stats().builds;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  const Tensor want = probe.execute(ops);
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&] {
      sj::Plan p(context(2), sj::OpRequest{SJ_OP_SPGEMM, ops, opts(SJ_SEMIRING_MIN_PLUS)});
      Tensor got = p.execute(ops);
      if (got.nnz() != want.nnz()) bad.fetch_add(1);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(cache.stats().builds - b1, per_plan) << "each kernel is built once, not once per thread";
}

}  // namespace

// Parallel index-notation kernels (src/loop_dependence.hpp, EinsumPlan::execute): the level
// dependence test's verdicts (node / sibling / cousin) and what explain says about them; every
// expression gives bit-identical results with 1, 2, 3 and 7 threads (and agrees with the
// reference evaluator), whether its outermost loop is split or stays serial; per-chunk pieces
// of a streamed sparse output join to the serial result; the per-call thread count; one plan
// executed by several threads at once; real matrices when ../shared has them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/einsum_output.hpp"
#include "random_matrices.hpp"
#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/derived_forms.hpp"
#include "src/einsum_format.hpp"
#include "src/einsum_parser.hpp"
#include "src/einsum_planner.hpp"
#include "src/loop_dependence.hpp"
#include "src/tensor_file.hpp"
#include "src/work_partition.hpp"
#include "tensor_entries.hpp"
#include "test_util.hpp"

namespace sj::einsum {
namespace {

using test::Rng;
using test::entries_by_coordinates;

constexpr int kThreadCounts[] = {1, 2, 3, 7};

using sj::test::SplitSmallInputs;

const Context& context(int threads) {
  static std::vector<std::unique_ptr<Context>> all = [] {
    std::vector<std::unique_ptr<Context>> v;
    for (int t = 1; t <= 8; ++t) {
      sj_config c;
      sj_config_init(&c);
      c.threads = t;
      c.disable_disk_cache = 1;
      v.push_back(std::make_unique<Context>(c));
    }
    return v;
  }();
  return *all[static_cast<size_t>(threads) - 1];
}

// A random tensor in `spec`; the density of each slice of mode 0 varies (some slices empty,
// a few heavy), so work per outer coordinate is skewed.
Tensor random_tensor(Rng& rng, std::vector<int64_t> dims, double density, const FormatSpec& spec,
                     ValueType vt = ValueType::F64) {
  CooTensor coo;
  coo.order = static_cast<int>(dims.size());
  for (int m = 0; m < coo.order; ++m) coo.dims[m] = dims[m];
  int64_t total = 1;
  for (auto d : dims) total *= d;
  const int64_t inner = total / std::max<int64_t>(1, dims[0]);
  for (int64_t p = 0; p < total; ++p) {
    const int64_t i0 = p / std::max<int64_t>(1, inner);
    const double scale = i0 % 5 == 3 ? 0.0 : i0 % 13 == 0 ? 6.0 : 1.0;
    if (!rng.bernoulli(std::min(1.0, density * scale))) continue;
    int64_t r = p;
    for (int m = coo.order - 1; m >= 0; --m) {
      coo.coords[m].push_back(r % dims[m]);
      r /= dims[m];
    }
    // values with many significant bits, so a re-associated sum would show
    coo.values.push_back((rng.uniform01() - 0.3) * 3.0);
  }
  Tensor t = from_coo(coo, spec, IndexType::I32, vt, context(1).allocator);
  t.derived = std::make_shared<DerivedForms>();
  return t;
}

FormatSpec fmt(sj_format f, int order) { return format_spec(f, order); }

// Every array of the two tensors equal, byte for byte.
::testing::AssertionResult identical(const Tensor& a, const Tensor& b) {
  if (a.order != b.order || a.dims != b.dims || a.index_type != b.index_type || a.value_type != b.value_type ||
      a.mode_order != b.mode_order)
    return ::testing::AssertionFailure() << "shape/type: " << a.describe() << " vs " << b.describe();
  auto same = [](const Buffer& x, const Buffer& y, size_t bytes) {
    return bytes == 0 || (x.bytes() >= bytes && y.bytes() >= bytes && std::memcmp(x.data(), y.data(), bytes) == 0);
  };
  for (int l = 0; l < a.order; ++l) {
    const Level &x = a.levels[l], &y = b.levels[l];
    if (x.kind != y.kind) return ::testing::AssertionFailure() << "level " << l << " kind";
    if (a.level_entries(l) != b.level_entries(l)) return ::testing::AssertionFailure() << "level " << l << " sizes differ";
    if (x.kind == LevelKind::Dense) continue;
    const int64_t parents = l == 0 ? 1 : a.level_entries(l - 1);
    if (x.kind == LevelKind::Compressed && !same(x.pos, y.pos, 8 * static_cast<size_t>(parents + 1)))
      return ::testing::AssertionFailure() << "level " << l << " positions differ";
    if (!same(x.crd, y.crd, index_size(a.index_type) * static_cast<size_t>(a.level_entries(l))))
      return ::testing::AssertionFailure() << "level " << l << " coordinates differ";
  }
  if (!same(a.values, b.values, value_size(a.value_type) * static_cast<size_t>(a.nnz())))
    return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

// Same entries as the reference, values within a relative tolerance (its sum order differs).
::testing::AssertionResult close_to(const Tensor& got, const Tensor& want, double tol = 1e-9) {
  auto a = entries_by_coordinates(got), b = entries_by_coordinates(want);
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "entries " << a.size() << " vs " << b.size();
  for (auto& [k, v] : b) {
    auto it = a.find(k);
    if (it == a.end()) return ::testing::AssertionFailure() << "missing entry";
    if (std::abs(it->second - v) > tol * std::max(1.0, std::abs(v)))
      return ::testing::AssertionFailure() << "value " << it->second << " vs " << v;
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string expr;
  std::vector<Tensor> ops;
  std::vector<std::optional<std::string>> formats;
  std::optional<std::string> out_format;
  bool parallel;             // the verdict expected for every term
  std::string words;         // in explain's reason
  EinsumTuning tuning = {};
  double tol = 1e-9;
  sj_schedule schedule = SJ_SCHEDULE_AUTO;
};

// Runs the case with 1/2/3/7 threads: all results identical to the one-thread result, which
// agrees with the reference; explain gives the verdict, and a parallel nest really split.
void check(const Case& c) {
  SCOPED_TRACE(c.expr);
  SplitSmallInputs split;
  sj_op_options o;
  sj_op_options_init(&o);
  sj_op_options ro = o;
  ro.schedule = SJ_SCHEDULE_REFERENCE;
  o.schedule = c.schedule;
  const Tensor want = EinsumPlan(context(1), c.expr, c.ops, c.formats, c.out_format, ro).execute(c.ops);
  Tensor first;
  for (int threads : kThreadCounts) {
    EinsumPlan plan(context(threads), c.expr, c.ops, c.formats, c.out_format, o, c.tuning);
    for (auto& t : plan.terms()) {
      ASSERT_TRUE(t.kernel || t.spgemm) << "LLVM failed: " << t.jit_error;
      EXPECT_EQ(t.parallel.parallel, c.parallel) << t.parallel.reason;
      EXPECT_NE(t.parallel.reason.find(c.words), std::string::npos) << t.parallel.reason;
    }
    const Tensor got = plan.execute(c.ops);
    // again: the plan's kept assemblers start over (reset) and give the same bytes
    EXPECT_TRUE(identical(got, plan.execute(c.ops))) << "second execution, " << threads << " threads";
    if (threads == 1) {
      first = got;
      EXPECT_TRUE(close_to(got, want, c.tol));
    } else {
      EXPECT_TRUE(identical(first, got)) << threads << " threads";
    }
    const std::string text = plan.explain_text();
    EXPECT_NE(text.find("threads: " + std::to_string(threads)), std::string::npos) << text;
    EXPECT_NE(text.find(c.parallel ? "split among threads" : "stays serial"), std::string::npos) << text;
    const std::string json = plan.explain();
    EXPECT_NE(json.find(c.parallel ? "\"parallel\":true" : "\"parallel\":false"), std::string::npos) << json;
    if (threads > 1 && c.parallel)
      EXPECT_EQ(text.find("last execution: 1 chunk(s)"), std::string::npos) << "did not split:\n" << text;
    if (!c.parallel) EXPECT_NE(text.find("last execution: 1 chunk(s)"), std::string::npos) << text;
  }
}

// ---- the dependence test --------------------------------------------------------------------

TEST(ParallelEinsum, DependenceTestLevels) {
  Expression e = parse("C(i,j) = A(i,k) * B(k,j)");
  const int i = 0, j = 1, k = 2;
  ASSERT_EQ(e.index_names, (std::vector<std::string>{"i", "j", "k"}));
  LoopNest n;
  n.loops.resize(3);
  n.out_indices = {i, j};
  // node: the outermost loop binds output level 0
  n.mode = OutputMode::Where;
  n.loops[0].index = i, n.loops[1].index = k, n.loops[2].index = j;
  LoopParallelism p = outer_loop_parallelism(e, n);
  EXPECT_TRUE(p.parallel);
  EXPECT_EQ(p.level, "node");
  EXPECT_NE(p.reason.find("per thread"), std::string::npos) << p.reason;
  // sibling: a reduction index outermost, dense or sparse output
  n.loops[0].index = k, n.loops[1].index = i;
  for (OutputMode m : {OutputMode::Dense, OutputMode::Emit}) {
    n.mode = m;
    p = outer_loop_parallelism(e, n);
    EXPECT_FALSE(p.parallel);
    EXPECT_EQ(p.level, "sibling");
    EXPECT_NE(p.reason.find("k is a reduction index"), std::string::npos) << p.reason;
  }
  // cousin: output level 1 outermost in a sparse output; fine in a dense one
  n.loops[0].index = j, n.loops[1].index = i, n.loops[2].index = k;
  n.mode = OutputMode::Emit;
  p = outer_loop_parallelism(e, n);
  EXPECT_FALSE(p.parallel);
  EXPECT_EQ(p.level, "cousin");
  EXPECT_NE(p.reason.find("below the unbound i"), std::string::npos) << p.reason;
  n.mode = OutputMode::Dense;
  p = outer_loop_parallelism(e, n);
  EXPECT_TRUE(p.parallel);
  EXPECT_EQ(p.level, "node");
  // a scalar output: every loop is a reduction
  Expression s = parse("x = A(i,k) * B(i,k)");
  LoopNest sn;
  sn.loops.resize(2);
  sn.loops[0].index = 0, sn.loops[1].index = 1;
  p = outer_loop_parallelism(s, sn);
  EXPECT_FALSE(p.parallel);
  EXPECT_NE(p.reason.find("scalar output"), std::string::npos) << p.reason;
  EXPECT_FALSE(outer_loop_parallelism(s, LoopNest{}).parallel);
}

// ---- pieces of a streamed output -------------------------------------------------------------

TEST(ParallelEinsum, AssemblerPiecesJoinToTheWhole) {
  Rng rng(3);
  for (sj_format f : {SJ_FORMAT_CSR, SJ_FORMAT_DCSR}) {
    const FormatSpec spec = format_spec(f, 2);
    std::array<int64_t, kMaxOrder> dims{40, 30};
    std::vector<std::array<int64_t, 2>> entries;
    for (int64_t r = 0; r < 40; ++r)
      for (int64_t c = 0; c < 30; ++c)
        if (r % 4 != 1 && rng.bernoulli(0.2)) entries.push_back({r, c});
    auto feed = [&](StreamingAssembler& a, int64_t lo, int64_t hi) {
      for (auto& e : entries)
        if (e[0] >= lo && e[0] < hi) a.emit(&a, e.data(), static_cast<double>(e[0] * 100 + e[1]));
    };
    StreamingAssembler whole(spec, dims);
    feed(whole, 0, 40);
    const Tensor want = whole.finish(IndexType::I32, ValueType::F64, default_allocator());
    // chunks of rows, copied at prefix-summed offsets by three threads
    const int64_t bounds[] = {0, 1, 7, 8, 23, 40};
    Partition part;
    part.bounds.assign(std::begin(bounds), std::end(bounds));
    std::vector<std::unique_ptr<StreamingAssembler>> pieces;
    for (int c = 0; c + 1 < 6; ++c) {
      pieces.push_back(std::make_unique<StreamingAssembler>(spec, dims, bounds[c], bounds[c + 1]));
      feed(*pieces.back(), bounds[c], bounds[c + 1]);
    }
    Workers w = Workers::for_call(context(3), 0);
    const Tensor got = StreamingAssembler::finish_pieces(pieces, w, part, IndexType::I32, ValueType::F64, default_allocator());
    EXPECT_TRUE(identical(want, got)) << f;
    // Pieces whose row ranges leave gaps between them and at the end (rows no piece counts):
    // the first level's positions there repeat the running count.
    const int64_t ranges[][2] = {{0, 1}, {3, 7}, {8, 9}, {20, 23}, {30, 35}};
    auto covered = [&](int64_t row) {
      for (auto& g : ranges)
        if (row >= g[0] && row < g[1]) return true;
      return false;
    };
    StreamingAssembler partial(spec, dims);
    for (auto& e : entries)
      if (covered(e[0])) partial.emit(&partial, e.data(), static_cast<double>(e[0] * 100 + e[1]));
    const Tensor want_gaps = partial.finish(IndexType::I32, ValueType::F64, default_allocator());
    std::vector<std::unique_ptr<StreamingAssembler>> gapped;
    for (auto& g : ranges) {
      gapped.push_back(std::make_unique<StreamingAssembler>(spec, dims, g[0], g[1]));
      feed(*gapped.back(), g[0], g[1]);
    }
    const Tensor got_gaps = StreamingAssembler::finish_pieces(gapped, w, part, IndexType::I32, ValueType::F64, default_allocator());
    EXPECT_TRUE(identical(want_gaps, got_gaps)) << f << ", pieces with gaps";
  }
}

// Each layout's emit (one compressed level after 0, 1 or 2 dense ones, and any other layout)
// builds what the coordinate list gives, through the arrays' growth and after a reset (a plan
// reuses its assemblers); an entry emitted twice is refused by finish.
TEST(ParallelEinsum, AssemblerLayoutsMatchTheCoordinateList) {
  Rng rng(21);
  auto spec_of = [](std::vector<LevelKind> kinds, std::vector<int> order) {
    FormatSpec s;
    s.order = static_cast<int>(kinds.size());
    for (int l = 0; l < s.order; ++l) {
      s.kinds[l] = kinds[l];
      s.mode_order[l] = order[l];
    }
    return s;
  };
  const LevelKind D = LevelKind::Dense, C = LevelKind::Compressed;
  struct Case {
    FormatSpec spec;
    std::array<int64_t, kMaxOrder> dims;
  };
  const Case cases[] = {
      {spec_of({C}, {0}), {3000}},                      // sparse vector
      {spec_of({D, C}, {0, 1}), {70, 90}},              // CSR
      {spec_of({D, C}, {1, 0}), {90, 70}},              // CSC: level order (j, i)
      {spec_of({D, D, C}, {0, 1, 2}), {9, 8, 60}},      // dense, dense, compressed
      {spec_of({C, C}, {0, 1}), {70, 90}},              // DCSR: the general emit
      {spec_of({D, C, C}, {0, 1, 2}), {9, 20, 40}},     // the general emit, 3-D
  };
  for (const Case& k : cases) {
    const FormatSpec& spec = k.spec;
    int64_t total = 1;
    for (int l = 0; l < spec.order; ++l) total *= k.dims[spec.mode_order[l]];
    // every position in level order with probability 0.3: coordinates arrive sorted and unique
    std::vector<std::array<int64_t, kMaxOrder>> entries;
    for (int64_t q = 0; q < total; ++q) {
      if (!rng.bernoulli(0.3)) continue;
      std::array<int64_t, kMaxOrder> c{};
      int64_t r = q;
      for (int l = spec.order - 1; l >= 0; --l) {
        c[spec.mode_order[l]] = r % k.dims[spec.mode_order[l]];
        r /= k.dims[spec.mode_order[l]];
      }
      entries.push_back(c);
    }
    ASSERT_GT(entries.size(), 600u) << format_text(spec);  // past the first growth (256)
    CooTensor coo;
    coo.order = spec.order;
    coo.dims = k.dims;
    for (size_t e = 0; e < entries.size(); ++e) {
      for (int m = 0; m < spec.order; ++m) coo.coords[m].push_back(entries[e][m]);
      coo.values.push_back(0.5 + static_cast<double>(e));
    }
    // What a generated kernel does (EmitSink): append in the lane while it has room, else call.
    auto through_lane = [](StreamingAssembler& a, const int64_t* c, double v) {
      if (a.lane_n >= a.lane_cap) return a.emit(&a, c, v);
      const int64_t p = c[a.lane_p_mode[0]] * a.lane_p_mul[0] + c[a.lane_p_mode[1]] * a.lane_p_mul[1] - a.lane_p_base;
      a.lane_crd[a.lane_n] = c[a.lane_j_mode];
      a.lane_val[a.lane_n] = v;
      ++a.lane_counts[p];
      ++a.lane_n;
    };
    const bool one_compressed = spec.kinds[spec.order - 1] == C && (spec.order == 1 || spec.kinds[spec.order - 2] == D);
    for (IndexType it : {IndexType::I32, IndexType::I64}) {
      // rounds 0-1: one assembler through emit calls; 2-4: another through the lane as kernels
      // do, from empty arrays (the lane opens and grows through emit calls); rounds 1, 3 and 4
      // after a reset (arrays kept, so the lane starts with room)
      StreamingAssembler a(spec, k.dims), b(spec, k.dims);
      for (int round = 0; round < 5; ++round) {
        StreamingAssembler& s = round < 2 ? a : b;
        if (round == 1 || round > 2) s.reset(spec, k.dims, 0, k.dims[spec.mode_order[0]]);
        if (round > 2) EXPECT_EQ(s.lane_cap > 0, one_compressed) << format_text(spec) << " round " << round;
        // values differ per round: an array holding an earlier round's entries shows
        const double shift = 1e4 * round;
        for (size_t e = 0; e < entries.size(); ++e) {
          coo.values[e] = 0.5 + static_cast<double>(e) + shift;
          if (round < 2) s.emit(&s, entries[e].data(), coo.values[e]);
          else through_lane(s, entries[e].data(), coo.values[e]);
        }
        const Tensor want = from_coo(coo, spec, it, ValueType::F64, default_allocator());
        EXPECT_TRUE(identical(want, s.finish(it, ValueType::F64, default_allocator())))
            << format_text(spec) << " round " << round;
      }
      a.reset(spec, k.dims, 0, k.dims[spec.mode_order[0]]);
      a.emit(&a, entries[0].data(), 1.0);
      a.emit(&a, entries[1].data(), 2.0);
      a.emit(&a, entries[1].data(), 3.0);
      try {
        a.finish(it, ValueType::F64, default_allocator());
        ADD_FAILURE() << format_text(spec) << ": a repeated entry was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.status(), SJ_ERR_INTERNAL) << e.what();
      }
    }
  }
}

// The where consumer's sort: networks for short lists of 32-bit keys (narrow spans in 16-bit
// lanes, wide ones in 32-bit), radix for longer lists spanning under 2^32 (1-3 passes),
// std::sort otherwise (64-bit spans).
TEST(ParallelEinsum, WorkspaceListsSortAsStdSort) {
  Rng rng(17);
  const int64_t spans[] = {1,       100,          65534, 65535, 1000000, int64_t{2147483646}, int64_t{1} << 32,
                           int64_t{1} << 40};
  for (int64_t n : {0, 1, 2, 7, 8, 9, 16, 17, 63, 64, 65, 200, 255, 256, 257, 400, 3000}) {
    for (int64_t span : spans) {
      for (int64_t base : {int64_t{0}, int64_t{5}, int64_t{-3}}) {
        std::vector<int64_t> list;
        for (int64_t i = 0; i < n; ++i) list.push_back(base + rng.uniform_int(0, span - 1));
        std::vector<int64_t> want = list;
        std::sort(want.begin(), want.end());
        sort_workspace_list(list.data(), n);
        EXPECT_EQ(list, want) << "n " << n << " span " << span << " base " << base;
      }
    }
  }
}

// A dense operand stores no coordinates: its index type (sj_tensor_create_dense's label is
// int64) does not make the result int64; an int64 matrix, or the options, still do.
TEST(ParallelEinsum, DenseOperandsDoNotSetTheResultIndexType) {
  Rng rng(4);
  Tensor A = random_tensor(rng, {50, 40}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor x = random_tensor(rng, {40}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  x.index_type = IndexType::I64;
  ASSERT_EQ(A.index_type, IndexType::I32);
  sj_op_options o;
  sj_op_options_init(&o);
  const Tensor y32 = EinsumPlan(context(1), "y(i) = A(i,k) * x(k)", {A, x}, {}, std::nullopt, o).execute({A, x});
  EXPECT_EQ(y32.index_type, IndexType::I32);
  Tensor A64 = convert(A, format_spec_of(A), IndexType::I64, default_allocator());
  const Tensor y64 = EinsumPlan(context(1), "y(i) = A(i,k) * x(k)", {A64, x}, {}, std::nullopt, o).execute({A64, x});
  EXPECT_EQ(y64.index_type, IndexType::I64);
  o.output_index_type = SJ_INDEX_INT64;
  const Tensor asked = EinsumPlan(context(1), "y(i) = A(i,k) * x(k)", {A, x}, {}, std::nullopt, o).execute({A, x});
  EXPECT_EQ(asked.index_type, IndexType::I64);
  // the same entries in each
  ASSERT_EQ(y32.nnz(), y64.nnz());
  ASSERT_EQ(y32.nnz(), asked.nnz());
  for (int64_t p = 0; p < y32.nnz(); ++p) {
    EXPECT_EQ(y32.levels[0].crd.as<int32_t>()[p], y64.levels[0].crd.as<int64_t>()[p]);
    EXPECT_EQ(y32.values.as<double>()[p], asked.values.as<double>()[p]);
  }
}

// ---- expressions, 1/2/3/7 threads ------------------------------------------------------------

TEST(ParallelEinsum, SpmvAndSpgemm) {
  Rng rng(11);
  Tensor A = random_tensor(rng, {120, 90}, 0.08, fmt(SJ_FORMAT_CSR, 2));
  Tensor x = random_tensor(rng, {90}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  check({"y(i) = A(i,k) * x(k)", {A, x}, {}, "dense", true, "node: i is output level 0 of a dense output"});
  // a sparse vector result: level 0 compressed, pieces joined by counts
  check({"y(i) = A(i,k) * x(k)", {A, x}, {}, "sparse", true, "node: i is output level 0"});
  // COO input: level 0 non-unique
  check({"y(i) = A(i,k) * x(k)", {A, x}, {"coo", std::nullopt}, "dense", true, "node"});
  // SpGEMM from random_matrices (power-law rows), sparse output through a where workspace
  auto pa = test::random_power_law<int32_t, double>(rng, 150, 110, 5.0, 1.3);
  auto pb = test::random_uniform<int32_t, double>(rng, 110, 130, 0.05);
  Tensor P = to_tensor(default_allocator(), true, pa, ValueType::F64);
  Tensor Q = to_tensor(default_allocator(), true, pb, ValueType::F64);
  P.derived = std::make_shared<DerivedForms>();
  Q.derived = std::make_shared<DerivedForms>();
  check({"C(i,j) = A(i,k) * B(k,j)", {P, Q}, {}, "csr", true, "where workspace is per thread", {}, 1e-9,
         SJ_SCHEDULE_FUSED});
  // the same product as auto plans it: the built-in SpGEMM (rows split by multiplies)
  check({"C(i,j) = A(i,k) * B(k,j)", {P, Q}, {}, "csr", true, "built-in SpGEMM's rows (i, output level 0) split"});
  check({"C(i,j) = A(i,k) * B(k,j)", {P, Q}, {}, "dcsr", true, "node"});
  check({"C(i,j) = A(i,k) * B(k,j)", {P, Q}, {}, "dense", true, "node"});
  // element-wise with a sparse output: emitted in order (inner schedule)
  Tensor B2 = random_tensor(rng, {120, 90}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  check({"Z(i,j) = A(i,j) * B(i,j)", {A, B2}, {}, "csr", true, "node"});
  // both DCSR: the outermost loop intersects two compressed levels (each narrowed to the chunk)
  check({"Z(i,j) = A(i,j) * B(i,j)", {A, B2}, {"dcsr", "dcsr"}, "dcsr", true, "node"});
}

TEST(ParallelEinsum, ThreeDimensionalKernels) {
  Rng rng(5);
  Tensor T = random_tensor(rng, {40, 30, 25}, 0.05, fmt(SJ_FORMAT_CSF, 3));
  Tensor v = random_tensor(rng, {25}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  Tensor M = random_tensor(rng, {25, 6}, 1.0, fmt(SJ_FORMAT_DENSE, 2));
  Tensor Bj = random_tensor(rng, {30, 6}, 1.0, fmt(SJ_FORMAT_DENSE, 2));
  // SpTTV: sparse (CSR) output, entries emitted in order
  check({"Y(i,j) = T(i,j,k) * v(k)", {T, v}, {}, "csr", true, "node: i is output level 0"});
  check({"Y(i,j) = T(i,j,k) * v(k)", {T, v}, {}, "dense", true, "node"});
  // SpTTM: dense and CSF outputs
  check({"Y(i,j,l) = T(i,j,k) * M(k,l)", {T, M}, {}, "dense", true, "node"});
  check({"Y(i,j,l) = T(i,j,k) * M(k,l)", {T, M}, {}, "csf", true, "node"});
  // MTTKRP
  check({"A(i,r) = T(i,j,k) * B(j,r) * C(k,r)", {T, Bj, M}, {}, "dense", true, "node"});
}

// SparseConflicts' kernels: forsome/forsame (search) and transpose-then-compute schedules.
TEST(ParallelEinsum, SearchAndTransposeSchedules) {
  Rng rng(21);
  Tensor B = random_tensor(rng, {90, 90}, 0.08, fmt(SJ_FORMAT_CSR, 2));
  Tensor C = random_tensor(rng, {90, 90}, 0.08, fmt(SJ_FORMAT_CSR, 2));
  // forsome i ... forsame i: i is the output's index; forsome j ... forsame j: j is a reduction
  EinsumTuning iji, jij;
  iji.loop_order = {"i", "j", "i"};
  jij.loop_order = {"j", "i", "j"};
  check({"a(i) = B(i,j) * C(j,i)", {B, C}, {}, "dense", true, "node", iji, 1e-9, SJ_SCHEDULE_SEARCH});
  check({"a(i) = B(i,j) * C(j,i)", {B, C}, {}, "dense", false, "sibling conflict: j is a reduction", jij, 1e-9,
         SJ_SCHEDULE_SEARCH});
  check({"Z(i,j) = B(i,j) * C(j,i)", {B, C}, {}, "csr", true, "node", {}, 1e-9, SJ_SCHEDULE_SEARCH});
  // transpose-then-compute: the planner picks order i,j (C converted), the cheaper one here
  check({"a(i) = B(i,j) * C(j,i)", {B, C}, {}, "dense", true, "node", {}, 1e-9, SJ_SCHEDULE_TRANSPOSE});
  check({"Z(i,j) = B(i,j) * C(j,i)", {B, C}, {}, "csr", true, "node", {}, 1e-9, SJ_SCHEDULE_TRANSPOSE});
}

TEST(ParallelEinsum, ReductionOutermostStaysSerial) {
  Rng rng(8);
  Tensor A = random_tensor(rng, {70, 60}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor x = random_tensor(rng, {70}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  // A is CSR over (k,i): the only order without a conversion is k,i, with k a reduction
  EinsumTuning forced;
  forced.loop_order = {"k", "i"};
  check({"y(i) = A(k,i) * x(k)", {A, x}, {}, "dense", false, "sibling conflict: k is a reduction index", forced});
  // a scalar output
  Tensor B = random_tensor(rng, {70, 60}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  check({"s = A(i,j) * B(i,j)", {A, B}, {}, std::nullopt, false, "reduction into a scalar output"});
}

// The reference evaluator splits its join by ranges of an output index (sums included: each
// range continues the entries earlier terms left); a scalar output keeps it serial.
TEST(ParallelEinsum, ReferenceJoinSplitsByOutputIndex) {
  SplitSmallInputs split;
  Rng rng(12);
  Tensor A = random_tensor(rng, {60, 50}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor B = random_tensor(rng, {60, 50}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor C = random_tensor(rng, {50, 40}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor x = random_tensor(rng, {50}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  struct R {
    std::string expr;
    std::vector<Tensor> ops;
    std::optional<std::string> out;
    bool parallel;
  } cases[] = {
      {"y(i) = A(i,k) * x(k) + B(i,k) * x(k)", {A, x, B}, "dense", true},
      {"Z(i,j) = A(i,k) * C(k,j) + B(i,k) * C(k,j)", {A, C, B}, "csr", true},
      {"s = A(i,j) * B(i,j)", {A, B}, std::nullopt, false},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.expr);
    sj_op_options o;
    sj_op_options_init(&o);
    o.schedule = SJ_SCHEDULE_REFERENCE;
    Tensor first;
    for (int threads : kThreadCounts) {
      EinsumPlan plan(context(threads), c.expr, c.ops, {}, c.out, o);
      const Tensor got = plan.execute(c.ops);
      if (threads == 1) first = got;
      else EXPECT_TRUE(identical(first, got)) << threads << " threads";
      const std::string text = plan.explain_text();
      EXPECT_NE(text.find(c.parallel ? "parallel: yes, the reference evaluator's join split among threads by ranges of i"
                                     : "parallel: no, serial; the reference evaluator's join into a scalar output"),
                std::string::npos)
          << text;
      EXPECT_EQ(text.find("last execution: 1 chunk(s)") == std::string::npos, c.parallel && threads > 1) << text;
    }
  }
}

TEST(ParallelEinsum, SumsAndSinglePrecision) {
  Rng rng(9);
  Tensor A = random_tensor(rng, {80, 50}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor B = random_tensor(rng, {80, 50}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor x = random_tensor(rng, {50}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  // terms run one after another, each split on its own
  check({"y(i) = A(i,k) * x(k) + B(i,k) * x(k)", {A, x, B}, {}, "dense", true, "node"});
  check({"Z(i,j) = A(i,j) + B(i,j)", {A, B}, {}, "csr", true, "node"});
  Tensor Af = random_tensor(rng, {80, 50}, 0.1, fmt(SJ_FORMAT_CSR, 2), ValueType::F32);
  Tensor xf = random_tensor(rng, {50}, 1.0, fmt(SJ_FORMAT_DENSE, 1), ValueType::F32);
  check({"y(i) = A(i,k) * x(k)", {Af, xf}, {}, "dense", true, "node", {}, 1e-5});
}

// The per-call thread count: options.threads caps the context's.
TEST(ParallelEinsum, ThreadsPerCall) {
  SplitSmallInputs split;
  Rng rng(4);
  Tensor A = random_tensor(rng, {100, 80}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor x = random_tensor(rng, {80}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  Tensor want;
  for (int requested : {1, 3, 0}) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.threads = requested;
    EinsumPlan plan(context(7), "y(i) = A(i,k) * x(k)", {A, x}, {}, "dense", o);
    const Tensor got = plan.execute({A, x});
    if (requested == 1) want = got;
    else EXPECT_TRUE(identical(want, got)) << requested;
    const std::string text = plan.explain_text();
    const int used = requested == 0 ? 7 : requested;
    EXPECT_NE(text.find(cat("threads: ", used, " (requested ", requested, ")")), std::string::npos) << text;
    EXPECT_EQ(text.find("last execution: 1 chunk(s)") != std::string::npos, requested == 1) << text;
  }
}

// At several threads a call first bounds its work (outer_work_bound) and, under
// min_parallel_work, runs one chunk without building the work prefix; the bound must never
// hide a split that the prefix allows. For these nests (CSR operands, one slot per row) the
// prefix's total is known in closed form: rows + nnz(A) for y(i)=A(i,k)*x(k) (x dense), rows +
// nnz(A) + nnz(B) for Z(i,j)=A(i,j)*B(i,j), rows + nnz(A) + the multiplies for
// C(i,j)=A(i,k)*B(k,j) (B's rows of unequal lengths). With min_parallel_work at that total the
// call splits; at one unit more it runs one chunk.
TEST(ParallelEinsum, SmallCallsSplitExactlyAtMinParallelWork) {
  struct Knobs {
    int64_t chunk = parallel_tuning().min_chunk_work.load();
    int64_t parallel = parallel_tuning().min_parallel_work.load();
    ~Knobs() {
      parallel_tuning().min_chunk_work = chunk;
      parallel_tuning().min_parallel_work = parallel;
    }
  } knobs;
  parallel_tuning().min_chunk_work = 1;
  Rng rng(41);
  const int64_t rows = 60;
  Tensor A = random_tensor(rng, {rows, 50}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor B = random_tensor(rng, {rows, 50}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor K = random_tensor(rng, {50, 40}, 0.12, fmt(SJ_FORMAT_CSR, 2));
  Tensor x = random_tensor(rng, {50}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  int64_t multiplies = 0;
  {
    const int64_t* ap = A.levels[1].pos.as<int64_t>();
    const int32_t* ac = A.levels[1].crd.as<int32_t>();
    const int64_t* kp = K.levels[1].pos.as<int64_t>();
    for (int64_t p = 0; p < ap[rows]; ++p) multiplies += kp[ac[p] + 1] - kp[ac[p]];
  }
  struct Small {
    std::string expr;
    std::vector<Tensor> ops;
    std::string out;
    int64_t work;
    sj_schedule schedule = SJ_SCHEDULE_AUTO;
  };
  const Small cases[] = {
      {"y(i) = A(i,k) * x(k)", {A, x}, "dense", rows + A.nnz()},
      {"Z(i,j) = A(i,j) * B(i,j)", {A, B}, "csr", rows + A.nnz() + B.nnz()},
      // the generated nest (auto runs the built-in SpGEMM, whose split has its own test)
      {"C(i,j) = A(i,k) * K(k,j)", {A, K}, "csr", rows + A.nnz() + multiplies, SJ_SCHEDULE_FUSED},
  };
  sj_op_options o;
  sj_op_options_init(&o);
  for (const Small& c : cases) {
    SCOPED_TRACE(c.expr);
    o.schedule = c.schedule;
    const Tensor want = EinsumPlan(context(1), c.expr, c.ops, {}, c.out, o).execute(c.ops);
    for (int64_t threshold : {c.work, c.work + 1}) {
      parallel_tuning().min_parallel_work = threshold;
      EinsumPlan plan(context(2), c.expr, c.ops, {}, c.out, o);
      ASSERT_TRUE(plan.terms()[0].parallel.parallel) << plan.terms()[0].parallel.reason;
      EXPECT_TRUE(identical(want, plan.execute(c.ops))) << "min_parallel_work " << threshold;
      const std::string text = plan.explain_text();
      const bool split = text.find("last execution: 1 chunk(s)") == std::string::npos;
      EXPECT_EQ(split, threshold == c.work) << "min_parallel_work " << threshold << " (work " << c.work << ")\n"
                                            << text;
    }
  }
}

// A large sparse output at one thread is built in pieces of bounded work (each kept by the
// plan, so a repeated execution touches no fresh memory), joined to the bytes a one-stream or
// parallel run gives: a Hadamard product of 3 M input entries, an SpGEMM of 2 M multiplies and
// one whose inputs are small.
TEST(ParallelEinsum, SerialRunOfALargeSparseOutputInPieces) {
  Rng rng(8);
  Tensor A = random_tensor(rng, {2000, 1500}, 0.5, fmt(SJ_FORMAT_CSR, 2));
  sj_op_options o;
  sj_op_options_init(&o);
  {
    EinsumPlan serial(context(1), "Z(i,j) = A(i,j) * B(i,j)", {A, A}, {}, "csr", o);
    const Tensor got = serial.execute({A, A});
    const std::string text = serial.explain_text();
    EXPECT_EQ(text.find("last execution: 1 chunk(s)"), std::string::npos) << "not in pieces:\n" << text;
    EXPECT_TRUE(identical(got, serial.execute({A, A}))) << "second execution";
    EinsumPlan parallel(context(3), "Z(i,j) = A(i,j) * B(i,j)", {A, A}, {}, "csr", o);
    EXPECT_TRUE(identical(got, parallel.execute({A, A})));
    // A.*A: A's structure, each value squared
    ASSERT_EQ(got.nnz(), A.nnz());
    EXPECT_EQ(std::memcmp(got.levels[1].pos.data(), A.levels[1].pos.data(), 8 * 2001), 0);
    EXPECT_EQ(std::memcmp(got.levels[1].crd.data(), A.levels[1].crd.data(), 4 * static_cast<size_t>(A.nnz())), 0);
    const double* a = A.values.as<double>();
    const double* z = got.values.as<double>();
    int64_t wrong = 0;
    for (int64_t p = 0; p < A.nnz(); ++p) wrong += z[p] != a[p] * a[p];
    EXPECT_EQ(wrong, 0);
  }
  {
    Tensor P = random_tensor(rng, {600, 600}, 0.1, fmt(SJ_FORMAT_CSR, 2));
    sj_op_options ro = o;
    ro.schedule = SJ_SCHEDULE_REFERENCE;
    const Tensor want = EinsumPlan(context(1), "C(i,j) = A(i,k) * B(k,j)", {P, P}, {}, "csr", ro).execute({P, P});
    sj_op_options fo = o;  // the generated nest (auto runs the built-in SpGEMM)
    fo.schedule = SJ_SCHEDULE_FUSED;
    EinsumPlan serial(context(1), "C(i,j) = A(i,k) * B(k,j)", {P, P}, {}, "csr", fo);
    const Tensor got = serial.execute({P, P});
    const std::string text = serial.explain_text();
    EXPECT_EQ(text.find("last execution: 1 chunk(s)"), std::string::npos) << "not in pieces:\n" << text;
    EXPECT_TRUE(close_to(got, want));
    EXPECT_TRUE(identical(got, EinsumPlan(context(2), "C(i,j) = A(i,k) * B(k,j)", {P, P}, {}, "csr", fo).execute({P, P})));
  }
  {
    // An arrow (8 full rows, 8 full columns): 16 k entries in, a full 1000 x 1000 out. The
    // output's work, not the inputs' size, asks for pieces (one stream regrew 30 MB each
    // execution: 314 ms against 17 ms on hangGlider_2, 15 k entries in, 2.1 M out).
    CooTensor arrow;
    arrow.order = 2;
    arrow.dims[0] = arrow.dims[1] = 1000;
    for (int64_t i = 0; i < 1000; ++i)
      for (int64_t j = 0; j < 1000; ++j)
        if (i < 8 || j < 8) {
          arrow.coords[0].push_back(i);
          arrow.coords[1].push_back(j);
          arrow.values.push_back((rng.uniform01() - 0.3) * 3.0);
        }
    const Tensor Q = from_coo(arrow, fmt(SJ_FORMAT_CSR, 2), IndexType::I32, ValueType::F64, context(1).allocator);
    sj_op_options fo = o;
    fo.schedule = SJ_SCHEDULE_FUSED;
    EinsumPlan serial(context(1), "C(i,j) = A(i,k) * B(k,j)", {Q, Q}, {}, "csr", fo);
    const Tensor got = serial.execute({Q, Q});
    const std::string text = serial.explain_text();
    EXPECT_EQ(text.find("last execution: 1 chunk(s)"), std::string::npos) << "not in pieces:\n" << text;
    EXPECT_TRUE(close_to(got, EinsumPlan(context(1), "C(i,j) = A(i,k) * B(k,j)", {Q, Q}, {}, "csr", o).execute({Q, Q})));
    EXPECT_TRUE(identical(got, EinsumPlan(context(2), "C(i,j) = A(i,k) * B(k,j)", {Q, Q}, {}, "csr", fo).execute({Q, Q})));
  }
}

// One plan executed by several threads at once, each call itself parallel.
TEST(ParallelEinsum, OnePlanManyCallers) {
  SplitSmallInputs split;
  Rng rng(6);
  auto pa = test::random_power_law<int32_t, double>(rng, 90, 90, 4.0, 1.3);
  Tensor P = to_tensor(default_allocator(), true, pa, ValueType::F64);
  P.derived = std::make_shared<DerivedForms>();
  sj_op_options o;
  sj_op_options_init(&o);
  EinsumPlan plan(context(3), "C(i,j) = A(i,k) * B(k,j)", {P, P}, {}, "csr", o);
  const Tensor want = plan.execute({P, P});
  std::vector<Tensor> got(4);
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) callers.emplace_back([&, t] { got[t] = plan.execute({P, P}); });
  for (auto& c : callers) c.join();
  for (auto& g : got) EXPECT_TRUE(identical(want, g));
}

TEST(ParallelEinsum, RealMatrices) {
  auto mats = test::shared_matrices();
  if (mats.empty()) GTEST_SKIP() << "no ../shared/data";
  int done = 0;
  for (auto& path : mats) {
    Tensor A = read_tensor_file(path.string(), context(1).allocator);
    if (A.order != 2 || A.dims[0] != A.dims[1] || A.nnz() > 60000) continue;
    if (A.value_type != ValueType::F64 && A.value_type != ValueType::F32) continue;
    if (!(format_spec_of(A) == fmt(SJ_FORMAT_CSR, 2))) A = convert(A, fmt(SJ_FORMAT_CSR, 2), A.index_type, context(1).allocator);
    A.derived = std::make_shared<DerivedForms>();
    SCOPED_TRACE(path.string());
    Rng rng(1);
    Tensor x = random_tensor(rng, {A.dims[1]}, 1.0, fmt(SJ_FORMAT_DENSE, 1), A.value_type);
    check({"y(i) = A(i,k) * x(k)", {A, x}, {}, "dense", true, "node"});
    check({"C(i,j) = A(i,k) * B(k,j)", {A, A}, {}, "csr", true, "node"});
    if (++done == 2) break;
  }
  if (done == 0) GTEST_SKIP() << "no small square CSR matrix in ../shared/data";
}

}  // namespace
}  // namespace sj::einsum

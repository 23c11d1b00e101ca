// Index notation: parser (with caret positions), formats, iteration graph, loop IR, and end-to-end
// LLVM-compiled kernels checked against the reference evaluator (Splyce kernels, SparseConflicts
// case studies, all semirings, random expressions), the C API and the on-disk object cache.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "cache/persistent_store.hpp"
#include "kernels/einsum_reference.hpp"
#include "random_matrices.hpp"
#include "sparsejit/sparsejit.h"
#include "src/derived_forms.hpp"
#include "src/einsum_format.hpp"
#include "src/einsum_parser.hpp"
#include "src/einsum_planner.hpp"
#include "src/error.hpp"
#include "src/iteration_graph.hpp"
#include "src/tensor_file.hpp"
#include "tensor_entries.hpp"
#include "test_util.hpp"

namespace sj::einsum {
namespace {

using test::Rng;
using test::bits_by_coordinates;
using test::entries_by_coordinates;

std::string parse_error(std::string_view text) {
  try {
    parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), SJ_ERR_PARSE);
    return e.what();
  }
  return "";
}

// The caret line's column (0-based within the shown expression).
int caret_column(const std::string& msg) {
  auto p = msg.rfind('\n');
  if (p == std::string::npos) return -1;
  std::string line = msg.substr(p + 1);
  auto c = line.find('^');
  return c == std::string::npos ? -1 : static_cast<int>(c) - 2;
}

TEST(EinsumParser, ParsesProductsSumsAndParentheses) {
  Expression e = parse("A(i,j) = B(i,k) * C(k,j) * D(k,j)");
  EXPECT_EQ(e.canonical(), "A(i,j) = B(i,k) * C(k,j) * D(k,j)");
  EXPECT_EQ(e.operands, (std::vector<std::string>{"B", "C", "D"}));
  EXPECT_EQ(e.terms.size(), 1u);
  Expression s = parse("  a(i)=B(i,j)*(C(j,i) + E(i,j))");
  EXPECT_EQ(s.canonical(), "a(i) = B(i,j) * C(j,i) + B(i,j) * E(i,j)");
  EXPECT_EQ(s.operands, (std::vector<std::string>{"B", "C", "E"}));
  Expression sc = parse("x = B(i,j) * C(i,j)");
  EXPECT_TRUE(sc.output.indices.empty());
  EXPECT_TRUE(parse("x() = B(i) * C(i)").output.indices.empty());
}

TEST(EinsumParser, MalformedExpressionsPointAtTheCharacter) {
  struct Case {
    const char* text;
    int column;  // 0-based position of the caret
    const char* words;
  } cases[] = {
      {"A(i,j) = B(i,k * C(k,j)", 15, "expected ',' or ')'"},
      {"A(i,j) B(i,j)", 7, "expected '='"},
      {"A(i,j) = ", 9, "expected a tensor"},
      {"A(i,j) = B(i,j) C(j,i)", 16, "unexpected 'C'"},
      {"A(i,i) = B(i,i)", 4, "repeated"},
      {"A(i,j) = B(i,k) * C(k,l)", 9, "output index 'j'"},
      {"A(i,j) = A(i,j) * B(i,j)", 9, "also appears"},
      {"A(i) = B(i,j) * B(i)", 16, "used with 1 indices"},
      {"A(i,j) = (B(i,j) + C(i,j)", 25, "expected ')'"},
      {"A(1) = B(1)", 2, "expected an index name"},
      {"", 0, "empty"},
      {"A(i,j,k,l,m) = B(i,j,k,l,m)", 10, "more than 4"},
      {"A(i) = B(i) $ C(i)", 12, "unexpected '$'"},
  };
  for (auto& c : cases) {
    std::string msg = parse_error(c.text);
    ASSERT_FALSE(msg.empty()) << c.text;
    EXPECT_NE(msg.find(c.words), std::string::npos) << c.text << "\n" << msg;
    EXPECT_EQ(msg.rfind(cat("expression:", c.column + 1, ":"), 0), 0u) << msg;
    EXPECT_EQ(caret_column(msg), c.column) << c.text << "\n" << msg;
  }
}

TEST(EinsumParser, NeverCrashesOnJunk) {
  Rng rng(7);
  const std::string alphabet = "AB(i,j)=*+ k\t\x01\xff()";
  for (int n = 0; n < 3000; ++n) {
    std::string s;
    int len = static_cast<int>(rng.uniform_int(0, 30));
    for (int i = 0; i < len; ++i) s += alphabet[rng.uniform_int(0, alphabet.size() - 1)];
    try {
      parse(s);
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), SJ_ERR_PARSE);
    }
  }
  std::string deep(200, '(');
  EXPECT_NE(parse_error("A = " + deep).find("nested too deeply"), std::string::npos);
}

TEST(EinsumFormat, NamesAndLevelLists) {
  Expression e = parse("A(i,j) = B(i,j) * C(j,i) * D(i,j,k) * x(k)");
  const Access& b = e.terms[0].factors[0];
  const Access& c = e.terms[0].factors[1];
  const Access& d = e.terms[0].factors[2];
  FormatSpec csc = parse_format("CSC", e, b);
  EXPECT_EQ(csc, format_spec(SJ_FORMAT_CSC, 2));
  FormatSpec list = parse_format("dense(j), compressed(i)", e, b);
  EXPECT_EQ(list, format_spec(SJ_FORMAT_CSC, 2));
  EXPECT_EQ(format_text(list, e, b), "dense(j),compressed(i)");
  // for C(j,i), "dense(i),compressed(j)" stores mode 1 first
  EXPECT_EQ(parse_format("dense(i),compressed(j)", e, c).mode_order[0], 1);
  EXPECT_EQ(parse_format("dense(k),compressed(i),compressed(j)", e, d).mode_order[0], 2);
  auto fails = [&](const char* text, const Access& a, const char* words) {
    try {
      parse_format(text, e, a);
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& err) {
      EXPECT_EQ(err.status(), SJ_ERR_FORMAT);
      EXPECT_NE(std::string(err.what()).find(words), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find(a.tensor), std::string::npos) << err.what();
    }
  };
  fails("csf", b, "order 3");
  fails("blocked", b, "unknown format");
  fails("dense(i),compressed(k)", b, "'k'");
  fails("dense(i),compressed(i)", b, "two levels");
  fails("dense(i)", b, "1 levels");
  fails("sparse(i),dense(j)", b, "unknown kind");
  fails("singleton(i),dense(j)", b, "parent");
}

TEST(EinsumGraph, ShortestCommonSupersequences) {
  auto o = IterationGraph::shortest_supersequences({{0, 1}, {1, 0}});
  EXPECT_EQ(o, (std::vector<std::vector<int>>{{0, 1, 0}, {1, 0, 1}}));
  auto p = IterationGraph::shortest_supersequences({{0, 1, 2}, {0, 2, 1}});
  EXPECT_EQ(p.size(), 2u);
  for (auto& s : p) EXPECT_EQ(s.size(), 4u);
  // all-CSR SpGEMM with a sparse CSR output: i,k,j through a where on j
  Expression e = parse("A(i,j) = B(i,k) * C(k,j)");
  IterationGraph g;
  g.constraints = {{0, 2}, {2, 1}};
  g.sparse_output = true;
  g.output_levels = {0, 1};
  auto orders = g.loop_orders();
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(order_text(e, orders[0]), "i,k,j");
  OutputMode m;
  ASSERT_TRUE(g.output_mode(orders[0], &m));
  EXPECT_EQ(m, OutputMode::Where);
}

// ---------------------------------------------------------------------------------------------
// End to end

struct TestContext {
  TestContext() {
    sj_config c;
    sj_config_init(&c);
    c.disable_disk_cache = 1;
    ctx = std::make_unique<Context>(c);
  }
  std::unique_ptr<Context> ctx;
};

Context& test_ctx() {
  static TestContext t;
  return *t.ctx;
}

// A random tensor with about `density` of its positions stored, in `spec`.
Tensor random_tensor(Rng& rng, std::vector<int64_t> dims, double density, const FormatSpec& spec,
                     ValueType vt = ValueType::F64, IndexType it = IndexType::I32) {
  CooTensor coo;
  coo.order = static_cast<int>(dims.size());
  for (int m = 0; m < coo.order; ++m) coo.dims[m] = dims[m];
  int64_t total = 1;
  for (auto d : dims) total *= d;
  for (int64_t p = 0; p < total; ++p) {
    if (!rng.bernoulli(density)) continue;
    int64_t r = p;
    for (int m = coo.order - 1; m >= 0; --m) {
      coo.coords[m].push_back(r % dims[m]);
      r /= dims[m];
    }
    double v = vt == ValueType::Bool ? 1.0 : static_cast<double>(rng.uniform_int(1, 8)) * 0.25;
    if (rng.bernoulli(0.3)) v = -v * (vt == ValueType::Bool ? 0 : 1);
    coo.values.push_back(vt == ValueType::Bool ? 1.0 : v);
  }
  Tensor t = from_coo(coo, spec, it, vt, test_ctx().allocator);
  t.derived = std::make_shared<DerivedForms>();
  return t;
}

FormatSpec fmt(sj_format f, int order) { return format_spec(f, order); }
FormatSpec dcc() {
  FormatSpec s = format_spec(SJ_FORMAT_CSF, 3);
  return s;
}

::testing::AssertionResult same_result(const Tensor& got, const Tensor& want, double tol = 1e-9) {
  if (!(format_spec_of(got) == format_spec_of(want)))
    return ::testing::AssertionFailure() << "format " << format_text(format_spec_of(got)) << " vs "
                                         << format_text(format_spec_of(want));
  auto a = entries_by_coordinates(got), b = entries_by_coordinates(want);
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "entries " << a.size() << " vs " << b.size();
  for (auto& [k, v] : b) {
    auto it = a.find(k);
    if (it == a.end()) return ::testing::AssertionFailure() << "missing entry";
    double w = v, g = it->second;
    if (std::isinf(w) || std::isinf(g)) {
      if (w != g) return ::testing::AssertionFailure() << "value " << g << " vs " << w;
      continue;
    }
    if (std::abs(g - w) > tol * std::max(1.0, std::abs(w)))
      return ::testing::AssertionFailure() << "value " << g << " vs " << w;
  }
  return ::testing::AssertionSuccess();
}

struct Outcome {
  std::unique_ptr<EinsumPlan> plan;
  Tensor got, want;
};

Outcome run(const std::string& expr, const std::vector<Tensor>& ops, const std::vector<std::optional<std::string>>& formats,
        std::optional<std::string> out_format, sj_schedule schedule = SJ_SCHEDULE_AUTO,
        sj_semiring sr = SJ_SEMIRING_PLUS_TIMES, const EinsumTuning& tuning = {}) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = schedule;
  o.semiring = sr;
  Outcome r;
  r.plan = std::make_unique<EinsumPlan>(test_ctx(), expr, ops, formats, out_format, o, tuning);
  r.got = r.plan->execute(ops);
  sj_op_options ro = o;
  ro.schedule = SJ_SCHEDULE_REFERENCE;
  EinsumPlan ref(test_ctx(), expr, ops, formats, out_format, ro);
  r.want = ref.execute(ops);
  for (auto& t : r.plan->terms()) EXPECT_TRUE(t.kernel || t.spgemm) << "LLVM failed: " << t.jit_error;
  return r;
}

// The reference as an independent check: a dense brute force over every index assignment.
TEST(EinsumReference, AgreesWithDenseBruteForce) {
  Rng rng(3);
  Tensor B = random_tensor(rng, {5, 4}, 0.4, fmt(SJ_FORMAT_CSR, 2));
  Tensor C = random_tensor(rng, {4, 6}, 0.4, fmt(SJ_FORMAT_CSC, 2));
  Expression e = parse("A(i,j) = B(i,k) * C(k,j)");
  ReferenceResult r;
  evaluate_reference(e, -1, {B, C}, SJ_SEMIRING_PLUS_TIMES, r);
  auto b = entries_by_coordinates(B), c = entries_by_coordinates(C);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      double s = 0;
      bool any = false;
      for (int64_t k = 0; k < 4; ++k)
        if (b.count({i, k}) && c.count({k, j})) s += b[{i, k}] * c[{k, j}], any = true;
      ASSERT_EQ(r.count({i, j}) > 0, any);
      if (any) {
        EXPECT_DOUBLE_EQ((r[{i, j}]), s);
      }
    }
}

TEST(EinsumEndToEnd, SplyceKernels) {
  Rng rng(11);
  {  // SpGEMM: B CSR, C CSC, order i,j,k (inner products)
    Tensor B = random_tensor(rng, {30, 40}, 0.1, fmt(SJ_FORMAT_CSR, 2));
    Tensor C = random_tensor(rng, {40, 25}, 0.1, fmt(SJ_FORMAT_CSC, 2));
    Outcome r = run("A(i,j) = B(i,k) * C(k,j)", {B, C}, {}, "csr");
    EXPECT_TRUE(same_result(r.got, r.want));
    EXPECT_EQ(order_text(r.plan->expression(), r.plan->terms()[0].candidates[r.plan->terms()[0].chosen].order), "i,j,k");
    Outcome d = run("A(i,j) = B(i,k) * C(k,j)", {B, C}, {}, "dense");
    EXPECT_TRUE(same_result(d.got, d.want));
  }
  {  // SpMSpV: A CSR, x sparse
    Tensor A = random_tensor(rng, {50, 60}, 0.1, fmt(SJ_FORMAT_CSR, 2));
    Tensor x = random_tensor(rng, {60}, 0.2, fmt(SJ_FORMAT_SPARSE_VECTOR, 1));
    Outcome r = run("y(i) = A(i,j) * x(j)", {A, x}, {}, std::nullopt);
    EXPECT_TRUE(same_result(r.got, r.want));
    Outcome d = run("y(i) = A(i,j) * x(j)", {A, x}, {}, "dense");
    EXPECT_TRUE(same_result(d.got, d.want));
  }
  {  // SpMTTKRP: B dense/compressed/compressed, C and D CSR; order i,k,l,j
    Tensor B = random_tensor(rng, {8, 9, 10}, 0.1, dcc());
    Tensor C = random_tensor(rng, {10, 12}, 0.3, fmt(SJ_FORMAT_CSR, 2));
    Tensor D = random_tensor(rng, {9, 12}, 0.3, fmt(SJ_FORMAT_CSR, 2));
    Outcome r = run("A(i,k) = B(i,k,l) * C(l,j) * D(k,j)", {B, C, D}, {}, "csr");
    EXPECT_TRUE(same_result(r.got, r.want));
    EXPECT_EQ(order_text(r.plan->expression(), r.plan->terms()[0].candidates[r.plan->terms()[0].chosen].order), "i,k,l,j");
  }
  {  // SpMMH: B and D CSC, C dense; order j,k,i
    Tensor B = random_tensor(rng, {20, 15}, 0.2, fmt(SJ_FORMAT_CSC, 2));
    Tensor C = random_tensor(rng, {15, 18}, 1.0, fmt(SJ_FORMAT_DENSE, 2));
    Tensor D = random_tensor(rng, {20, 18}, 0.2, fmt(SJ_FORMAT_CSC, 2));
    EinsumTuning t;
    t.loop_order = {"j", "k", "i"};
    // C dense column-major (levels j, k) so that j,k,i admits it
    Outcome r = run("A(i,j) = B(i,k) * C(k,j) * D(i,j)", {B, C, D}, {std::nullopt, "dense(j),dense(k)", std::nullopt},
                    "dense", SJ_SCHEDULE_AUTO, SJ_SEMIRING_PLUS_TIMES, t);
    EXPECT_TRUE(same_result(r.got, r.want));
    Outcome s = run("A(i,j) = B(i,k) * C(k,j) * D(i,j)", {B, C, D}, {}, "csr");
    EXPECT_TRUE(same_result(s.got, s.want));
  }
  {  // SpTTSpM: B dense/compressed/compressed, C CSC; order i,j,r,k
    Tensor B = random_tensor(rng, {6, 7, 8}, 0.15, dcc());
    Tensor C = random_tensor(rng, {8, 9}, 0.3, fmt(SJ_FORMAT_CSC, 2));
    Outcome r = run("A(i,j,r) = B(i,j,k) * C(k,r)", {B, C}, {}, std::nullopt);
    EXPECT_TRUE(same_result(r.got, r.want));
    EXPECT_EQ(order_text(r.plan->expression(), r.plan->terms()[0].candidates[r.plan->terms()[0].chosen].order), "i,j,r,k");
  }
}

// The SIMD fast lane of two-way intersections (jit/llvm_backend.cpp): blocks of W coordinates,
// the last one partial (masked, padded with values that match nothing). Every pair of segment
// lengths around the block widths, both index types, coordinates up to the int32 limit, with
// every lane this CPU can run (SPARSEJIT_EINSUM_LANE; one it cannot run gives the default).
TEST(EinsumEndToEnd, SimdLaneBlocksPartialBlocksAndTheInt32Limit) {
  const char* saved = std::getenv("SPARSEJIT_EINSUM_LANE");
  const std::string saved_text = saved ? saved : "";
  const int64_t lens[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 33, 100};
  const int64_t dim = INT32_MAX;  // coordinates up to INT32_MAX - 1
  int checked = 0;
  for (const char* lane : {"", "off", "w4b", "w8b", "w16b", "w4n", "w8n", "w16n"}) {
    ::setenv("SPARSEJIT_EINSUM_LANE", lane, 1);
    for (IndexType it : {IndexType::I32, IndexType::I64}) {
      std::vector<std::unique_ptr<EinsumPlan>> keep;  // keeps each kernel compiled once per lane
      Rng rng(static_cast<uint64_t>(std::strlen(lane)) * 31 + (it == IndexType::I64));
      for (int64_t na : lens)
        for (int64_t nb : lens) {
          // a's coordinates: a cluster near the top of the range and a few low ones; b takes
          // about half of a's and its own in between, so matches land in every block position
          std::set<int64_t> ca, cb;
          while (static_cast<int64_t>(ca.size()) < na)
            ca.insert(rng.bernoulli(0.2) ? rng.uniform_int(0, 50) : dim - 1 - rng.uniform_int(0, 400));
          for (int64_t c : ca)
            if (rng.bernoulli(0.5) && static_cast<int64_t>(cb.size()) < nb) cb.insert(c);
          while (static_cast<int64_t>(cb.size()) < nb)
            cb.insert(rng.bernoulli(0.2) ? rng.uniform_int(0, 50) : dim - 1 - rng.uniform_int(0, 400));
          auto vec = [&](const std::set<int64_t>& cs) {
            CooTensor coo;
            coo.order = 1;
            coo.dims[0] = dim;
            for (int64_t c : cs) {
              coo.coords[0].push_back(c);
              coo.values.push_back(static_cast<double>(rng.uniform_int(1, 8)) * 0.25);
            }
            return from_coo(coo, fmt(SJ_FORMAT_SPARSE_VECTOR, 1), it, ValueType::F64, test_ctx().allocator);
          };
          std::vector<Tensor> ops = {vec(ca), vec(cb)};
          for (const char* expr : {"s = x(i) * y(i)", "z(i) = x(i) * y(i)"}) {
            std::optional<std::string> out;
            if (expr[0] == 'z') out = "sparse-vector";
            sj_op_options o;
            sj_op_options_init(&o);
            auto plan = std::make_unique<EinsumPlan>(test_ctx(), expr, ops, std::vector<std::optional<std::string>>{}, out, o);
            ASSERT_TRUE(plan->terms()[0].kernel) << plan->terms()[0].jit_error;
            Tensor got = plan->execute(ops);
            o.schedule = SJ_SCHEDULE_REFERENCE;
            Tensor want = EinsumPlan(test_ctx(), expr, ops, {}, out, o).execute(ops);
            ASSERT_TRUE(same_result(got, want, 0)) << "lane '" << lane << "' " << to_string(it) << " " << expr << " na "
                                                   << na << " nb " << nb;
            if (keep.size() < 2) keep.push_back(std::move(plan));
            ++checked;
          }
        }
    }
  }
  if (saved) ::setenv("SPARSEJIT_EINSUM_LANE", saved_text.c_str(), 1);
  else ::unsetenv("SPARSEJIT_EINSUM_LANE");
  EXPECT_EQ(checked, 8 * 2 * 11 * 11 * 2);
}

TEST(EinsumEndToEnd, SparseConflictsCaseStudies) {
  Rng rng(5);
  Tensor B = random_tensor(rng, {40, 40}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor C = random_tensor(rng, {40, 40}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor D = random_tensor(rng, {40, 40}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_TRANSPOSE}) {
    // Hadamard with a transposed operand, sparse output
    Outcome h = run("A(i,j) = B(i,j) * C(j,i)", {B, C}, {}, "csr", s);
    EXPECT_TRUE(same_result(h.got, h.want)) << to_string(s);
    // batched dot
    Outcome b = run("a(i) = B(i,j) * C(j,i)", {B, C}, {}, std::nullopt, s);
    EXPECT_TRUE(same_result(b.got, b.want)) << to_string(s);
    Outcome bd = run("a(i) = B(i,j) * C(j,i)", {B, C}, {}, "dense", s);
    EXPECT_TRUE(same_result(bd.got, bd.want)) << to_string(s);
  }
  Outcome h = run("A(i,j) = B(i,j) * C(j,i)", {B, C}, {}, "csr", SJ_SCHEDULE_SEARCH);
  std::string text = h.plan->explain_text();
  EXPECT_NE(text.find("forsome i"), std::string::npos) << text;
  EXPECT_NE(text.find("forsame i: search C.1"), std::string::npos) << text;
  EXPECT_NE(text.find("iteration graph: B: i -> j;  C: j -> i"), std::string::npos) << text;
  // 3-D contraction on CSF
  Tensor B3 = random_tensor(rng, {6, 7, 8}, 0.2, dcc());
  Tensor C3 = random_tensor(rng, {6, 8, 7}, 0.2, dcc());
  for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_TRANSPOSE}) {
    Outcome r = run("a(i) = B(i,j,k) * C(i,k,j)", {B3, C3}, {}, std::nullopt, s);
    EXPECT_TRUE(same_result(r.got, r.want)) << to_string(s);
  }
  // all-CSR SpGEMM through where
  Outcome g = run("A(i,j) = B(i,k) * C(k,j)", {B, C}, {}, "csr", SJ_SCHEDULE_FUSED);
  EXPECT_TRUE(same_result(g.got, g.want));
  EXPECT_NE(g.plan->explain_text().find("where (workspace w(j)"), std::string::npos) << g.plan->explain_text();
  // fused B * (C o D)
  Outcome f = run("A(i,j) = B(i,k) * C(k,j) * D(k,j)", {B, C, D}, {}, "csr");
  EXPECT_TRUE(same_result(f.got, f.want));
  // sums, a scalar, and a sparse output no order writes in order (dense temporary)
  Outcome sum = run("A(i,j) = B(i,j) * C(j,i) + D(i,j)", {B, C, D}, {}, "csr");
  EXPECT_TRUE(same_result(sum.got, sum.want));
  Outcome sc = run("s = B(i,j) * C(i,j)", {B, C}, {}, std::nullopt);
  EXPECT_TRUE(same_result(sc.got, sc.want));
  Outcome csc = run("A(i,j) = B(i,k) * C(k,j)", {B, C}, {}, "csc");
  EXPECT_TRUE(same_result(csc.got, csc.want));
}

// A term of one factor keeps that factor's value under plus-pair too, as the reference
// evaluator and sj_ewise_add do: the generated loops used to count 1 for it ("counts matched
// pairs": a single factor has no pair), so Z = A + B under plus-pair gave 2 where both held.
TEST(EinsumEndToEnd, SingleFactorTermsKeepTheirValuesUnderPlusPair) {
  Rng rng(31);
  Tensor A = random_tensor(rng, {30, 20}, 0.2, fmt(SJ_FORMAT_CSR, 2));
  Tensor B = random_tensor(rng, {30, 20}, 0.2, fmt(SJ_FORMAT_CSR, 2));
  Tensor x = random_tensor(rng, {20}, 1.0, fmt(SJ_FORMAT_DENSE, 1));
  struct Case {
    std::string expr;
    std::vector<Tensor> ops;
    std::string out;
  } cases[] = {
      {"y(i) = A(i,j)", {A}, "dense"},
      {"Z(i,j) = A(i,j)", {A}, "csr"},
      {"Z(i,j) = A(i,j) + B(i,j)", {A, B}, "dense"},
      {"Z(i,j) = A(i,j) + B(i,j)", {A, B}, "coo"},
      {"y(i) = A(i,j) * x(j) + A(i,j)", {A, x}, "dense"},  // pairs count 1, the single factor its value
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.expr + " into " + c.out);
    Outcome r = run(c.expr, c.ops, {}, c.out, SJ_SCHEDULE_AUTO, SJ_SEMIRING_PLUS_PAIR);
    EXPECT_TRUE(same_result(r.got, r.want));
  }
}

// Sums of terms into sparse outputs. One compressed level (CSR, CSC, a sparse vector, a
// dense-dense-compressed 3-tensor): each term is assembled on its own (a term that is one
// operand in the output's layout is taken as it is) and the results are summed row by row; deeper layouts (DCSR, CSF): the terms' sorted entry lists are merged; COO:
// the reference's join. Every one against the reference evaluator, for every semiring, with
// terms that overlap, that do not, and three terms (sums in term order). Single-factor terms
// over f64 take their values unchanged, so the plus-times sums are compared bit for bit.
TEST(EinsumEndToEnd, SumsOfTermsIntoSparseOutputs) {
  Rng rng(29);
  Tensor A = random_tensor(rng, {40, 30}, 0.2, fmt(SJ_FORMAT_CSR, 2));
  Tensor B = random_tensor(rng, {40, 30}, 0.2, fmt(SJ_FORMAT_CSR, 2));
  Tensor C = random_tensor(rng, {40, 30}, 0.05, fmt(SJ_FORMAT_CSR, 2));
  Tensor K = random_tensor(rng, {30, 30}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor D = random_tensor(rng, {30, 40}, 0.2, fmt(SJ_FORMAT_CSC, 2));
  Tensor x = random_tensor(rng, {30}, 0.3, fmt(SJ_FORMAT_SPARSE_VECTOR, 1));
  Tensor y = random_tensor(rng, {30}, 0.3, fmt(SJ_FORMAT_SPARSE_VECTOR, 1));
  Tensor T = random_tensor(rng, {6, 5, 20}, 0.2, fmt(SJ_FORMAT_CSF, 3));
  Tensor U = random_tensor(rng, {6, 5, 20}, 0.2, fmt(SJ_FORMAT_CSF, 3));
  FormatSpec ddc = fmt(SJ_FORMAT_DENSE, 3);
  ddc.kinds[2] = LevelKind::Compressed;
  const std::string ddc_text = "dense(i),dense(j),compressed(k)";
  const std::string rows = "the results added row by row", lists = "entry lists, each in the output's order, merged",
                    map = "entries joined by coordinates";
  struct Case {
    std::string expr;
    std::vector<Tensor> ops;
    std::string out;
    bool bits;
    std::string path;  // in explain
  } cases[] = {
      {"Z(i,j) = A(i,j) + B(i,j)", {A, B}, "csr", true, rows},
      {"Z(i,j) = A(i,j) + B(i,j) + C(i,j)", {A, B, C}, "csr", true, rows},
      {"Z(i,j) = A(i,j) + A(i,j)", {A}, "csr", true, rows},
      {"Z(i,j) = A(i,j) + B(i,j)", {A, B}, "csc", true, rows},
      {"Z(i,j) = A(i,j) + B(i,j)", {A, B}, "dcsr", true, lists},
      {"Z(i,j) = A(i,j) + B(i,j)", {A, B}, "coo", true, map},
      {"Z(i,j) = A(i,k) * K(k,j) + B(i,j)", {A, K, B}, "csr", false, rows},
      {"Z(i,j) = A(i,j) + D(j,i)", {A, D}, "csr", true, rows},  // D's term runs its kernel (transposed)
      {"z(i) = x(i) + y(i)", {x, y}, "sparse", true, rows},
      {"Z(i,j,k) = T(i,j,k) + U(i,j,k)", {T, U}, ddc_text, true, rows},
      {"Z(i,j,k) = T(i,j,k) + U(i,j,k)", {T, U}, "csf", true, lists},
  };
  for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_PLUS_PAIR}) {
    for (auto& c : cases) {
      SCOPED_TRACE(c.expr + " into " + c.out + " " + std::string(to_string(s)));
      Outcome r = run(c.expr, c.ops, {}, c.out, SJ_SCHEDULE_AUTO, s);
      EXPECT_TRUE(same_result(r.got, r.want));
      if (c.bits && s == SJ_SEMIRING_PLUS_TIMES)
        EXPECT_TRUE(bits_by_coordinates(r.got) == bits_by_coordinates(r.want));
      EXPECT_NE(r.plan->explain_text().find(c.path), std::string::npos) << r.plan->explain_text();
    }
  }
  // Every entry of `t` set to v (its structure kept).
  auto with_values = [](const Tensor& t, double v, ValueType vt) {
    CooTensor coo = to_coo(t);
    for (double& x : coo.values) x = v;
    return from_coo(coo, format_spec_of(t), t.index_type, vt, test_ctx().allocator);
  };
  // f32, three terms: 1 + 2^-24 + 2^-24 is 1 + 2^-23 summed in double and rounded once, as the
  // reference does, but 1 summed in float (the first join rounds to even). Rows would round at
  // every join, so three f32 terms take the lists.
  {
    Tensor P = random_tensor(rng, {20, 20}, 0.3, fmt(SJ_FORMAT_CSR, 2), ValueType::F32);
    Tensor one = with_values(P, 1.0, ValueType::F32), tiny = with_values(P, std::ldexp(1.0, -24), ValueType::F32);
    Outcome r = run("Z(i,j) = A(i,j) + B(i,j) + C(i,j)", {one, tiny, tiny}, {}, "csr");
    EXPECT_TRUE(bits_by_coordinates(r.got) == bits_by_coordinates(r.want));
    EXPECT_NE(r.plan->explain_text().find(lists), std::string::npos) << r.plan->explain_text();
  }
  // Lone -0.0 entries stay -0.0 whether their term is taken as it is (CSR in a CSR output), runs
  // its kernel (the same operand as DCSR), or is merged as a list (DCSR output): the kernels'
  // sums start from -0.0, not +0.0 (+0.0 + -0.0 is +0.0).
  {
    Tensor N = with_values(A, -0.0, ValueType::F64);
    Tensor Nd = from_coo(to_coo(N), fmt(SJ_FORMAT_DCSR, 2), IndexType::I32, ValueType::F64, test_ctx().allocator);
    for (auto& [n, out] : {std::pair{N, "csr"}, {Nd, "csr"}, {N, "dcsr"}, {Nd, "dcsr"}}) {
      SCOPED_TRACE(std::string("-0.0 into ") + out);
      Outcome r = run("Z(i,j) = N(i,j) + B(i,j)", {n, B}, {}, out);
      EXPECT_TRUE(bits_by_coordinates(r.got) == bits_by_coordinates(r.want));
    }
  }
  // Boolean values (or-and) through the row-by-row sum.
  Tensor P = random_tensor(rng, {20, 25}, 0.2, fmt(SJ_FORMAT_CSR, 2), ValueType::Bool);
  Tensor Q = random_tensor(rng, {20, 25}, 0.2, fmt(SJ_FORMAT_CSR, 2), ValueType::Bool);
  Outcome b = run("Z(i,j) = P(i,j) + Q(i,j)", {P, Q}, {}, "csr", SJ_SCHEDULE_AUTO, SJ_SEMIRING_OR_AND);
  EXPECT_TRUE(same_result(b.got, b.want));
  // f32 and 64-bit coordinates.
  Tensor F = random_tensor(rng, {30, 40}, 0.2, fmt(SJ_FORMAT_CSR, 2), ValueType::F32, IndexType::I64);
  Tensor G = random_tensor(rng, {30, 40}, 0.2, fmt(SJ_FORMAT_CSR, 2), ValueType::F32, IndexType::I64);
  Outcome f = run("Z(i,j) = F(i,j) + G(i,j)", {F, G}, {}, "csr");
  EXPECT_TRUE(same_result(f.got, f.want));
}

// A matrix product whose operands' level orders chain into the output's (CSR * CSR into CSR,
// CSC * CSC into CSC, either factor first, a transposed output) runs the built-in SpGEMM as
// sj_spgemm does: the reference's result, bit for bit under plus-times (the same products added
// in the same order), the plan's kept structure reused only on operands of that structure, and
// nothing compiled. Other layouts, and a forced einsum schedule, run the generated loop nest.
TEST(EinsumEndToEnd, MatrixProductsRunTheBuiltInSpgemm) {
  Rng rng(41);
  auto as = [](const Tensor& t, sj_format f) {
    Tensor u = from_coo(to_coo(t), fmt(f, 2), t.index_type, t.value_type, test_ctx().allocator);
    u.derived = std::make_shared<DerivedForms>();
    return u;
  };
  Tensor A = random_tensor(rng, {37, 29}, 0.15, fmt(SJ_FORMAT_CSR, 2));
  Tensor B = random_tensor(rng, {29, 23}, 0.15, fmt(SJ_FORMAT_CSR, 2));
  Tensor S = random_tensor(rng, {29, 29}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor D = random_tensor(rng, {37, 23}, 0.1, fmt(SJ_FORMAT_CSR, 2));
  Tensor Ac = as(A, SJ_FORMAT_CSC), Bc = as(B, SJ_FORMAT_CSC);
  const std::string builtin = "the built-in SpGEMM as sj_spgemm runs it";
  struct Case {
    std::string expr;
    std::vector<Tensor> ops;
    std::string out;
    bool builtin;
  } cases[] = {
      {"C(i,j) = A(i,k) * B(k,j)", {A, B}, "csr", true},
      {"C(i,j) = B(k,j) * A(i,k)", {B, A}, "csr", true},
      {"C(i,j) = A(i,k) * B(k,j)", {Ac, Bc}, "csc", true},   // C^T = B^T A^T over the CSC arrays
      {"C(j,i) = A(i,k) * B(k,j)", {A, B}, "csc", true},     // stored (i, j): the CSR product
      {"C(i,j) = S(i,k) * S(k,j)", {S}, "csr", true},
      {"C(i,j) = A(i,k) * B(k,j) + D(i,j)", {A, B, D}, "csr", true},  // summed row by row
      {"C(i,j) = A(i,k) * B(k,j)", {A, B}, "csc", false},    // levels (j, i) do not chain with CSR
      {"C(i,j) = A(i,k) * B(k,j)", {A, Bc}, "csr", false},   // B by columns: inner products
      {"C(i,j) = A(i,k) * B(k,j)", {A, B}, "dcsr", false},
  };
  for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_PLUS_PAIR}) {
    for (auto& c : cases) {
      SCOPED_TRACE(c.expr + " into " + c.out + " " + std::string(to_string(s)));
      Outcome r = run(c.expr, c.ops, {}, c.out, SJ_SCHEDULE_AUTO, s);
      EXPECT_TRUE(same_result(r.got, r.want));
      if (s == SJ_SEMIRING_PLUS_TIMES) EXPECT_TRUE(bits_by_coordinates(r.got) == bits_by_coordinates(r.want));
      const std::string text = r.plan->explain_text();
      EXPECT_EQ(text.find(builtin) != std::string::npos, c.builtin) << text;
      EXPECT_EQ(r.plan->terms()[0].spgemm != nullptr, c.builtin);
      if (c.builtin) {
        EXPECT_FALSE(r.plan->terms()[0].kernel);
        EXPECT_NE(r.plan->explain().find("\"chosen\":\"gustavson-dense\""), std::string::npos) << r.plan->explain();
      }
    }
  }
  // Repeated executions: from the third on, the kept structure gives the values only; operands
  // of another structure (same shapes) are multiplied in full.
  {
    sj_op_options o;
    sj_op_options_init(&o);
    EinsumPlan plan(test_ctx(), "C(i,j) = A(i,k) * B(k,j)", {A, B}, {}, "csr", o);
    const Tensor first = plan.execute({A, B});
    for (int e = 0; e < 4; ++e) EXPECT_TRUE(bits_by_coordinates(plan.execute({A, B})) == bits_by_coordinates(first));
    EXPECT_NE(plan.explain_text().find("computed only the values"), std::string::npos) << plan.explain_text();
    Tensor A2 = random_tensor(rng, {37, 29}, 0.2, fmt(SJ_FORMAT_CSR, 2));
    Tensor B2 = random_tensor(rng, {29, 23}, 0.2, fmt(SJ_FORMAT_CSR, 2));
    o.schedule = SJ_SCHEDULE_REFERENCE;
    const Tensor want = EinsumPlan(test_ctx(), "C(i,j) = A(i,k) * B(k,j)", {A2, B2}, {}, "csr", o).execute({A2, B2});
    EXPECT_TRUE(bits_by_coordinates(plan.execute({A2, B2})) == bits_by_coordinates(want));
    // recompute_structure: nothing kept
    sj_op_options_init(&o);
    o.recompute_structure = 1;
    EinsumPlan again(test_ctx(), "C(i,j) = A(i,k) * B(k,j)", {A, B}, {}, "csr", o);
    for (int e = 0; e < 4; ++e) EXPECT_TRUE(bits_by_coordinates(again.execute({A, B})) == bits_by_coordinates(first));
    EXPECT_EQ(again.explain_text().find("structure kept"), std::string::npos) << again.explain_text();
  }
  // Forced schedules: an einsum one (or isa scalar) keeps the generated nest; gustavson-hash
  // runs the built-in kernel with the hash accumulator.
  {
    Outcome f = run("C(i,j) = A(i,k) * B(k,j)", {A, B}, {}, "csr", SJ_SCHEDULE_FUSED);
    EXPECT_TRUE(f.plan->terms()[0].kernel);
    EXPECT_EQ(f.plan->explain_text().find(builtin), std::string::npos);
    EXPECT_TRUE(bits_by_coordinates(f.got) == bits_by_coordinates(f.want));
    sj_op_options so;  // code without SIMD asked for: the generated nest too
    sj_op_options_init(&so);
    so.isa = SJ_ISA_SCALAR;
    EinsumPlan sp(test_ctx(), "C(i,j) = A(i,k) * B(k,j)", {A, B}, {}, "csr", so);
    EXPECT_FALSE(sp.terms()[0].spgemm);
    EXPECT_TRUE(bits_by_coordinates(sp.execute({A, B})) == bits_by_coordinates(f.want));
    Outcome h = run("C(i,j) = A(i,k) * B(k,j)", {A, B}, {}, "csr", SJ_SCHEDULE_GUSTAVSON_HASH);
    EXPECT_NE(h.plan->explain().find("\"chosen\":\"gustavson-hash\""), std::string::npos) << h.plan->explain();
    EXPECT_TRUE(bits_by_coordinates(h.got) == bits_by_coordinates(h.want));
  }
  // Types and edges: f32 with mixed coordinate types (run in int64), or-and over bool, empty
  // operands, 0 x n and 1 x 1 shapes, rows with no entries.
  {
    Tensor F = random_tensor(rng, {30, 25}, 0.2, fmt(SJ_FORMAT_CSR, 2), ValueType::F32, IndexType::I64);
    Tensor G = random_tensor(rng, {25, 20}, 0.2, fmt(SJ_FORMAT_CSR, 2), ValueType::F32);
    Outcome f = run("C(i,j) = F(i,k) * G(k,j)", {F, G}, {}, "csr");
    EXPECT_TRUE(bits_by_coordinates(f.got) == bits_by_coordinates(f.want));
    EXPECT_TRUE(f.plan->terms()[0].spgemm);
    Tensor P = random_tensor(rng, {20, 25}, 0.2, fmt(SJ_FORMAT_CSR, 2), ValueType::Bool);
    Tensor Q = random_tensor(rng, {25, 15}, 0.2, fmt(SJ_FORMAT_CSR, 2), ValueType::Bool);
    Outcome b = run("C(i,j) = P(i,k) * Q(k,j)", {P, Q}, {}, "csr", SJ_SCHEDULE_AUTO, SJ_SEMIRING_OR_AND);
    EXPECT_TRUE(same_result(b.got, b.want));
    for (auto [m, k, n, d] : {std::tuple{0, 5, 7, 0.5}, {5, 0, 7, 0.5}, {5, 7, 0, 0.5}, {1, 1, 1, 1.0}, {40, 30, 20, 0.01},
                              {6, 6, 6, 0.0}}) {
      SCOPED_TRACE(cat(m, "x", k, " * ", k, "x", n, " density ", d));
      Tensor X = random_tensor(rng, {m, k}, d, fmt(SJ_FORMAT_CSR, 2));
      Tensor Y = random_tensor(rng, {k, n}, d, fmt(SJ_FORMAT_CSR, 2));
      Outcome e = run("C(i,j) = X(i,k) * Y(k,j)", {X, Y}, {}, "csr");
      EXPECT_TRUE(bits_by_coordinates(e.got) == bits_by_coordinates(e.want));
      EXPECT_EQ(e.got.dims[0], m);
      EXPECT_EQ(e.got.dims[1], n);
    }
  }
}

TEST(EinsumEndToEnd, SemiringsTypesAndLevelKinds) {
  Rng rng(17);
  Tensor B = random_tensor(rng, {25, 30}, 0.15, fmt(SJ_FORMAT_CSR, 2));
  Tensor C = random_tensor(rng, {30, 20}, 0.15, fmt(SJ_FORMAT_CSC, 2));
  for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_OR_AND,
                        SJ_SEMIRING_PLUS_PAIR}) {
    Outcome r = run("A(i,j) = B(i,k) * C(k,j)", {B, C}, {}, "csr", SJ_SCHEDULE_AUTO, s);
    EXPECT_TRUE(same_result(r.got, r.want)) << to_string(s);
    Outcome d = run("A(i,j) = B(i,k) * C(k,j)", {B, C}, {}, "dense", SJ_SCHEDULE_AUTO, s);
    EXPECT_TRUE(same_result(d.got, d.want)) << to_string(s);
  }
  // f32, i64 and bool
  Tensor Bf = random_tensor(rng, {25, 30}, 0.15, fmt(SJ_FORMAT_CSR, 2), ValueType::F32, IndexType::I64);
  Tensor Cf = random_tensor(rng, {30, 20}, 0.15, fmt(SJ_FORMAT_CSR, 2), ValueType::F32);
  Outcome f = run("A(i,j) = B(i,k) * C(k,j)", {Bf, Cf}, {}, "csr");
  EXPECT_TRUE(same_result(f.got, f.want, 1e-5));
  Tensor Bb = random_tensor(rng, {25, 30}, 0.15, fmt(SJ_FORMAT_CSR, 2), ValueType::Bool);
  Tensor xb = random_tensor(rng, {30}, 0.3, fmt(SJ_FORMAT_SPARSE_VECTOR, 1), ValueType::Bool);
  Outcome b = run("y(i) = B(i,j) * x(j)", {Bb, xb}, {}, std::nullopt, SJ_SCHEDULE_AUTO, SJ_SEMIRING_OR_AND);
  EXPECT_TRUE(same_result(b.got, b.want));
  // COO (compressed-nonunique + singleton), DCSR, and asked-for formats (converted)
  Tensor Bc = random_tensor(rng, {25, 30}, 0.15, fmt(SJ_FORMAT_COO, 2));
  Tensor Cd = random_tensor(rng, {30, 20}, 0.15, fmt(SJ_FORMAT_DCSR, 2));
  Outcome c = run("A(i,j) = B(i,k) * C(k,j)", {Bc, Cd}, {}, "coo");
  EXPECT_TRUE(same_result(c.got, c.want));
  Outcome c2 = run("A(i,j) = B(i,k) * C(k,j)", {Bc, Cd}, {"compressed-nonunique(i),singleton(k)", "dense(j),compressed(k)"}, "dcsr");
  EXPECT_TRUE(same_result(c2.got, c2.want));
  Outcome e = run("a(i) = B(i,k) * C(k,j) * x(j)", {B, C, random_tensor(rng, {20}, 1.0, fmt(SJ_FORMAT_DENSE, 1))},
              {"dcsr", "csc", std::nullopt}, "dense");
  EXPECT_TRUE(same_result(e.got, e.want));
}

// A random contraction: 2 or 3 factors over indices i,j,k,l, random formats and output.
TEST(EinsumEndToEnd, RandomExpressions) {
  const char* names[] = {"i", "j", "k", "l"};
  int checked = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Rng rng(seed * 7919);
    const int n_idx = static_cast<int>(rng.uniform_int(2, 4));
    std::vector<int64_t> dim(n_idx);
    for (auto& d : dim) d = rng.uniform_int(2, 7);
    const int nf = static_cast<int>(rng.uniform_int(1, 3));
    std::vector<std::vector<int>> acc(nf);
    std::vector<bool> used(n_idx, false);
    for (auto& a : acc) {
      int order = static_cast<int>(rng.uniform_int(1, std::min(3, n_idx)));
      std::vector<int> pool(n_idx);
      for (int v = 0; v < n_idx; ++v) pool[v] = v;
      for (int q = 0; q < order; ++q) {
        int pick = static_cast<int>(rng.uniform_int(q, n_idx - 1));
        std::swap(pool[q], pool[pick]);
        a.push_back(pool[q]);
        used[pool[q]] = true;
      }
    }
    std::vector<int> out;
    for (int v = 0; v < n_idx; ++v)
      if (used[v] && rng.bernoulli(0.5) && out.size() < 3) out.push_back(v);
    std::string text = "Z(";
    for (size_t q = 0; q < out.size(); ++q) text += cat(q ? "," : "", names[out[q]]);
    text += ") =";
    std::vector<Tensor> ops;
    std::vector<std::optional<std::string>> fmts;
    for (int f = 0; f < nf; ++f) {
      text += cat(f ? " * " : " ", std::string(1, static_cast<char>('A' + f)), "(");
      std::vector<int64_t> dims;
      for (size_t q = 0; q < acc[f].size(); ++q) {
        text += cat(q ? "," : "", names[acc[f][q]]);
        dims.push_back(dim[acc[f][q]]);
      }
      text += ")";
      // random level kinds and order
      FormatSpec s;
      s.order = static_cast<int>(dims.size());
      std::vector<int> modes(s.order);
      for (int m = 0; m < s.order; ++m) modes[m] = m;
      for (int m = s.order - 1; m > 0; --m) std::swap(modes[m], modes[rng.uniform_int(0, m)]);
      for (int l = 0; l < s.order; ++l) {
        s.mode_order[l] = modes[l];
        s.kinds[l] = rng.bernoulli(0.35) ? LevelKind::Dense : LevelKind::Compressed;
      }
      ops.push_back(random_tensor(rng, dims, rng.bernoulli(0.2) ? 1.0 : 0.3, s));
      fmts.push_back(std::nullopt);
    }
    std::optional<std::string> out_fmt;
    if (!out.empty()) out_fmt = rng.bernoulli(0.5) ? "dense" : out.size() == 1 ? "sparse-vector" : out.size() == 2 ? "csr" : "csf";
    for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_TRANSPOSE, SJ_SCHEDULE_SEARCH}) {
      sj_op_options o;
      sj_op_options_init(&o);
      o.schedule = s;
      std::unique_ptr<EinsumPlan> plan;
      try {
        plan = std::make_unique<EinsumPlan>(test_ctx(), text, ops, fmts, out_fmt, o);
      } catch (const Error& e) {
        ASSERT_NE(s, SJ_SCHEDULE_AUTO) << text << ": " << e.what();
        EXPECT_EQ(e.status(), SJ_ERR_INVALID_ARGUMENT) << e.what();
        continue;
      }
      Tensor got = plan->execute(ops);
      o.schedule = SJ_SCHEDULE_REFERENCE;
      Tensor want = EinsumPlan(test_ctx(), text, ops, fmts, out_fmt, o).execute(ops);
      EXPECT_TRUE(same_result(got, want)) << "seed " << seed << ": " << text << " (" << to_string(s) << ")\n"
                                          << plan->explain_text();
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(EinsumEndToEnd, ErrorsNameTheTensor) {
  Rng rng(2);
  Tensor B = random_tensor(rng, {4, 5}, 0.5, fmt(SJ_FORMAT_CSR, 2));
  Tensor C = random_tensor(rng, {6, 4}, 0.5, fmt(SJ_FORMAT_CSR, 2));
  Tensor T = random_tensor(rng, {3, 4, 5}, 0.5, dcc());
  sj_op_options o;
  sj_op_options_init(&o);
  auto status = [&](const char* expr, std::vector<Tensor> ops, std::vector<std::optional<std::string>> f,
                    std::string* msg) {
    try {
      EinsumPlan p(test_ctx(), expr, ops, f, std::nullopt, o);
    } catch (const Error& e) {
      *msg = e.what();
      return e.status();
    }
    return SJ_OK;
  };
  std::string m;
  EXPECT_EQ(status("A(i,j) = B(i,k) * C(k,j)", {B, C}, {}, &m), SJ_ERR_SHAPE_MISMATCH);
  EXPECT_NE(m.find("index 'k' has extent 5 in B(i,k) but 6 in C(k,j)"), std::string::npos) << m;
  EXPECT_EQ(status("A(i,j) = B(i,j)", {T}, {}, &m), SJ_ERR_SHAPE_MISMATCH);
  EXPECT_NE(m.find("B is 3-D (3x4x5) but the expression uses B(i,j)"), std::string::npos) << m;
  EXPECT_EQ(status("A(i,j) = B(i,j)", {B}, {"csf"}, &m), SJ_ERR_FORMAT);
  EXPECT_NE(m.find("format of B"), std::string::npos) << m;
  EXPECT_EQ(status("A(i,j) = B(i,j) * C(j,i)", {B}, {}, &m), SJ_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(status("A(i,j) = B(i,j", {B}, {}, &m), SJ_ERR_PARSE);
}

// ---------------------------------------------------------------------------------------------
// C API and the on-disk object cache

TEST(EinsumCApi, PlanExecuteExplainAndDiskCache) {
  auto dir = std::filesystem::temp_directory_path() / cat("sj-einsum-cache-", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  const int64_t rp[] = {0, 2, 3, 3};
  const int32_t ci[] = {0, 2, 1};
  const double v[] = {1, 2, 3};
  auto with_context = [&](auto&& body) {
    sj_config c;
    sj_config_init(&c);
    const std::string d = dir.string();
    c.cache_dir = d.c_str();
    sj_context* ctx = nullptr;
    ASSERT_EQ(sj_context_create(&c, &ctx), SJ_OK) << sj_last_error_message();
    sj_tensor *B = nullptr, *C = nullptr;
    ASSERT_EQ(sj_tensor_create_csr(ctx, 3, 3, SJ_INDEX_INT32, SJ_VALUE_F64, rp, ci, v, 0, &B), SJ_OK);
    ASSERT_EQ(sj_tensor_create_csr(ctx, 3, 3, SJ_INDEX_INT32, SJ_VALUE_F64, rp, ci, v, 0, &C), SJ_OK);
    body(ctx, B, C);
    sj_tensor_destroy(B);
    sj_tensor_destroy(C);
    EXPECT_EQ(sj_context_destroy(ctx), SJ_OK);
  };
  // a unique expression text so no kernel of this process is shared from memory
  const std::string expr = cat("Out(i,j) = Bq", ::getpid() % 1000, "(i,j) * Cq(j,i)");
  auto source_of = [](sj_plan* p) {
    const char* text = nullptr;
    EXPECT_EQ(sj_plan_explain_text(p, &text), SJ_OK);
    std::string t = text;
    EXPECT_NE(t.find("loop nest:"), std::string::npos) << t;
    auto at = t.find("kernel: LLVM ORC, from ");
    return at == std::string::npos ? t : t.substr(at + 23, t.find(' ', at + 23) - at - 23);
  };
  with_context([&](sj_context* ctx, sj_tensor* B, sj_tensor* C) {
    const sj_tensor* ops[] = {B, C};
    sj_plan* p = nullptr;
    ASSERT_EQ(sj_einsum_plan(ctx, expr.c_str(), ops, 2, nullptr, "csr", nullptr, &p), SJ_OK) << sj_last_error_message();
    EXPECT_EQ(source_of(p), "compiled");
    sj_tensor* out = nullptr;
    ASSERT_EQ(sj_plan_execute(p, ops, 2, &out), SJ_OK) << sj_last_error_message();
    sj_tensor_info info;
    ASSERT_EQ(sj_tensor_get_info(out, &info), SJ_OK);
    // B = [[1,0,2],[0,3,0],[0,0,0]]; B .* B^T keeps (0,0)=1 and (1,1)=9
    EXPECT_EQ(info.nnz, 2);
    const char* json = nullptr;
    EXPECT_EQ(sj_plan_explain(p, &json), SJ_OK);
    EXPECT_NE(std::string(json).find("\"loop_nest\""), std::string::npos);
    sj_tensor_destroy(out);
    sj_plan_destroy(p);
    // errors at the boundary
    EXPECT_EQ(sj_einsum(ctx, "A(i,j) = B(i,j", ops, 1, nullptr, nullptr, nullptr, &out), SJ_ERR_PARSE);
    EXPECT_NE(std::string(sj_last_error_message()).find("expression:15:"), std::string::npos) << sj_last_error_message();
    EXPECT_EQ(sj_einsum(ctx, nullptr, ops, 1, nullptr, nullptr, nullptr, &out), SJ_ERR_NULL_POINTER);
    const char* bad_formats[] = {"csf", nullptr};
    EXPECT_EQ(sj_einsum(ctx, "A(i,j) = B(i,j) * C(j,i)", ops, 2, bad_formats, nullptr, nullptr, &out), SJ_ERR_FORMAT);
    EXPECT_EQ(sj_einsum(ctx, "A(i,j) = B(i,j) * C(j,i)", ops, 1, nullptr, nullptr, nullptr, &out), SJ_ERR_INVALID_ARGUMENT);
  });
  // The kernel is still alive in this process only if a plan holds it; all are destroyed, so a
  // second context with the same folder loads the object from disk.
  with_context([&](sj_context* ctx, sj_tensor* B, sj_tensor* C) {
    const sj_tensor* ops[] = {B, C};
    sj_plan* p = nullptr;
    ASSERT_EQ(sj_einsum_plan(ctx, expr.c_str(), ops, 2, nullptr, "csr", nullptr, &p), SJ_OK);
    EXPECT_EQ(source_of(p), "disk");
    sj_tensor* out = nullptr;
    ASSERT_EQ(sj_plan_execute(p, ops, 2, &out), SJ_OK);
    sj_tensor_info info;
    sj_tensor_get_info(out, &info);
    EXPECT_EQ(info.nnz, 2);
    sj_tensor_destroy(out);
    sj_plan_destroy(p);
  });
  // A corrupted entry is ignored: compiled again, still correct.
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".sje") {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(-16, std::ios::end);
      f.write("garbage-garbage!", 16);
    }
  with_context([&](sj_context* ctx, sj_tensor* B, sj_tensor* C) {
    const sj_tensor* ops[] = {B, C};
    sj_plan* p = nullptr;
    ASSERT_EQ(sj_einsum_plan(ctx, expr.c_str(), ops, 2, nullptr, "csr", nullptr, &p), SJ_OK);
    EXPECT_EQ(source_of(p), "compiled");
    sj_tensor* out = nullptr;
    ASSERT_EQ(sj_plan_execute(p, ops, 2, &out), SJ_OK);
    sj_tensor_info info;
    sj_tensor_get_info(out, &info);
    EXPECT_EQ(info.nnz, 2);
    sj_tensor_destroy(out);
    sj_plan_destroy(p);
  });
  std::filesystem::remove_all(dir);
}

// LLVM's JIT memory manager writes code through a writable mapping and runs it through an
// executable one: while a compiled plan is alive, no page is both.
TEST(EinsumCApi, NoPageIsWritableAndExecutable) {
  sj_context* ctx = nullptr;
  sj_config c;
  sj_config_init(&c);
  c.disable_disk_cache = 1;
  ASSERT_EQ(sj_context_create(&c, &ctx), SJ_OK);
  const int64_t rp[] = {0, 2, 3, 3};
  const int32_t ci[] = {0, 2, 1};
  const double v[] = {1, 2, 3};
  sj_tensor *B = nullptr, *C = nullptr;
  ASSERT_EQ(sj_tensor_create_csr(ctx, 3, 3, SJ_INDEX_INT32, SJ_VALUE_F64, rp, ci, v, 0, &B), SJ_OK);
  ASSERT_EQ(sj_tensor_create_csr(ctx, 3, 3, SJ_INDEX_INT32, SJ_VALUE_F64, rp, ci, v, 0, &C), SJ_OK);
  const sj_tensor* ops[] = {B, C};
  const std::string expr = cat("Out(i,j) = Bwx", ::getpid() % 1000, "(i,j) * Cwx(j,i)");
  sj_plan* p = nullptr;
  ASSERT_EQ(sj_einsum_plan(ctx, expr.c_str(), ops, 2, nullptr, "csr", nullptr, &p), SJ_OK) << sj_last_error_message();
  const char* text = nullptr;
  ASSERT_EQ(sj_plan_explain_text(p, &text), SJ_OK);
  EXPECT_NE(std::string(text).find("kernel: LLVM ORC, from compiled"), std::string::npos) << text;
  sj_tensor* out = nullptr;
  ASSERT_EQ(sj_plan_execute(p, ops, 2, &out), SJ_OK) << sj_last_error_message();
  for (const std::string& line : sj::test::writable_executable_mappings())
    ADD_FAILURE() << "writable and executable: " << line;
  sj_tensor_destroy(out);
  sj_plan_destroy(p);
  sj_tensor_destroy(B);
  sj_tensor_destroy(C);
  EXPECT_EQ(sj_context_destroy(ctx), SJ_OK);
}

TEST(EinsumEndToEnd, RealMatrices) {
  auto mats = test::shared_matrices();
  if (mats.empty()) GTEST_SKIP() << "no ../shared/data";
  int done = 0;
  for (auto& path : mats) {
    Tensor A = read_tensor_file(path.string(), test_ctx().allocator);
    if (A.order != 2 || A.dims[0] != A.dims[1] || A.nnz() > 60000) continue;
    A.derived = std::make_shared<DerivedForms>();
    for (sj_schedule s : {SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_TRANSPOSE}) {
      Outcome r = run("a(i) = B(i,j) * C(j,i)", {A, A}, {}, "dense", s);
      EXPECT_TRUE(same_result(r.got, r.want)) << path;
      Outcome h = run("Z(i,j) = B(i,j) * C(j,i)", {A, A}, {}, "csr", s);
      EXPECT_TRUE(same_result(h.got, h.want)) << path;
    }
    if (++done == 2) break;
  }
}

// `sparsejit einsum`: a result written with --output equals the plan's; errors exit 1 with the caret.
TEST(EinsumCli, OutputExplainAndErrors) {
  auto cli = [](const std::string& args, int* status) {
    std::string cmd = std::string(SPARSEJIT_CLI_PATH) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int st = p ? pclose(p) : -1;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
  };
  const std::string m = test::repo_data("cage8.mtx").string();
  const auto out = std::filesystem::temp_directory_path() / cat("sj-einsum-cli-", ::getpid(), ".mtx");
  int st = -1;
  std::string text = cli("einsum \"a(i) = B(i,j) * C(j,i)\" --tensor B=" + m + ":csr --tensor C=" + m +
                             " --repeat 1 --explain --output " + out.string(), &st);
  EXPECT_EQ(st, 0) << text;
  EXPECT_NE(text.find("loop nest:"), std::string::npos) << text;
  Tensor A = read_tensor_file(m, test_ctx().allocator);
  sj_op_options o;
  sj_op_options_init(&o);
  Tensor want = EinsumPlan(test_ctx(), "a(i) = B(i,j) * C(j,i)", {A, A}, {}, std::nullopt, o).execute({A, A});
  Tensor got = read_tensor_file(out.string(), test_ctx().allocator);  // n x 1 matrix
  auto w = entries_by_coordinates(want), g = entries_by_coordinates(got);
  EXPECT_EQ(w.size(), g.size());
  for (auto& [k, v] : w) EXPECT_NEAR((g[{k[0], 0}]), v, 1e-12 * std::max(1.0, std::abs(v)));
  std::filesystem::remove(out);
  text = cli("einsum \"a(i) = B(i,j * C(j,i)\" --tensor B=" + m + " --tensor C=" + m, &st);
  EXPECT_EQ(st, 1) << text;
  EXPECT_NE(text.find("expression:14: expected ',' or ')'"), std::string::npos) << text;
  EXPECT_NE(text.find("\n               ^"), std::string::npos) << text;
  text = cli("einsum \"a(i) = B(i,j) * C(j,i)\" --tensor B=" + m + ":csf --tensor C=" + m, &st);
  EXPECT_EQ(st, 1) << text;
  EXPECT_NE(text.find("format of B"), std::string::npos) << text;
  text = cli("einsum \"a(i) = B(i,j) * C(j,i)\" --tensor B=" + m + " --bogus", &st);
  EXPECT_EQ(st, 2) << text;

  // --threads: the plan asks for that many, and the result (nnz, checksum: the CSV's last two
  // fields) is the same for 1 and 2 threads; a bad count is a usage error.
  auto tail2 = [](const std::string& csv) {
    const std::string line = csv.substr(0, csv.find_last_not_of('\n') + 1);
    const size_t last = line.rfind(','), before = line.rfind(',', last - 1);
    return line.substr(before + 1);
  };
  const std::string spgemm = "einsum \"C(i,j) = A(i,k) * B(k,j)\" --tensor A=" + m + ":csr --tensor B=" + m + ":csr";
  const std::string one = cli(spgemm + " --repeat 1 --csv --threads 1", &st);
  EXPECT_EQ(st, 0) << one;
  const std::string two = cli(spgemm + " --repeat 1 --csv --threads 2", &st);
  EXPECT_EQ(st, 0) << two;
  EXPECT_EQ(tail2(one), tail2(two)) << one << two;
  text = cli(spgemm + " --repeat 1 --explain --threads 2", &st);
  EXPECT_EQ(st, 0) << text;
  EXPECT_NE(text.find("(requested 2)"), std::string::npos) << text;
  for (const char* bad : {"x", "-1", "5000"}) {
    text = cli(spgemm + " --threads " + bad, &st);
    EXPECT_EQ(st, 2) << text;
    EXPECT_NE(text.find("--threads wants a count"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace sj::einsum

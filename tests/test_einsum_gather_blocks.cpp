// Gather blocks of generated index-notation loops (jit/llvm_backend.cpp, gen_gather_blocks): an
// innermost loop over one sparse level whose coordinates locate dense factors reads those
// factors eight values a gather, and must give the scalar loop's bits. Checked with the blocks
// pinned on and off (src/gather_window.hpp) against an in-order sum written here (SpMV: every
// row length from 0 to 40, both index types, double and float, plus-times, min-plus and
// max-times with NaN and infinities), bit for bit against each other on other shapes (two
// gathered vectors, a fixed factor, sparse outputs, a where workspace, a scalar output), and
// which loops get blocks (not those reading a dense matrix's rows). Then the dense output a kernel starts itself
// (EinsumKernel::starts_output): with an allocator that hands out NaN-filled memory, every entry
// must still be written, and outputs the kernel does not start must still be filled.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "jit/isa.hpp"
#include "jit/llvm_backend.hpp"
#include "src/context.hpp"
#include "src/convert.hpp"
#include "src/einsum_format.hpp"
#include "src/einsum_planner.hpp"
#include "src/error.hpp"
#include "src/gather_window.hpp"
#include "src/semiring.hpp"
#include "tensor_entries.hpp"

namespace sj::einsum {
namespace {

namespace window = sj::gather_window;
using test::bits_by_coordinates;

// Pins the gather blocks on or off for one scope and restores the default.
struct PinnedUse {
  explicit PinnedUse(window::Use u) { window::set_use(u); }
  ~PinnedUse() { window::set_use(window::Use::Auto); }
};

// Gather blocks are compiled where the kernels may use AVX-512F.
bool blocks_compiled() { return jit::default_isa() == SJ_ISA_AVX512; }

Context& plain_ctx() {
  static Context* c = [] {
    sj_config cfg;
    sj_config_init(&cfg);
    cfg.disable_disk_cache = 1;
    return new Context(cfg);
  }();
  return *c;
}

// Values with full mantissas and mixed magnitudes and signs: a sum in another order gives other bits.
double full_value(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> mant(1, 2);
  std::uniform_int_distribution<int> expo(-12, 12), sign(0, 1);
  return std::ldexp(mant(rng), expo(rng)) * (sign(rng) ? -1 : 1);
}

// The tensor in a named format; "ddc": dense(0), dense(1), compressed(2).
Tensor tensor_of(const CooTensor& coo, const std::string& format, IndexType it, ValueType vt) {
  const std::map<std::string, sj_format> named = {{"csr", SJ_FORMAT_CSR}, {"csc", SJ_FORMAT_CSC},
                                                  {"dcsr", SJ_FORMAT_DCSR}, {"dense", SJ_FORMAT_DENSE},
                                                  {"sparse-vector", SJ_FORMAT_SPARSE_VECTOR}, {"csf", SJ_FORMAT_CSF}};
  FormatSpec spec;
  if (format == "ddc") {
    spec.order = 3;
    spec.kinds = {LevelKind::Dense, LevelKind::Dense, LevelKind::Compressed};
  } else {
    spec = format_spec(named.at(format), coo.order);
  }
  return from_coo(coo, spec, it, vt, plain_ctx().allocator);
}

// A dense tensor of the given extents with full values.
CooTensor dense_coo(std::mt19937_64& rng, std::vector<int64_t> dims) {
  CooTensor c;
  c.order = static_cast<int>(dims.size());
  int64_t total = 1;
  for (int m = 0; m < c.order; ++m) c.dims[m] = dims[m], total *= dims[m];
  for (int64_t p = 0; p < total; ++p) {
    int64_t r = p;
    for (int m = c.order - 1; m >= 0; --m) {
      c.coords[m].push_back(r % dims[m]);
      r /= dims[m];
    }
    c.values.push_back(full_value(rng));
  }
  return c;
}

// A sparse matrix whose row i has lens[i] entries at distinct random columns below n.
CooTensor rows_coo(std::mt19937_64& rng, const std::vector<int64_t>& lens, int64_t n) {
  CooTensor c;
  c.order = 2;
  c.dims[0] = static_cast<int64_t>(lens.size());
  c.dims[1] = n;
  for (size_t i = 0; i < lens.size(); ++i) {
    std::set<int64_t> cols;
    std::uniform_int_distribution<int64_t> col(0, n - 1);
    while (static_cast<int64_t>(cols.size()) < lens[i]) cols.insert(col(rng));
    for (int64_t j : cols) {
      c.coords[0].push_back(static_cast<int64_t>(i));
      c.coords[1].push_back(j);
      c.values.push_back(full_value(rng));
    }
  }
  return c;
}

// A random sparse tensor with about `density` of its positions stored.
CooTensor sparse_coo(std::mt19937_64& rng, std::vector<int64_t> dims, double density) {
  CooTensor all = dense_coo(rng, dims), c;
  c.order = all.order;
  c.dims = all.dims;
  std::bernoulli_distribution keep(density);
  for (int64_t p = 0; p < all.nnz(); ++p) {
    if (!keep(rng)) continue;
    for (int m = 0; m < c.order; ++m) c.coords[m].push_back(all.coords[m][p]);
    c.values.push_back(all.values[p]);
  }
  return c;
}

Tensor execute(const Context& ctx, const std::string& expr, const std::vector<Tensor>& ops,
               const std::vector<std::optional<std::string>>& formats, std::optional<std::string> out,
               sj_semiring sr = SJ_SEMIRING_PLUS_TIMES, std::string* gathered = nullptr, bool* starts = nullptr) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.semiring = sr;
  EinsumPlan plan(ctx, expr, ops, formats, out, o);
  for (auto& t : plan.terms()) EXPECT_TRUE(t.kernel) << expr << ": LLVM failed: " << t.jit_error;
  if (gathered) *gathered = plan.terms()[0].kernel ? plan.terms()[0].kernel->gathered : "?";
  if (starts) *starts = plan.terms()[0].kernel && plan.terms()[0].kernel->starts_output;
  return plan.execute(ops);
}

// y(i) = A(i,k) * x(k) over every row length 0..40 against the in-order sum S computes in V.
template <class S, class V> void check_spmv(IndexType it, bool specials, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t n = 700;
  std::vector<int64_t> lens;
  for (int64_t l = 0; l <= 40; ++l) lens.push_back(l);
  lens.push_back(n);  // a full row: coordinates 0 and n - 1
  CooTensor a = rows_coo(rng, lens, n);
  CooTensor x = dense_coo(rng, {n});
  if (specials) {
    x.values[1] = std::numeric_limits<double>::quiet_NaN();
    x.values[2] = std::numeric_limits<double>::infinity();
    x.values[3] = -std::numeric_limits<double>::infinity();
  }
  const ValueType vt = std::is_same_v<V, float> ? ValueType::F32 : ValueType::F64;
  std::vector<Tensor> ops = {tensor_of(a, "csr", it, vt), tensor_of(x, "dense", it, vt)};
  std::vector<V> want(lens.size(), S::zero());
  for (int64_t p = 0; p < a.nnz(); ++p) {  // rows_coo lists each row's columns in increasing order
    const int64_t i = a.coords[0][p];
    want[i] = S::add(want[i], S::mul(static_cast<V>(a.values[p]), static_cast<V>(x.values[a.coords[1][p]])));
  }
  for (window::Use use : {window::Use::Always, window::Use::Never}) {
    PinnedUse pin(use);
    std::string gathered;
    Tensor y = execute(plain_ctx(), "y(i) = A(i,k) * x(k)", ops, {}, "dense", S::id, &gathered);
    EXPECT_EQ(gathered, blocks_compiled() ? "k: x(k)" : "");
    ASSERT_EQ(y.values.bytes(), want.size() * sizeof(V));
    const V* got = y.values.template as<V>();
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(V)), 0)
          << "row " << i << " (" << lens[i] << " entries): " << got[i] << " vs " << want[i] << ", "
          << to_string(S::id) << " " << to_string(it) << (use == window::Use::Always ? ", blocks on" : ", blocks off");
    }
  }
}

TEST(EinsumGatherBlocks, SpmvBitForBitEveryRowLength) {
  for (IndexType it : {IndexType::I32, IndexType::I64}) {
    check_spmv<PlusTimes<double>, double>(it, false, 1);
    check_spmv<MinPlus<double>, double>(it, true, 2);
    check_spmv<MaxTimes<double>, double>(it, true, 3);
    check_spmv<PlusTimes<float>, float>(it, false, 4);
    check_spmv<MinPlus<float>, float>(it, true, 5);
    check_spmv<MaxTimes<float>, float>(it, true, 6);
  }
}

// Other shapes: the blocks' bits equal the scalar loop's; which loops get blocks.
TEST(EinsumGatherBlocks, OtherShapesKeepTheScalarLoopsBits) {
  std::mt19937_64 rng(9);
  const int64_t m = 37, n = 61;
  std::vector<int64_t> lens;
  for (int64_t i = 0; i < m; ++i) lens.push_back((i * 7) % 30);  // 0..29, short and long rows
  CooTensor a = rows_coo(rng, lens, n);
  CooTensor x = dense_coo(rng, {n}), z = dense_coo(rng, {n}), s = dense_coo(rng, {m}), d = dense_coo(rng, {m, n});
  CooTensor b = sparse_coo(rng, {n, 23}, 0.3), w = dense_coo(rng, {23});
  CooTensor v = rows_coo(rng, {n}, 5 * n);  // one row of n entries: a sparse vector once reshaped
  v.order = 1;
  v.dims[0] = 5 * n;
  v.coords[0] = v.coords[1];
  v.coords[1].clear();
  CooTensor big = dense_coo(rng, {5 * n});
  struct Case {
    const char* expr;
    std::vector<const CooTensor*> ops;
    std::vector<const char*> formats;
    std::optional<std::string> out;
    const char* gathered;  // with AVX-512F
  } cases[] = {
      {"y(i) = A(i,k) * x(k)", {&a, &x}, {"csr", "dense"}, "dense", "k: x(k)"},
      {"y(i) = A(i,k) * x(k) * z(k)", {&a, &x, &z}, {"csr", "dense", "dense"}, "dense", "k: x(k), z(k)"},
      {"y(i) = A(i,k) * D(i,k)", {&a, &d}, {"csr", "dense"}, "dense", ""},  // a matrix row: read once, not gathered
      {"y(i) = A(i,k) * x(k) * s(i)", {&a, &x, &s}, {"csr", "dense", "dense"}, "dense", "k: x(k)"},
      {"Z(i,k) = A(i,k) * x(k)", {&a, &x}, {"csr", "dense"}, "csr", "k: x(k)"},
      {"y(i) = A(i,k) * x(k) * D(i,k)", {&a, &x, &d}, {"csr", "dense", "dense"}, "dense", ""},
      {"Z(i,k) = A(i,k) * x(k)", {&a, &x}, {"csr", "dense"}, "dense", "k: x(k)"},
      {"C(i,j) = A(i,k) * B(k,j) * w(j)", {&a, &b, &w}, {"csr", "csr", "dense"}, "csr", "j: w(j)"},
      {"t = v(k) * g(k)", {&v, &big}, {"sparse-vector", "dense"}, std::nullopt, "k: g(k)"},
      {"y(i) = A(i,k) * x(k)", {&a, &x}, {"dcsr", "dense"}, "dense", "k: x(k)"},
      {"y(i) = A(i,k) * x(k)", {&a, &x}, {"csc", "dense"}, "dense", ""},  // i iterated, nothing located in it
  };
  for (const Case& c : cases)
    for (IndexType it : {IndexType::I32, IndexType::I64})
      for (ValueType vt : {ValueType::F64, ValueType::F32})
        for (sj_semiring sr : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES}) {
          std::vector<Tensor> ops;
          for (size_t f = 0; f < c.ops.size(); ++f) ops.push_back(tensor_of(*c.ops[f], c.formats[f], it, vt));
          const std::vector<std::optional<std::string>> formats;  // as given
          std::string gathered;
          std::map<std::vector<int64_t>, uint64_t> on, off;
          {
            PinnedUse pin(window::Use::Always);
            on = bits_by_coordinates(execute(plain_ctx(), c.expr, ops, formats, c.out, sr, &gathered));
          }
          {
            PinnedUse pin(window::Use::Never);
            off = bits_by_coordinates(execute(plain_ctx(), c.expr, ops, formats, c.out, sr));
          }
          const std::string what = cat(c.expr, " ", c.formats[0], " ", to_string(it), " ", to_string(vt), " ", to_string(sr));
          EXPECT_EQ(gathered, blocks_compiled() ? c.gathered : "") << what;
          EXPECT_FALSE(on.empty()) << what;
          EXPECT_TRUE(on == off) << what;
        }
}

// NaN-filled memory from the allocator: what a kernel does not write shows.
void* poisoned_alloc(size_t size, size_t align, void*) {
  const size_t rounded = (size + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
  if (p) std::memset(p, 0xFF, size);
  return p;
}
void poisoned_free(void* p, size_t, void*) { std::free(p); }

TEST(EinsumGatherBlocks, DenseOutputsStartedByTheKernelOrFilled) {
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.disable_disk_cache = 1;
  cfg.allocator.alloc = poisoned_alloc;
  cfg.allocator.free = poisoned_free;
  Context poisoned(cfg);
  std::mt19937_64 rng(4);
  const int64_t m = 29, n = 40;
  std::vector<int64_t> lens;
  for (int64_t i = 0; i < m; ++i) lens.push_back(i % 3 == 0 ? 0 : (i * 5) % 17);  // every third row empty
  CooTensor a = rows_coo(rng, lens, n), b = rows_coo(rng, lens, n), x = dense_coo(rng, {n});
  CooTensor t3 = sparse_coo(rng, {6, 5, n}, 0.2);
  struct Case {
    const char* expr;
    std::vector<const CooTensor*> ops;
    std::vector<const char*> formats;
    bool starts;  // the kernel starts every output entry (no fill needed)
  } cases[] = {
      {"y(i) = A(i,k) * x(k)", {&a, &x}, {"csr", "dense"}, true},
      {"y(i) = A(i,k) * x(k)", {&a, &x}, {"dcsr", "dense"}, false},   // only i with entries reached
      {"y(i) = A(i,k) * x(k)", {&a, &x}, {"csc", "dense"}, false},    // i is the inner, sparse loop
      {"Y(i,j) = T(i,j,k) * x(k)", {&t3, &x}, {"ddc", "dense"}, true},
      {"Y(i,j) = T(i,j,k) * x(k)", {&t3, &x}, {"csf", "dense"}, false},  // j is sparse
      {"y(i) = A(i,k) * x(k) + B(i,k) * x(k)", {&a, &x, &b}, {"csr", "dense", "csr"}, false},  // two terms add into one array
  };
  for (const Case& c : cases)
    for (sj_semiring sr : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS}) {
      std::vector<Tensor> ops;
      for (size_t f = 0; f < c.ops.size(); ++f) ops.push_back(tensor_of(*c.ops[f], c.formats[f], IndexType::I32, ValueType::F64));
      const std::vector<std::optional<std::string>> formats;  // as given
      bool starts = false;
      Tensor got = execute(poisoned, c.expr, ops, formats, "dense", sr, nullptr, &starts);
      EXPECT_EQ(starts, c.starts) << c.expr << " " << c.formats[0];
      sj_op_options o;
      sj_op_options_init(&o);
      o.semiring = sr;
      o.schedule = SJ_SCHEDULE_REFERENCE;
      Tensor want = EinsumPlan(plain_ctx(), c.expr, ops, formats, "dense", o).execute(ops);
      const auto g = bits_by_coordinates(got), w = bits_by_coordinates(want);
      ASSERT_EQ(g.size(), w.size()) << c.expr;
      for (auto& [k, bits] : w) {
        double gv, wv;
        std::memcpy(&gv, &g.at(k), 8);
        std::memcpy(&wv, &bits, 8);
        ASSERT_FALSE(std::isnan(gv)) << c.expr << " " << c.formats[0] << ": an entry left unwritten";
        if (std::isinf(wv)) EXPECT_EQ(gv, wv) << c.expr;
        else EXPECT_NEAR(gv, wv, 1e-9 * std::max(1.0, std::abs(wv))) << c.expr;
      }
    }
}

}  // namespace
}  // namespace sj::einsum

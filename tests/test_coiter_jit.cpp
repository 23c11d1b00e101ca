// Generated coiteration kernels (jit/coiter_jit.hpp) against the portable kernels
// (kernels/coiter_portable.hpp): every action x value type x coordinate type x width x
// phase mask x method x semiring, on segment pairs built to hit every path of the dual-path
// loop. Inputs sit against PROT_NONE guard pages, so a kernel that reads (or writes) one
// element outside its segments faults.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "jit/coiter_jit.hpp"
#include "jit/isa.hpp"
#include "kernels/coiter_portable.hpp"
#include "test_util.hpp"

namespace sj::jit {
namespace {

// A region whose usable bytes end exactly at (or start exactly after) a PROT_NONE page.
class GuardedRegion {
 public:
  explicit GuardedRegion(size_t bytes) {
    page_ = size_t(sysconf(_SC_PAGESIZE));
    usable_ = (bytes + page_ - 1) / page_ * page_;
    size_t total = usable_ + 2 * page_;
    base_ = static_cast<char*>(mmap(nullptr, total, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) std::abort();
    mprotect(base_, page_, PROT_NONE);
    mprotect(base_ + page_ + usable_, page_, PROT_NONE);
    total_ = total;
  }
  ~GuardedRegion() { munmap(base_, total_); }
  GuardedRegion(const GuardedRegion&) = delete;
  // A place for `count` elements of T whose last byte touches the trailing guard (at_end) or
  // whose first byte follows the leading guard.
  template <class T> T* place(size_t count, bool at_end) {
    if (count * sizeof(T) > usable_) std::abort();
    char* p = at_end ? base_ + page_ + usable_ - count * sizeof(T) : base_ + page_;
    return reinterpret_cast<T*>(p);
  }

 private:
  char* base_;
  size_t page_, usable_, total_;
};

struct SegmentPair {
  std::vector<int64_t> a, b;  // coordinates (cast to I on use)
  std::vector<double> av, bv;
  std::string what;
};

// Sorted unique coordinates: `len` of them from [base, base + universe).
std::vector<int64_t> random_coords(std::mt19937_64& rng, int64_t len, int64_t base,
                                   int64_t universe) {
  std::vector<int64_t> out;
  if (len == 0) return out;
  if (universe < len) universe = len;
  // Floyd's sampling keeps this cheap for large universes.
  std::vector<int64_t> picked;
  for (int64_t r = universe - len; r < universe; ++r) {
    int64_t t = std::uniform_int_distribution<int64_t>(0, r)(rng);
    if (std::find(picked.begin(), picked.end(), t) != picked.end()) t = r;
    picked.push_back(t);
  }
  std::sort(picked.begin(), picked.end());
  for (int64_t p : picked) out.push_back(base + p);
  return out;
}

std::vector<double> random_values(std::mt19937_64& rng, size_t len, bool with_zeros) {
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<double> v(len);
  for (auto& x : v) {
    x = u(rng);
    if (with_zeros && (rng() % 3 == 0)) x = 0.0;
  }
  return v;
}

// The cases for width n (coordinates fit in I; `big` is the largest coordinate allowed).
std::vector<SegmentPair> make_cases(int n, int64_t big, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<SegmentPair> cases;
  auto add = [&](std::vector<int64_t> a, std::vector<int64_t> b, std::string what) {
    SegmentPair p;
    p.av = random_values(rng, a.size(), true);
    p.bv = random_values(rng, b.size(), true);
    // Every third case has NaN values (one kind of NaN, so every NaN product has the same
    // bits whatever the operand order): min and max must propagate them, in SIMD lanes too.
    if (cases.size() % 3 == 2) {
      for (auto* v : {&p.av, &p.bv})
        for (auto& x : *v)
          if (rng() % 8 == 0) x = std::numeric_limits<double>::quiet_NaN();
      what += ", with NaN";
    }
    p.a = std::move(a), p.b = std::move(b), p.what = std::move(what);
    cases.push_back(std::move(p));
  };
  int64_t maxlen = 3 * n + 1;
  for (int64_t la = 0; la <= maxlen; ++la) {
    int64_t lbs[] = {la, int64_t(rng() % (maxlen + 1)), 0, n, int64_t(rng() % (maxlen + 1))};
    for (int64_t lb : lbs) {
      int64_t universe = std::max<int64_t>(1, (la + lb) * (1 + rng() % 3) / 2 + int64_t(rng() % 4));
      add(random_coords(rng, la, 0, universe), random_coords(rng, lb, 0, universe),
          "lengths " + std::to_string(la) + "/" + std::to_string(lb));
    }
  }
  // Disjoint ranges, interleaved without matches, identical, near the top of the range.
  for (int64_t len : {int64_t(n), int64_t(2 * n + 3), int64_t(5 * n)}) {
    std::vector<int64_t> lo, hi, even, odd, same;
    for (int64_t k = 0; k < len; ++k) {
      lo.push_back(k), hi.push_back(len + k), even.push_back(2 * k), odd.push_back(2 * k + 1);
      same.push_back(3 * k + 1);
    }
    add(lo, hi, "disjoint");
    add(hi, lo, "disjoint reversed");
    add(even, odd, "interleaved, no match");
    add(same, same, "identical");
    std::vector<int64_t> top_a, top_b;
    for (int64_t k = 0; k < len; ++k) top_a.push_back(big - 2 * len + 2 * k + 1);
    for (int64_t k = 0; k < len; ++k) top_b.push_back(big - len + k);
    add(top_a, top_b, "near the maximum coordinate");
    add(random_coords(rng, len, big - 3 * len, 3 * len), random_coords(rng, len + 1, big - 3 * len, 3 * len),
        "random near the maximum");
  }
  // Long segments at several densities (many fast-lane iterations).
  for (int rep = 0; rep < 6; ++rep) {
    int64_t la = 100 + int64_t(rng() % 300), lb = 50 + int64_t(rng() % 300);
    int64_t universe = (la + lb) * (1 + int64_t(rng() % 8)) / 2;
    add(random_coords(rng, la, 0, universe), random_coords(rng, lb, 0, universe), "long");
  }
  // Very unequal lengths.
  add(random_coords(rng, 400, 0, 800), random_coords(rng, 3, 0, 800), "long vs 3");
  add(random_coords(rng, n - 1, 0, 60), random_coords(rng, 300, 0, 600), "n-1 vs long");
  return cases;
}

template <class I, class V>
struct Buffers {
  GuardedRegion ra{1 << 16}, rb{1 << 16}, rva{1 << 17}, rvb{1 << 17}, roc{1 << 16}, rov{1 << 17};
};

template <class I, class V>
bool same_bits(V x, V y) {
  return std::memcmp(&x, &y, sizeof(V)) == 0;
}

// Runs every case through the kernel and the portable oracle; returns the number of failures
// (and reports the first few).
template <class I, class V>
int check_kernel(const CoiterKernel& k, const std::vector<SegmentPair>& cases, Buffers<I, V>& buf) {
  const CoiterSpec& s = k.spec;
  void* oracle = kernels::coiter_portable_fn(s);
  int failures = 0;
  int variant = 0;
  for (const SegmentPair& c : cases) {
    bool at_end = (variant++ % 2) == 0;  // alternate trailing and leading guards
    size_t na = c.a.size(), nb = c.b.size();
    I* ac = buf.ra.template place<I>(na, at_end);
    I* bc = buf.rb.template place<I>(nb, !at_end);
    V* av = buf.rva.template place<V>(na, at_end);
    V* bv = buf.rvb.template place<V>(nb, at_end);
    for (size_t t = 0; t < na; ++t) ac[t] = I(c.a[t]), av[t] = V(c.av[t]);
    for (size_t t = 0; t < nb; ++t) bc[t] = I(c.b[t]), bv[t] = V(c.bv[t]);
    auto report = [&](const std::string& msg) {
      if (++failures <= 3) ADD_FAILURE() << s.to_string() << " on " << c.what << ": " << msg;
    };
    switch (s.action) {
      case CoiterAction::Count: {
        int64_t got = k.count<I>()(ac, int64_t(na), bc, int64_t(nb));
        int64_t want = reinterpret_cast<CoiterCountFn<I>>(oracle)(ac, int64_t(na), bc, int64_t(nb));
        if (got != want) report("count " + std::to_string(got) + " != " + std::to_string(want));
        break;
      }
      case CoiterAction::Dot: {
        V sentinel = V(0.75);  // also the factor when with_factor
        V got_v = sentinel, want_v = sentinel;
        int64_t got = k.dot<I, V>()(ac, av, int64_t(na), bc, bv, int64_t(nb), &got_v);
        int64_t want = reinterpret_cast<CoiterDotFn<I, V>>(oracle)(ac, av, int64_t(na), bc, bv,
                                                                   int64_t(nb), &want_v);
        if (got != want) {
          report("count " + std::to_string(got) + " != " + std::to_string(want));
        } else if (s.reassociate) {
          double tol = (sizeof(V) == 4 ? 1e-4 : 1e-11) * (1.0 + std::abs(double(want_v)) + double(na));
          const bool both_nan = std::isnan(got_v) && std::isnan(want_v);
          if (!both_nan && !(std::abs(double(got_v) - double(want_v)) <= tol))
            report("reassociated value " + std::to_string(got_v) + " vs " + std::to_string(want_v));
        } else if (!same_bits<I, V>(got_v, want_v)) {
          report("value " + std::to_string(got_v) + " != " + std::to_string(want_v));
        }
        break;
      }
      case CoiterAction::Emit: {
        size_t cap = std::min(na, nb);
        I* oc = buf.roc.template place<I>(cap, true);
        V* ov = buf.rov.template place<V>(cap, true);
        int64_t got = k.emit<I, V>()(ac, av, int64_t(na), bc, bv, int64_t(nb), oc, ov);
        std::vector<I> gc(oc, oc + std::max<int64_t>(0, std::min<int64_t>(got, int64_t(cap))));
        std::vector<V> gv(ov, ov + gc.size());
        std::vector<I> wc(cap + 1);
        std::vector<V> wv(cap + 1);
        int64_t want = reinterpret_cast<CoiterEmitFn<I, V>>(oracle)(ac, av, int64_t(na), bc, bv,
                                                                    int64_t(nb), wc.data(), wv.data());
        if (got != want) {
          report("count " + std::to_string(got) + " != " + std::to_string(want));
          break;
        }
        for (int64_t t = 0; t < got; ++t)
          if (gc[t] != wc[t] || !same_bits<I, V>(gv[t], wv[t])) {
            report("entry " + std::to_string(t) + " differs");
            break;
          }
        break;
      }
    }
  }
  return failures;
}

const sj_semiring kSemirings[] = {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS,
                                  SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_OR_AND,
                                  SJ_SEMIRING_PLUS_PAIR};
const CoiterMethod kMethods[] = {CoiterMethod::Broadcast, CoiterMethod::Rotate,
                                 CoiterMethod::Native};

// Every spec of one action for one ISA, each checked on the full case set.
template <class I, class V>
void check_all(CoiterAction action, sj_isa isa, bool expect_generated) {
  Buffers<I, V> buf;
  bool i64 = sizeof(I) == 8;
  int64_t big = i64 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
  std::vector<int> widths = i64 ? std::vector<int>{4, 8} : std::vector<int>{4, 8, 16};
  int kernels_checked = 0;
  for (int n : widths) {
    auto cases = make_cases(n, big, 1234 + n);
    for (int phases = 0; phases < 8; ++phases)
      for (CoiterMethod m : kMethods)
        for (sj_semiring sr : kSemirings)
          for (int variant = 0; variant < (action == CoiterAction::Dot ? 4 : 1); ++variant) {
            if (action == CoiterAction::Count && sr != SJ_SEMIRING_PLUS_TIMES) continue;
            CoiterSpec s;
            s.action = action;
            s.value = sizeof(V) == 8 ? ValueType::F64 : ValueType::F32;
            s.index = i64 ? IndexType::I64 : IndexType::I32;
            s.semiring = sr;
            s.width = uint8_t(n);
            s.phases = uint8_t(phases);
            s.method = m;
            s.isa = isa;
            s.reassociate = variant & 1;
            s.with_factor = variant & 2;
            // The optional skips ride along on some specs, so both settings are covered.
            s.skip_empty = (phases + int(m)) % 2;
            s.skip_disjoint = (phases + int(sr)) % 3 == 0;
            CoiterKernel k = compile_coiter(s);
            EXPECT_EQ(k.generated, expect_generated) << s.to_string();
            int f = check_kernel<I, V>(k, cases, buf);
            ASSERT_EQ(f, 0) << k.spec.to_string();
            ++kernels_checked;
          }
  }
  EXPECT_GT(kernels_checked, 0);
}

template <class I, class V>
void check_isa(CoiterAction action, sj_isa isa) {
  bool avail = isa_supported(isa);
  if (!avail) GTEST_SKIP() << "CPU lacks " << isa_name(isa);
  check_all<I, V>(action, isa, isa != SJ_ISA_SCALAR);
}

#define COITER_ISA_TESTS(ISA, isa_value)                                                     \
  TEST(Coiter, Dot##ISA##I32F64) { check_isa<int32_t, double>(CoiterAction::Dot, isa_value); } \
  TEST(Coiter, Dot##ISA##I32F32) { check_isa<int32_t, float>(CoiterAction::Dot, isa_value); }  \
  TEST(Coiter, Dot##ISA##I64F64) { check_isa<int64_t, double>(CoiterAction::Dot, isa_value); } \
  TEST(Coiter, Dot##ISA##I64F32) { check_isa<int64_t, float>(CoiterAction::Dot, isa_value); }  \
  TEST(Coiter, Emit##ISA##I32F64) { check_isa<int32_t, double>(CoiterAction::Emit, isa_value); } \
  TEST(Coiter, Emit##ISA##I32F32) { check_isa<int32_t, float>(CoiterAction::Emit, isa_value); }  \
  TEST(Coiter, Emit##ISA##I64F64) { check_isa<int64_t, double>(CoiterAction::Emit, isa_value); } \
  TEST(Coiter, Emit##ISA##I64F32) { check_isa<int64_t, float>(CoiterAction::Emit, isa_value); }  \
  TEST(Coiter, Count##ISA##I32) { check_isa<int32_t, double>(CoiterAction::Count, isa_value); }  \
  TEST(Coiter, Count##ISA##I64) { check_isa<int64_t, double>(CoiterAction::Count, isa_value); }

COITER_ISA_TESTS(Avx512, SJ_ISA_AVX512)
COITER_ISA_TESTS(Avx2, SJ_ISA_AVX2)

// The scalar ISA is the portable kernel itself.
TEST(Coiter, ScalarIsaIsPortable) {
  CoiterSpec s;
  s.isa = SJ_ISA_SCALAR;
  CoiterKernel k = compile_coiter(s);
  EXPECT_FALSE(k.generated);
  EXPECT_EQ(k.fn, kernels::coiter_portable_fn(s));
}

TEST(Coiter, ForcedCodegenFailureFallsBackToPortable) {
  if (!isa_supported(SJ_ISA_AVX2)) GTEST_SKIP();
  CoiterJit::force_codegen_failure_for_testing(true);
  CoiterSpec s;
  s.width = 8;
  s.isa = SJ_ISA_AVX2;
  CoiterKernel k = compile_coiter(s);
  CoiterJit::force_codegen_failure_for_testing(false);
  EXPECT_FALSE(k.generated);
  EXPECT_EQ(k.fn, kernels::coiter_portable_fn(k.spec));
  Buffers<int32_t, double> buf;
  EXPECT_EQ((check_kernel<int32_t, double>(k, make_cases(8, INT32_MAX, 7), buf)), 0);
  // Afterwards, generation works again.
  EXPECT_TRUE(compile_coiter(s).generated);
}

TEST(Coiter, NoPageIsWritableAndExecutable) {
  CoiterSpec s;
  s.width = 16;
  s.phases = 7;
  compile_coiter(s);
  s.width = 4;
  s.isa = SJ_ISA_AVX2;
  compile_coiter(s);
  for (const std::string& line : sj::test::writable_executable_mappings())
    ADD_FAILURE() << "writable and executable: " << line;
}

// A second compile of the same spec is a kernel-cache hit: same code, no generation time.
// (Code-generation speed is measured in bench/bench_coiter.cpp, not asserted here.)
TEST(Coiter, Memoised) {
  CoiterSpec s;
  s.width = 8;
  s.semiring = SJ_SEMIRING_MIN_PLUS;
  s.with_factor = true;
  CoiterKernel first = compile_coiter(s);
  CoiterKernel second = compile_coiter(s);
  EXPECT_EQ(first.fn, second.fn);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.codegen_us, 0.0);
  EXPECT_TRUE(second.owner != nullptr);
}

TEST(Coiter, SpecTextAndParsing) {
  EXPECT_EQ(parse_phase_mask("001"), std::optional<uint8_t>(1));
  EXPECT_EQ(parse_phase_mask("100"), std::optional<uint8_t>(4));
  EXPECT_EQ(parse_phase_mask("1x0"), std::nullopt);
  EXPECT_EQ(parse_phase_mask("0011"), std::nullopt);
  for (int m = 0; m < 8; ++m) EXPECT_EQ(parse_phase_mask(phase_mask_string(uint8_t(m))), m);
  EXPECT_EQ(parse_coiter_method("rotate"), CoiterMethod::Rotate);
  EXPECT_EQ(parse_isa_name("avx2"), SJ_ISA_AVX2);
  EXPECT_EQ(parse_isa_name("sse"), std::nullopt);
  CoiterSpec s;
  EXPECT_EQ(s.to_string(), "dot f64 i32 plus-times n4 p001 broadcast isa=auto");
  CoiterSpec t = s;
  t.width = 8;
  EXPECT_NE(s.pack(), t.pack());
  t = s;
  t.index = IndexType::I64;
  t.width = 16;
  EXPECT_THROW(validate(t), sj::Error);
  EXPECT_THROW(compile_coiter(t), sj::Error);
}

TEST(Coiter, EffectiveSpecFallsDown) {
  CoiterSpec s;
  s.isa = SJ_ISA_AVX2;
  s.width = 16;
  s.method = CoiterMethod::Native;
  CoiterSpec e = effective_spec(s);
  if (isa_supported(SJ_ISA_AVX2)) {
    EXPECT_EQ(e.isa, SJ_ISA_AVX2);
    EXPECT_EQ(e.width, 8);
    EXPECT_EQ(e.method, CoiterMethod::Rotate);
  }
  s.isa = SJ_ISA_AUTO;
  EXPECT_NE(effective_spec(s).isa, SJ_ISA_AUTO);
}

// SPARSEJIT_ISA decides what AUTO means (checked in child processes, since it is read once).
TEST(Coiter, DefaultIsaFollowsEnvironment) {
  const char* env = std::getenv("SPARSEJIT_ISA");
  sj_isa want = isa_supported(SJ_ISA_AVX512) ? SJ_ISA_AVX512
                : isa_supported(SJ_ISA_AVX2) ? SJ_ISA_AVX2 : SJ_ISA_SCALAR;
  if (env && std::string(env) == "avx2" && isa_supported(SJ_ISA_AVX2)) want = SJ_ISA_AVX2;
  if (env && std::string(env) == "scalar") want = SJ_ISA_SCALAR;
  EXPECT_EQ(default_isa(), want);
  CoiterSpec s;
  EXPECT_EQ(compile_coiter(s).spec.isa, want);
  EXPECT_EQ(compile_coiter(s).generated, want != SJ_ISA_SCALAR);
  if (env) return;  // the child stops here
  char self[4096] = {0};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  for (const char* isa : {"avx2", "scalar"}) {
    std::string cmd = std::string("SPARSEJIT_ISA=") + isa + " '" + self +
                      "' --gtest_filter=Coiter.DefaultIsaFollowsEnvironment"
                      " > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

}  // namespace
}  // namespace sj::jit

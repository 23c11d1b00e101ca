// The AVX-512 gather SpMV loop (kernels/spmv_gather_avx512.hpp) against the in-order scalar
// sum, bit for bit: every row length from 0 to 40 (rows of one entry, partial and whole blocks
// of eight), int32 and int64 coordinates at 0 and at x's last element, full-mantissa double
// and float values of mixed magnitudes (a sum in any other order gives other bits), NaN and
// infinities in x for the min/max semirings; then through sj_spmv with the loop pinned on (and
// on its own choice for an x larger than L2), at 1, 2, 3 and 7 threads, against the reference
// schedule.
#include "kernels/spmv_gather_avx512.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/schedule_test_util.hpp"

namespace {

namespace g = sj::spmv_gather_avx512;
namespace window = sj::gather_window;
using sj::test::Ctx;
using sj::test::H;
using sj::test::msg;
using sj::test::same_bits;

// Pins the loop choice for one test and restores the default.
struct PinnedUse {
  explicit PinnedUse(window::Use u) { window::set_use(u); }
  ~PinnedUse() { window::set_use(window::Use::Auto); }
};

// The sum the loop must reproduce: the first product, then each later one added in order.
template <class S, class I, class V>
std::vector<V> in_order(const std::vector<int64_t>& pos, const std::vector<I>& crd, const std::vector<V>& val,
                        const std::vector<V>& x) {
  std::vector<V> y(pos.size() - 1);
  for (size_t i = 0; i + 1 < pos.size(); ++i) {
    if (pos[i] == pos[i + 1]) {
      y[i] = S::zero();
      continue;
    }
    V acc = S::mul(val[pos[i]], x[crd[pos[i]]]);
    for (int64_t p = pos[i] + 1; p < pos[i + 1]; ++p) acc = S::add(acc, S::mul(val[p], x[crd[p]]));
    y[i] = acc;
  }
  return y;
}

template <class S, class I, class V> void check_rows(std::mt19937_64& rng, bool specials) {
  const int64_t n = 3000;
  std::vector<V> x(n);
  std::uniform_real_distribution<double> mant(1, 2);
  std::uniform_int_distribution<int> expo(-30, 30), sign(0, 1);
  auto value = [&] { return static_cast<V>(std::ldexp(mant(rng), expo(rng)) * (sign(rng) ? -1 : 1)); };
  for (auto& v : x) v = value();
  if (specials) {
    x[1] = std::numeric_limits<V>::quiet_NaN();
    x[2] = std::numeric_limits<V>::infinity();
    x[3] = -std::numeric_limits<V>::infinity();
  }
  // Rows of every length 0..40 (past four blocks of eight), twice, with coordinates drawn sorted from [0, n); some rows
  // start at 0 or end at n - 1.
  std::vector<int64_t> pos{0};
  std::vector<I> crd;
  std::vector<V> val;
  for (int rep = 0; rep < 2; ++rep)
    for (int len = 0; len <= 40; ++len) {
      std::vector<I> row;
      std::uniform_int_distribution<int64_t> col(0, n - 1);
      if (len > 0 && rep == 0) row.push_back(0);
      if (len > 1 && rep == 1) row.push_back(static_cast<I>(n - 1));
      while (static_cast<int>(row.size()) < len) {
        const I c = static_cast<I>(col(rng));
        if (std::find(row.begin(), row.end(), c) == row.end()) row.push_back(c);
      }
      std::sort(row.begin(), row.end());
      for (I c : row) crd.push_back(c), val.push_back(value());
      pos.push_back(static_cast<int64_t>(crd.size()));
    }
  const int64_t m = static_cast<int64_t>(pos.size()) - 1;
  const std::vector<V> want = in_order<S, I, V>(pos, crd, val, x);
  std::vector<V> got(m + 1, V(-7));
  g::rows<S, I, V>(pos.data(), crd.data(), val.data(), x.data(), got.data(), 0, m);
  for (int64_t i = 0; i < m; ++i)
    EXPECT_EQ(std::memcmp(&want[i], &got[i], sizeof(V)), 0)
        << "row " << i << " of " << (pos[i + 1] - pos[i]) << ": " << want[i] << " vs " << got[i];
  EXPECT_EQ(got[m], V(-7)) << "written past the rows";
  // A sub-range writes only its rows.
  std::vector<V> part(m, V(-7));
  g::rows<S, I, V>(pos.data(), crd.data(), val.data(), x.data(), part.data(), 5, 30);
  for (int64_t i = 0; i < m; ++i)
    if (i < 5 || i >= 30) EXPECT_EQ(part[i], V(-7)) << "row " << i;
    else EXPECT_EQ(std::memcmp(&want[i], &part[i], sizeof(V)), 0) << "row " << i;
}

TEST(SpmvGatherAvx512, MatchesTheInOrderSum) {
  if (!g::available()) GTEST_SKIP() << "CPU lacks AVX-512F";
  std::mt19937_64 rng(7);
  for (int round = 0; round < 4; ++round) {
    check_rows<sj::PlusTimes<double>, int32_t, double>(rng, false);
    check_rows<sj::PlusTimes<double>, int64_t, double>(rng, false);
    check_rows<sj::MinPlus<double>, int32_t, double>(rng, true);
    check_rows<sj::MaxTimes<double>, int64_t, double>(rng, true);
    check_rows<sj::PlusTimes<float>, int32_t, float>(rng, false);
    check_rows<sj::PlusTimes<float>, int64_t, float>(rng, false);
    check_rows<sj::MinPlus<float>, int32_t, float>(rng, true);
    check_rows<sj::MaxTimes<float>, int64_t, float>(rng, true);
  }
}

TEST(SpmvGatherAvx512, ChosenByTheSizeOfX) {
  using S = sj::PlusTimes<double>;
  const int64_t l2_doubles = window::l2_bytes() / 8, quarter_l3_doubles = window::l3_bytes() / 4 / 8;
  EXPECT_EQ((g::chosen<S, int32_t, double>(l2_doubles + 1)), g::available() && l2_doubles < quarter_l3_doubles);
  EXPECT_FALSE((g::chosen<S, int32_t, double>(l2_doubles)));
  EXPECT_FALSE((g::chosen<S, int32_t, uint8_t>(l2_doubles * 8 + 1))) << "bool values take the scalar loop";
  EXPECT_EQ((g::chosen<sj::PlusTimes<float>, int32_t, float>(2 * l2_doubles + 1)),
            g::available() && l2_doubles < quarter_l3_doubles) << "float x is sized in floats";
  EXPECT_FALSE((g::chosen<sj::PlusTimes<float>, int32_t, float>(2 * l2_doubles)));
  EXPECT_FALSE((g::chosen<sj::PlusPair<double>, int32_t, double>(l2_doubles + 1)));
  EXPECT_EQ((g::chosen<S, int64_t, double>(quarter_l3_doubles)), g::available() && quarter_l3_doubles > l2_doubles);
  EXPECT_FALSE((g::chosen<S, int64_t, double>(quarter_l3_doubles + 1))) << "x no longer stays in L3";
  PinnedUse always(window::Use::Always);
  EXPECT_EQ((g::chosen<S, int64_t, double>(quarter_l3_doubles + 1)), g::available());
  EXPECT_FALSE((g::chosen<sj::PlusPair<double>, int32_t, double>(1))) << "pinned on, still only where it applies";
  window::set_use(window::Use::Never);
  EXPECT_FALSE((g::chosen<S, int64_t, double>(l2_doubles + 1)));
}

// Through the C API: the gather loop pinned on, every semiring (those it does not serve take the
// scalar loop), both index types, double and float values, shapes with empty rows, one column,
// no rows; 1-7 threads.
template <class I, class V> void api_round(sj_context* c, sj::test::Rng& rng, int64_t m, int64_t n, int round) {
  H A, x;
  A.t = sj::test::csr_handle(c, sj::test::random_matrix<I, V>(rng, m, n));
  auto xd = sj::test::random_dense_vector<V>(rng, n);
  ASSERT_EQ(sj_tensor_create_dense(c, 1, &n, sj::test::vtype<V>(), xd.data(), SJ_TENSOR_COPY, &x.t), SJ_OK) << msg();
  for (sj_semiring s : {SJ_SEMIRING_PLUS_TIMES, SJ_SEMIRING_MIN_PLUS, SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_PLUS_PAIR}) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.semiring = s;
    o.schedule = SJ_SCHEDULE_REFERENCE;
    H ref;
    ASSERT_EQ(sj_spmv(c, A.t, x.t, &o, &ref.t), SJ_OK) << msg();
    o.schedule = SJ_SCHEDULE_AUTO;
    for (int threads : {1, 2, 3, 7}) {
      o.threads = threads;
      H got;
      ASSERT_EQ(sj_spmv(c, A.t, x.t, &o, &got.t), SJ_OK) << msg();
      EXPECT_TRUE(same_bits(ref.t->t, got.t->t)) << "round " << round << " semiring " << s << " threads " << threads
                                                  << " index bytes " << sizeof(I) << " value bytes " << sizeof(V);
    }
  }
}

TEST(SpmvGatherAvx512, SpmvThroughTheApiMatchesTheReference) {
  if (!g::available()) GTEST_SKIP() << "CPU lacks AVX-512F";
  PinnedUse always(window::Use::Always);
  Ctx ctx;
  sj::test::Rng rng(19);
  for (int round = 0; round < 12; ++round) {
    const int64_t m = round == 0 ? 0 : rng.uniform_int(1, 120), n = round == 1 ? 1 : rng.uniform_int(1, 90);
    switch (round % 4) {
      case 0: api_round<int32_t, double>(ctx.c, rng, m, n, round); break;
      case 1: api_round<int64_t, double>(ctx.c, rng, m, n, round); break;
      case 2: api_round<int32_t, float>(ctx.c, rng, m, n, round); break;
      default: api_round<int64_t, float>(ctx.c, rng, m, n, round);
    }
  }
}

// An x just larger than L2 takes the gather loop on its own; the result is still the reference's.
TEST(SpmvGatherAvx512, LargeXMatchesTheReference) {
  Ctx ctx;
  sj::test::Rng rng(23);
  const int64_t n = window::l2_bytes() / 8 + 4097, m = 300;
  ASSERT_EQ((g::chosen<sj::PlusTimes<double>, int32_t, double>(n)), g::available() && n * 8 <= window::l3_bytes() / 4);
  auto a = sj::test::random_uniform<int32_t, double>(rng, m, n, 40.0 / static_cast<double>(n));
  auto xd = sj::test::random_dense_vector<double>(rng, n);
  H A, x, ref;
  A.t = sj::test::csr_handle(ctx.c, a);
  ASSERT_EQ(sj_tensor_create_dense(ctx.c, 1, &n, SJ_VALUE_F64, xd.data(), SJ_TENSOR_COPY, &x.t), SJ_OK) << msg();
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_REFERENCE;
  ASSERT_EQ(sj_spmv(ctx.c, A.t, x.t, &o, &ref.t), SJ_OK) << msg();
  o.schedule = SJ_SCHEDULE_AUTO;
  for (int threads : {1, 2}) {
    o.threads = threads;
    H got;
    ASSERT_EQ(sj_spmv(ctx.c, A.t, x.t, &o, &got.t), SJ_OK) << msg();
    EXPECT_TRUE(same_bits(ref.t->t, got.t->t)) << "threads " << threads;
  }
}

// Explain names the row loop the executions take (the plan's "variant").
TEST(SpmvGatherAvx512, ExplainNamesTheRowLoop) {
  Ctx ctx;
  sj::test::Rng rng(5);
  const int64_t n = window::l2_bytes() / 8 + 4097, m = 50;
  auto a = sj::test::random_uniform<int32_t, double>(rng, m, n, 10.0 / static_cast<double>(n));
  auto xd = sj::test::random_dense_vector<double>(rng, n);
  H A, x;
  A.t = sj::test::csr_handle(ctx.c, a);
  ASSERT_EQ(sj_tensor_create_dense(ctx.c, 1, &n, SJ_VALUE_F64, xd.data(), SJ_TENSOR_COPY, &x.t), SJ_OK) << msg();
  const sj_tensor* ops[2] = {A.t, x.t};
  auto explain = [&](sj_semiring sr) {
    sj_op_options o;
    sj_op_options_init(&o);
    o.semiring = sr;
    o.schedule = SJ_SCHEDULE_DENSIFY;
    sj_plan* p = nullptr;
    EXPECT_EQ(sj_plan_create(ctx.c, SJ_OP_SPMV, ops, 2, &o, &p), SJ_OK) << msg();
    const char* text = nullptr;
    EXPECT_EQ(sj_plan_explain(p, &text), SJ_OK);
    std::string s = text ? text : "";
    sj_plan_destroy(p);
    return s;
  };
  const bool fits = n * 8 <= window::l3_bytes() / 4;
  EXPECT_NE(explain(SJ_SEMIRING_PLUS_TIMES).find(g::available() && fits ? "reading x by AVX-512 gathers" : "scalar loads of x"),
            std::string::npos);
  {
    PinnedUse never(window::Use::Never);
    const std::string s = explain(SJ_SEMIRING_MIN_PLUS);
    EXPECT_NE(s.find("scalar loads of x"), std::string::npos) << s;
    EXPECT_NE(s.find(g::available() && fits ? "gathers pinned off" : "x "), std::string::npos) << s;
  }
  EXPECT_NE(explain(SJ_SEMIRING_PLUS_PAIR).find("the gather loop serves plus-times"), std::string::npos);
}

}  // namespace

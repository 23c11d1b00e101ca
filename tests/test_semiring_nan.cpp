// Min and max semirings propagate NaN (src/semiring.hpp): an entry with a NaN product is NaN
// under every operation and schedule, however its products are ordered or split into SIMD
// lanes. Before, the coiteration JIT's lanes and the index-notation kernels started from the
// identity (-inf for max) and std::max(-inf, NaN) dropped the NaN, while the reference and
// Gustavson kernels, starting from the first product, kept it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sparsejit/sparsejit.h"

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Ctx {
  sj_context* ctx = nullptr;
  Ctx() {
    sj_config c;
    sj_config_init(&c);
    c.threads = 1;
    c.disable_disk_cache = 1;
    EXPECT_EQ(sj_context_create(&c, &ctx), SJ_OK);
  }
  ~Ctx() { sj_context_destroy(ctx); }
};

// A row of `n` (A, 1 x n), the column it meets (B, n x 1, CSR), the same column as a sparse
// vector (x) and A transposed (At, n x 1), all over the caller's arrays (borrowed).
struct Operands {
  std::vector<int32_t> ak, bk;
  std::vector<double> av, bv;
  std::vector<int64_t> arow, bpos, atpos;
  std::vector<int32_t> bcol, atcol;
  sj_tensor *A = nullptr, *B = nullptr, *x = nullptr, *At = nullptr, *empty = nullptr;
  std::vector<int64_t> empty_pos{0, 0};
  int32_t empty_col[1] = {0};
  double empty_val[1] = {0};
  Operands(sj_context* ctx, int64_t n, std::vector<int32_t> a_k, std::vector<double> a_v, std::vector<int32_t> b_k,
           std::vector<double> b_v)
      : ak(std::move(a_k)), bk(std::move(b_k)), av(std::move(a_v)), bv(std::move(b_v)) {
    arow = {0, static_cast<int64_t>(ak.size())};
    EXPECT_EQ(sj_tensor_create_csr(ctx, 1, n, SJ_INDEX_INT32, SJ_VALUE_F64, arow.data(), ak.data(), av.data(), 0, &A),
              SJ_OK);
    bpos.assign(static_cast<size_t>(n) + 1, 0);  // B: n x 1, row k holds bk's entry
    for (int32_t k : bk) bpos[static_cast<size_t>(k) + 1] = 1;
    for (int64_t r = 0; r < n; ++r) bpos[r + 1] += bpos[r];
    bcol.assign(bk.size(), 0);
    EXPECT_EQ(sj_tensor_create_csr(ctx, n, 1, SJ_INDEX_INT32, SJ_VALUE_F64, bpos.data(), bcol.data(), bv.data(), 0, &B),
              SJ_OK);
    atpos.assign(static_cast<size_t>(n) + 1, 0);
    for (int32_t k : ak) atpos[static_cast<size_t>(k) + 1] = 1;
    for (int64_t r = 0; r < n; ++r) atpos[r + 1] += atpos[r];
    atcol.assign(ak.size(), 0);
    EXPECT_EQ(sj_tensor_create_csr(ctx, n, 1, SJ_INDEX_INT32, SJ_VALUE_F64, atpos.data(), atcol.data(), av.data(), 0,
                                   &At),
              SJ_OK);
    EXPECT_EQ(sj_tensor_create_sparse_vector(ctx, n, static_cast<int64_t>(bk.size()), SJ_INDEX_INT32, SJ_VALUE_F64,
                                             bk.data(), bv.data(), 0, &x),
              SJ_OK);
    EXPECT_EQ(sj_tensor_create_csr(ctx, 1, n, SJ_INDEX_INT32, SJ_VALUE_F64, empty_pos.data(), empty_col, empty_val, 0,
                                   &empty),
              SJ_OK);
  }
  ~Operands() {
    for (sj_tensor* t : {A, B, x, At, empty}) sj_tensor_destroy(t);
  }
};

// Every stored value of `r` (one at least) is NaN when want is NaN, else equal to want.
void expect_only(const sj_tensor* r, double want, const std::string& what) {
  const void* values = nullptr;
  int64_t len = 0;
  ASSERT_EQ(sj_tensor_get_values(r, &values, &len), SJ_OK) << what;
  ASSERT_GE(len, 1) << what;
  for (int64_t e = 0; e < len; ++e) {
    const double v = static_cast<const double*>(values)[e];
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(v)) << what << ": " << v;
    else EXPECT_EQ(v, want) << what;
  }
}

sj_op_options options(sj_semiring s, sj_schedule sched) {
  sj_op_options o;
  sj_op_options_init(&o);
  o.semiring = s;
  o.schedule = sched;
  return o;
}

const char* name(sj_semiring s) { return s == SJ_SEMIRING_MIN_PLUS ? "min-plus" : "max-times"; }

// Runs every operation and schedule that reduces A's row against B's column (and the
// index-notation forms) and checks the one entry.
void check_all_forms(sj_context* ctx, const Operands& o, sj_semiring s, double want, const std::string& what) {
  const std::string tag = what + ", " + name(s);
  for (sj_schedule sched : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE,
                            SJ_SCHEDULE_GUSTAVSON_HASH, SJ_SCHEDULE_INNER}) {
    const sj_op_options opt = options(s, sched);
    sj_tensor* C = nullptr;
    ASSERT_EQ(sj_spgemm(ctx, o.A, o.B, &opt, &C), SJ_OK) << sj_last_error_message();
    expect_only(C, want, tag + ", spgemm schedule " + std::to_string(sched));
    sj_tensor_destroy(C);
  }
  // The mask: the one entry of the 1 x 1 product.
  int64_t mpos[] = {0, 1};
  int32_t mcol[] = {0};
  double mval[] = {1.0};
  sj_tensor* M = nullptr;
  ASSERT_EQ(sj_tensor_create_csr(ctx, 1, 1, SJ_INDEX_INT32, SJ_VALUE_F64, mpos, mcol, mval, 0, &M), SJ_OK);
  for (sj_schedule sched : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_INNER}) {
    const sj_op_options opt = options(s, sched);
    sj_tensor* C = nullptr;
    ASSERT_EQ(sj_spgemm_masked(ctx, M, o.A, o.B, &opt, &C), SJ_OK) << sj_last_error_message();
    expect_only(C, want, tag + ", masked spgemm schedule " + std::to_string(sched));
    sj_tensor_destroy(C);
  }
  sj_tensor_destroy(M);
  for (sj_schedule sched : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_PUSH, SJ_SCHEDULE_DENSIFY,
                            SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_INNER}) {
    for (int dense : {0, 1}) {
      sj_op_options opt = options(s, sched);
      opt.dense_output = dense;
      sj_tensor* y = nullptr;
      ASSERT_EQ(sj_spmspv(ctx, o.A, o.x, &opt, &y), SJ_OK) << sj_last_error_message();
      expect_only(y, want, tag + ", spmspv schedule " + std::to_string(sched) + (dense ? " dense" : ""));
      sj_tensor_destroy(y);
    }
  }
  // Index notation: the product both ways round, and a reduction of the row alone (the
  // product's A-side values, so only when B's values are ones and the semiring multiplies).
  struct Form {
    const char* expr;
    std::vector<const sj_tensor*> ops;
  };
  std::vector<Form> forms{{"C(i,j) = A(i,k) * B(k,j)", {o.A, o.B}}, {"C(i,j) = A(k,i) * B(k,j)", {o.At, o.B}}};
  for (const Form& f : forms)
    for (sj_schedule sched :
         {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_INNER, SJ_SCHEDULE_FUSED, SJ_SCHEDULE_SEARCH}) {
      const sj_op_options opt = options(s, sched);
      sj_tensor* C = nullptr;
      const sj_status st = sj_einsum(ctx, f.expr, f.ops.data(), static_cast<int>(f.ops.size()), nullptr, nullptr, &opt, &C);
      if (sched != SJ_SCHEDULE_AUTO && sched != SJ_SCHEDULE_REFERENCE && st == SJ_ERR_INVALID_ARGUMENT) continue;
      ASSERT_EQ(st, SJ_OK) << f.expr << ": " << sj_last_error_message();
      expect_only(C, want, tag + ", einsum " + f.expr + " schedule " + std::to_string(sched));
      sj_tensor_destroy(C);
    }
}

// A's row alone: reduced (r(i) = A(i,j)), in a union with nothing, and transposed.
void check_reductions(sj_context* ctx, const Operands& o, sj_semiring s, double want, const std::string& what) {
  const std::string tag = what + ", " + name(s);
  std::vector<std::pair<const char*, std::vector<const sj_tensor*>>> forms{{"r(i) = A(i,j)", {o.A}},
                                                                          {"S(i,j) = A(i,j) + E(i,j)", {o.A, o.empty}},
                                                                          {"T(i,j) = A(j,i)", {o.A}}};
  for (auto& [expr, ops] : forms)
    for (sj_schedule sched : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_INNER}) {
      const sj_op_options opt = options(s, sched);
      sj_tensor* r = nullptr;
      const sj_status st = sj_einsum(ctx, expr, ops.data(), static_cast<int>(ops.size()), nullptr, nullptr, &opt, &r);
      if (sched == SJ_SCHEDULE_INNER && st == SJ_ERR_INVALID_ARGUMENT) continue;
      ASSERT_EQ(st, SJ_OK) << expr << ": " << sj_last_error_message();
      if (std::string(expr)[0] != 'r') {
        // The union and the transpose keep each of A's entries: the NaN ones are NaN, none
        // other is (a copy through the identity turned NaN into -inf / +inf).
        const void* values = nullptr;
        int64_t len = 0;
        ASSERT_EQ(sj_tensor_get_values(r, &values, &len), SJ_OK);
        ASSERT_EQ(len, static_cast<int64_t>(o.av.size())) << tag;
        for (int64_t e = 0; e < len; ++e)
          EXPECT_EQ(std::isnan(static_cast<const double*>(values)[e]), std::isnan(o.av[e])) << tag << " " << expr;
      } else {
        expect_only(r, want, tag + ", einsum " + expr + " schedule " + std::to_string(sched));
      }
      sj_tensor_destroy(r);
    }
}

TEST(SemiringNaN, MinAndMaxPropagateNaNEverywhere) {
  Ctx c;
  const int32_t n = 64;
  std::vector<int32_t> all(n), even, odd_and_20;
  for (int32_t k = 0; k < n; ++k) all[k] = k;
  for (int32_t k = 0; k < n; k += 2) even.push_back(k);
  for (int32_t k = 1; k < n; k += 2) odd_and_20.push_back(k == 21 ? 20 : k);
  for (sj_semiring s : {SJ_SEMIRING_MAX_TIMES, SJ_SEMIRING_MIN_PLUS}) {
    {  // the only product is NaN (the 32-entry segments take the SIMD lanes)
      std::vector<double> av(even.size(), 1.0);
      av[10] = kNaN;  // k = 20
      Operands o(c.ctx, n, even, av, odd_and_20, std::vector<double>(odd_and_20.size(), 3.0));
      check_all_forms(c.ctx, o, s, kNaN, "the only product NaN");
    }
    for (int at : {0, 40, n - 1}) {  // one NaN among 64 products: first, in a lane, last
      std::vector<double> av(n), bv(n, 2.0);
      for (int32_t k = 0; k < n; ++k) av[k] = 1.0 + 0.25 * ((k * 7) % 13);
      av[at] = kNaN;
      Operands o(c.ctx, n, all, av, all, bv);
      check_all_forms(c.ctx, o, s, kNaN, "NaN at k = " + std::to_string(at));
      check_reductions(c.ctx, o, s, kNaN, "NaN at k = " + std::to_string(at));
    }
    {  // no NaN: the plain min or max, so the forms above do compute the entry
      std::vector<double> av(n), bv(n, 2.0);
      double want = s == SJ_SEMIRING_MAX_TIMES ? -INFINITY : INFINITY;
      for (int32_t k = 0; k < n; ++k) {
        av[k] = 1.0 + 0.25 * ((k * 7) % 13);
        want = s == SJ_SEMIRING_MAX_TIMES ? std::max(want, av[k] * 2.0) : std::min(want, av[k] + 2.0);
      }
      Operands o(c.ctx, n, all, av, all, bv);
      check_all_forms(c.ctx, o, s, want, "no NaN");
    }
  }
}

}  // namespace

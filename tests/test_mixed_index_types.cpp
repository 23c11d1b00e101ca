// Operands of mixed index types (int32 and int64) through the C API: every schedule gives the
// result the reference gives on all-int64 operands, with int64 indices by default; a plan
// executes in the coordinate type it was planned for whatever the new operands' entry counts;
// and sj_tensor_convert's result never shares an array with its source.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/schedule_test_util.hpp"

namespace {

using namespace sj::test;

// `t` with int64 indices, in CSR (a new handle).
sj_tensor* as_i64(sj_context* c, const sj_tensor* t, sj_format f = SJ_FORMAT_CSR) {
  sj_tensor* out = nullptr;
  EXPECT_EQ(sj_tensor_convert(c, t, f, nullptr, SJ_INDEX_INT64, &out), SJ_OK) << msg();
  return out;
}

// One plan, executed once.
sj_status run_once(sj_context* c, sj_op op, const sj_tensor* const* ops, int n, const sj_op_options* o,
                               sj_tensor** out) {
  sj_plan* plan = nullptr;
  sj_status st = sj_plan_create(c, op, ops, n, o, &plan);
  if (st != SJ_OK) return st;
  st = sj_plan_execute(plan, ops, n, out);
  sj_plan_destroy(plan);
  return st;
}

// Runs `op` on `ops` with every schedule that can serve it and compares each result with the
// reference schedule on `ref_ops` (the same operands, all int64). Returns how many ran.
int every_schedule_matches(sj_context* c, sj_op op, const std::vector<const sj_tensor*>& ops,
                           const std::vector<const sj_tensor*>& ref_ops, sj_op_options o, const std::string& where) {
  o.schedule = SJ_SCHEDULE_REFERENCE;
  H ref;
  EXPECT_EQ(run_once(c, op, ref_ops.data(), static_cast<int>(ref_ops.size()), &o, &ref.t), SJ_OK)
      << where << ": " << msg();
  if (!ref.t) return 0;
  EXPECT_EQ(ref.t->t.index_type, sj::IndexType::I64) << where;
  int ran = 0;
  for (sj_schedule s : {SJ_SCHEDULE_AUTO, SJ_SCHEDULE_REFERENCE, SJ_SCHEDULE_GUSTAVSON_DENSE, SJ_SCHEDULE_GUSTAVSON_HASH,
                        SJ_SCHEDULE_INNER, SJ_SCHEDULE_TRANSPOSE, SJ_SCHEDULE_SEARCH, SJ_SCHEDULE_DENSIFY,
                        SJ_SCHEDULE_PUSH, SJ_SCHEDULE_FUSED}) {
    o.schedule = s;
    H got;
    const sj_status st = run_once(c, op, ops.data(), static_cast<int>(ops.size()), &o, &got.t);
    if (st == SJ_ERR_INVALID_ARGUMENT && s != SJ_SCHEDULE_AUTO && s != SJ_SCHEDULE_REFERENCE) continue;  // cannot serve
    EXPECT_EQ(st, SJ_OK) << where << " schedule " << s << ": " << msg();
    if (st != SJ_OK) continue;
    EXPECT_TRUE(same_bits(ref.t->t, got.t->t)) << where << " schedule " << s;
    ++ran;
  }
  return ran;
}

bool has_form(const sj_tensor* t, const std::string& key) {
  if (!t->t.derived) return false;
  for (auto& [k, _] : t->t.derived->forms)
    if (k == key) return true;
  return false;
}

TEST(MixedIndexTypes, EveryOperationAndScheduleMatchesTheAllInt64Reference) {
  Ctx ctx;
  Rng rng(23);
  for (int round = 0; round < 6; ++round) {
    // Which side is larger alternates, so both votes (compute in i32, compute in i64) run.
    const bool a_big = round % 2 == 0;
    auto a = random_uniform<int32_t, double>(rng, 40, 30, a_big ? 0.4 : 0.03);
    auto b = random_uniform<int64_t, double>(rng, 30, 40, a_big ? 0.03 : 0.4);
    auto e = random_uniform<int64_t, double>(rng, 40, 30, a_big ? 0.03 : 0.4);
    H A, B, E, A64, B64, E64, ECSC, ET;
    A.t = csr_handle(ctx.c, a);
    B.t = csr_handle(ctx.c, b);
    E.t = csr_handle(ctx.c, e);
    A64.t = as_i64(ctx.c, A.t);
    B64.t = as_i64(ctx.c, B.t);
    E64.t = as_i64(ctx.c, E.t);
    ECSC.t = as_i64(ctx.c, E.t, SJ_FORMAT_CSC);
    auto et = random_uniform<int64_t, double>(rng, 30, 40, a_big ? 0.03 : 0.4);
    ET.t = csr_handle(ctx.c, et);
    auto mask = random_uniform<int64_t, double>(rng, 40, 40, 0.3);
    H M, M64, ET_CSR64;
    M.t = csr_handle(ctx.c, mask);
    M64.t = as_i64(ctx.c, M.t);
    ET_CSR64.t = as_i64(ctx.c, ET.t);
    const std::string where = "round " + std::to_string(round);
    sj_op_options o;
    sj_op_options_init(&o);
    EXPECT_GE(every_schedule_matches(ctx.c, SJ_OP_SPGEMM, {A.t, B.t}, {A64.t, B64.t}, o, where + " A*B"), 3);
    EXPECT_GE(every_schedule_matches(ctx.c, SJ_OP_SPGEMM, {B.t, A.t}, {B64.t, A64.t}, o, where + " B*A"), 3);
    EXPECT_GE(every_schedule_matches(ctx.c, SJ_OP_EWISE_MULT, {A.t, E.t}, {A64.t, E64.t}, o, where + " A.*E"), 2);
    EXPECT_GE(every_schedule_matches(ctx.c, SJ_OP_EWISE_ADD, {E.t, A.t}, {E64.t, A64.t}, o, where + " E+A"), 1);
    // Masked A*B with an int64 mask.
    EXPECT_GE(every_schedule_matches(ctx.c, SJ_OP_SPGEMM_MASKED, {M.t, A.t, B.t}, {M64.t, A64.t, B64.t}, o,
                                     where + " M.*(A*B)"),
              2);
    // A .* B^T with B^T's source int64 in CSR and in CSC (the retyped flip path).
    o.transpose_b = 1;
    EXPECT_GE(every_schedule_matches(ctx.c, SJ_OP_EWISE_MULT, {A.t, ET.t}, {A64.t, ET_CSR64.t}, o,
                                     where + " A.*ET^T"),
              2);
    H ET64;
    ET64.t = as_i64(ctx.c, ET.t, SJ_FORMAT_CSC);
    EXPECT_GE(every_schedule_matches(ctx.c, SJ_OP_EWISE_MULT, {A.t, ET64.t}, {A64.t, ET64.t}, o,
                                     where + " A.*(CSC ET)^T"),
              2);
    o.transpose_b = 0;
    // An explicit output type still wins.
    o.output_index_type = SJ_INDEX_INT32;
    H r;
    const sj_tensor* ops[2] = {A.t, B.t};
    ASSERT_EQ(run_once(ctx.c, SJ_OP_SPGEMM, ops, 2, &o, &r.t), SJ_OK) << msg();
    EXPECT_EQ(r.t->t.index_type, sj::IndexType::I32);
  }
}

// Planned with a large int32 A and a small int64 B (computed in i32), executed with a nearly
// empty int32 A and a dense int64 B: the plan keeps i32, so A2 is borrowed as it is and no
// int64 copy of it is kept on its handle; the result is still right.
TEST(MixedIndexTypes, APlanKeepsItsCoordinateType) {
  Ctx ctx;
  Rng rng(29);
  auto a1 = random_uniform<int32_t, double>(rng, 30, 30, 0.5);
  auto b1 = random_uniform<int64_t, double>(rng, 30, 30, 0.02);
  auto a2 = random_uniform<int32_t, double>(rng, 30, 30, 0.01);
  auto b2 = random_uniform<int64_t, double>(rng, 30, 30, 0.9);
  H A1, B1, A2, B2, A2_64;
  A1.t = csr_handle(ctx.c, a1);
  B1.t = csr_handle(ctx.c, b1);
  A2.t = csr_handle(ctx.c, a2);
  B2.t = csr_handle(ctx.c, b2);
  A2_64.t = as_i64(ctx.c, A2.t);
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_GUSTAVSON_DENSE;
  const sj_tensor* planned[2] = {A1.t, B1.t};
  sj_plan* plan = nullptr;
  ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPGEMM, planned, 2, &o, &plan), SJ_OK) << msg();
  const sj_tensor* now[2] = {A2.t, B2.t};
  H got, want;
  ASSERT_EQ(sj_plan_execute(plan, now, 2, &got.t), SJ_OK) << msg();
  sj_plan_destroy(plan);
  EXPECT_FALSE(has_form(A2.t, "csr/i64")) << "the plan re-chose i64 for these operands";
  o.schedule = SJ_SCHEDULE_REFERENCE;
  const sj_tensor* ref[2] = {A2_64.t, B2.t};
  ASSERT_EQ(run_once(ctx.c, SJ_OP_SPGEMM, ref, 2, &o, &want.t), SJ_OK) << msg();
  EXPECT_TRUE(same_bits(want.t->t, got.t->t));
}

// The converted handle owns its arrays: nothing is shared with the source, whether the
// source borrowed the caller's arrays (freed right after) or lived in another context.
TEST(MixedIndexTypes, ConvertingTheIndexTypeSharesNoArrayWithTheSource) {
  Ctx ctx, other;
  Rng rng(31);
  auto m = random_uniform<int32_t, double>(rng, 20, 25, 0.3);
  const std::vector<double> values = m.val;
  sj_tensor* borrowed = nullptr;
  ASSERT_EQ(sj_tensor_create_csr(other.c, m.outer, m.inner, SJ_INDEX_INT32, SJ_VALUE_F64, m.pos.data(), m.crd.data(),
                                 m.val.data(), 0, &borrowed),
            SJ_OK)
      << msg();
  H copied;
  copied.t = csr_handle(other.c, m);
  for (sj_tensor* src : {borrowed, copied.t}) {
    H wide;
    ASSERT_EQ(sj_tensor_convert(ctx.c, src, SJ_FORMAT_CSR, nullptr, SJ_INDEX_INT64, &wide.t), SJ_OK) << msg();
    EXPECT_NE(wide.t->t.values.data(), src->t.values.data());
    EXPECT_NE(wide.t->t.levels[1].pos.data(), src->t.levels[1].pos.data());
    EXPECT_EQ(wide.t->t.index_type, sj::IndexType::I64);
  }
  H kept;
  ASSERT_EQ(sj_tensor_convert(ctx.c, borrowed, SJ_FORMAT_CSR, nullptr, SJ_INDEX_INT64, &kept.t), SJ_OK) << msg();
  sj_tensor_destroy(borrowed);
  std::fill(m.val.begin(), m.val.end(), -1.0);  // the caller reuses its arrays
  m.val.clear();
  m.val.shrink_to_fit();
  const void* v = nullptr;
  int64_t n = 0;
  ASSERT_EQ(sj_tensor_get_values(kept.t, &v, &n), SJ_OK);
  ASSERT_EQ(n, static_cast<int64_t>(values.size()));
  EXPECT_EQ(std::vector<double>(static_cast<const double*>(v), static_cast<const double*>(v) + n), values);
}

// Index notation follows the same rule: int32 and int64 operands in one expression give the
// result the all-int64 operands give, with int64 indices, whichever side holds more entries.
TEST(MixedIndexTypes, IndexNotationMatchesTheAllInt64Operands) {
  Ctx ctx;
  Rng rng(37);
  for (int round = 0; round < 4; ++round) {
    const bool a_big = round % 2 == 0;
    auto a = random_uniform<int32_t, double>(rng, 30, 25, a_big ? 0.4 : 0.04);
    auto b = random_uniform<int64_t, double>(rng, 25, 35, a_big ? 0.04 : 0.4);
    auto e = random_uniform<int64_t, double>(rng, 30, 25, a_big ? 0.04 : 0.4);
    H A, B, E, A64;
    A.t = csr_handle(ctx.c, a);
    B.t = csr_handle(ctx.c, b);
    E.t = csr_handle(ctx.c, e);
    A64.t = as_i64(ctx.c, A.t);
    const std::string where = "round " + std::to_string(round);
    for (auto [expr, second] : {std::pair<const char*, sj_tensor*>{"C(i,j) = A(i,k) * B(k,j)", B.t},
                                {"Z(i,j) = A(i,j) * E(i,j)", E.t},
                                {"S(i,j) = A(i,j) + E(i,j)", E.t}}) {
      const sj_tensor* mixed[2] = {A.t, second};
      const sj_tensor* wide[2] = {A64.t, second};
      H got, want;
      ASSERT_EQ(sj_einsum(ctx.c, expr, mixed, 2, nullptr, "csr", nullptr, &got.t), SJ_OK) << where << " " << expr << ": " << msg();
      ASSERT_EQ(sj_einsum(ctx.c, expr, wide, 2, nullptr, "csr", nullptr, &want.t), SJ_OK) << where << " " << expr << ": " << msg();
      EXPECT_EQ(got.t->t.index_type, sj::IndexType::I64) << where << " " << expr;
      EXPECT_TRUE(same_bits(want.t->t, got.t->t)) << where << " " << expr;
    }
  }
}

}  // namespace

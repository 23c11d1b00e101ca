// The runtime's per-call machinery: opt-in calibration (src/calibration.hpp) measures the
// cheapest candidates, remembers the decision per statistics bucket in memory and in the
// cache folder, and later plans of the bucket use it; drop-in calls on repeated operands
// reuse their plan (src/plan_memo.hpp) and stay correct when operands change.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "src/calibration.hpp"
#include "src/plan.hpp"
#include "src/plan_memo.hpp"
#include "tests/schedule_test_util.hpp"

namespace {

using namespace sj::test;

sj::Tensor csr(Rng& rng, int64_t m, int64_t n, double d) {
  return sj::to_tensor(sj::default_allocator(), true, sj::test::random_uniform<int32_t, double>(rng, m, n, d),
                       sj::ValueType::F64);
}

std::string field(const std::string& json, const std::string& name) {
  const std::string pat = "\"" + name + "\":\"";
  const size_t p = json.find(pat);
  if (p == std::string::npos) return "";
  return json.substr(p + pat.size(), json.find('"', p + pat.size()) - p - pat.size());
}

sj::Context make_context(const char* cache_dir) {
  sj_config c;
  sj_config_init(&c);
  c.threads = 1;
  if (cache_dir) c.cache_dir = cache_dir;
  else c.disable_disk_cache = 1;
  return sj::Context(c);
}

// Measured on the first plan, recalled from memory by a plan on another matrix of the same
// bucket without calibrate, and the results equal the reference.
TEST(Calibration, MeasuresThenRecallsPerBucket) {
  sj::forget_calibrations_for_testing();
  const sj::Context ctx = make_context(nullptr);
  Rng rng(31);
  const sj::Tensor A = csr(rng, 600, 600, 0.01), A2 = csr(rng, 600, 600, 0.01);
  sj_op_options o = sj::default_options();
  o.calibrate = 1;
  sj::Plan first(ctx, sj::OpRequest{SJ_OP_SPGEMM, {A, A}, o});
  const std::string j1 = first.explain();
  EXPECT_EQ(field(j1, "source"), "measured") << j1;
  EXPECT_NE(j1.find("\"timings_us\""), std::string::npos) << j1;
  EXPECT_EQ(field(j1, "choice"), std::string(sj::to_string(first.schedule()))) << j1;
  o.calibrate = 0;
  sj::Plan second(ctx, sj::OpRequest{SJ_OP_SPGEMM, {A2, A2}, o});
  const std::string j2 = second.explain();
  EXPECT_EQ(field(j2, "source"), "memory") << j2;
  EXPECT_EQ(second.schedule(), first.schedule());
  EXPECT_EQ(field(j1, "bucket"), field(j2, "bucket"));
  o.schedule = SJ_SCHEDULE_REFERENCE;
  sj::Plan ref(ctx, sj::OpRequest{SJ_OP_SPGEMM, {A2, A2}, o});
  EXPECT_TRUE(same_bits(ref.execute({A2, A2}), second.execute({A2, A2})));
  // A forced schedule is never overridden.
  o.schedule = SJ_SCHEDULE_GUSTAVSON_HASH;
  sj::Plan forced(ctx, sj::OpRequest{SJ_OP_SPGEMM, {A2, A2}, o});
  EXPECT_EQ(forced.schedule(), SJ_SCHEDULE_GUSTAVSON_HASH);
  EXPECT_EQ(forced.explain().find("\"calibration\""), std::string::npos);
  sj::forget_calibrations_for_testing();  // decisions are process-wide: leave none to other tests
}

// Each operation with several candidates calibrates and runs correctly (sampled rows for
// SpGEMM, masked SpGEMM and SpMSpV; whole operands for the element-wise product).
TEST(Calibration, EveryOperationGivesTheReferenceResult) {
  sj::forget_calibrations_for_testing();
  const sj::Context ctx = make_context(nullptr);
  Rng rng(32);
  const sj::Tensor A = csr(rng, 700, 500, 0.02), B = csr(rng, 500, 300, 0.02), M = csr(rng, 700, 300, 0.05);
  const sj::Tensor C = csr(rng, 700, 500, 0.02);
  const sj::Tensor x = sj::to_tensor(sj::default_allocator(), sj::test::random_sparse_vector<int32_t, double>(rng, 500, 0.1),
                                     sj::ValueType::F64);
  struct Case {
    sj_op op;
    std::vector<sj::Tensor> ops;
    bool tb;
  };
  const sj::Tensor Ct = sj::transpose(C, sj::default_allocator());
  for (const Case& c : {Case{SJ_OP_SPGEMM, {A, B}, false}, Case{SJ_OP_SPGEMM_MASKED, {M, A, B}, false},
                        Case{SJ_OP_SPMSPV, {A, x}, false}, Case{SJ_OP_EWISE_MULT, {A, Ct}, true}}) {
    sj_op_options o = sj::default_options();
    o.transpose_b = c.tb;
    o.calibrate = 1;
    sj::Plan p(ctx, sj::OpRequest{c.op, c.ops, o});
    const std::string j = p.explain();
    EXPECT_EQ(field(j, "source"), "measured") << j;
    o.calibrate = 0;
    o.schedule = SJ_SCHEDULE_REFERENCE;
    sj::Plan ref(ctx, sj::OpRequest{c.op, c.ops, o});
    EXPECT_TRUE(same_bits(ref.execute(c.ops), p.execute(c.ops))) << j;
  }
  sj::forget_calibrations_for_testing();
}

// The decision is written to the cache folder and read back by a later process (simulated:
// the in-memory decisions forgotten).
TEST(Calibration, RememberedInTheCacheFolder) {
  char tmpl[] = "/tmp/sj-calib-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/cache";
  {
    sj::forget_calibrations_for_testing();
    const sj::Context ctx = make_context(dir.c_str());
    Rng rng(33);
    const sj::Tensor A = csr(rng, 400, 400, 0.02);
    sj_op_options o = sj::default_options();
    o.calibrate = 1;
    sj::Plan first(ctx, sj::OpRequest{SJ_OP_SPGEMM, {A, A}, o});
    EXPECT_EQ(field(first.explain(), "source"), "measured");
    sj::forget_calibrations_for_testing();
    sj::Plan again(ctx, sj::OpRequest{SJ_OP_SPGEMM, {A, A}, o});
    EXPECT_EQ(field(again.explain(), "source"), "disk") << again.explain();
    EXPECT_EQ(again.schedule(), first.schedule());
  }
  std::filesystem::remove_all(tmpl);
  sj::forget_calibrations_for_testing();
}

// Drop-in calls on the same handles reuse a kept plan from the third call on; a different
// partner handle, or other options, plan afresh; every result equals the reference.
TEST(PlanMemo, DropInCallsReuseTheirPlan) {
  Ctx ctx;
  Rng rng(34);
  H A, x1, x2;
  A.t = csr_handle(ctx.c, sj::test::random_uniform<int32_t, double>(rng, 300, 200, 0.03));
  x1.t = vec_handle(ctx.c, sj::test::random_sparse_vector<int32_t, double>(rng, 200, 0.1));
  x2.t = vec_handle(ctx.c, sj::test::random_sparse_vector<int32_t, double>(rng, 200, 0.5));
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_REFERENCE;
  H ref1, ref2;
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, x1.t, &o, &ref1.t), SJ_OK) << msg();
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, x2.t, &o, &ref2.t), SJ_OK) << msg();
  o.schedule = SJ_SCHEDULE_AUTO;
  const int64_t before = sj::dropin_plan_reuses();
  for (int k = 0; k < 4; ++k) {
    H y1, y2;
    ASSERT_EQ(sj_spmspv(ctx.c, A.t, x1.t, &o, &y1.t), SJ_OK) << msg();
    ASSERT_EQ(sj_spmspv(ctx.c, A.t, x2.t, &o, &y2.t), SJ_OK) << msg();
    EXPECT_TRUE(same_bits(ref1.t->t, y1.t->t)) << k;
    EXPECT_TRUE(same_bits(ref2.t->t, y2.t->t)) << k;
  }
  EXPECT_EQ(sj::dropin_plan_reuses() - before, 2);  // call 3 of each pair (2 and 4 plan again)
  // A partner handle destroyed and another made (possibly at the same address): no reuse of
  // its plan, a correct result.
  const int64_t mid = sj::dropin_plan_reuses();
  {
    H x3, y3, r3;
    x3.t = vec_handle(ctx.c, sj::test::random_sparse_vector<int32_t, double>(rng, 200, 0.2));
    ASSERT_EQ(sj_spmspv(ctx.c, A.t, x3.t, &o, &y3.t), SJ_OK) << msg();
    sj_op_options r = o;
    r.schedule = SJ_SCHEDULE_REFERENCE;
    ASSERT_EQ(sj_spmspv(ctx.c, A.t, x3.t, &r, &r3.t), SJ_OK) << msg();
    EXPECT_TRUE(same_bits(r3.t->t, y3.t->t));
  }
  EXPECT_EQ(sj::dropin_plan_reuses(), mid);
  o.dense_output = 1;  // other options: another plan
  H yd;
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, x1.t, &o, &yd.t), SJ_OK) << msg();
  EXPECT_EQ(sj::dropin_plan_reuses(), mid);
}

// The memo compares options as bytes, so read_options normalises them: settings that mean the
// same (a flag documented as "nonzero" set to 1 or 5, bytes after the phases' NUL, a shorter
// struct_size from an older header) share one kept plan; a setting that differs does not.
TEST(PlanMemo, OptionsThatMeanTheSameShareAPlan) {
  Ctx ctx;
  Rng rng(35);
  H A, ref;
  A.t = csr_handle(ctx.c, sj::test::random_uniform<int32_t, double>(rng, 120, 120, 0.05));
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_REFERENCE;
  ASSERT_EQ(sj_spgemm(ctx.c, A.t, A.t, &o, &ref.t), SJ_OK) << msg();
  std::vector<sj_op_options> same(4);
  for (sj_op_options& s : same) sj_op_options_init(&s), s.recompute_structure = 1;
  same[1].recompute_structure = 5;
  std::memcpy(same[2].phases, "\0ab", 4);  // "" with stale bytes after the NUL
  same[3].struct_size = offsetof(sj_op_options, mask_complement);  // an older caller
  same[3].mask_complement = 1;  // beyond its struct_size: not read
  const int64_t before = sj::dropin_plan_reuses();
  for (const sj_op_options& s : same) {
    H C;
    ASSERT_EQ(sj_spgemm(ctx.c, A.t, A.t, &s, &C.t), SJ_OK) << msg();
    EXPECT_TRUE(same_bits(ref.t->t, C.t->t));
  }
  EXPECT_EQ(sj::dropin_plan_reuses() - before, 2);  // calls 3 and 4 (call 2 plans again)
  sj_op_options other = same[0];
  other.recompute_structure = 0;  // keeps the structure: another plan
  H C;
  ASSERT_EQ(sj_spgemm(ctx.c, A.t, A.t, &other, &C.t), SJ_OK) << msg();
  EXPECT_TRUE(same_bits(ref.t->t, C.t->t));
  EXPECT_EQ(sj::dropin_plan_reuses() - before, 2);
  // The other yes/no settings likewise: a complemented mask given as 1 or 3 (C<!A> = A*A), a
  // dense output as 1 or 7.
  for (const bool masked : {true, false}) {
    auto call = [&](int flag, sj_schedule schedule, sj_tensor** out) {
      sj_op_options m;
      sj_op_options_init(&m);
      m.schedule = schedule;
      if (masked) m.mask_complement = flag;
      else m.dense_output = flag;
      return masked ? sj_spgemm_masked(ctx.c, A.t, A.t, A.t, &m, out) : sj_spgemm(ctx.c, A.t, A.t, &m, out);
    };
    H R;
    ASSERT_EQ(call(1, SJ_SCHEDULE_REFERENCE, &R.t), SJ_OK) << msg();
    const int64_t start = sj::dropin_plan_reuses();
    for (int k = 0; k < 4; ++k) {
      H Cm;
      ASSERT_EQ(call(k % 2 == 0 ? 1 : (masked ? 3 : 7), SJ_SCHEDULE_AUTO, &Cm.t), SJ_OK) << msg();
      EXPECT_TRUE(same_bits(R.t->t, Cm.t->t)) << masked << " " << k;
    }
    EXPECT_EQ(sj::dropin_plan_reuses() - start, 2) << masked;
  }
}

// Ski rental: a drop-in SpMSpV whose CSC copy costs more than many calls of the search keeps
// the search at first, and builds the copy (push) once the calls have lost about its cost: the
// memo plans again at powers of two, with the copy amortised over the calls so far. Every result
// is the reference's.
TEST(PlanMemo, RepeatedSpmspvBuysTheCscCopyOnceItPays) {
  Ctx ctx;
  Rng rng(35);
  H A, x;
  A.t = csr_handle(ctx.c, sj::test::random_uniform<int32_t, double>(rng, 500, 500, 0.2));
  sj::SpVecResult<int32_t, double> one;  // one stored entry: a push touches one column
  one.n = 500;
  one.idx = {7};
  one.val = {2.0};
  x.t = vec_handle(ctx.c, one);
  auto has_csc = [&] {
    std::lock_guard lock(A.t->t.derived->mutex);
    for (auto& [k, t] : A.t->t.derived->forms)
      if (k.rfind("csc-of-matrix/", 0) == 0) return true;
    return false;
  };
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_REFERENCE;
  H ref;
  ASSERT_EQ(sj_spmspv(ctx.c, A.t, x.t, &o, &ref.t), SJ_OK) << msg();
  o.schedule = SJ_SCHEDULE_AUTO;
  for (int call = 1; call <= 200; ++call) {
    H y;
    ASSERT_EQ(sj_spmspv(ctx.c, A.t, x.t, &o, &y.t), SJ_OK) << msg();
    ASSERT_TRUE(same_bits(ref.t->t, y.t->t)) << call;
    if (call == 16) EXPECT_FALSE(has_csc()) << "a copy for 16 calls costs more than it saves";
  }
  EXPECT_TRUE(has_csc()) << "200 calls pay for the copy";
}

}  // namespace

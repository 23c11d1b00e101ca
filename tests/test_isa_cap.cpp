// SPARSEJIT_ISA caps the hand-written vector kernels as it caps generated code: each one's
// availability is the process-wide tier's (jit/isa.hpp), checked here and, since the variable is
// read once per process, in child processes with SPARSEJIT_ISA=avx2 and =scalar; an SpMV plan's
// explain then names the scalar row loop even for an x in the gather window.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "jit/isa.hpp"
#include "kernels/intersect_avx512.hpp"
#include "kernels/push_runs_avx2.hpp"
#include "kernels/sort_network_avx2.hpp"
#include "kernels/spmv_gather_avx512.hpp"
#include "sparsejit/sparsejit.h"
#include "src/gather_window.hpp"
#include "tests/random_matrices.hpp"
#include "tests/schedule_test_util.hpp"

namespace {

using sj::jit::default_isa;

TEST(IsaCap, HandWrittenKernelsFollowTheTier) {
  const sj_isa tier = default_isa();
  const bool avx512 = tier == SJ_ISA_AVX512, avx2 = avx512 || tier == SJ_ISA_AVX2;
  EXPECT_EQ(sj::jit::default_isa_includes(SJ_ISA_AVX512), avx512);
  EXPECT_EQ(sj::jit::default_isa_includes(SJ_ISA_AVX2), avx2);
  EXPECT_TRUE(sj::jit::default_isa_includes(SJ_ISA_SCALAR));
  EXPECT_EQ(sj::spmv_gather_avx512::available(), avx512);
  EXPECT_EQ(sj::intersect_avx512::available(), avx512);
  EXPECT_EQ(sj::push_runs::available(), avx2);
  EXPECT_EQ(sj::sort_network::available(), avx2);

  // An SpMV whose x lies in the gather window: its explain names the loop the tier allows.
  sj::test::Ctx ctx;
  sj::test::Rng rng(8);
  const int64_t n = sj::gather_window::l2_bytes() / 8 + 4097, m = 40;
  auto a = sj::test::random_uniform<int32_t, double>(rng, m, n, 12.0 / static_cast<double>(n));
  auto xd = sj::test::random_dense_vector<double>(rng, n);
  sj::test::H A, x, y;
  A.t = sj::test::csr_handle(ctx.c, a);
  ASSERT_EQ(sj_tensor_create_dense(ctx.c, 1, &n, SJ_VALUE_F64, xd.data(), SJ_TENSOR_COPY, &x.t), SJ_OK);
  const sj_tensor* ops[2] = {A.t, x.t};
  sj_op_options o;
  sj_op_options_init(&o);
  o.schedule = SJ_SCHEDULE_DENSIFY;
  sj_plan* p = nullptr;
  ASSERT_EQ(sj_plan_create(ctx.c, SJ_OP_SPMV, ops, 2, &o, &p), SJ_OK) << sj_last_error_message();
  ASSERT_EQ(sj_plan_execute(p, ops, 2, &y.t), SJ_OK) << sj_last_error_message();
  const char* text = nullptr;
  ASSERT_EQ(sj_plan_explain(p, &text), SJ_OK);
  const std::string explain = text;
  sj_plan_destroy(p);
  const bool in_window = n * 8 <= sj::gather_window::l3_bytes() / 4;
  EXPECT_NE(explain.find(avx512 && in_window ? "reading x by AVX-512 gathers" : "scalar loads of x"), std::string::npos)
      << explain;

  if (std::getenv("SPARSEJIT_ISA")) return;  // a child stops here
  char self[4096] = {0};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  for (const char* isa : {"avx2", "scalar"}) {
    const std::string cmd = std::string("SPARSEJIT_ISA=") + isa + " '" + self +
                            "' --gtest_filter=IsaCap.HandWrittenKernelsFollowTheTier > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
}

}  // namespace

// The specialised coiteration schedules (see kernels/schedule.hpp): SpGEMM `inner`, the
// inner-product SpGEMM over the generated coiteration kernel (kernels/coiter_drivers.hpp),
// dense or sparse output. B's CSC form comes from kernels/operand_csc.hpp (kept with B's handle).
//
// COST MODEL (nanoseconds, single thread). rA = rows of A, cB = columns of B, nB = nnz of B,
// lA = mean row length of A, lB = mean column length of B (nB / cB):
//
//   T_inner = C0 + Cflip*(nB + cB)            [B to CSC, unless given as CSC / cached]
//           + rA*cB*(Cpair + Ccrd*(lA + lB)) [one dot per (row, column) pair]
//           + Cdense*rA*cB                    [dense output: filling the result]
//
//   Ccrd = 0.25 ns per coordinate stepped over when the chosen kernel's fast lane runs
//   (min(lA, lB) >= 2n, or >= 24 with the automatic per-pair tiers; generated code), else 1.0 (the scalar merge); Cpair = 2 ns (call,
//   overlap test, trimming). Gustavson (kernels/spgemm_schedules.cpp) costs ~1.6-4 ns per
//   multiply (F = flops). For a uniform n x n matrix of density d, F = n^3 d^2 while the dot
//   sweep steps over 2 n^3 d coordinates, so `inner` wins only when d is large (d > ~0.3):
//   i.e. small, dense outputs — what the papers and PEERS.md found
//   (inner-product SpGEMM 10-40x slower than Gustavson on the real matrices).
#include <algorithm>
#include <memory>

#include "jit/coiter_jit.hpp"
#include "kernels/coiter_drivers.hpp"
#include "kernels/operand_csc.hpp"
#include "kernels/schedule.hpp"
#include "src/convert.hpp"
#include "src/derived_forms.hpp"
#include "src/error.hpp"

namespace sj {
namespace {

// Per call: the C API, plan execution and result allocation, as Gustavson's C0 (1800,
// kernels/spgemm_schedules.cpp), plus B's CSC lookup and the result's copy. It was 300, which
// made tiny products pick `inner` although Gustavson ran them faster (single thread, plan
// execute + destroy: Tina_AskCal 0.87 vs 0.53 us, b1_ss 0.62 vs 0.41 us, GD01_b 1.32 vs 0.57 us).
constexpr double kC0 = 1800 + 300;
constexpr double kFlip = 2.5;
constexpr double kPair = 2.0;
constexpr double kCrdSimd = 0.25;
constexpr double kCrdScalar = 1.0;
constexpr double kDenseFill = 0.15;


kernels::CoiterConfig config_for(const OpRequest& req, IndexType it, ValueType vt, double mean_a, double mean_b) {
  return kernels::coiter_config(req.options, it, vt, mean_a, mean_b);
}

double mean_col(const MatrixStats& b) {
  return b.cols > 0 ? static_cast<double>(b.nnz) / static_cast<double>(b.cols) : 0;
}

class InnerSpgemm final : public ScheduleImpl {
 public:
  sj_op op() const override { return SJ_OP_SPGEMM; }
  sj_schedule schedule() const override { return SJ_SCHEDULE_INNER; }

  Costing cost(const PlanInputs& in) const override {
    if (in.stats.size() < 2) return Costing::no("needs two CSR operands");
    const MatrixStats& a = in.stats[0];
    const MatrixStats& b = in.stats[1];
    const double lA = a.row_mean, lB = mean_col(b);
    const kernels::CoiterConfig cfg = config_for(in.req, in.prepared.index_type, in.prepared.value_type, lA, lB);
    const jit::CoiterSpec eff = jit::effective_spec(cfg.spec);
    const bool simd = in.prepared.value_type != ValueType::Bool && eff.isa != SJ_ISA_SCALAR &&
                      std::min(lA, lB) >= (cfg.tiered ? 24.0 : 2.0 * eff.width);
    const double pairs = static_cast<double>(a.rows) * static_cast<double>(b.cols);
    double t = kC0 + (csc_given(in.req) ? 0 : kFlip * static_cast<double>(b.nnz + b.cols)) +
               pairs * (kPair + (simd ? kCrdSimd : kCrdScalar) * (lA + lB));
    if (in.req.options.dense_output) t += kDenseFill * pairs;
    if (!csc_given(in.req) && in.ctx.allocator.over_cap(csc_copy_bytes(in.prepared.operands[1])))
      return Costing::yes(kOverMemoryCapCost, "inner products: B's CSC copy would be over the memory cap");
    return Costing::yes(t, cat("inner products, one dot per (row of A, column of B): ", kernels::describe(cfg)));
  }

  std::shared_ptr<const void> prepare(const PlanInputs& in, std::string* source, double* build_ms) const override {
    const MatrixStats& a = in.stats[0];
    const MatrixStats& b = in.stats[1];
    double us = 0;
    bool generated = false;
    auto cfg = std::make_shared<kernels::CoiterConfig>(kernels::resolve_coiter(
        config_for(in.req, in.prepared.index_type, in.prepared.value_type, a.row_mean, mean_col(b)),
        in.prepared.index_type, in.prepared.value_type, in.req.options.semiring, false, &us, &generated));
    *source = !generated ? "built-in" : us > 0 ? "compiled" : "memory";
    *build_ms = us / 1000.0;
    return cfg;
  }

  Tensor run(const ExecInputs& in) const override {
    const auto& ops = in.prepared.operands;
    kernels::CoiterConfig cfg;
    if (in.state) {
      cfg = *static_cast<const kernels::CoiterConfig*>(in.state);
    } else {
      const double ra = ops[0].dims[0] ? double(ops[0].nnz()) / double(ops[0].dims[0]) : 0;
      const double cb = ops[1].dims[1] ? double(ops[1].nnz()) / double(ops[1].dims[1]) : 0;
      cfg = config_for(in.req, in.prepared.index_type, in.prepared.value_type, ra, cb);
    }
    const Tensor bcsc = csc_of_b(in.req.operands[1], ops[1], in.req.options.transpose_b != 0, in.ctx.allocator);
    Tensor out = kernels::coiter_spgemm(ops[0], bcsc, in.req.options.semiring, cfg, in.req.options.dense_output != 0,
                                        in.ctx.allocator);
    return out;
  }

 private:
  static bool csc_given(const OpRequest& req) { return sj::csc_given(req.operands[1], req.options.transpose_b != 0); }
};

}  // namespace

void add_coiteration_schedules(std::vector<const ScheduleImpl*>& out) {
  static const InnerSpgemm inner;
  out.push_back(&inner);
}

}  // namespace sj

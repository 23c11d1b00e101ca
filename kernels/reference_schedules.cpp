// The portable reference kernel as a schedule of every operation: always applicable, costed
// by a plain work count so that any specialised schedule that models itself honestly and is
// cheaper wins. Also what every specialised schedule is tested against.
#include "kernels/reference_driver.hpp"
#include "kernels/schedule.hpp"
#include "src/context.hpp"
#include "src/error.hpp"

namespace sj {
namespace {

class ReferenceSchedule final : public ScheduleImpl {
 public:
  explicit ReferenceSchedule(sj_op op) : op_(op) {}
  sj_op op() const override { return op_; }
  sj_schedule schedule() const override { return SJ_SCHEDULE_REFERENCE; }
  Costing cost(const PlanInputs& in) const override {
    // ~3 ns per multiply-add or merged entry, plus the output assembly (a copy into the
    // caller's allocator); deliberately plain: it is the fallback.
    double work = 0;
    for (auto& s : in.stats) work += static_cast<double>(s.nnz) + s.rows;
    if (in.flops >= 0) work = in.flops * 2 + in.stats[0].rows;
    // Its workspaces sized by a dimension (kernels/reference_driver.cpp charges them).
    const size_t ws = workspace_bytes(in);
    if (in.ctx.allocator.over_cap(ws))
      return Costing::yes(kOverMemoryCapCost, cat("portable reference kernel: its workspace of ", ws,
                                                  " bytes is over the memory cap"));
    return Costing::yes(3.0 * work + 2000, "portable reference kernel");
  }
  Tensor run(const ExecInputs& in) const override { return run_reference(in.req, in.prepared, in.ctx.allocator); }

 private:
  // A value and row stamps per column of B (SpGEMM, masked SpGEMM), a value and a flag per
  // element of x (SpMSpV).
  size_t workspace_bytes(const PlanInputs& in) const {
    const size_t v = static_cast<size_t>(value_size(in.prepared.value_type));
    if (in.stats.size() < 2) return 0;
    switch (op_) {
      case SJ_OP_SPGEMM:
        return estimate_bytes(in.stats[1].cols, in.req.options.dense_output ? sizeof(int64_t) : v + sizeof(int64_t));
      case SJ_OP_SPGEMM_MASKED:
        return estimate_bytes(in.stats[0].cols, v + 2 * sizeof(int64_t));
      case SJ_OP_SPMSPV:
        return estimate_bytes(in.stats[1].cols, v + 1);
      default:
        return 0;
    }
  }

  sj_op op_;
};

}  // namespace

void add_reference_schedules(std::vector<const ScheduleImpl*>& out) {
  static const ReferenceSchedule s[] = {
      ReferenceSchedule(SJ_OP_SPGEMM),     ReferenceSchedule(SJ_OP_SPGEMM_MASKED), ReferenceSchedule(SJ_OP_SPMSPV),
      ReferenceSchedule(SJ_OP_SPMV),       ReferenceSchedule(SJ_OP_EWISE_MULT),    ReferenceSchedule(SJ_OP_EWISE_ADD),
      ReferenceSchedule(SJ_OP_TRANSPOSE),
  };
  for (auto& x : s) out.push_back(&x);
}

}  // namespace sj

#include "src/plan.hpp"

#include <chrono>

#include "kernels/schedule.hpp"
#include "src/error.hpp"
#include "src/inspect.hpp"
#include "src/json_writer.hpp"

namespace sj {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

const char* operand_label(sj_op op, size_t i) {
  if (op == SJ_OP_SPGEMM_MASKED) return i == 0 ? "M" : i == 1 ? "A" : "B";
  if ((op == SJ_OP_SPMSPV || op == SJ_OP_SPMV) && i == 1) return "x";
  return i == 0 ? "A" : "B";
}

}  // namespace

OperandSignature OperandSignature::of(const Tensor& t) {
  OperandSignature s;
  s.order = t.order;
  s.dims = t.dims;
  s.format = format_spec_of(t);
  s.index_type = t.index_type;
  s.value_type = t.value_type;
  return s;
}

Plan::Plan(const Context& ctx, OpRequest req) : ctx_(ctx), op_(req.op), options_(req.options) {
  auto t0 = std::chrono::steady_clock::now();
  check_request(req);
  for (auto& t : req.operands) signatures_.push_back(OperandSignature::of(t));

  // Inspect: the kernel forms of the operands (kept with their handles for later calls),
  // statistics of each matrix, and for SpGEMM the exact multiply count.
  PreparedOperands prepared = prepare(req, ctx_.allocator);
  std::vector<MatrixStats> stats;
  JsonWriter w;
  w.begin_array();
  for (size_t i = 0; i < req.operands.size(); ++i) {
    const Tensor& t = prepared.operands[i];
    w.begin_object().field("name", operand_label(op_, i)).field("given", req.operands[i].describe());
    MatrixStats s;
    if (t.order == 2 && is_csr(t)) {
      s = matrix_stats(t, /*with_bandwidth=*/false);
      w.key("stats");
      write_json(w, s);
    } else {
      s.rows = 0;
      s.nnz = t.nnz();
      s.cols = t.dims[0];
      w.field("nnz", s.nnz);
    }
    stats.push_back(s);
    w.end_object();
  }
  w.end_array();
  stats_json_ = w.str();
  double flops = -1;
  if (op_ == SJ_OP_SPGEMM) flops = static_cast<double>(spgemm_flops(prepared.operands[0], prepared.operands[1]));
  if (op_ == SJ_OP_SPGEMM_MASKED) flops = static_cast<double>(spgemm_flops(prepared.operands[1], prepared.operands[2]));
  inspect_ms_ = ms_since(t0);

  // Cost every schedule of this operation; a forced one must be able to serve.
  PlanInputs in{req, prepared, stats, flops, ctx_};
  std::vector<const ScheduleImpl*> impls;
  for (const ScheduleImpl* s : all_schedules()) {
    if (s->op() != op_) continue;
    Costing c = s->cost(in);
    candidates_.push_back({s->schedule(), c.cost, c.note, c.applicable});
    impls.push_back(s);
  }
  const sj_schedule want = options_.schedule;
  int best = -1;
  for (size_t i = 0; i < impls.size(); ++i) {
    const Candidate& c = candidates_[i];
    if (!c.applicable) continue;
    if (want == SJ_SCHEDULE_AUTO ? (best < 0 || c.estimated_cost < candidates_[best].estimated_cost)
                                 : c.schedule == want)
      best = static_cast<int>(i);
  }
  if (best < 0) {
    std::string names, why;
    for (auto& c : candidates_) {
      if (c.applicable) names += cat(", ", to_string(c.schedule));
      else if (c.schedule == want) why = cat(": ", c.note);
    }
    fail(SJ_ERR_INVALID_ARGUMENT, "schedule '", to_string(want), "' cannot serve ", to_string(op_), " here", why,
         " (available: auto", names, ")");
  }
  impl_ = impls[best];
  chosen_ = impl_->schedule();
  state_ = impl_->prepare(in, &kernel_source_, &build_ms_);
  plan_ms_ = ms_since(t0);
  ctx_.logger->debug("plan {}: chose {} (estimated {:.0f} ns, kernel {}), inspect {:.3f} ms, plan {:.3f} ms",
                     to_string(op_), to_string(chosen_), candidates_[best].estimated_cost, kernel_source_,
                     inspect_ms_, plan_ms_);
}

Tensor Plan::execute(const std::vector<Tensor>& operands) {
  if (operands.size() != signatures_.size())
    fail(SJ_ERR_INVALID_ARGUMENT, "plan for ", to_string(op_), " takes ", signatures_.size(), " operands, got ",
         operands.size());
  for (size_t i = 0; i < operands.size(); ++i)
    if (!(OperandSignature::of(operands[i]) == signatures_[i]))
      fail(SJ_ERR_SHAPE_MISMATCH, "operand ", operand_label(op_, i), " (", operands[i].describe(),
           ") does not match the planned one (shape, format and types must be the same)");
  auto t0 = std::chrono::steady_clock::now();
  OpRequest req{op_, operands, options_};
  PreparedOperands prepared = prepare(req, ctx_.allocator);
  Tensor out = impl_->run(ExecInputs{req, prepared, ctx_, state_.get()});
  double ms = ms_since(t0);
  double expected = -1;
  first_execute_ms_.compare_exchange_strong(expected, ms);
  last_execute_ms_ = ms;
  ++executions_;
  return out;
}

std::string Plan::explain() const {
  JsonWriter w;
  w.begin_object().field("op", to_string(op_));
  w.key("options").begin_object()
      .field("semiring", to_string(options_.semiring))
      .field("schedule_requested", to_string(options_.schedule))
      .field("isa_requested", to_string(options_.isa))
      .field("vector_width", options_.vector_width)
      .field("phases", std::string_view(options_.phases))
      .field("dense_output", options_.dense_output != 0)
      .field("transpose_a", options_.transpose_a != 0)
      .field("transpose_b", options_.transpose_b != 0)
      .end_object();
  w.key("operands").raw(stats_json_);
  w.key("candidates").begin_array();
  for (auto& c : candidates_)
    w.begin_object().field("schedule", to_string(c.schedule)).field("estimated_cost", c.estimated_cost)
        .field("applicable", c.applicable).field("note", c.note).end_object();
  w.end_array();
  w.field("chosen", to_string(chosen_));
  w.key("kernel").begin_object().field("source", kernel_source_).field("build_ms", build_ms_).end_object();
  w.key("timings_ms").begin_object().field("inspect", inspect_ms_).field("plan", plan_ms_)
      .field("first_execute", first_execute_ms_.load())
      .field("last_execute", last_execute_ms_.load())
      .field("executions", executions_.load()).end_object();
  w.end_object();
  return w.str();
}

}  // namespace sj

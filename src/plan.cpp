#include "src/plan.hpp"

#include <chrono>

#include "kernels/reference_driver.hpp"
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

// The schedules this build can run for an operation; the reference kernel serves all.
std::vector<Candidate> candidates_for(const OpRequest& r, double work) {
  std::vector<Candidate> c;
  c.push_back({SJ_SCHEDULE_REFERENCE, work, "portable reference kernel (Gustavson / two-finger merge)", true});
  return c;
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

  // Inspect: statistics of each matrix operand (CSR form) and the work estimate.
  JsonWriter w;
  w.begin_array();
  double work = 0;
  std::vector<Tensor> csr;
  for (size_t i = 0; i < req.operands.size(); ++i) {
    const Tensor& t = req.operands[i];
    w.begin_object().field("name", operand_label(op_, i)).field("format", t.describe());
    if (t.order == 2) {
      Tensor c = as_csr(t, false, t.index_type, default_allocator());
      MatrixStats s = matrix_stats(c, /*with_bandwidth=*/false);
      w.key("stats");
      write_json(w, s);
      work += static_cast<double>(s.nnz) + s.rows;
      csr.push_back(std::move(c));
    } else {
      work += static_cast<double>(t.nnz());
    }
    w.end_object();
  }
  w.end_array();
  stats_json_ = w.str();
  if (op_ == SJ_OP_SPGEMM && !options_.transpose_a && !options_.transpose_b && csr.size() == 2)
    work = static_cast<double>(spgemm_flops(csr[0], csr[1])) + csr[0].dims[0];

  // Candidates and the choice. A forced schedule must be one that can serve this call.
  candidates_ = candidates_for(req, work);
  const sj_schedule want = options_.schedule;
  if (want == SJ_SCHEDULE_AUTO) {
    const Candidate* best = nullptr;
    for (auto& c : candidates_)
      if (c.applicable && (!best || c.estimated_cost < best->estimated_cost)) best = &c;
    chosen_ = best->schedule;
  } else {
    bool ok = false;
    std::string names;
    for (auto& c : candidates_) {
      if (!c.applicable) continue;
      ok |= c.schedule == want;
      names += cat(names.empty() ? "" : ", ", to_string(c.schedule));
    }
    if (!ok)
      fail(SJ_ERR_INVALID_ARGUMENT, "schedule '", to_string(want), "' cannot serve ", to_string(op_),
           " here (available: auto, ", names, ")");
    chosen_ = want;
  }
  plan_ms_ = ms_since(t0);
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
  Tensor out;
  switch (chosen_) {
    default:
      out = run_reference(req, prepared, ctx_.allocator);
      break;
  }
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
  w.key("kernel").begin_object().field("backend", "portable").field("source", "built-in").field("compile_ms", 0.0).end_object();
  w.key("timings_ms").begin_object().field("plan", plan_ms_)
      .field("first_execute", first_execute_ms_.load())
      .field("last_execute", last_execute_ms_.load())
      .field("executions", executions_.load()).end_object();
  w.end_object();
  return w.str();
}

}  // namespace sj

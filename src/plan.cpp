#include "src/plan.hpp"

#include <chrono>
#include <cstdio>

#include "cache/kernel_cache.hpp"
#include "kernels/schedule.hpp"
#include "src/calibration.hpp"
#include "src/call_counter.hpp"
#include "src/cycle_clock.hpp"
#include "src/derived_forms.hpp"
#include "src/error.hpp"
#include "src/inspect.hpp"
#include "src/json_writer.hpp"
#include "src/output_copy.hpp"
#include "src/types.hpp"
#include "src/work_partition.hpp"

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

bool OperandSignature::matches(const Tensor& t) const {
  if (t.order != order || t.index_type != index_type || t.value_type != value_type || format.order != order)
    return false;
  for (int l = 0; l < order; ++l)
    if (t.dims[l] != dims[l] || t.levels[l].kind != format.kinds[l] || t.levels[l].unique != format.unique[l] ||
        t.mode_order[l] != format.mode_order[l])
      return false;
  return true;
}

Plan::Plan(const Context& ctx, OpRequest req) : ctx_(ctx), op_(req.op), options_(req.options) {
  auto t0 = std::chrono::steady_clock::now();
  check_request(req);
  for (auto& t : req.operands) signatures_.push_back(OperandSignature::of(t));

  // Inspect: the kernel forms of the operands (kept with their handles for later calls),
  // statistics of each matrix, and for SpGEMM the exact multiply count.
  PreparedOperands prepared = prepare(req, ctx_.allocator);
  index_type_ = prepared.index_type;
  result_index_type_ = prepared.result_index_type;
  value_type_ = prepared.value_type;
  // Whether the kernels read every operand as given: that depends only on what the signature
  // fixes (format, coordinate type) and on the options, so it holds for every execution.
  operands_as_given_ = !prepared.b_transpose_deferred && prepared.operands.size() == req.operands.size();
  for (size_t i = 0; operands_as_given_ && i < req.operands.size(); ++i)
    operands_as_given_ = &prepared.operands[i] == &req.operands[i];
  // Statistics are facts about an operand: computed once per handle and reused by later calls.
  for (size_t i = 0; i < req.operands.size(); ++i) {
    const Tensor& t = prepared.operands[i];
    given_.push_back(req.operands[i].describe());
    MatrixStats s;
    if (t.order == 2 && is_csr(t)) {
      const bool deferred = i == 1 && prepared.b_transpose_deferred;  // t is B, the stats are B^T's
      auto compute = [&] {
        return deferred ? transpose_stats(t, /*may_sample=*/true) : matrix_stats(t, /*with_bandwidth=*/false, /*may_sample=*/true);
      };
      const Tensor& src = req.operands[i];
      bool transposed = (i == 0 && op_ != SJ_OP_SPGEMM_MASKED && options_.transpose_a) ||
                        (op_ == SJ_OP_SPGEMM_MASKED && i == 1 && options_.transpose_a) ||
                        (op_ == SJ_OP_SPGEMM_MASKED && i == 2 && options_.transpose_b) ||
                        (op_ != SJ_OP_SPGEMM_MASKED && i == 1 && options_.transpose_b);
      // A deferred B^T's statistics are sampled another way than a built one's (columns, not
      // rows): kept apart, so that neither depends on which operation met the handle first.
      const char* key = deferred ? "stats/transposed/deferred" : transposed ? "stats/transposed" : "stats";
      s = src.derived ? *src.derived->fact<MatrixStats>(key, compute) : compute();
    } else {
      s.rows = 0;
      s.nnz = t.nnz();
      s.cols = t.dims[0];
    }
    stats_.push_back(s);
  }
  double flops = -1;
  if (op_ == SJ_OP_SPGEMM || op_ == SJ_OP_SPGEMM_MASKED) {
    const size_t a = op_ == SJ_OP_SPGEMM ? 0 : 1;
    const FlopsCount c = spgemm_flops_for_planning(prepared.operands[a], prepared.operands[a + 1]);
    flops = c.flops;
    flops_sampled_rows_ = c.sampled_rows;
  }
  flops_ = flops;
  inspect_ms_ = ms_since(t0);

  // Cost every schedule of this operation; a forced one must be able to serve.
  PlanInputs in{req, prepared, stats_, flops, ctx_};
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
  // A decision measured for this statistics bucket (or measured now, with options.calibrate)
  // overrides the cost model (src/calibration.hpp).
  if (want == SJ_SCHEDULE_AUTO && op_ != SJ_OP_TRANSPOSE) {
    std::vector<double> costs;
    std::vector<bool> applicable;
    for (const Candidate& c : candidates_) costs.push_back(c.estimated_cost), applicable.push_back(c.applicable);
    CalibrationOutcome cal = calibrate_or_recall(in, impls, costs, applicable);
    if (cal.chosen >= 0) best = cal.chosen;
    calibration_ = std::move(cal.explain_json);
  }
  impl_ = impls[best];
  chosen_ = impl_->schedule();
  state_ = impl_->prepare(in, &kernel_source_, &build_ms_);
  if (operands_as_given_) direct_ = impl_->direct(in, state_.get());
  plan_ms_ = ms_since(t0);
  ctx_.logger->debug("plan {}: chose {} (estimated {:.0f} ns, kernel {}), inspect {:.3f} ms, plan {:.3f} ms",
                     to_string(op_), to_string(chosen_), candidates_[best].estimated_cost, kernel_source_,
                     inspect_ms_, plan_ms_);
}

Tensor Plan::execute(const OperandList& operands) {
  Tensor out;
  execute(operands, out);
  return out;
}

void Plan::execute(const OperandList& operands, Tensor& out) {
  const CallClock clock = begin_call(operands);
  Workers workers = Workers::for_call(ctx_, options_.threads);
  // The direct route makes the result itself; its checks decide per call, as for
  // execute_into. The schedules' direct routes run only where a result with coordinates has
  // them in the type asked for, so of the general path's conversion only the label of a
  // dense result's type is left to set.
  const bool direct = direct_ && direct_(DirectCall{operands, ctx_, state_.get(), workers, nullptr, &out});
  if (direct) out.index_type = output_index_type(options_.output_index_type, result_index_type_);
  else out = run_general(operands, workers, nullptr);
  end_call(workers, direct, clock);
}

// No result tensor is made here, not even an empty one (zeroing a Tensor was ~50 of a tiny
// call's ~1,200 instructions).
void Plan::execute_into(const OperandList& operands, OutputTarget& target) {
  const CallClock clock = begin_call(operands);
  Workers workers = Workers::for_call(ctx_, options_.threads);
  // Schedules compute in the operands' common coordinate type; the caller may want another,
  // and by default gets i64 when any operand has it.
  target.index_type = output_index_type(options_.output_index_type, result_index_type_);
  const bool direct = direct_ && direct_(DirectCall{operands, ctx_, state_.get(), workers, &target, nullptr});
  if (!direct) run_general(operands, workers, &target);
  end_call(workers, direct, clock);
}

Plan::CallClock Plan::begin_call(const OperandList& operands) const {
  if (operands.size() != signatures_.size())
    fail(SJ_ERR_INVALID_ARGUMENT, "plan for ", to_string(op_), " takes ", signatures_.size(), " operands, got ",
         operands.size());
  for (size_t i = 0; i < operands.size(); ++i)
    if (!signatures_[i].matches(operands[i]))
      fail(SJ_ERR_SHAPE_MISMATCH, "operand ", operand_label(op_, i), " (", operands[i].describe(),
           ") does not match the planned one (shape, format and types must be the same)");
  // Timed: the first executions, then one in kTimeEvery (two reads of the time-stamp counter
  // were ~14% of a call into the caller's buffers on a tiny SpMSpV).
  const int64_t nth = executions_.load(std::memory_order_relaxed);
  const bool timed = nth < kTimedFirst || nth % kTimeEvery == 0;
  return {timed, timed ? CycleClock::now() : 0};
}

void Plan::end_call(const Workers& workers, bool direct, CallClock clock) {
  // Records for explain: relaxed, as explain only reports the latest values (and a seq_cst
  // store is a locked instruction, which on tiny inputs is a measurable part of a call).
  constexpr auto relaxed = std::memory_order_relaxed;
  last_threads_.store(workers.threads, relaxed);
  last_chunks_.store(workers.chunks, relaxed);
  last_partition_.store(workers.basis, relaxed);
  last_direct_.store(direct, relaxed);
  if (clock.timed) {
    const double ms = CycleClock::to_ms(CycleClock::now() - clock.t0);
    if (first_execute_ms_.load(relaxed) < 0) {
      double expected = -1;
      first_execute_ms_.compare_exchange_strong(expected, ms);
    }
    last_execute_ms_.store(ms, relaxed);
  }
  count_add(executions_);
}

Tensor Plan::run_general(const OperandList& operands, Workers& workers, OutputTarget* into) {
  OpRequest req;
  req.op = op_;
  req.options = options_;
  for (const Tensor& t : operands) req.operands.borrow(t);
  // The planned coordinate type, whatever the vote of these operands' entry counts: kernels,
  // kept forms and costs were chosen for it.
  PreparedOperands prepared;
  if (operands_as_given_) {  // nothing to convert or look up (a few hundred instructions a call)
    for (const Tensor& t : operands) prepared.operands.borrow(t);
    prepared.index_type = index_type_;
    prepared.result_index_type = result_index_type_;
    prepared.value_type = value_type_;
  } else {
    prepared = prepare(req, ctx_.allocator, index_type_);
  }
  Tensor out = impl_->run(ExecInputs{req, prepared, ctx_, state_.get(), &workers, into});
  if (!into || !into->written) {
    to_output_index_type(out, options_.output_index_type, prepared.result_index_type, ctx_.allocator);
    if (into) {  // a schedule without a way into the caller's buffers: its result is copied
      const Tensor flat = as_flat_output(out, ctx_.allocator);
      into->layout = output_layout(flat);
      into->layout_known = true;
      copy_output(flat, into->layout, *into->buffers);
      into->written = true;
      out = Tensor{};
    }
  }
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
      .field("recompute_structure", options_.recompute_structure != 0)
      .field("mask_complement", options_.mask_complement != 0)
      .end_object();
  w.key("operands").begin_array();
  for (size_t i = 0; i < stats_.size(); ++i) {
    w.begin_object().field("name", operand_label(op_, i)).field("given", given_[i]);
    if (stats_[i].rows > 0 || signatures_[i].order == 2) {
      w.key("stats");
      write_json(w, stats_[i]);
    } else {
      w.field("nnz", stats_[i].nnz);
    }
    w.end_object();
  }
  w.end_array();
  if (flops_ >= 0) w.field("flops", flops_);
  if (flops_sampled_rows_ > 0) w.field("flops_sampled_rows", flops_sampled_rows_);
  w.key("candidates").begin_array();
  for (auto& c : candidates_)
    w.begin_object().field("schedule", to_string(c.schedule)).field("estimated_cost", c.estimated_cost)
        .field("applicable", c.applicable).field("note", c.note).end_object();
  w.end_array();
  w.field("chosen", to_string(chosen_));
  if (!calibration_.empty()) w.key("calibration").raw(calibration_);
  w.key("kernel").begin_object().field("source", kernel_source_).field("build_ms", build_ms_);
  if (const std::string variant = impl_->describe_state(state_.get()); !variant.empty()) w.field("variant", variant);
  w.field("direct_route", direct_ != nullptr).field("last_execution_direct", last_direct_.load());
  w.end_object();
  w.key("parallel").begin_object()
      .field("threads_requested", options_.threads)
      .field("context_threads", ctx_.threads)
      .field("context_threads_source", ctx_.threads_source)
      .field("threads", last_threads_.load() > 0 ? last_threads_.load() : Workers::for_call(ctx_, options_.threads).threads)
      .field("chunks", last_chunks_.load())
      .field("partition", partition_text())
      .end_object();
  w.key("kernel_cache").raw(cache::KernelCache::global().stats().to_json());
  w.key("timings_ms").begin_object().field("inspect", inspect_ms_).field("plan", plan_ms_)
      .field("first_execute", first_execute_ms_.load())
      .field("last_execute", last_execute_ms_.load())
      .field("executions", executions_.load()).end_object();
  w.end_object();
  return w.str();
}

}  // namespace sj

namespace sj {

std::string Plan::partition_text() const {
  if (executions_.load() == 0) return "not executed yet";
  if (last_chunks_.load() <= 1) {
    if (chosen_ == SJ_SCHEDULE_REFERENCE) return "serial (the reference kernel is always serial)";
    return "serial (one chunk: too little work to split, or one thread)";
  }
  const char* basis = last_partition_.load();
  if (std::string_view(basis).starts_with("static")) return cat("rows split ", basis);
  return cat("rows split by ", basis, ", chunks taken dynamically");
}

std::string Plan::explain_text() const {
  std::string out = cat("plan for ", to_string(op_), " (semiring ", to_string(options_.semiring), ", schedule requested ",
                        to_string(options_.schedule), ")\n");
  for (size_t i = 0; i < stats_.size(); ++i) {
    out += cat("  ", operand_label(op_, i), ": ", given_[i], "\n");
    const MatrixStats& s = stats_[i];
    if (signatures_[i].order != 2) continue;
    char line[256];
    std::snprintf(line, sizeof line,
                  "     rows %lld, row length mean %.2f stddev %.2f p50 %lld p90 %lld p99 %lld max %lld, empty %lld\n",
                  (long long)s.rows, s.row_mean, s.row_stddev, (long long)s.row_p50, (long long)s.row_p90,
                  (long long)s.row_p99, (long long)s.row_max, (long long)s.empty_rows);
    out += line;
    if (s.sampled_rows > 0)
      out += cat("     (all but the mean from a sample of ", s.sampled_rows, " rows)\n");
  }
  if (flops_ >= 0)
    out += cat("  multiplies (flops): ", static_cast<int64_t>(flops_),
               flops_sampled_rows_ > 0 ? cat(" (estimated from ", flops_sampled_rows_, " of A's rows)") : std::string(),
               "\n");
  out += "  candidates:\n";
  for (const Candidate& c : candidates_) {
    char line[512];
    if (c.applicable)
      std::snprintf(line, sizeof line, "    %s %-16s %14.0f ns  %s\n", c.schedule == chosen_ ? "*" : " ",
                    std::string(to_string(c.schedule)).c_str(), c.estimated_cost, c.note.c_str());
    else
      std::snprintf(line, sizeof line, "      %-16s %14s     %s\n", std::string(to_string(c.schedule)).c_str(),
                    "cannot serve", c.note.c_str());
    out += line;
  }
  if (!calibration_.empty()) out += cat("  calibration: ", calibration_, "\n");
  char tail[2048];
  std::snprintf(tail, sizeof tail,
                "  chosen: %s; kernel from %s (%.3f ms to build)\n"
                "  threads: %d (requested %d); context %d (%s); last execution: %lld chunk(s), %s\n"
                "  times: inspect %.3f ms, plan %.3f ms, first execute %.3f ms, last execute %.3f ms, %lld executions\n",
                std::string(to_string(chosen_)).c_str(), kernel_source_.c_str(), build_ms_,
                last_threads_.load() > 0 ? last_threads_.load() : Workers::for_call(ctx_, options_.threads).threads,
                options_.threads, ctx_.threads, ctx_.threads_source.c_str(), static_cast<long long>(last_chunks_.load()),
                partition_text().c_str(), inspect_ms_,
                plan_ms_,
                first_execute_ms_.load(), last_execute_ms_.load(), static_cast<long long>(executions_.load()));
  out += tail;
  if (const std::string variant = impl_->describe_state(state_.get()); !variant.empty())
    out += cat("  kernel variant: ", variant, "\n");
  if (direct_)
    out += cat("  direct route: serial calls into a new result or into caller buffers that hold any result (last execution ",
               last_direct_.load() ? "took it" : "did not", ")\n");
  return out;
}

}  // namespace sj

// A schedule the planner can choose: it says whether and at what estimated cost it can serve
// a request, may prepare per-plan state once (a compiled kernel, a converted operand), and
// runs. Each family of schedules lives in its own file and is listed in kernels/schedules.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "src/context.hpp"
#include "src/inspect.hpp"
#include "src/operation.hpp"
#include "src/output_copy.hpp"
#include "src/semiring.hpp"
#include "src/work_partition.hpp"

namespace sj {

// What the planner knows when it costs a schedule.
struct PlanInputs {
  const OpRequest& req;
  const PreparedOperands& prepared;     // CSR / vector forms of the operands
  const std::vector<MatrixStats>& stats;  // per operand; rows = 0 for vectors
  double flops = -1;                    // SpGEMM multiply count (exact, or estimated on large A: src/inspect.hpp), -1 when not SpGEMM
  const Context& ctx;
};

// A schedule's answer: its estimated cost (model nanoseconds) or why it cannot serve.
struct Costing {
  bool applicable = false;
  double cost = 0;
  std::string note;
  static Costing no(std::string why) { return {false, 0, std::move(why)}; }
  static Costing yes(double cost, std::string note) { return {true, cost, std::move(note)}; }
};

// What a run gets.
struct ExecInputs {
  const OpRequest& req;
  const PreparedOperands& prepared;
  const Context& ctx;
  const void* state;  // what prepare() returned (may be null)
  Workers* workers = nullptr;  // the call's threads (src/work_partition.hpp); null: serial
  // The caller's buffers (sj_plan_execute_into), or null. A schedule may write its result
  // there and return an empty tensor (see OutputTarget); one that ignores it returns the
  // result as usual and the plan copies it.
  OutputTarget* into = nullptr;
};

// The call's workers, or a serial stand-in when the caller gave none.
inline Workers& workers_of(const ExecInputs& in) {
  thread_local Workers serial;
  if (in.workers) return *in.workers;
  serial = Workers::serial();
  return serial;
}

// A call that a schedule serves straight into the caller's buffers (sj_plan_execute_into) or
// into a new result (sj_plan_execute), skipping the general layers (request, prepared
// operands, type dispatch, partition, sink): on a ~100 ns SpMSpV those were most of the call.
// Only for plans whose operands the kernels read as given; the plan has checked their
// signatures.
struct DirectCall {
  const OperandList& operands;
  const Context& ctx;
  const void* state;  // what prepare() returned
  Workers& workers;   // the call's threads; a direct run records its partition basis here
  OutputTarget* into; // the caller's buffers, or null: the result goes to *result
  Tensor* result;     // where a new result goes when `into` is null: empty, or a kept result
                      // that the route replaces whole (init_* or assignment)
};
// Returns false, having written nothing, when this call needs the general path (for example
// work enough for several threads, or buffers that might not hold every result).
using DirectRun = bool (*)(const DirectCall&);

class ScheduleImpl {
 public:
  virtual ~ScheduleImpl() = default;
  virtual sj_op op() const = 0;
  virtual sj_schedule schedule() const = 0;
  virtual Costing cost(const PlanInputs& in) const = 0;
  // Per-plan state, built once when the plan chooses this schedule (e.g. a JIT kernel).
  // `source` receives where it came from ("built-in", "compiled", "memory", "disk").
  virtual std::shared_ptr<const void> prepare(const PlanInputs& in, std::string* source, double* build_ms) const {
    *source = "built-in";
    *build_ms = 0;
    return nullptr;
  }
  virtual Tensor run(const ExecInputs& in) const = 0;
  // The direct route of this plan's executions into caller buffers (see DirectCall), chosen
  // once with the prepared state; null when there is none. Its results must be those of run().
  virtual DirectRun direct(const PlanInputs& /*in*/, const void* /*state*/) const { return nullptr; }
  // What the per-plan state has decided since (e.g. a loop variant chosen by timing the
  // executions), in words for explain; "" when there is nothing to say.
  virtual std::string describe_state(const void* /*state*/) const { return ""; }
};

// Runs f(S{}, I{}, V{}) with the request's semiring and the prepared operands' types.
// (The result's coordinate type is adjusted to options.output_index_type by the plan.)
template <class F> Tensor dispatch_kernel(const ExecInputs& in, F&& f) {
  return with_kernel_types(in.prepared.index_type, in.prepared.value_type, in.req.options.semiring, f);
}

// Every schedule of every operation, the reference ones included.
const std::vector<const ScheduleImpl*>& all_schedules();

// Families, each defined in its own file.
void add_reference_schedules(std::vector<const ScheduleImpl*>& out);
void add_spgemm_schedules(std::vector<const ScheduleImpl*>& out);
void add_spmspv_schedules(std::vector<const ScheduleImpl*>& out);
void add_ewise_schedules(std::vector<const ScheduleImpl*>& out);
void add_coiteration_schedules(std::vector<const ScheduleImpl*>& out);

}  // namespace sj

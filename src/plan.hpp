// A plan: an operation checked, inspected and decided once, then executed on operands of
// the same shapes, formats and types as many times as the caller likes (from any thread).
// The drop-in calls make a plan and execute it once.
#pragma once
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "src/convert.hpp"
#include "src/inspect.hpp"
#include "src/operation.hpp"
#include "src/output_copy.hpp"

#include <memory>

namespace sj {

class ScheduleImpl;
struct DirectCall;
struct Workers;

// What must stay the same between planning and execution.
struct OperandSignature {
  int order = 0;
  std::array<int64_t, kMaxOrder> dims{};
  FormatSpec format;
  IndexType index_type = IndexType::I32;
  ValueType value_type = ValueType::F64;
  bool operator==(const OperandSignature&) const = default;
  static OperandSignature of(const Tensor& t);
  // *this == of(t), without building t's signature (it is checked on every execution).
  bool matches(const Tensor& t) const;
};

// One schedule the planner considered.
struct Candidate {
  sj_schedule schedule = SJ_SCHEDULE_REFERENCE;
  double estimated_cost = 0;  // model units (≈ ns); lower is better
  std::string note;           // why it was costed so, or why it cannot serve
  bool applicable = true;
};

class Plan {
 public:
  // Checks the request (throws sj::Error), inspects the operands and chooses a schedule.
  Plan(const Context& ctx, OpRequest request);

  // Runs on `operands`, which must match the planned signatures (borrowed for the call).
  Tensor execute(const OperandList& operands);
  // The same, the result made in `out`, a handle's tensor filled in place: empty on entry, or a
  // kept result (capi/spare_handle.hpp) that the schedule's route replaces whole.
  void execute(const OperandList& operands, Tensor& out);
  // The same, with the result written into the caller's buffers (`target`); throws, with
  // nothing written to them, when one is too small (target.layout then says what is needed).
  void execute_into(const OperandList& operands, OutputTarget& target);

  // The explain JSON (statistics, candidates, choice, timings).
  std::string explain() const;
  // The same, as readable text.
  std::string explain_text() const;
  // How the last execution split its work among threads, in words.
  std::string partition_text() const;

  sj_schedule schedule() const { return chosen_; }
  sj_op op() const { return op_; }
  const Context& context() const { return ctx_; }

 private:
  // Around every execution: begin_call checks the operands against the planned signatures and
  // starts the clock of a timed execution; end_call records what explain reports.
  struct CallClock {
    bool timed;
    uint64_t t0;
  };
  CallClock begin_call(const OperandList& operands) const;
  void end_call(const Workers& workers, bool direct, CallClock clock);
  // The general path of an execution: the request, the operands in kernel form, the schedule's
  // run, and a copy into the caller's buffers for schedules that return their result.
  Tensor run_general(const OperandList& operands, Workers& workers, OutputTarget* into);

  const Context& ctx_;
  sj_op op_;
  sj_op_options options_;
  std::vector<OperandSignature> signatures_;
  std::vector<Candidate> candidates_;
  sj_schedule chosen_ = SJ_SCHEDULE_REFERENCE;
  const ScheduleImpl* impl_ = nullptr;
  std::shared_ptr<const void> state_;  // the chosen schedule's per-plan state
  std::string kernel_source_ = "built-in";
  double build_ms_ = 0;
  std::string calibration_;        // explain's "calibration" object (JSON), "" when none
  std::vector<MatrixStats> stats_;  // the inspector's findings per operand
  std::vector<std::string> given_;  // each operand as the caller gave it (describe())
  double flops_ = -1;
  int64_t flops_sampled_rows_ = 0;  // 0: flops_ is exact, else estimated from this many of A's rows
  IndexType index_type_ = IndexType::I32;  // the coordinate type planned for: executions keep it
  IndexType result_index_type_ = IndexType::I32;  // prepare()'s findings, fixed by the signatures
  ValueType value_type_ = ValueType::F64;
  bool operands_as_given_ = false;  // prepare() converts and looks up nothing (see the constructor)
  // The schedule's route straight into caller buffers (kernels/schedule.hpp), or null.
  bool (*direct_)(const DirectCall&) = nullptr;
  double inspect_ms_ = 0;
  double plan_ms_ = 0;
  // Executions completed; the first kTimedFirst are timed, then one in kTimeEvery, and explain's
  // "last execute" is the latest timed one.
  static constexpr int64_t kTimedFirst = 8, kTimeEvery = 16;
  std::atomic<int64_t> executions_{0};
  std::atomic<double> last_execute_ms_{0};
  std::atomic<double> first_execute_ms_{-1};
  // What the last execution's parallel loops did (src/work_partition.hpp).
  std::atomic<int> last_threads_{0};
  std::atomic<int64_t> last_chunks_{0};
  std::atomic<const char*> last_partition_{""};
  std::atomic<bool> last_direct_{false};  // the last execution took direct_
};

}  // namespace sj

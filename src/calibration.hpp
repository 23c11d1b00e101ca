// The opt-in calibration mode (sj_op_options::calibrate). The cost models (kernels/*_
// schedules.cpp) are formulas with constants fitted on one machine; where they misjudge an
// input, calibration measures instead: the 2-3 cheapest applicable candidates by model cost
// each run on a sample of the rows (every k-th row of A, and of M for masked SpGEMM; whole
// operands for the element-wise and SpMV operations, whose rows are not separable from B's),
// best of two timed runs after a warm-up, and the fastest is chosen.
//
// The decision is remembered per STATISTICS BUCKET, so later plans on similar operands (other
// matrices, other processes) skip the measurement: the bucket is the operation, semiring,
// value and index types, transpose/dense-output flags, and per operand log2-rounded rows,
// columns and nnz, the mean row length in half-log2 steps and the spread (stddev / mean) in
// log2 steps. Decisions live in a process-wide map and in the context's persistent store
// (cache/persistent_store.hpp, KeyKind::Plan with the bucket in `detail`; payload: the
// schedule's name). Every plan with schedule auto consults the process-wide map; plans with
// calibrate set also the folder (so a plain plan never opens or creates it) and measure only
// when neither knows the bucket. A remembered schedule that cannot serve is ignored.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "src/inspect.hpp"
#include "src/operation.hpp"

namespace sj {

class ScheduleImpl;
struct PlanInputs;

struct CalibrationOutcome {
  int chosen = -1;               // index into the candidate list, -1: keep the model's choice
  std::string explain_json;      // {"bucket":..., "source":..., ...}; "" when nothing applied
};

// `impls`/`costs`/`applicable`: the op's schedules with their model costs (Plan's lists).
// Returns which one to use. Measures only when req.options.calibrate is set and no decision
// is remembered for the bucket.
CalibrationOutcome calibrate_or_recall(const PlanInputs& in, const std::vector<const ScheduleImpl*>& impls,
                                       const std::vector<double>& costs, const std::vector<bool>& applicable);

// Forgets the process-wide decisions (tests).
void forget_calibrations_for_testing();

}  // namespace sj

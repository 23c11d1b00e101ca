// What a plan keeps between its executions of a Gustavson SpGEMM, and the execution that uses
// it: the dense accumulator's row loop, timed over the first executions (kernels/timed_choice.hpp),
// and the product's structure, kept so that later executions on operands of the same structure
// compute only the values (kernels/spgemm_structure.hpp). Shared by the SpGEMM schedule
// (kernels/spgemm_schedules.cpp) and index-notation plans whose term is a SpGEMM
// (src/einsum_planner.cpp), so both run the same way.
#pragma once
#include <string>

#include "kernels/spgemm_gustavson.hpp"
#include "kernels/spgemm_structure.hpp"
#include "kernels/timed_choice.hpp"

namespace sj {

// Members are mutable: a plan's concurrent executions share the state.
struct GustavsonPlanState {
  TimedChoice loop;
  mutable KeptStructureSlot kept;
};

// C = A*B (A, B CSR, same index and value type) for a plan holding `st` (null: a one-off
// product, which keeps nothing and runs the branchy row loop). With `keep_structure` (a sparse
// result), a kept structure that fits A and B gives the values only; otherwise the whole
// product is computed, and from the second such execution on its structure is kept.
Tensor run_gustavson_plan(const Tensor& A, const Tensor& B, sj_semiring semiring, bool dense_output,
                          SpgemmAccumulator kind, bool keep_structure, const GustavsonPlanState* st,
                          const Allocator& alloc, Workers& w);

// For explain: the row loop's choice (dense accumulator) and the kept structure, "" if none.
std::string describe_gustavson_plan_state(const GustavsonPlanState& st, SpgemmAccumulator kind);

}  // namespace sj

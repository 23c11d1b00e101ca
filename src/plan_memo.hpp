// Drop-in calls that recognise repeated operands. A drop-in call (sj_spgemm, ...) is a plan
// made and executed once; planning costs far more than the kernel on tiny inputs (inspection,
// costing every schedule, kernel lookup). The plan of a drop-in call is therefore kept with
// the first operand's handle (its DerivedForms), keyed by the context, the operation, the
// options and the identity of the other operands' handles; a later call with the same key
// executes that plan. Sound because a handle's arrays do not change while it lives (the
// zero-copy rule), so the statistics the plan was chosen on still hold; a plan checks the
// operands' shapes, formats and types on every execution anyway.
//
// The second call on the same operands plans once more and keeps that plan: cost models that
// depend on whether an operand is used repeatedly (SpMSpV's CSC copy, amortised over later
// calls) see the repetition, as they did before plans were kept.
#pragma once
#include <memory>
#include <vector>

#include "src/plan.hpp"

namespace sj {

// The plan for `op` on these operands: kept from an earlier call, or made (and kept) now.
// `options` must be normalised (capi's read_options): equal options are equal bytes.
std::shared_ptr<Plan> plan_for_dropin(const Context& ctx, sj_op op, const OperandList& operands,
                                      const sj_op_options& options);

// How many drop-in calls in this process executed a kept plan (for tests and benchmarks).
int64_t dropin_plan_reuses();

}  // namespace sj

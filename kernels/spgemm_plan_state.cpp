// See kernels/spgemm_plan_state.hpp.
#include "kernels/spgemm_plan_state.hpp"

#include "src/error.hpp"

namespace sj {
namespace {

std::string describe_kept(const KeptStructureSlot& k) {
  const auto s = k.current();
  const int64_t only = k.values_only.load(std::memory_order_relaxed);
  if (!s) return "";
  return cat("structure kept from execution ", s->kept_at, " that computed it (", s->pattern.nnz(), " entries, ",
             s->bytes() >> 10, " KiB held); ", only,
             " execution(s) on operands of the same structure computed only the values");
}

std::string describe_loop(const TimedChoice& loop) {
  const TimedChoice::Snapshot s = loop.snapshot();
  static constexpr const char* kLoop[2] = {"branchy", "branch-free"};
  if (s.settled >= 0 && s.trials_done == TimedChoice::kTrials)
    return cat("dense accumulator row loop: ", kLoop[s.settled], ", the faster over ", TimedChoice::kTrials,
               " timed executions (fastest trial: branchy ", s.ticks[0], " ticks, branch-free ", s.ticks[1], ")");
  if (s.settled >= 0 && s.reason == kRowLoopRepeatedColumns)
    return cat("dense accumulator row loop: ", kLoop[s.settled], " (the first execution found >= ",
               kBranchyMultipliesPerEntry,
               " multiplies per result entry: a column's repeats are predictable, and the branchy loop does "
               "less work; not timed)");
  if (s.settled >= 0)
    return cat("dense accumulator row loop: ", kLoop[s.settled], " (product under ", kTimedRowLoopMinFlops,
               " multiplies: too small to time the loops)");
  if (s.trials_done == 0)
    return cat("dense accumulator row loop: branchy until timed (the first execution warms up, the next ",
               TimedChoice::kTrials, " time both loops)");
  return cat("dense accumulator row loop: being timed, ", s.trials_done, " of ", TimedChoice::kTrials,
             " timed executions done");
}

}  // namespace

Tensor run_gustavson_plan(const Tensor& A, const Tensor& B, sj_semiring semiring, bool dense_output,
                          SpgemmAccumulator kind, bool keep_structure, const GustavsonPlanState* st,
                          const Allocator& alloc, Workers& w) {
  const bool keeps = st && !dense_output && keep_structure;
  if (keeps) {
    if (auto s = st->kept.match(A, B)) {
      st->kept.values_only.fetch_add(1, std::memory_order_relaxed);
      return spgemm_values_only(A, B, *s, semiring, alloc, w);
    }
  }
  Tensor C = spgemm_gustavson(A, B, semiring, dense_output, kind, alloc, w,
                              st && kind == SpgemmAccumulator::Dense ? &st->loop : nullptr);
  if (keeps) {
    const int64_t n = st->kept.full.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n >= 2) {
      try {
        if (auto s = keep_spgemm_structure(A, B, C, alloc, n)) st->kept.keep(std::move(s));
      } catch (const Error&) {  // out of memory for the copies: the result stands, nothing is kept
      }
    }
  }
  return C;
}

std::string describe_gustavson_plan_state(const GustavsonPlanState& st, SpgemmAccumulator kind) {
  std::string kept = describe_kept(st.kept);
  if (kind == SpgemmAccumulator::Hash) return kept;
  std::string loop = describe_loop(st.loop);
  return kept.empty() ? loop : loop.empty() ? kept : cat(loop, "; ", kept);
}

}  // namespace sj

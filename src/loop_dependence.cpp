#include "src/loop_dependence.hpp"

#include <algorithm>

#include "src/error.hpp"

namespace sj::einsum {

LoopParallelism outer_loop_parallelism(const Expression& e, const LoopNest& nest) {
  LoopParallelism r;
  if (nest.loops.empty()) {
    r.reason = "no loop to split (every factor is a scalar)";
    return r;
  }
  const Loop& lp = nest.loops[0];
  r.index = lp.index;
  const std::string v = e.index_names[lp.index];
  const auto& out = nest.out_indices;
  const auto at = std::find(out.begin(), out.end(), lp.index);
  if (at == out.end()) {
    r.level = "sibling";
    r.reason = out.empty() ? cat("sibling conflict: ", v, " is a reduction into a scalar output; every iteration adds into the same entry")
                           : cat("sibling conflict: ", v, " is a reduction index (not in the output); every iteration adds into the same output entries");
    return r;
  }
  const int level = static_cast<int>(at - out.begin());
  if (nest.mode == OutputMode::Dense) {
    r.parallel = true;
    r.level = "node";
    r.reason = cat("node: ", v, " is output level ", level, " of a dense ", nest.presence ? "temporary" : "output",
                   "; positions are stable at every level, so iterations with different ", v,
                   " write disjoint positions");
    return r;
  }
  // Sparse output written in order: every level above `level` must be fixed outside the loop.
  // The outermost loop has nothing outside it, so only level 0 qualifies.
  if (level > 0) {
    r.level = "cousin";
    r.reason = cat("cousin conflict: ", v, " is output level ", level, " below the unbound ", e.index_names[out[0]],
                   " (level 0); iterations write interleaved under the same parents, so per-chunk pieces cannot be joined in order");
    return r;
  }
  r.parallel = true;
  r.level = "node";
  r.reason = cat("node: ", v, " is output level 0; each iteration owns a disjoint subtree of the sparse output, and chunks of ", v,
                 " write pieces joined in order by a prefix sum",
                 nest.mode == OutputMode::Where ? " (the where workspace is per thread)" : "");
  return r;
}

}  // namespace sj::einsum

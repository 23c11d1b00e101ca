// Whether the outermost loop of a term's loop nest may run in parallel: WingSpan's level
// dependence test. Each iteration of the loop binds one coordinate of its index; the test asks,
// for every level of the output, what iterations with different coordinates write there:
//
//   node     the loop index is the output index of level l and every level above l is fixed
//            outside the loop (for the outermost loop: l = 0). Each iteration owns a disjoint
//            subtree of the output, and the subtrees follow each other in the output's order:
//            chunks of the coordinate range can each write their own piece, joined in order.
//   sibling  the loop index is not an output index (a reduction): every iteration adds into
//            the same output entries. Parallel chunks would race, or re-associate the sum.
//   cousin   the loop index is the output index of a level below one that is still unbound:
//            different iterations write under the same parents, interleaved, so per-chunk
//            pieces cannot be concatenated (a sparse output's positions depend on all of them).
//
// A dense output (or a sparse one computed through a dense array) has stable positions at
// every level: any output index gives disjoint positions, so only the sibling conflict
// remains. A `where` workspace lies inside the loop and becomes per-thread when parallel.
#pragma once
#include <string>

#include "src/einsum_parser.hpp"
#include "src/loop_ir.hpp"

namespace sj::einsum {

struct LoopParallelism {
  bool parallel = false;
  int loop = 0;           // the loop tested (the outermost)
  int index = -1;         // its index id (-1: the nest has no loop)
  std::string level;      // "node", "sibling", "cousin", "" (no loop)
  std::string reason;     // one sentence for explain
};

// The verdict for the outermost loop of `nest` (its mode says whether the output is written
// into a dense array, mode Dense, or emitted in order to a sparse one, Emit / Where).
LoopParallelism outer_loop_parallelism(const Expression& e, const LoopNest& nest);

}  // namespace sj::einsum

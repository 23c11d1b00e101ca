// The iteration graph of one product term: each tensor's access constraint is the order in
// which its levels bind indices (its level list read through its access). A loop order must
// contain every constraint as a subsequence; the orders offered are the shortest common
// supersequences (SparseConflicts §4.1), where an index may appear twice: its first
// occurrence iterates the tensors bound there (forsome), a later one searches the others
// (forsame). With a sparse output its level order joins the constraints, so output indices
// come first; the classification below says how the output is then written.
#pragma once
#include <string>
#include <vector>

#include "src/convert.hpp"
#include "src/einsum_parser.hpp"

namespace sj::einsum {

// How a loop order writes the term's output.
enum class OutputMode {
  Dense,   // accumulate into a dense array (any order)
  Emit,    // sparse: each output coordinate is complete before any reduction index, emitted once, in order
  Where,   // sparse: all but the last output index come first; the last one trails a reduction,
           // so a 1-D dense workspace over it is filled (producer) then drained in order (consumer)
};

struct IterationGraph {
  // constraints[f] = the index ids factor f binds, in its level order.
  std::vector<std::vector<int>> constraints;
  std::vector<int> output_levels;  // output index ids in the output's level order
  bool sparse_output = false;

  // Every shortest common supersequence of `seqs` (at most `limit`), in a stable order.
  static std::vector<std::vector<int>> shortest_supersequences(const std::vector<std::vector<int>>& seqs,
                                                               size_t limit = 48);
  // Candidate loop orders: supersequences of the inputs' constraints, and (sparse output) of
  // those plus the output's order; each usable one once.
  std::vector<std::vector<int>> loop_orders() const;
  // Whether `order` contains each constraint as a subsequence (every factor can bind its levels).
  bool admits(const std::vector<int>& order) const;
  // How `order` would write the output; false when it cannot write a sparse output in order.
  bool output_mode(const std::vector<int>& order, OutputMode* mode) const;

  // "B: i -> j;  C: j -> i;  A (out): i -> j" for explain.
  std::string describe(const Expression& e, const Term& t) const;
};

// "i,j,i" for an order.
std::string order_text(const Expression& e, const std::vector<int>& order);

}  // namespace sj::einsum

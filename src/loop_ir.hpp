// The loop-nest IR of one product term, built from a loop order (src/iteration_graph.hpp):
//   forall  v   — v appears once in the order: iterate (merge) the compressed levels bound here,
//                 locate the dense ones;
//   forsome v   — the first of several occurrences of v: the leader iterates the subset of
//                 tensors that bind v here;
//   forsame v   — a later occurrence: v is bound; the followers search it in their segments
//                 (binary or galloping) and skip the body where it is absent;
//   where       — sparse output whose last index trails a reduction: a 1-D dense workspace
//                 over that index is filled by the producer and drained in order by the consumer.
// The LLVM backend (jit/llvm_backend.hpp) lowers it; explain prints it.
#pragma once
#include <string>
#include <vector>

#include "src/convert.hpp"
#include "src/einsum_parser.hpp"
#include "src/iteration_graph.hpp"

namespace sj::einsum {

struct LevelRef {
  int factor = 0;  // position of the factor in the term
  int level = 0;
};

enum class LoopKind { Forall, Forsome, Forsame };
enum class SearchKind { Binary, Galloping };

struct Loop {
  LoopKind kind = LoopKind::Forall;
  int index = 0;                  // index id
  std::vector<LevelRef> iterate;  // compressed / singleton levels, coiterated (intersection)
  std::vector<LevelRef> locate;   // dense levels: position = parent * dim + coordinate
  std::vector<LevelRef> search;   // forsame: compressed / singleton levels searched
  SearchKind search_kind = SearchKind::Binary;
};

struct LoopNest {
  std::vector<Loop> loops;
  std::vector<FormatSpec> factor_formats;  // per factor, the layout the kernel reads
  std::vector<int> factor_operand;         // per factor, the operand it reads
  OutputMode mode = OutputMode::Dense;
  std::vector<int> out_indices;            // output index ids in the output's level order
  int emit_after = -1;  // Emit: the loop whose body ends by emitting the finished coordinate (-1: once, at the top)
  int where_at = -1;    // Where: the producer is loops[where_at..]; the workspace is over out_indices.back()
  bool presence = false;  // Dense: also record which positions received a product (for a sparse result)

  // Builds the nest of `term` for `order` (which the graph admits) and output mode `mode`.
  static LoopNest build(const Expression& e, const Term& term, const std::vector<FormatSpec>& formats,
                        const std::vector<int>& out_indices, const std::vector<int>& order, OutputMode mode,
                        SearchKind search);
  bool has_search() const;
  // Indented text, one loop per line, e.g.
  //   forall i: locate B.0
  //     forall j: iterate B.1 | locate C.0
  //       forsame i: search C.1 (binary)
  //         A(i,j) <- B * C   [emit]
  std::string print(const Expression& e, const Term& term) const;
  // One line for cache keys (loops, kinds, formats, mode).
  std::string signature(const Expression& e, const Term& term) const;
};

}  // namespace sj::einsum

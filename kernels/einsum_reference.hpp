// The reference evaluator of an index-notation expression: a join of the operands' stored
// entries (hash join on the indices the factors share), written for clarity and independent
// of formats, loop orders and code generation. Tests compare every generated kernel with it;
// the einsum plan runs it when LLVM compilation fails (a failure to JIT is never a failure to
// compute) or when the caller forces the `reference` schedule.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "src/convert.hpp"
#include "src/einsum_parser.hpp"

namespace sj::einsum {

// Output entries, keyed by the output's coordinates in access (mode) order. An entry exists
// where at least one product was formed (structural), as in the drop-in operations.
using ReferenceResult = std::map<std::vector<int64_t>, double>;

// One term's join, prepared once (each factor's entries grouped by the indices bound before
// it) and run for the whole output or for the entries whose coordinate of one output index lies
// in [lo, hi): the products of an entry are formed and added in the same order either way, so
// runs over disjoint ranges (in parallel: run is const and touches no shared state) give the
// entries of one whole run.
class ReferenceJoin {
 public:
  ReferenceJoin(const Expression& e, int term, const std::vector<Tensor>& operands, sj_semiring s);
  ~ReferenceJoin();
  // index < 0: every entry; else only those with lo <= coordinate of index `index` < hi.
  void run(ReferenceResult& into, int index = -1, int64_t lo = 0, int64_t hi = 0) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Evaluates term `term` of `e` (all terms when term < 0) over `operands` (in e.operands
// order, any formats) with the semiring's add and multiply, products folded left to right.
// `into` accumulates (with the semiring's add) so terms can be summed.
void evaluate_reference(const Expression& e, int term, const std::vector<Tensor>& operands, sj_semiring s,
                        ReferenceResult& into);

// The result as a tensor of layout `spec` (all-dense specs give every position, the
// semiring's zero where nothing was formed) with dimensions `dims` in mode order.
Tensor reference_to_tensor(const ReferenceResult& r, const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims,
                           IndexType it, ValueType vt, sj_semiring s, const Allocator& alloc);

// The semiring's additive identity as a double.
double semiring_zero(sj_semiring s);
double semiring_add(sj_semiring s, double a, double b);
double semiring_mul(sj_semiring s, double a, double b);

}  // namespace sj::einsum

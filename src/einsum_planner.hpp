// The plan of an index-notation call: parse, check operands and formats, build each term's
// iteration graph, cost the alternatives from statistics, choose, compile the chosen loop nest
// with the LLVM backend (or fall back to the reference evaluator), then execute as often as
// the caller likes. Alternatives per term (DESIGN.md schedule names):
//   inner      plain coiteration order: a loop order without repeated indices
//   search     fused search-based: a shortest common supersequence with forsome / forsame
//   fused      a sparse output written through a `where` workspace (e.g. all-CSR SpGEMM)
//   transpose  convert the conflicting operand(s) to the loop order's level order, then
//              coiterate (the conversion is kept with the operand's handle)
//   reference  the reference evaluator (kernels/einsum_reference.hpp)
// Execution splits a term's outermost loop among the context's threads (sj_op_options::threads)
// where the level dependence test (src/loop_dependence.hpp) proves it safe: chunks of its
// coordinate range by estimated work, taken dynamically; a dense output is written in place,
// a sparse one as per-chunk pieces joined in order. Every output entry is computed within one
// chunk exactly as in the serial loop, so results are bit-identical for any thread count.
// Terms of a sum run one after the other, each split on its own; a term of the reference
// evaluator splits its join by ranges of an output index (kernels/einsum_reference.hpp).
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/einsum_output.hpp"
#include "src/context.hpp"
#include "src/convert.hpp"
#include "src/einsum_parser.hpp"
#include "src/iteration_graph.hpp"
#include "src/loop_dependence.hpp"
#include "src/loop_ir.hpp"
#include "src/work_partition.hpp"

namespace sj {
struct GustavsonPlanState;
enum class SpgemmAccumulator;
}
namespace sj::jit {
class EinsumKernel;
}

namespace sj::einsum {

// Expert knobs beyond sj_op_options (CLI --order, the benchmarks' scalar-only build).
struct EinsumTuning {
  std::vector<std::string> loop_order;  // index names; empty = the planner's choice
  bool scalar_only = false;             // compile without vectorisation for a baseline CPU
};

struct EinsumCandidate {
  sj_schedule schedule = SJ_SCHEDULE_INNER;
  std::vector<int> order;
  OutputMode mode = OutputMode::Dense;
  std::vector<FormatSpec> formats;   // per factor, the layout the kernel reads
  std::vector<bool> converted;       // per factor: converted from the operand's layout
  SearchKind search = SearchKind::Binary;
  double cost = 0;
  std::string note;
};

struct TermPlan {
  IterationGraph graph;
  std::vector<EinsumCandidate> candidates;
  int chosen = -1;
  LoopNest nest;
  LoopParallelism parallel;  // whether the outermost loop is split among threads, and why
  std::shared_ptr<const jit::EinsumKernel> kernel;  // null: the reference evaluator runs
  std::string kernel_source;  // "compiled", "memory", "disk", "reference", "built-in"
  double compile_ms = 0;
  std::string jit_error;
  // A SpGEMM term (EinsumPlan::spgemm_shape) run by the built-in Gustavson kernel, as
  // sj_spgemm runs it, instead of a generated loop nest: its plan state (row loop, kept
  // structure), the accumulator, and which factor is the left operand in level order.
  std::shared_ptr<GustavsonPlanState> spgemm;
  SpgemmAccumulator spgemm_kind{};
  int spgemm_left = 0;
};

// The schedule a term runs: its chosen candidate's, the built-in SpGEMM's, or "reference".
std::string chosen_schedule_name(const TermPlan& tp);

class EinsumPlan {
 public:
  // formats: empty or one per operand (nullopt = the tensor's own); output_format nullopt =
  // the planner's (dense when every input is dense or the output is a scalar; else CSR for
  // matrices, a sparse vector, CSF for 3-D). Throws sj::Error.
  EinsumPlan(const Context& ctx, std::string_view expression, const std::vector<Tensor>& operands,
             const std::vector<std::optional<std::string>>& formats, const std::optional<std::string>& output_format,
             const sj_op_options& options, const EinsumTuning& tuning = {});
  ~EinsumPlan();

  // Runs on operands with the planned shapes, formats and types.
  Tensor execute(const std::vector<Tensor>& operands);

  std::string explain() const;       // JSON
  std::string explain_text() const;  // readable
  const Expression& expression() const { return expr_; }
  const std::vector<TermPlan>& terms() const { return terms_; }
  size_t operand_count() const { return expr_.operands.size(); }

 private:
  void check_operands(const std::vector<Tensor>& operands, bool planning);
  std::vector<EinsumCandidate> candidates_for(const Term& term, const IterationGraph& g, const std::vector<Tensor>& ops);
  double simulate(const Term& term, const EinsumCandidate& c, const std::vector<Tensor>& ops) const;
  Tensor factor_tensor(const Tensor& operand, const FormatSpec& spec) const;
  // Whether term t is a matrix product the built-in SpGEMM serves: two factors stored as CSR
  // or CSC (a dense then a compressed level) whose level orders are (p, q) and (q, r), into a
  // sparse output stored (p, r), p q r distinct; *left = the (p, q) factor. Its level arrays
  // are then CSR arrays of C's level order: C = L * R.
  bool spgemm_shape(size_t t, int* left) const;
  // Term t's result by the built-in SpGEMM, in the output's layout.
  Tensor run_spgemm_term(size_t t, const std::vector<Tensor>& operands, Workers& workers) const;
  LoopParallelism reference_parallelism() const;
  // How the terms of a sum into a sparse output are added (execute runs it, explain names it):
  // Rows, each term's result summed row by row in its value type (sum_term_results); Lists,
  // the terms' sorted entries merged with sums in double, rounded once (join_sorted_terms);
  // Map, the reference's map of coordinates; None, one term or a dense output.
  enum class SumPath { None, Rows, Lists, Map };
  SumPath sum_path() const;
  // An assembler of the whole output (every coordinate of its first level), from the stock.
  std::unique_ptr<StreamingAssembler> whole_output_assembler() const;
  void run_reference(int term, const std::vector<Tensor>& operands, Workers& workers,
                     std::map<std::vector<int64_t>, double>& ref) const;

  const Context& ctx_;
  Expression expr_;
  sj_op_options options_;
  EinsumTuning tuning_;
  std::vector<FormatSpec> operand_formats_;  // per operand, the layout asked for (or its own)
  std::vector<std::string> given_;           // describe() of each operand when planned
  std::vector<int64_t> index_dims_;          // per index id
  FormatSpec output_format_;
  std::array<int64_t, kMaxOrder> output_dims_{};
  bool sparse_output_ = false;
  bool dense_temp_ = false;   // sparse output computed through a dense array + presence flags
  IndexType index_type_ = IndexType::I32;         // what kernels run in
  IndexType result_index_type_ = IndexType::I32;  // the result's, by default
  ValueType value_type_ = ValueType::F64;
  std::vector<TermPlan> terms_;
  double plan_ms_ = 0;
  std::atomic<int64_t> executions_{0};
  std::atomic<int> last_threads_{0};
  std::atomic<int64_t> last_chunks_{0};
  std::atomic<double> first_execute_ms_{-1}, last_execute_ms_{0};
  mutable AssemblerStock assemblers_;  // sparse-output assemblers kept between executions
};

}  // namespace sj::einsum

// One requested operation: its kind, operands and options, checked once (arity, shapes,
// value types, semiring) and then prepared into the layouts kernels take (CSR rows, sparse or
// dense vectors, one index type), whatever formats the caller used.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "src/context.hpp"
#include "src/operand_list.hpp"
#include "src/tensor.hpp"

namespace sj {

struct OpRequest {
  sj_op op = SJ_OP_SPGEMM;
  OperandList operands;  // borrowed from the caller's handles for the call
  sj_op_options options{};
  // An explicit plan (sj_plan_create): the caller means to execute it many times, so a
  // conversion that is kept on an operand's handle (B^T, a CSC copy) is costed amortised from
  // the start, as drop-in calls do once an operand repeats.
  bool repeated = false;
};

// Defaults of sj_op_options (what sj_op_options_init writes).
sj_op_options default_options();

// The option values every operation and index-notation call refuses (unknown enums, a phase
// mask or vector width that is not one, an output index type that is not one).
void check_options(const sj_op_options& options);
// Throws SJ_ERR_* with a message naming the operand at fault.
void check_request(const OpRequest& req);

// The shape of the result: dims and order.
struct ResultShape {
  int order = 2;
  int64_t dims[2] = {0, 0};
};
ResultShape result_shape(const OpRequest& req);

// Operands in kernel layouts: matrices as CSR (transposes applied), x as a sparse or dense
// vector, all with one index type (compute_index_type), value type unchanged.
struct PreparedOperands {
  OperandList operands;  // same order as the request; borrowed where no conversion was needed
  IndexType index_type = IndexType::I32;
  // The result's coordinate type when the caller asks for none (output_index_type -1): i64 if
  // any operand uses it, as before kernels could run in i32 for mixed operands.
  IndexType result_index_type = IndexType::I32;
  ValueType value_type = ValueType::F64;
  // Element-wise multiply with transpose_b: B^T is not built here (the search schedule never
  // needs it); operands[1] is B itself in CSR and the schedule that merges with B^T makes it
  // (kept on B's handle). False when B^T costs nothing (B given as CSC).
  bool b_transpose_deferred = false;
};
// `index_type`: the coordinate type to compute in, when already chosen (a plan executes in the
// type it was planned for, and a calibration sample in the full call's); else compute_index_type.
PreparedOperands prepare(const OpRequest& req, const Allocator& alloc,
                         std::optional<IndexType> index_type = std::nullopt);

// The coordinate type kernels run in for these operands: i64 when a dimension is 2^31 or more
// (kernels count rows and columns in the coordinate type too); otherwise the type of the operand that stores the most coordinates, so that mixed
// operands convert the smaller ones (an int32 matrix times an int64 vector converts x, O(nnz x)
// per call, not a copy of A: 55 ms for 2M entries on a first call).
template <class Operands>
IndexType compute_index_type(const Operands& operands) {
  int64_t stored[2] = {0, 0};  // coordinates stored in i32 / i64 operands
  for (const Tensor& t : operands) {
    for (int m = 0; m < t.order; ++m)
      if (t.dims[m] > std::numeric_limits<int32_t>::max()) return IndexType::I64;
    for (int l = 0; l < t.order; ++l)
      if (t.levels[l].kind != LevelKind::Dense) stored[t.index_type == IndexType::I64 ? 1 : 0] += t.level_entries(l);
  }
  return stored[1] > stored[0] ? IndexType::I64 : IndexType::I32;
}

// The two coordinate types of a call: `result`, i64 when an operand stores i64 coordinates
// (the default output type), and `compute`, what kernels run in: i32
// when every operand is i32, else the vote of compute_index_type. A dense operand stores no
// coordinates, so its type (a label: sj_tensor_create_dense gives i64) does not count: an
// einsum y(i) = A(i,k) * x(k) of an i32 A and a dense x returned an i64 y, converted on
// every execution.
struct IndexTypes {
  IndexType compute = IndexType::I32, result = IndexType::I32;
};
template <class Operands>
IndexTypes index_types_of(const Operands& operands) {
  IndexTypes types;
  for (const Tensor& t : operands)
    if (t.index_type == IndexType::I64 && stores_coordinates(t)) types.result = IndexType::I64;
  if (types.result == IndexType::I64) types.compute = compute_index_type(operands);
  return types;
}

// The B operand of a schedule that merges with B^T: the deferred B^T made (kept on B's
// handle), else the prepared B.
Tensor merge_operand_b(const OpRequest& req, const PreparedOperands& p, const Allocator& alloc);
// The prepared operands with a deferred B^T made (as above). A copy of `p` when nothing was
// deferred.
PreparedOperands with_transposed_b(const OpRequest& req, const PreparedOperands& p, const Allocator& alloc);

// The CSR form of `t`, or of its transpose (zero-copy when t is CSC and types agree).
Tensor as_csr(const Tensor& t, bool transposed, IndexType it, const Allocator& alloc);

}  // namespace sj

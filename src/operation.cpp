#include "src/operation.hpp"

#include <cstring>

#include "src/convert.hpp"
#include "src/derived_forms.hpp"
#include "src/error.hpp"

namespace sj {

sj_op_options default_options() {
  sj_op_options o{};
  o.struct_size = sizeof(sj_op_options);
  o.semiring = SJ_SEMIRING_PLUS_TIMES;
  o.schedule = SJ_SCHEDULE_AUTO;
  o.isa = SJ_ISA_AUTO;
  o.vector_width = 0;
  o.phases[0] = '\0';
  o.threads = 0;
  o.dense_output = 0;
  o.transpose_a = 0;
  o.transpose_b = 0;
  o.output_index_type = -1;
  o.method = SJ_METHOD_AUTO;
  o.calibrate = 0;
  o.recompute_structure = 0;
  o.mask_complement = 0;
  return o;
}

namespace {

const char* operand_name(sj_op op, size_t i) {
  switch (op) {
    case SJ_OP_SPGEMM_MASKED: return i == 0 ? "M" : i == 1 ? "A" : "B";
    case SJ_OP_SPMSPV:
    case SJ_OP_SPMV: return i == 0 ? "A" : "x";
    default: return i == 0 ? "A" : "B";
  }
}

size_t arity(sj_op op) {
  switch (op) {
    case SJ_OP_SPGEMM_MASKED: return 3;
    case SJ_OP_TRANSPOSE: return 1;
    default: return 2;
  }
}

// Rows and columns of operand i as the operation sees it (transpose flags applied).
std::pair<int64_t, int64_t> matrix_shape(const OpRequest& r, size_t i) {
  const Tensor& t = r.operands[i];
  bool tr = (i == 0 && r.op != SJ_OP_SPGEMM_MASKED && r.options.transpose_a) ||
            (r.op == SJ_OP_SPGEMM_MASKED && i == 1 && r.options.transpose_a) ||
            (r.op == SJ_OP_SPGEMM_MASKED && i == 2 && r.options.transpose_b) ||
            (r.op != SJ_OP_SPGEMM_MASKED && i == 1 && r.options.transpose_b);
  return tr ? std::pair{t.dims[1], t.dims[0]} : std::pair{t.dims[0], t.dims[1]};
}

}  // namespace

void check_options(const sj_op_options& o) {
  if (o.semiring < SJ_SEMIRING_PLUS_TIMES || o.semiring > SJ_SEMIRING_PLUS_PAIR)
    fail(SJ_ERR_INVALID_ARGUMENT, "unknown semiring ", static_cast<int>(o.semiring));
  if (o.schedule < SJ_SCHEDULE_AUTO || o.schedule > SJ_SCHEDULE_FUSED)
    fail(SJ_ERR_INVALID_ARGUMENT, "unknown schedule ", static_cast<int>(o.schedule));
  if (o.isa < SJ_ISA_AUTO || o.isa > SJ_ISA_SCALAR) fail(SJ_ERR_INVALID_ARGUMENT, "unknown ISA ", static_cast<int>(o.isa));
  if (o.method < SJ_METHOD_AUTO || o.method > SJ_METHOD_NATIVE)
    fail(SJ_ERR_INVALID_ARGUMENT, "unknown coiteration method ", static_cast<int>(o.method));
  if (o.phases[0] != '\0') {
    const char* p = o.phases;
    bool ok = std::strlen(p) == 3;
    for (int i = 0; ok && i < 3; ++i) ok = p[i] == '0' || p[i] == '1';
    if (!ok) fail(SJ_ERR_INVALID_ARGUMENT, "phase mask '", p, "' must be three characters of 0/1 (phases 3,2,1), e.g. 001");
  }
  if (o.vector_width != 0 && o.vector_width != 4 && o.vector_width != 8 && o.vector_width != 16)
    fail(SJ_ERR_INVALID_ARGUMENT, "vector width ", o.vector_width, " is not 4, 8 or 16");
  if (o.output_index_type != -1 && o.output_index_type != SJ_INDEX_INT32 && o.output_index_type != SJ_INDEX_INT64)
    fail(SJ_ERR_INVALID_ARGUMENT, "output_index_type must be -1, SJ_INDEX_INT32 or SJ_INDEX_INT64");
}

void check_request(const OpRequest& r) {
  const sj_op op = r.op;
  if (op < SJ_OP_SPGEMM || op > SJ_OP_TRANSPOSE) fail(SJ_ERR_INVALID_ARGUMENT, "unknown operation ", static_cast<int>(op));
  if (r.operands.size() != arity(op))
    fail(SJ_ERR_INVALID_ARGUMENT, to_string(op), " takes ", arity(op), " operands, got ", r.operands.size());
  check_options(r.options);
  const sj_semiring s = r.options.semiring;

  // Orders.
  for (size_t i = 0; i < r.operands.size(); ++i) {
    const Tensor& t = r.operands[i];
    bool vector = (op == SJ_OP_SPMSPV || op == SJ_OP_SPMV) && i == 1;
    int want = vector ? 1 : 2;
    if (t.order != want)
      fail(SJ_ERR_FORMAT, to_string(op), ": operand ", operand_name(op, i), " must be a ",
           vector ? "vector" : "matrix", ", got ", t.describe());
  }
  if (op != SJ_OP_SPGEMM_MASKED && r.options.mask_complement)
    fail(SJ_ERR_INVALID_ARGUMENT, to_string(op), ": mask_complement applies to spgemm-masked only");
  // Value types: every operand that contributes values must agree (the mask's are ignored).
  const size_t first = op == SJ_OP_SPGEMM_MASKED ? 1 : 0;
  const ValueType vt = r.operands[first].value_type;
  for (size_t i = first + 1; i < r.operands.size(); ++i)
    if (r.operands[i].value_type != vt)
      fail(SJ_ERR_TYPE_MISMATCH, to_string(op), ": operand ", operand_name(op, i), " has ",
           to_string(r.operands[i].value_type), " values but ", operand_name(op, first), " has ", to_string(vt));
  if (vt == ValueType::Bool && s != SJ_SEMIRING_OR_AND && op != SJ_OP_TRANSPOSE)
    fail(SJ_ERR_TYPE_MISMATCH, to_string(op), ": bool values need the or-and semiring, not ", to_string(s));

  // Shapes.
  auto [ar, ac] = matrix_shape(r, first);
  switch (op) {
    case SJ_OP_SPGEMM:
    case SJ_OP_SPGEMM_MASKED: {
      auto [br, bc] = matrix_shape(r, first + 1);
      if (ac != br)
        fail(SJ_ERR_SHAPE_MISMATCH, to_string(op), ": A is ", ar, "x", ac, " but B is ", br, "x", bc,
             " (columns of A must equal rows of B)");
      if (op == SJ_OP_SPGEMM_MASKED) {
        const Tensor& m = r.operands[0];
        if (m.dims[0] != ar || m.dims[1] != bc)
          fail(SJ_ERR_SHAPE_MISMATCH, "spgemm-masked: mask M is ", m.dims[0], "x", m.dims[1],
               " but A*B is ", ar, "x", bc);
        if (r.options.dense_output) fail(SJ_ERR_INVALID_ARGUMENT, "spgemm-masked: a masked product has a sparse result; dense_output is not allowed");
      }
      break;
    }
    case SJ_OP_SPMSPV:
    case SJ_OP_SPMV:
      if (r.operands[1].dims[0] != ac)
        fail(SJ_ERR_SHAPE_MISMATCH, to_string(op), ": A is ", ar, "x", ac, " but x has length ", r.operands[1].dims[0]);
      break;
    case SJ_OP_EWISE_MULT:
    case SJ_OP_EWISE_ADD: {
      auto [br, bc] = matrix_shape(r, 1);
      if (ar != br || ac != bc)
        fail(SJ_ERR_SHAPE_MISMATCH, to_string(op), ": A is ", ar, "x", ac, " but B", r.options.transpose_b ? "^T" : "",
             " is ", br, "x", bc, " (shapes must be equal)");
      if (r.options.dense_output) fail(SJ_ERR_INVALID_ARGUMENT, to_string(op), ": dense_output is not available for element-wise results");
      break;
    }
    case SJ_OP_TRANSPOSE:
      break;
  }
}

ResultShape result_shape(const OpRequest& r) {
  ResultShape s;
  switch (r.op) {
    case SJ_OP_SPGEMM:
    case SJ_OP_SPGEMM_MASKED: {
      size_t f = r.op == SJ_OP_SPGEMM_MASKED ? 1 : 0;
      s.dims[0] = matrix_shape(r, f).first;
      s.dims[1] = matrix_shape(r, f + 1).second;
      break;
    }
    case SJ_OP_SPMSPV:
    case SJ_OP_SPMV:
      s.order = 1;
      s.dims[0] = matrix_shape(r, 0).first;
      break;
    case SJ_OP_EWISE_MULT:
    case SJ_OP_EWISE_ADD:
      s.dims[0] = matrix_shape(r, 0).first;
      s.dims[1] = matrix_shape(r, 0).second;
      break;
    case SJ_OP_TRANSPOSE:
      s.dims[0] = r.operands[0].dims[1];
      s.dims[1] = r.operands[0].dims[0];
      break;
  }
  return s;
}

namespace {
Tensor make_csr(const Tensor& t, bool transposed, IndexType it, const Allocator& alloc) {
  if (!transposed) return convert(t, format_spec(SJ_FORMAT_CSR, 2), it, alloc);
  // CSC arrays of A are the CSR arrays of A^T: relabel instead of moving data.
  Tensor c = convert(t, format_spec(SJ_FORMAT_CSC, 2), it, alloc);
  std::swap(c.dims[0], c.dims[1]);
  std::swap(c.mode_order[0], c.mode_order[1]);
  c.derived = nullptr;
  return c;
}
}  // namespace

namespace {

// The key of a conversion kept on a handle. Constant keys: a B^T kept for repeated
// element-wise calls is looked up on every call.
const std::string& csr_key(bool transposed, IndexType it) {
  static const std::string keys[2][2] = {{cat("csr/", to_string(IndexType::I32)), cat("csr/", to_string(IndexType::I64))},
                                         {cat("csr-of-transpose/", to_string(IndexType::I32)),
                                          cat("csr-of-transpose/", to_string(IndexType::I64))}};
  return keys[transposed ? 1 : 0][it == IndexType::I64 ? 1 : 0];
}

// The CSR form of `t` (or of its transpose) when it needs no conversion now: `t` itself, or a
// form kept on its handle (made on first use). Null when one must be made for this call only.
const Tensor* ready_csr(const Tensor& t, bool transposed, IndexType it, const Allocator& alloc) {
  if (!transposed && is_csr(t) && t.index_type == it) return &t;
  if ((transposed && is_csc(t) && t.index_type == it) || !t.derived) return nullptr;
  // Conversions that move data are kept with the operand for the next call.
  return &t.derived->get_or_make(csr_key(transposed, it), [&] { return make_csr(t, transposed, it, alloc); });
}

// Appends the CSR form of `t` to `list`: borrowed when ready (it outlives the call), else
// made and owned.
void add_csr(OperandList& list, const Tensor& t, bool transposed, IndexType it, const Allocator& alloc) {
  if (const Tensor* ready = ready_csr(t, transposed, it, alloc)) return list.borrow(*ready);
  list.push_back(make_csr(t, transposed, it, alloc));
}

// Appends x as a sparse (or dense) vector: borrowed when it already is one, else converted.
void add_vector(OperandList& list, const Tensor& x, bool sparse, IndexType it, const Allocator& alloc) {
  static const FormatSpec kSparse = format_spec(SJ_FORMAT_SPARSE_VECTOR, 1), kDense = format_spec(SJ_FORMAT_DENSE, 1);
  const FormatSpec& spec = sparse ? kSparse : kDense;
  if (already_in(x, spec, it)) return list.borrow(x);
  list.push_back(convert(x, spec, it, alloc));
}

}  // namespace

Tensor as_csr(const Tensor& t, bool transposed, IndexType it, const Allocator& alloc) {
  if (const Tensor* ready = ready_csr(t, transposed, it, alloc)) return *ready;
  return make_csr(t, transposed, it, alloc);
}

PreparedOperands prepare(const OpRequest& r, const Allocator& alloc, std::optional<IndexType> index_type) {
  PreparedOperands p;
  const size_t first = r.op == SJ_OP_SPGEMM_MASKED ? 1 : 0;
  p.value_type = r.operands[first].value_type;
  const IndexTypes types = index_types_of(r.operands);
  p.result_index_type = types.result;
  p.index_type = index_type ? *index_type : types.compute;
  const IndexType it = p.index_type;
  auto& o = r.options;
  switch (r.op) {
    case SJ_OP_SPGEMM:
    case SJ_OP_EWISE_MULT:
    case SJ_OP_EWISE_ADD:
      add_csr(p.operands, r.operands[0], o.transpose_a, it, alloc);
      p.b_transpose_deferred = r.op == SJ_OP_EWISE_MULT && o.transpose_b &&
                               !(is_csc(r.operands[1]) && r.operands[1].index_type == it);
      add_csr(p.operands, r.operands[1], o.transpose_b && !p.b_transpose_deferred, it, alloc);
      break;
    case SJ_OP_SPGEMM_MASKED:
      add_csr(p.operands, r.operands[0], false, it, alloc);
      add_csr(p.operands, r.operands[1], o.transpose_a, it, alloc);
      add_csr(p.operands, r.operands[2], o.transpose_b, it, alloc);
      break;
    case SJ_OP_SPMSPV:
      add_csr(p.operands, r.operands[0], o.transpose_a, it, alloc);
      add_vector(p.operands, r.operands[1], /*sparse=*/true, it, alloc);
      break;
    case SJ_OP_SPMV:
      add_csr(p.operands, r.operands[0], o.transpose_a, it, alloc);
      add_vector(p.operands, r.operands[1], /*sparse=*/false, it, alloc);
      break;
    case SJ_OP_TRANSPOSE:
      p.operands.borrow(r.operands[0]);
      break;
  }
  return p;
}

Tensor merge_operand_b(const OpRequest& r, const PreparedOperands& p, const Allocator& alloc) {
  return p.b_transpose_deferred ? as_csr(r.operands[1], true, p.index_type, alloc) : p.operands[1];
}

PreparedOperands with_transposed_b(const OpRequest& r, const PreparedOperands& p, const Allocator& alloc) {
  PreparedOperands q = p;
  if (q.b_transpose_deferred) {
    q.operands.set(1, merge_operand_b(r, p, alloc));
    q.b_transpose_deferred = false;
  }
  return q;
}

}  // namespace sj

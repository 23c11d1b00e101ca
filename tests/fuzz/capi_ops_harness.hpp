// Fuzz harness for operation dispatch through the C API: small random operands (shapes,
// entries, formats, index and value types from the bytes) and random options (operation,
// semiring, forced schedule, ISA, vector width, phases, method, transposes, dense output,
// threads). Every result is compared bit for bit with the reference kernel's (the same call
// with SJ_SCHEDULE_REFERENCE) and with a plan executed twice; a mismatch aborts. Values are
// small nonzero integers, so every sum is exact in any order and the comparison is exact, and
// NaN (one in 16), which min and max propagate like sums do.
// An input the call refuses must be refused with a clean status, never SJ_ERR_INTERNAL, and
// the reference must serve whatever a forced schedule served.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "capi/handles.hpp"
#include "sparsejit/sparsejit.h"
#include "src/tensor.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace sj::fuzz {

namespace capi_ops_detail {

struct Handle {
  sj_tensor* t = nullptr;
  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { sj_tensor_destroy(t); }
};

// Structure, coordinates and value bits of two results.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.order != b.order || a.dims != b.dims || a.index_type != b.index_type || a.value_type != b.value_type ||
      a.mode_order != b.mode_order || a.levels.size() != b.levels.size())
    return false;
  for (size_t l = 0; l < a.levels.size(); ++l) {
    const Level &x = a.levels[l], &y = b.levels[l];
    if (x.kind != y.kind || x.unique != y.unique) return false;
    const int64_t parents = l == 0 ? 1 : a.level_entries(static_cast<int>(l) - 1);
    const int64_t here = a.level_entries(static_cast<int>(l));
    if (here != b.level_entries(static_cast<int>(l))) return false;
    if (x.kind == LevelKind::Compressed && std::memcmp(x.pos.data(), y.pos.data(), 8 * (parents + 1)) != 0) return false;
    if (x.kind != LevelKind::Dense && here &&
        std::memcmp(x.crd.data(), y.crd.data(), index_size(a.index_type) * here) != 0)
      return false;
  }
  const int64_t n = a.nnz();
  return n == b.nnz() && (n == 0 || std::memcmp(a.values.data(), b.values.data(), value_size(a.value_type) * n) == 0);
}

inline bool clean_refusal(sj_status s) {
  return s == SJ_ERR_INVALID_ARGUMENT || s == SJ_ERR_SHAPE_MISMATCH || s == SJ_ERR_TYPE_MISMATCH ||
         s == SJ_ERR_FORMAT || s == SJ_ERR_UNSUPPORTED || s == SJ_ERR_OVERFLOW || s == SJ_ERR_OUT_OF_MEMORY;
}

// A rows x cols matrix (or a vector when cols < 0) with entries from the bytes, in a format.
inline bool make_operand(sj_context* ctx, ByteReader& r, int64_t rows, int64_t cols, sj_value_type vt,
                         Handle* out) {
  const bool vector = cols < 0;
  const int64_t c = vector ? 1 : cols;
  const uint8_t density = r.u8();
  const sj_index_type it = (density & 1) ? SJ_INDEX_INT64 : SJ_INDEX_INT32;
  std::vector<int64_t> ri, ci;
  std::vector<double> dv;
  std::vector<float> fv;
  std::vector<uint8_t> bv;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < c; ++j) {
      uint8_t b = r.u8();
      if ((b & 0x0f) > (density >> 4)) continue;  // not stored
      int v = static_cast<int>((b >> 4) % 7) - 3;
      if (v == 0) v = 1;  // nonzero: no signed zeros from products, exact sums in any order
      // One stored value in 16 is NaN (one kind: every NaN result has the same bits whatever
      // the order): every semiring and schedule must propagate it alike.
      const double d = (b >> 4) == 15 ? std::numeric_limits<double>::quiet_NaN() : v;
      ri.push_back(i), ci.push_back(j), dv.push_back(d), fv.push_back(static_cast<float>(d)), bv.push_back(v > 0);
    }
  const void* vals = vt == SJ_VALUE_F64 ? static_cast<const void*>(dv.data())
                     : vt == SJ_VALUE_F32 ? static_cast<const void*>(fv.data())
                                          : static_cast<const void*>(bv.data());
  const int64_t nnz = static_cast<int64_t>(dv.size());
  if (vector) {
    const uint8_t form = r.u8() % 2;
    std::vector<int32_t> i32(ri.begin(), ri.end());
    const void* idx = it == SJ_INDEX_INT64 ? static_cast<const void*>(ri.data()) : i32.data();
    sj_status s = form == 0 ? sj_tensor_create_sparse_vector(ctx, rows, nnz, it, vt, idx, vals, SJ_TENSOR_COPY, &out->t)
                            : SJ_OK;
    if (form == 1) {  // dense vector
      std::vector<uint8_t> dense(rows * 8 + 8, 0);
      const size_t vs = vt == SJ_VALUE_F64 ? 8 : vt == SJ_VALUE_F32 ? 4 : 1;
      for (int64_t e = 0; e < nnz; ++e)
        std::memcpy(&dense[ri[e] * vs], static_cast<const uint8_t*>(vals) + e * vs, vs);
      int64_t dims[1] = {rows};
      s = sj_tensor_create_dense(ctx, 1, dims, vt, dense.data(), SJ_TENSOR_COPY, &out->t);
    }
    SJ_FUZZ_CHECK(s == SJ_OK, sj_last_error_message());
    return true;
  }
  std::vector<int32_t> r32(ri.begin(), ri.end()), c32(ci.begin(), ci.end());
  Handle csr;
  sj_status s = sj_tensor_create_coo(ctx, rows, c, nnz, it, vt, it == SJ_INDEX_INT64 ? (const void*)ri.data() : r32.data(),
                                     it == SJ_INDEX_INT64 ? (const void*)ci.data() : c32.data(), vals, 0, &csr.t);
  SJ_FUZZ_CHECK(s == SJ_OK, sj_last_error_message());
  static const sj_format formats[] = {SJ_FORMAT_CSR, SJ_FORMAT_CSC, SJ_FORMAT_DCSR, SJ_FORMAT_COO,
                                      SJ_FORMAT_DENSE, SJ_FORMAT_CSR, SJ_FORMAT_CSC, SJ_FORMAT_DENSE_COL_MAJOR};
  const sj_format f = formats[r.u8() % 8];
  s = sj_tensor_convert(ctx, csr.t, f, nullptr, it, &out->t);
  SJ_FUZZ_CHECK(s == SJ_OK, sj_last_error_message());
  return true;
}

}  // namespace capi_ops_detail

inline int capi_ops(const uint8_t* data, size_t size) {
  using namespace capi_ops_detail;
  static Context ctx;
  ByteReader r{data, size};
  const sj_op op = static_cast<sj_op>(r.u8() % 7);
  sj_op_options o;
  sj_op_options_init(&o);
  o.semiring = static_cast<sj_semiring>(r.u8() % 5);
  const uint8_t sched = r.u8();
  o.schedule = static_cast<sj_schedule>(sched == 0xFF ? 77 : sched % 10);
  const uint8_t knobs = r.u8();
  o.isa = static_cast<sj_isa>(knobs & 3);
  static const int widths[] = {0, 4, 8, 16};
  o.vector_width = widths[(knobs >> 2) & 3];
  o.method = static_cast<sj_coiter_method>((knobs >> 4) & 3);
  o.dense_output = (knobs >> 6) & 1;
  const uint8_t more = r.u8();
  o.transpose_a = more & 1;
  o.transpose_b = (more >> 1) & 1;
  o.threads = (more >> 2) & 1 ? 2 : 0;
  if ((more >> 3) & 1) {
    for (int p = 0; p < 3; ++p) o.phases[p] = static_cast<char>('0' + ((more >> (4 + p)) & 1));
    o.phases[3] = 0;
  }
  const sj_value_type vt = o.semiring == SJ_SEMIRING_OR_AND ? SJ_VALUE_BOOL
                                                          : static_cast<sj_value_type>(r.u8() % 2);
  const int64_t m = r.u8() % 9, k = r.u8() % 9, n = r.u8() % 9;
  const bool mismatch = r.u8() == 0x5A;  // now and then, shapes that do not fit

  Handle a, b, mask;
  const int64_t ar = o.transpose_a ? k : m, ac = o.transpose_a ? m : k;
  std::vector<const sj_tensor*> operands;
  switch (op) {
    case SJ_OP_SPGEMM:
    case SJ_OP_SPGEMM_MASKED: {
      if (op == SJ_OP_SPGEMM_MASKED) make_operand(ctx.c, r, m, n + mismatch, vt, &mask), operands.push_back(mask.t);
      make_operand(ctx.c, r, ar, ac, vt, &a);
      make_operand(ctx.c, r, o.transpose_b ? n : k, o.transpose_b ? k : n, vt, &b);
      operands.push_back(a.t), operands.push_back(b.t);
      break;
    }
    case SJ_OP_SPMSPV:
    case SJ_OP_SPMV:
      make_operand(ctx.c, r, ar, ac, vt, &a);
      make_operand(ctx.c, r, k + mismatch, -1, vt, &b);
      operands = {a.t, b.t};
      break;
    case SJ_OP_EWISE_MULT:
    case SJ_OP_EWISE_ADD:
      make_operand(ctx.c, r, ar, ac, vt, &a);
      make_operand(ctx.c, r, o.transpose_b ? k : m + mismatch, o.transpose_b ? m : k, vt, &b);
      operands = {a.t, b.t};
      break;
    default:
      make_operand(ctx.c, r, m, k, vt, &a);
      operands = {a.t};
      break;
  }
  const int nops = static_cast<int>(operands.size());

  // The call as fuzzed, through a plan (executed twice) ...
  sj_plan* plan = reinterpret_cast<sj_plan*>(0x1);
  sj_status s = sj_plan_create(ctx.c, op, operands.data(), nops, &o, &plan);
  SJ_FUZZ_CHECK(s == SJ_OK || clean_refusal(s), sj_last_error_message());
  // ... and the reference kernel on the same operands and options.
  sj_op_options ro = o;
  ro.schedule = SJ_SCHEDULE_REFERENCE;
  sj_plan* ref_plan = nullptr;
  sj_status rs = sj_plan_create(ctx.c, op, operands.data(), nops, &ro, &ref_plan);
  SJ_FUZZ_CHECK(rs == SJ_OK || clean_refusal(rs), sj_last_error_message());
  if (s != SJ_OK) {
    SJ_FUZZ_CHECK(plan == reinterpret_cast<sj_plan*>(0x1), "a failed plan_create wrote its output");
    sj_plan_destroy(ref_plan);
    return 0;
  }
  SJ_FUZZ_CHECK(rs == SJ_OK, "a schedule served a call the reference refuses");
  Handle want;
  rs = sj_plan_execute(ref_plan, operands.data(), nops, &want.t);
  SJ_FUZZ_CHECK(rs == SJ_OK || rs == SJ_ERR_OUT_OF_MEMORY, sj_last_error_message());
  for (int run = 0; run < 2 && rs == SJ_OK; ++run) {
    Handle got;
    sj_status es = sj_plan_execute(plan, operands.data(), nops, &got.t);
    SJ_FUZZ_CHECK(es == SJ_OK, sj_last_error_message());
    SJ_FUZZ_CHECK(same_bits(got.t->t, want.t->t), "result differs from the reference kernel's");
  }
  if (rs == SJ_OK && op != SJ_OP_TRANSPOSE && op != SJ_OP_SPGEMM_MASKED) {
    // The drop-in call agrees with its plan.
    Handle got;
    sj_status ds = SJ_OK;
    switch (op) {
      case SJ_OP_SPGEMM: ds = sj_spgemm(ctx.c, a.t, b.t, &o, &got.t); break;
      case SJ_OP_SPMSPV: ds = sj_spmspv(ctx.c, a.t, b.t, &o, &got.t); break;
      case SJ_OP_SPMV: ds = sj_spmv(ctx.c, a.t, b.t, &o, &got.t); break;
      case SJ_OP_EWISE_MULT: ds = sj_ewise_mult(ctx.c, a.t, b.t, &o, &got.t); break;
      case SJ_OP_EWISE_ADD: ds = sj_ewise_add(ctx.c, a.t, b.t, &o, &got.t); break;
      default: break;
    }
    SJ_FUZZ_CHECK(ds == SJ_OK, sj_last_error_message());
    SJ_FUZZ_CHECK(same_bits(got.t->t, want.t->t), "drop-in result differs from the reference kernel's");
  }
  sj_plan_destroy(plan);
  sj_plan_destroy(ref_plan);
  return 0;
}

}  // namespace sj::fuzz

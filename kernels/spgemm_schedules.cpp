// The specialised SpGEMM and masked-SpGEMM schedules (see kernels/schedule.hpp); the kernels
// are in kernels/spgemm_gustavson.cpp.
//
// COST MODELS (nanoseconds, single thread). Notation, from the inspector: F = exact multiply
// count of A*B (PlanInputs::flops); rA, nA = rows and nnz of A; cB = columns of B; nB = nnz
// of B; nM = nnz of the mask; F1 = the part of F made by rows of A with one or two entries
// (estimated from A's row-length distribution, see short_row_share()), which need no
// accumulator (a copy, or a two-finger merge of two rows of B).
//
//   gustavson-dense  (SpGEMM):
//     T = C0 + Crow*rA + Cnnz*nA + (Cshort*F1 + Cacc(cB)*(F - F1))
//     Cacc(cB) = Cacc_cache when the accumulator (cB slots of 16 bytes for f64) fits in L2,
//                else Cacc_mem (random accesses go to L3/DRAM).
//     dense output adds Cdense * rA*cB (filling the result).
//   gustavson-hash   (SpGEMM):
//     T = C0 + Crow*rA + Cnnz*nA + (Cshort*F1 + Chash*(F - F1))
//     (the hash table of a row lives in L1/L2 whatever cB is; it is cheaper than the dense
//      accumulator only when that one misses the cache). Dense output: same as dense.
//   gustavson-dense  (masked, saxpy-then-mask):
//     T = C0 + Crow*rA + Cmask*nM + Cmasked*F
//   inner            (masked, a dot product per mask entry):
//     T = C0 + Cflip*(nB + cB) [B converted to CSC each call unless it is cached/given]
//         + nM * (Cdot0 + Cmerge*(A.row_mean + nB/cB))
//
// Calibration (how the constants below were obtained): bench/bench_compare_spgemm.cpp
// --calibrate times every schedule, forced, on the real matrices of ../shared/data/matrices and
// on synthetic uniform/power-law matrices, single thread, median of 5 after a warm-up, and
// fits the constants by least squares on time / predicted (see that file); the machine is the
// project's build machine (AMD EPYC, AVX-512, ~1 MiB L2 per core).
#include <algorithm>
#include <cmath>

#include "kernels/schedule.hpp"
#include "kernels/spgemm_gustavson.hpp"
#include "src/convert.hpp"
#include "src/derived_forms.hpp"
#include "src/error.hpp"

namespace sj {
namespace {

// Calibrated constants (ns); see the comment at the top.
constexpr double kC0 = 300;           // fixed per call: dispatch, result allocation
constexpr double kRow = 1.0;          // per row of A
constexpr double kNnzA = 1.0;         // per entry of A (and the upper-bound pass)
constexpr double kShort = 1.0;        // per product of a 1- or 2-entry row of A
constexpr double kAccCache = 1.6;     // per product, dense accumulator in L2
constexpr double kAccMem = 4.0;       // per product, dense accumulator beyond L2
constexpr double kHash = 2.8;         // per product, hash accumulator
constexpr double kDenseFill = 0.15;   // per element of a dense result
constexpr double kMaskEntry = 2.0;    // per mask entry (marking, gathering)
constexpr double kMasked = 1.2;       // per product, saxpy-then-mask
constexpr double kFlip = 2.5;         // per entry/column of B converted to CSC
constexpr double kDot0 = 3.0;         // per mask entry, dot product set-up
constexpr double kMerge = 1.0;        // per coordinate stepped over in a dot product
constexpr double kL2Bytes = 1 << 20;  // accumulator bytes that stay in L2

int value_bytes(ValueType vt) { return vt == ValueType::F64 ? 8 : 4; }

// Share of the products made by rows of A with one or two entries. With only the row-length
// summary available, rows shorter than 3 are counted from the minimum and the percentiles
// (a step approximation of the distribution): share of rows = fraction of the percentile
// points at or below 2; their products are weighted by their length relative to the mean.
double short_row_share(const MatrixStats& a) {
  if (a.rows == 0 || a.nnz == 0) return 0;
  if (a.row_max <= 2) return 1;
  if (a.row_min > 2) return 0;
  double rows_short;
  if (a.row_p90 <= 2) rows_short = 0.9;
  else if (a.row_p50 <= 2) rows_short = 0.5;
  else rows_short = 0.1;
  const double nonempty = std::max<double>(1, static_cast<double>(a.rows - a.empty_rows));
  rows_short = std::min(rows_short, nonempty / static_cast<double>(a.rows));
  const double entries_short = rows_short * static_cast<double>(a.rows) * 1.5;
  return std::clamp(entries_short / static_cast<double>(a.nnz), 0.0, 1.0);
}

bool fits_l2(int64_t cols, ValueType vt) {
  const double slot = value_bytes(vt) <= 4 ? 8 : 16;
  return static_cast<double>(cols) * slot <= kL2Bytes;
}

// The caller may ask for another coordinate type than the one computed in.
Tensor finish(Tensor out, const OpRequest& req, const Allocator& alloc) {
  const int want = req.options.output_index_type;
  if (want != -1 && out.order > 0 && !is_dense(out)) {
    IndexType it = from_c(static_cast<sj_index_type>(want));
    if (it != out.index_type) out = convert(out, format_spec_of(out), it, alloc);
  }
  return out;
}

class GustavsonSpgemm final : public ScheduleImpl {
 public:
  explicit GustavsonSpgemm(SpgemmAccumulator kind) : kind_(kind) {}
  sj_op op() const override { return SJ_OP_SPGEMM; }
  sj_schedule schedule() const override {
    return kind_ == SpgemmAccumulator::Dense ? SJ_SCHEDULE_GUSTAVSON_DENSE : SJ_SCHEDULE_GUSTAVSON_HASH;
  }
  Costing cost(const PlanInputs& in) const override {
    if (in.stats.size() < 2 || in.flops < 0) return Costing::no("needs two CSR operands");
    const MatrixStats& a = in.stats[0];
    const MatrixStats& b = in.stats[1];
    const double F = in.flops;
    const double F1 = F * short_row_share(a);
    const double per_product =
        kind_ == SpgemmAccumulator::Hash ? kHash : fits_l2(b.cols, in.prepared.value_type) ? kAccCache : kAccMem;
    double t = kC0 + kRow * a.rows + kNnzA * a.nnz + kShort * F1 + per_product * (F - F1);
    if (in.req.options.dense_output) t += kDenseFill * static_cast<double>(a.rows) * static_cast<double>(b.cols);
    return Costing::yes(t, kind_ == SpgemmAccumulator::Hash ? "row-wise, hash accumulator sized from row flops"
                                                            : "row-wise, dense accumulator (sort or scan per row)");
  }
  Tensor run(const ExecInputs& in) const override {
    const auto& ops = in.prepared.operands;
    Tensor out = spgemm_gustavson(ops[0], ops[1], in.req.options.semiring, in.req.options.dense_output != 0, kind_,
                                  in.ctx.allocator);
    return finish(std::move(out), in.req, in.ctx.allocator);
  }

 private:
  SpgemmAccumulator kind_;
};

class MaskedSaxpy final : public ScheduleImpl {
 public:
  sj_op op() const override { return SJ_OP_SPGEMM_MASKED; }
  sj_schedule schedule() const override { return SJ_SCHEDULE_GUSTAVSON_DENSE; }
  Costing cost(const PlanInputs& in) const override {
    if (in.stats.size() < 3 || in.flops < 0) return Costing::no("needs three CSR operands");
    const MatrixStats& m = in.stats[0];
    const MatrixStats& a = in.stats[1];
    const double t = kC0 + kRow * a.rows + kNnzA * a.nnz + kMaskEntry * m.nnz + kMasked * in.flops;
    return Costing::yes(t, "saxpy-then-mask: Gustavson restricted to the mask row");
  }
  Tensor run(const ExecInputs& in) const override {
    const auto& ops = in.prepared.operands;
    return finish(masked_spgemm_saxpy(ops[0], ops[1], ops[2], in.req.options.semiring, in.ctx.allocator), in.req,
                  in.ctx.allocator);
  }
};

class MaskedDot final : public ScheduleImpl {
 public:
  sj_op op() const override { return SJ_OP_SPGEMM_MASKED; }
  sj_schedule schedule() const override { return SJ_SCHEDULE_INNER; }
  Costing cost(const PlanInputs& in) const override {
    if (in.stats.size() < 3) return Costing::no("needs three CSR operands");
    const MatrixStats& m = in.stats[0];
    const MatrixStats& a = in.stats[1];
    const MatrixStats& b = in.stats[2];
    const double col_mean = b.cols > 0 ? static_cast<double>(b.nnz) / static_cast<double>(b.cols) : 0;
    const double flip = csc_given(in.req) ? 0 : kFlip * static_cast<double>(b.nnz + b.cols);
    const double t = kC0 + flip + static_cast<double>(m.nnz) * (kDot0 + kMerge * (a.row_mean + col_mean));
    return Costing::yes(t, "dot product per mask entry (A row against B column)");
  }
  Tensor run(const ExecInputs& in) const override {
    const auto& ops = in.prepared.operands;
    const Tensor bcsc = csc_of_b(in);
    return finish(masked_spgemm_dot(ops[0], ops[1], bcsc, in.req.options.semiring, in.ctx.allocator), in.req,
                  in.ctx.allocator);
  }

 private:
  // The caller's B is already CSC of the computing index type (no transpose requested).
  static bool csc_given(const OpRequest& req) {
    const Tensor& b = req.operands[2];
    return !req.options.transpose_b && is_csc(b);
  }
  static Tensor csc_of_b(const ExecInputs& in) {
    const Tensor& given = in.req.operands[2];
    const Tensor& b = in.prepared.operands[2];  // CSR of B
    if (!in.req.options.transpose_b && is_csc(given) && given.index_type == b.index_type) return given;
    // B^T given as CSR: its arrays are B's CSC arrays; relabel.
    if (in.req.options.transpose_b && is_csr(given) && given.index_type == b.index_type) {
      Tensor t = given;
      std::swap(t.dims[0], t.dims[1]);
      std::swap(t.mode_order[0], t.mode_order[1]);
      t.derived = nullptr;
      return t;
    }
    // A handle's forms are kept with it (its arrays do not change while it lives).
    if (b.derived)
      return b.derived->get_or_make(cat("csc/", to_string(b.index_type)), [&] { return flip_orientation(b, default_allocator()); });
    return flip_orientation(b, default_allocator());
  }
};

}  // namespace

void add_spgemm_schedules(std::vector<const ScheduleImpl*>& out) {
  static const GustavsonSpgemm dense(SpgemmAccumulator::Dense), hash(SpgemmAccumulator::Hash);
  static const MaskedSaxpy saxpy;
  static const MaskedDot dot;
  out.push_back(&dense);
  out.push_back(&hash);
  out.push_back(&saxpy);
  out.push_back(&dot);
}

}  // namespace sj

// The specialised element-wise schedules (see kernels/schedule.hpp, kernels/ewise_kernels.hpp).
//
// COST MODEL (model nanoseconds; the reference is 3 ns x (nnz(A) + nnz(B) + rows(A) + rows(B))
// + 2000). From PlanInputs::stats of the prepared operands (A, and B or B^T in CSR): r rows,
// nA = nnz(A), nB = nnz(B), LB = mean row length of B (= of B^T: same nnz, square).
//   inner      (no transpose)  = K + Cr*r + Cmg*(nA + nB)            two-finger merge
//   transpose  (transpose_b)   = K + Cr*r + Cmg*(nA + nB)            merge with the prepared B^T
//                                (the planner's prepare() has already built B^T and keeps it
//                                on the handle, so the conversion is not this schedule's cost)
//   search     (mult, transpose_b), per input the cheaper of
//       binary   = K + Cr*r + nA*(Cs0 + Cs1*lg(LB))
//       gallop   = K + Cr*r + Cf*r + nA*(Cs0 + Cs2*lg(LB/max(1, LA)))   per-row fingers of B
//   ewise add  with transpose_b: only `transpose` (a search cannot find B's entries missing
//   from A).
// Constants (ns): set from per-entry timings on this machine and checked against the forced
// f_transpose / f_search columns of bench/bench_compare_spmspv_ewise (the merge over a cached
// B^T wins on every matrix measured, as the model says).
#include <cmath>

#include "kernels/ewise_kernels.hpp"
#include "kernels/schedule.hpp"
#include "src/convert.hpp"
#include "src/dispatch.hpp"
#include "src/error.hpp"
#include "src/semiring.hpp"

namespace sj {
namespace {

constexpr double K = 500, Cr = 1.0, Cmg = 1.6, Cs0 = 3.0, Cs1 = 2.0, Cs2 = 2.0, Cf = 1.5;

double lg(double v) { return std::log2(1.0 + std::max(0.0, v)); }



double merge_cost(const PlanInputs& in) {
  const MatrixStats& a = in.stats[0];
  const MatrixStats& b = in.stats[1];
  return K + Cr * a.rows + Cmg * (static_cast<double>(a.nnz) + b.nnz);
}

// inner (no transposition) and transpose (B^T, prepared and cached on the handle) run the
// same merge over the prepared operands.
class Merge final : public ScheduleImpl {
 public:
  Merge(sj_op op, sj_schedule s) : op_(op), s_(s) {}
  sj_op op() const override { return op_; }
  sj_schedule schedule() const override { return s_; }
  Costing cost(const PlanInputs& in) const override {
    const bool tb = in.req.options.transpose_b != 0;
    if (s_ == SJ_SCHEDULE_INNER && tb) return Costing::no("B is transposed: use transpose or search");
    if (s_ == SJ_SCHEDULE_TRANSPOSE && !tb) return Costing::no("no transposed operand");
    return Costing::yes(merge_cost(in), s_ == SJ_SCHEDULE_INNER
                                            ? "row-wise two-finger merge"
                                            : "merge with B^T (counting-sort transpose kept on B's handle)");
  }
  Tensor run(const ExecInputs& in) const override {
    return dispatch_kernel(in, [&](auto s, auto i, auto v) {
      using S = decltype(s);
      using I = decltype(i);
      using V = decltype(v);
      auto A = cs_view<I, V>(in.prepared.operands[0]);
      auto B = cs_view<I, V>(in.prepared.operands[1]);
      if (op_ == SJ_OP_EWISE_MULT) return ewise::merge_mult<S>(in.ctx.allocator, A, B, in.prepared.value_type, workers_of(in));
      return ewise::merge_add<S>(in.ctx.allocator, A, B, in.prepared.value_type, workers_of(in));
    });
  }

 private:
  sj_op op_;
  sj_schedule s_;
};

class SearchT final : public ScheduleImpl {
 public:
  sj_op op() const override { return SJ_OP_EWISE_MULT; }
  sj_schedule schedule() const override { return SJ_SCHEDULE_SEARCH; }
  struct Choice {
    double cost;
    bool gallop;
  };
  static Choice choose(const PlanInputs& in) {
    const MatrixStats& a = in.stats[0];
    const MatrixStats& b = in.stats[1];
    const double r = static_cast<double>(a.rows), nA = static_cast<double>(a.nnz);
    const double LB = b.rows > 0 ? static_cast<double>(b.nnz) / b.rows : 0;
    const double bin = K + Cr * r + nA * (Cs0 + Cs1 * lg(LB));
    const double gal = K + Cr * r + Cf * static_cast<double>(a.cols) + nA * (Cs0 + Cs2 * lg(LB / std::max(1.0, a.row_mean)));
    return gal < bin ? Choice{gal, true} : Choice{bin, false};
  }
  Costing cost(const PlanInputs& in) const override {
    if (!in.req.options.transpose_b) return Costing::no("no transposed operand");
    Choice c = choose(in);
    return Costing::yes(c.cost, c.gallop ? "A leads, B's rows galloped from per-row fingers (forsame)"
                                         : "A leads, binary search in B's rows (forsame)");
  }
  std::shared_ptr<const void> prepare(const PlanInputs& in, std::string* source, double* build_ms) const override {
    *source = "built-in";
    *build_ms = 0;
    return std::make_shared<bool>(choose(in).gallop);
  }
  Tensor run(const ExecInputs& in) const override {
    const bool gallop = in.state ? *static_cast<const bool*>(in.state) : false;
    // The original B in CSR (zero-copy when given as CSR; else converted and kept on B's handle).
    Tensor b = as_csr(in.req.operands[1], false, in.prepared.index_type, in.ctx.allocator);
    return dispatch_kernel(in, [&](auto s, auto i, auto v) {
      using S = decltype(s);
      using I = decltype(i);
      using V = decltype(v);
      auto A = cs_view<I, V>(in.prepared.operands[0]);
      auto B = cs_view<I, V>(b);
      return ewise::search_mult_t<S>(in.ctx.allocator, A, B, in.prepared.value_type, gallop, workers_of(in));
    });
  }
};

}  // namespace

void add_ewise_schedules(std::vector<const ScheduleImpl*>& out) {
  static const Merge s[] = {
      Merge(SJ_OP_EWISE_MULT, SJ_SCHEDULE_INNER),
      Merge(SJ_OP_EWISE_MULT, SJ_SCHEDULE_TRANSPOSE),
      Merge(SJ_OP_EWISE_ADD, SJ_SCHEDULE_INNER),
      Merge(SJ_OP_EWISE_ADD, SJ_SCHEDULE_TRANSPOSE),
  };
  for (auto& x : s) out.push_back(&x);
  static const SearchT search;
  out.push_back(&search);
}

}  // namespace sj

// The specialised element-wise schedules (see kernels/schedule.hpp, kernels/ewise_kernels.hpp).
//
// COST MODEL (model nanoseconds; the reference is 3 ns x (nnz(A) + nnz(B) + rows(A) + rows(B))
// + 2000). From PlanInputs::stats of the prepared operands (A, and B or B^T in CSR): r rows,
// nA = nnz(A), nB = nnz(B), LB = mean row length of B (= of B^T: same nnz, square).
//   inner      (no transpose)  = K + Cr*r + Cmg*(nA + nB)            two-finger merge
//   transpose  (transpose_b)   = K + Cr*r + Cmg*(nA + nB) + conv     merge with B^T
//                                conv = Ct*(nB + rows + cols) when B^T must be built (it is
//                                not built before a schedule needs it: src/operation.hpp),
//                                1/max(20, uses) of that once B's handle has served `uses`
//                                such calls (the drop-in memo re-plans at powers of two)
//                                or for an explicit plan (sj_plan_create: executed many
//                                times; the B^T is kept on the handle and pays back over
//                                later calls), 0 when kept already or B is given as CSC.
//   search     (mult, transpose_b), per input the cheaper of
//       binary   = K + Cr*r + nA*(Cs0 + Cs1*lg(LB))
//       gallop   = K + Cr*r + Cf*r + nA*(Cs0 + Cs2*lg(LB/max(1, LA)))   per-row fingers of B
//   ewise add  with transpose_b: only `transpose` (a search cannot find B's entries missing
//   from A).
// Constants (ns): set from per-entry timings on this machine and checked against the forced
// f_transpose / f_search columns of bench/bench_compare_spmspv_ewise (the merge over a cached
// B^T wins on every matrix measured, as the model says).
#include <atomic>
#include <cmath>
#include <mutex>

#include "kernels/coiter_drivers.hpp"
#include "kernels/ewise_kernels.hpp"
#include "kernels/schedule.hpp"
#include "src/convert.hpp"
#include "src/derived_forms.hpp"
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

// Element-wise calls with B^T served on a handle (a use counter kept with its derived forms):
// a repeated operand amortises the B^T the transpose schedule builds and keeps.
struct UseCounter {
  mutable std::atomic<int64_t> n{0};
  UseCounter() = default;
  UseCounter(UseCounter&&) noexcept {}  // made fresh by DerivedForms::fact
};
int64_t transposed_uses(const Tensor& t, bool bump) {
  if (!t.derived) return 0;
  static const std::string key = "ewise-transposed-uses";  // not a string built per call
  auto c = t.derived->fact<UseCounter>(key, [] { return UseCounter{}; });
  return bump ? c->n.fetch_add(1, std::memory_order_relaxed) : c->n.load(std::memory_order_relaxed);
}

// The deferred B^T (src/operation.hpp): Ct per entry and per row/column when it must be
// built, 1/20 of that once B's handle has been used before (kept and reused), 0 when kept.
constexpr double Ct = 2.5;
double transpose_cost(const PlanInputs& in, std::string* note) {
  if (!in.prepared.b_transpose_deferred) return 0;
  const Tensor& b = in.req.operands[1];
  const std::string key = cat("csr-of-transpose/", to_string(in.prepared.index_type));
  if (b.derived) {
    std::lock_guard lock(b.derived->mutex);
    for (auto& [k, v] : b.derived->forms)
      if (k == key) {
        *note += "; B^T kept on B's handle";
        return 0;
      }
  }
  const MatrixStats& bt = in.stats[1];
  const double full = Ct * (static_cast<double>(bt.nnz) + bt.rows + bt.cols);
  const int64_t uses = transposed_uses(b, false);
  const bool reused = in.req.repeated || uses > 0;
  *note += reused ? cat("; builds B^T and keeps it (", in.req.repeated ? "a plan" : "repeated operand", ": amortised)")
                  : "; builds B^T";
  return reused ? full / std::max<double>(20, static_cast<double>(uses)) : full;  // as SpMSpV's CSC copy
}

// inner (no transposition) and transpose (B^T, made on first use and kept on B's handle) run
// the same merge.
class Merge final : public ScheduleImpl {
 public:
  Merge(sj_op op, sj_schedule s) : op_(op), s_(s) {}
  sj_op op() const override { return op_; }
  sj_schedule schedule() const override { return s_; }
  Costing cost(const PlanInputs& in) const override {
    const bool tb = in.req.options.transpose_b != 0;
    if (s_ == SJ_SCHEDULE_INNER && tb) return Costing::no("B is transposed: use transpose or search");
    if (s_ == SJ_SCHEDULE_TRANSPOSE && !tb) return Costing::no("no transposed operand");
    std::string how = s_ == SJ_SCHEDULE_INNER ? "row-wise merge"
                                              : "merge with B^T (counting-sort transpose kept on B's handle)";
    const double conv = tb ? transpose_cost(in, &how) : 0;
    if (op_ == SJ_OP_EWISE_MULT) {
      const kernels::CoiterConfig cfg = config_for(in);
      how += cat("; coiteration emit: ", kernels::describe(cfg));
      if (kernels::ewise_samples_long_pairs(cfg, in.prepared.index_type))
        how += "; on AVX-512 pairs up to 64 a side take the blocks, longer ones the emit kernel only where a sample of "
               "them matches often (else the blocks)";
    }
    return Costing::yes(merge_cost(in) + conv, how);
  }
  // Multiply: the coiteration emit/count kernels (kernels/coiter_drivers.hpp), looked up once.
  std::shared_ptr<const void> prepare(const PlanInputs& in, std::string* source, double* build_ms) const override {
    *source = "built-in";
    *build_ms = 0;
    if (op_ != SJ_OP_EWISE_MULT) return nullptr;
    double us = 0;
    bool generated = false;
    auto cfg = std::make_shared<kernels::CoiterConfig>(kernels::resolve_coiter(
        config_for(in), in.prepared.index_type, in.prepared.value_type, in.req.options.semiring, true, &us, &generated));
    *source = !generated ? "built-in" : us > 0 ? "compiled" : "memory";
    *build_ms = us / 1000.0;
    return cfg;
  }
  Tensor run(const ExecInputs& in) const override {
    if (op_ == SJ_OP_EWISE_MULT) {
      if (in.req.options.transpose_b) transposed_uses(in.req.operands[1], true);
      const Tensor& a = in.prepared.operands[0];
      // B borrowed from the prepared operands unless B^T was deferred to here (made in place):
      // a Tensor copy costs a tiny call ~200 instructions of reference counting.
      const bool deferred = in.prepared.b_transpose_deferred;
      const Tensor made = deferred ? merge_operand_b(in.req, in.prepared, in.ctx.allocator) : Tensor{};
      const Tensor& b = deferred ? made : in.prepared.operands[1];
      kernels::CoiterConfig cfg;
      if (in.state) {
        cfg = *static_cast<const kernels::CoiterConfig*>(in.state);
      } else {
        const double ra = a.dims[0] ? double(a.nnz()) / double(a.dims[0]) : 0;
        const double rb = b.dims[0] ? double(b.nnz()) / double(b.dims[0]) : 0;
        cfg = kernels::coiter_config(in.req.options, in.prepared.index_type, in.prepared.value_type, ra, rb);
      }
      return kernels::coiter_ewise_mult(a, b, in.req.options.semiring, cfg, in.ctx.allocator, &workers_of(in));
    }
    return dispatch_kernel(in, [&](auto s, auto i, auto v) {
      using S = decltype(s);
      using I = decltype(i);
      using V = decltype(v);
      auto A = cs_view<I, V>(in.prepared.operands[0]);
      auto B = cs_view<I, V>(in.prepared.operands[1]);
      return ewise::merge_add<S>(in.ctx.allocator, A, B, in.prepared.value_type, workers_of(in));
    });
  }

 private:
  static kernels::CoiterConfig config_for(const PlanInputs& in) {
    const double rb = in.stats[1].rows > 0 ? static_cast<double>(in.stats[1].nnz) / in.stats[1].rows : 0;
    return kernels::coiter_config(in.req.options, in.prepared.index_type, in.prepared.value_type, in.stats[0].row_mean,
                                  rb);
  }
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
    transposed_uses(in.req.operands[1], true);
    // The original B in CSR (zero-copy when given as CSR; else converted and kept on B's handle).
    Tensor b = in.prepared.b_transpose_deferred
                   ? in.prepared.operands[1]
                   : as_csr(in.req.operands[1], false, in.prepared.index_type, in.ctx.allocator);
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

// The specialised SpMSpV and SpMV schedules (see kernels/schedule.hpp, kernels/spmspv_kernels.hpp).
//
// COST MODEL (model nanoseconds; the reference is 3 ns x (nnz(A) + m + nnz(x)) + 2000).
// Notation from PlanInputs::stats: A is m x n with nnz(A), row mean L; x has nx stored entries.
//   flops  = nx * nnz(A) / n                  expected products (x's columns of A, mean length)
//   ny     = m * (1 - exp(-flops / m))        expected stored outputs (uniform rows)
//   lg(v)  = log2(1 + v)
//   push     = K + Cx*nx + Cp*flops + out + conv
//              out  (sparse) = Cy*ny + min(Cs*ny*lg(ny), Cm*m);  (dense) = Cf*m + Cy*ny
//              conv = (Cc*nnz(A) + Cr*(m+n)) * f when A has no CSC copy yet (none is cached
//              on the handle and A is not given as CSC), f = 1 on the first SpMSpV use of
//              the handle, 1/max(20, uses) once the handle has served `uses` calls (a repeated
//              operand: the copy is kept and pays back over the next calls; the drop-in memo
//              re-plans at powers of two, so the copy is bought once the time lost without it
//              reaches its cost: ski rental), 0 when cached.
//   densify  = K + Cd*nx + Cr*m + Cg*nnz(A) (+ Cf*m dense output)
//   search   = K + Cr*m + Cb*m*s*(1 + lg(l/s)),  s = min(L, nx), l = max(L, nx)
//   inner    = K + Cr*m + Cm2*(nnz(A) + m*nx/2)   (a row's merge stops at its last column)
//   SpMV densify (row gather, x dense) = K + Cr*m + Cg2*nnz(A)
// Constants (ns): first set from per-entry timings of the kernels on this machine (2 shared
// cores, g++ 12 -O3), then adjusted by comparing the forced timings (f_push, f_densify,
// f_search, f_inner columns of bench/bench_compare_spmspv_ewise, `--filter bcsstk --quick`)
// with the planner's choice until it picked the fastest forced schedule on those inputs. A
// least-squares fit over all inputs is still to do.
#include <atomic>
#include <cmath>
#include <cstdio>

#include "kernels/coiter_drivers.hpp"
#include "kernels/push_row_blocks.hpp"
#include "kernels/schedule.hpp"
#include "kernels/sparse_assembly.hpp"
#include "kernels/spmspv_kernels.hpp"
#include "src/call_counter.hpp"
#include "src/convert.hpp"
#include "src/derived_forms.hpp"
#include "src/dispatch.hpp"
#include "src/error.hpp"
#include "src/gather_window.hpp"
#include "src/semiring.hpp"

namespace sj {
namespace {

constexpr double K = 400, Cx = 2.0, Cp = 1.5, Cy = 1.0, Cs = 1.6, Cm = 0.35, Cf = 0.25, Cc = 6.0, Cr = 0.8,
                 Cd = 3.0, Cg = 1.4, Cb = 2.5, Cm2 = 1.3, Cg2 = 1.1;

double lg(double v) { return std::log2(1.0 + std::max(0.0, v)); }

// Where the CSC form of the operator comes from.
struct CscSource {
  bool zero_copy = false;
  const std::string* key = nullptr;  // of the kept copy (one of four constants: no string per call)
};
CscSource csc_source(const OpRequest& req, IndexType it) {
  static const std::string keys[2][2] = {
      {cat("csc-of-matrix/", to_string(IndexType::I32)), cat("csc-of-matrix/", to_string(IndexType::I64))},
      {cat("csc-of-transpose/", to_string(IndexType::I32)), cat("csc-of-transpose/", to_string(IndexType::I64))}};
  const Tensor& a = req.operands[0];
  const bool ta = req.options.transpose_a != 0;
  CscSource s;
  s.zero_copy = (!ta && is_csc(a) && a.index_type == it) || (ta && is_csr(a) && a.index_type == it);
  s.key = &keys[ta ? 1 : 0][it == IndexType::I64 ? 1 : 0];
  return s;
}

bool has_form(const Tensor& t, const std::string& key) {
  if (!t.derived) return false;
  std::lock_guard lock(t.derived->mutex);
  for (auto& [k, v] : t.derived->forms)
    if (k == key) return true;
  return false;
}

// Counts the SpMSpV calls served on a handle (kept with its derived forms).
int64_t uses_of(const Tensor& t, bool bump) {
  if (!t.derived) return 0;
  auto& n = t.derived->spmspv_calls;
  return bump ? count_add(n) : n.load(std::memory_order_relaxed);
}

// The CSC form of op(A): A itself when the caller gave it, else kept with the handle (both
// borrowed), else made into `storage`.
const Tensor& csc_of(const OpRequest& req, const CscSource& src, const PreparedOperands& p, const Allocator& alloc,
                     Tensor& storage) {
  const Tensor& a = req.operands[0];
  if (src.zero_copy) {
    if (req.options.transpose_a == 0) return a;
    storage = a;  // CSR arrays of A are the CSC arrays of A^T
    std::swap(storage.dims[0], storage.dims[1]);
    std::swap(storage.mode_order[0], storage.mode_order[1]);
    storage.derived = nullptr;
    return storage;
  }
  if (!a.derived) return storage = flip_orientation(p.operands[0], alloc);
  return a.derived->get_or_make(*src.key, [&] { return flip_orientation(p.operands[0], alloc); });
}

struct Features {
  double m, n, nnz, L, nx, flops, ny;
};
Features features(const PlanInputs& in) {
  Features f;
  const MatrixStats& a = in.stats[0];
  f.m = static_cast<double>(a.rows);
  f.n = static_cast<double>(a.cols);
  f.nnz = static_cast<double>(a.nnz);
  f.L = a.row_mean;
  f.nx = static_cast<double>(in.stats[1].nnz);
  f.flops = f.n > 0 ? f.nx * f.nnz / f.n : 0;
  f.ny = f.m > 0 ? f.m * (1 - std::exp(-f.flops / f.m)) : 0;
  return f;
}

// The sink's entries as a sparse vector of length n, copied at exact size.
template <class I, class V>
Tensor sparse_vector_of(const spmspv::RowSink<I, V>& sink, int64_t n, ValueType vt, const Allocator& alloc, Workers& w) {
  Tensor y = make_sparse_vector(alloc, n, sink.count, index_type_of<I>(), vt);
  sink.gather(y.levels[0].crd.as_mut<I>(), y.values.as_mut<V>(), w);
  return y;
}

// The layout of a sparse y of length n with `count` entries, in the caller's coordinate type.
void set_vector_layout(OutputTarget& to, int64_t n, ValueType vt, int64_t count) {
  OutputLayout& o = to.layout;
  o.format = SJ_FORMAT_SPARSE_VECTOR;
  o.order = 1;
  o.dims[0] = n;
  o.dims[1] = 0;
  o.index_type = to.index_type;
  o.value_type = vt;
  o.pos_len = 0;
  o.crd_len = o.values_len = count;
  to.layout_known = true;
}

// The layout of a dense y of length n (the coordinate type is only a label).
void set_dense_layout(OutputTarget& to, int64_t n, ValueType vt) {
  set_vector_layout(to, n, vt, n);
  to.layout.format = SJ_FORMAT_DENSE;
  to.layout.crd_len = 0;
}

// Whether the call has a values buffer that holds a dense y of length n: the kernel then
// writes y there, and nothing is allocated or copied (else the plan copies the result, or
// reports the buffer that is too small).
bool dense_fits(const OutputTarget* to, int64_t n) {
  return to && (n == 0 || (to->buffers->values && to->buffers->values_capacity >= n));
}

// Whether the buffers can hold a sparse y of every row, so that no result can overflow them.
bool sparse_fits(const OutputBuffers& b, int64_t rows) {
  return b.crd && b.values && b.crd_capacity >= rows && b.values_capacity >= rows;
}

// The caller's buffers as the sink of a one-chunk kernel, when they can hold a y of every row
// (sparse_fits) in the coordinate type computed: the kernel then writes y there itself and
// nothing is copied. Null otherwise.
template <class I, class V> OutputTarget* direct_target(const ExecInputs& in, int64_t rows, int64_t chunks) {
  OutputTarget* to = in.into;
  if (!to || chunks != 1 || to->index_type != index_type_of<I>()) return nullptr;
  return sparse_fits(*to->buffers, rows) ? to : nullptr;
}

// The sink's entries written straight into the caller's buffers (sj_plan_execute_into), with
// the coordinates in the type the caller receives; nothing is written when a buffer is too
// small (the layout, which the caller gets back, says what is needed).
template <class I, class V>
void write_into(const spmspv::RowSink<I, V>& sink, int64_t n, ValueType vt, OutputTarget& to, Workers& w) {
  set_vector_layout(to, n, vt, sink.count);
  const OutputLayout& o = to.layout;
  const OutputBuffers& b = *to.buffers;
  if (!output_buffers_fit(o, b)) check_output_buffers(o, b);  // throws, naming the array
  V* ov = static_cast<V*>(b.values);
  if (to.index_type == index_type_of<I>()) {
    sink.gather(static_cast<I*>(b.crd), ov, w);
  } else {  // i32 computed, i64 asked for (the narrowing way is the plan's checked conversion)
    sink.template gather_as<int64_t>(static_cast<int64_t*>(b.crd), ov, w);
  }
  to.written = true;
}

// The sparse result: into the caller's buffers when the call has them, else a new vector.
template <class I, class V>
Tensor sparse_result(const spmspv::RowSink<I, V>& sink, int64_t n, const ExecInputs& in) {
  if (in.into && !(sizeof(I) == 8 && in.into->index_type == IndexType::I32)) {
    write_into(sink, n, in.prepared.value_type, *in.into, workers_of(in));
    return Tensor{};
  }
  return sparse_vector_of(sink, n, in.prepared.value_type, in.ctx.allocator, workers_of(in));
}

// Runs a row-wise kernel (split into chunks of rows on the call's threads) into a dense or
// exact-size sparse result.
template <class I, class V, class Kernel>
Tensor run_rowwise(const ExecInputs& in, Kernel&& kernel) {
  const Allocator& alloc = in.ctx.allocator;
  const ValueType vt = in.prepared.value_type;
  auto A = cs_view<I, V>(in.prepared.operands[0]);
  auto x = spvec_view<I, V>(in.prepared.operands[1]);
  if (A.inner != x.n) fail(SJ_ERR_SHAPE_MISMATCH, "spmspv: A is ", A.outer, "x", A.inner, " but x has length ", x.n);
  spmspv::RowSink<I, V> sink;
  Workers& w = workers_of(in);
  // Each form's result is one named tensor returned by a lambda of its own, and the function
  // returns their prvalues: two named results in one function would be moved (~90
  // instructions, a tenth of a tiny call's own work).
  auto dense = [&] {
    Tensor y = make_dense(alloc, 1, &A.outer, vt);
    sink.dense = y.values.as_mut<V>();
    kernel(A, x, sink, w);
    return y;
  };
  // The rows are written by the kernels' row loops, which cannot fail once they start (their
  // workspaces are set up before), so a failed call writes nothing into the caller's buffer.
  auto dense_into = [&] {
    sink.dense = static_cast<V*>(in.into->buffers->values);
    kernel(A, x, sink, w);
    set_dense_layout(*in.into, A.outer, vt);
    in.into->written = true;
    return Tensor{};
  };
  auto sparse = [&] {
    // Collected into thread-local scratch (capacity m), then copied at exact size.
    auto& ws = spmspv::Scratch<I, V>::get();
    ws.need(0, A.outer);
    sink.idx = ws.list.data();
    sink.val = ws.outv.data();
    kernel(A, x, sink, w);
    return sparse_result(sink, A.outer, in);
  };
  if (!in.req.options.dense_output) return sparse();
  return dense_fits(in.into, A.outer) ? dense_into() : dense();
}

// Push's direct route (ScheduleImpl::direct): a serial push of A's kept CSC copy with x,
// written by the kernel into the caller's buffers or into a new result (a sparse one allocated
// at exact size once the touched rows are counted: copying it from a scratch cost ~100 ns of
// a ~1.9 us call on 1138_bus, x at 10%). What Push::run does for such a call, less the layers
// between: a ~100 ns call into buffers spent ~1,100 of its ~1,700 instructions there; a new
// result through them took ~350 more than through here.
template <class S, class I, class V, bool Dense> bool push_direct(const DirectCall& c) {
  const Tensor& a = c.operands[0];  // CSR, not transposed (Push::direct)
  const int64_t m = a.dims[0];
  // Buffers that hold a y of every row.
  if (!a.derived || (c.into && !(Dense ? dense_fits(c.into, m) : sparse_fits(*c.into->buffers, m)))) return false;
  const SpVecView<I, V> x = spvec_view<I, V>(c.operands[1]);
  const int64_t* row_pos = a.levels[1].pos.as<int64_t>();
  if (!spmspv::push_serial(spmspv::push_expected_products(row_pos, m, x.nnz, x.n), x.n, c.workers)) return false;
  uses_of(a, true);
  const CscSource& src = *static_cast<const CscSource*>(c.state);
  const Tensor& csc = a.derived->get_or_make(*src.key, [&] { return flip_orientation(a, c.ctx.allocator); });
  const CsView<I, V> A = cs_view<I, V>(csc);
  const ValueType vt = value_type_of<V>();
  c.workers.basis = spmspv::kPushSerialBasis;
  if constexpr (Dense) {  // y written in place: the new result's values, or the caller's
    if (!c.into) init_dense(*c.result, c.ctx.allocator, 1, &m, vt);
    spmspv::push_chunk_dense<S, I, V>(A, x, nullptr, 0, 0, m,
                                      c.into ? static_cast<V*>(c.into->buffers->values) : c.result->values.as_mut<V>());
    if (c.into) set_dense_layout(*c.into, m, vt);
  } else if (c.into) {
    const int64_t count = spmspv::push_chunk_sparse<S, I, V>(A, x, nullptr, 0, 0, m, static_cast<I*>(c.into->buffers->crd),
                                                             static_cast<V*>(c.into->buffers->values));
    set_vector_layout(*c.into, m, vt, count);
  } else {  // a new result at exact size, allocated once the count is known and written in place
    spmspv::push_chunk_sparse_placed<S, I, V>(A, x, nullptr, 0, 0, m, [&](int64_t count) {
      init_sparse_vector(*c.result, c.ctx.allocator, m, count, index_type_of<I>(), vt);
      return std::pair{c.result->levels[0].crd.template as_mut<I>(), c.result->values.template as_mut<V>()};
    });
  }
  if (c.into) c.into->written = true;
  return true;
}

// Whether a push may give each chunk of a split call its own row block of A's CSC copy
// (kernels/push_row_blocks.hpp): A given in CSR, not transposed, behind a handle that keeps
// derived forms. The blocks replace the cuts of the whole copy (PushCuts), not the buckets.
bool row_blocks_apply(const ExecInputs& in, const CscSource& src) {
  return !src.zero_copy && in.req.options.transpose_a == 0 && in.req.operands[0].derived &&
         is_csr(in.prepared.operands[0]);
}
// The kept blocks' name among the handle's facts: one set per thread count that split.
std::string row_blocks_key(IndexType it, ValueType vt, int64_t k) {
  return cat("csc-row-blocks/", to_string(it), "/", to_string(vt), "/", k);
}

class SpmspvSchedule : public ScheduleImpl {
 public:
  sj_op op() const override { return SJ_OP_SPMSPV; }
};

class Push final : public SpmspvSchedule {
  // Which accumulator the push takes for the plan's x (spmspv::push_dense_accumulator, per
  // call and chunk: a later x or a split into chunks may take the other).
  static std::string accumulator_note(const PlanInputs& in, const Features& f) {
    const bool exact = with_kernel_types(in.prepared.index_type, in.prepared.value_type, in.req.options.semiring,
                                         [](auto s, auto, auto) { return ExactIdentity<decltype(s)>::exists; });
    if (!exact) return "sparse accumulator (the semiring's add has no exact identity)";
    const double per_row = f.m > 0 ? f.flops / f.m : 0;
    const auto rows = static_cast<int64_t>(f.m);
    return cat(spmspv::dense_accumulator_pays(per_row, rows) ? "dense" : "sparse", " accumulator for this x (",
               std::round(per_row * 100) / 100, " expected products per row over ", rows,
               " rows; dense from ", spmspv::kDenseAccumulatorProductsPerRow, " over ",
               spmspv::kDenseAccumulatorMinRows, " rows, chosen per call and chunk)");
  }

 public:
  sj_schedule schedule() const override { return SJ_SCHEDULE_PUSH; }
  Costing cost(const PlanInputs& in) const override {
    const Features f = features(in);
    const bool dense = in.req.options.dense_output != 0;
    double out = dense ? Cf * f.m + Cy * f.ny : Cy * f.ny + std::min(Cs * f.ny * lg(f.ny), Cm * f.m);
    const CscSource src = csc_source(in.req, in.prepared.index_type);
    const Tensor& a = in.req.operands[0];
    double conv = 0;
    std::string note = cat("column-wise push over CSC(A), ", accumulator_note(in, f));
    if (src.zero_copy) {
      note += "; A given column-wise";
    } else if (has_form(a, *src.key)) {
      note += "; CSC copy cached on the handle";
    } else {
      const int64_t uses = uses_of(a, false);
      const bool reused = in.req.repeated || uses > 0;
      // Amortised over the calls seen so far, at least 20: the drop-in memo re-plans at every
      // power of two (src/plan_memo.cpp), so the copy is bought once the time lost without it
      // reaches its cost.
      conv = (Cc * f.nnz + Cr * (f.m + f.n)) * (reused ? 1.0 / std::max<double>(20, static_cast<double>(uses)) : 1.0);
      note += reused ? cat("; builds the CSC copy (", in.req.repeated ? "a plan" : "repeated operand", ": amortised)")
                     : "; builds a CSC copy";
    }
    return Costing::yes(K + Cx * f.nx + Cp * f.flops + out + conv, note);
  }
  // Where the CSC form comes from depends only on what the plan's signatures fix (A's format
  // and coordinate type, transpose_a): found once per plan.
  std::shared_ptr<const void> prepare(const PlanInputs& in, std::string* source, double* build_ms) const override {
    *source = "built-in";
    *build_ms = 0;
    return std::make_shared<const CscSource>(csc_source(in.req, in.prepared.index_type));
  }
  // For A given in CSR (its CSC copy kept on the handle), and a dense y or a sparse one in the
  // coordinate type computed: the tiny calls that the general layers dominated. The route
  // checks per call that it is serial and that the buffers fit; other calls take run().
  DirectRun direct(const PlanInputs& in, const void* state) const override {
    const CscSource& src = *static_cast<const CscSource*>(state);
    const sj_op_options& o = in.req.options;
    const IndexType out = output_index_type(o.output_index_type, in.prepared.result_index_type);
    const bool dense = o.dense_output != 0;
    if (src.zero_copy || o.transpose_a || !is_csr(in.req.operands[0]) || (!dense && out != in.prepared.index_type))
      return nullptr;
    return with_kernel_types(in.prepared.index_type, in.prepared.value_type, o.semiring,
                             [dense](auto s, auto i, auto v) -> DirectRun {
                               using S = decltype(s);
                               using I = decltype(i);
                               using V = decltype(v);
                               return dense ? &push_direct<S, I, V, true> : &push_direct<S, I, V, false>;
                             });
  }
  Tensor run(const ExecInputs& in) const override {
    uses_of(in.req.operands[0], true);
    Tensor storage;
    const CscSource src =
        in.state ? *static_cast<const CscSource*>(in.state) : csc_source(in.req, in.prepared.index_type);
    return dispatch_kernel(in, [&](auto s, auto i, auto v) {
      using S = decltype(s);
      using I = decltype(i);
      using V = decltype(v);
      const Allocator& alloc = in.ctx.allocator;
      const ValueType vt = in.prepared.value_type;
      auto x = spvec_view<I, V>(in.prepared.operands[1]);
      Workers& w = workers_of(in);
      // A split call on a CSR A kept with its handle walks row blocks of A's CSC copy, one per
      // chunk (kernels/push_row_blocks.hpp); other calls walk the whole CSC copy (or A itself).
      std::shared_ptr<const spmspv::PushRowBlocks<I, V>> blocks;
      CsView<I, V> A;  // outer = columns
      Partition part;
      const bool may_block = row_blocks_apply(in, src);
      if (may_block) {
        const Tensor& csr = in.prepared.operands[0];
        const int64_t m = csr.dims[0], n = csr.dims[1];
        if (n != x.n) fail(SJ_ERR_SHAPE_MISMATCH, "spmspv: A is ", m, "x", n, " but x has length ", x.n);
        const int64_t* row_pos = csr.levels[1].pos.as<int64_t>();
        part = spmspv::push_partition(row_pos, m, x.nnz, x.n, w);
        if (part.chunks() > 1 && spmspv::push_row_blocks_pay(w, spmspv::mean_column(row_pos[m] - row_pos[0], n))) {
          // Blocks are cut as the push cuts rows for this thread count (fewer chunks than
          // threads where A has few rows); another partition (the static-rows ablation) reads
          // cuts of the whole copy.
          const int64_t k = w.threads;
          if (partition_into(row_pos, m, k).bounds == part.bounds) {
            blocks = in.req.operands[0].derived->template fact<spmspv::PushRowBlocks<I, V>>(
                row_blocks_key(csr.index_type, vt, k), [&] { return spmspv::make_push_row_blocks<I, V>(csr, k, alloc, w); });
            if (blocks->part.bounds != part.bounds)
              fail(SJ_ERR_INTERNAL, "push: kept row blocks of A do not match the call's ", part.chunks(), " chunks");
            A = blocks->whole;
            w.basis = "A's nnz per output row, a chunk per thread (each walks its own row block of A's CSC copy)";
          }
        }
      }
      if (!blocks) {
        A = cs_view<I, V>(csc_of(in.req, src, in.prepared, alloc, storage));
        if (A.outer != x.n) fail(SJ_ERR_SHAPE_MISMATCH, "spmspv: A is ", A.inner, "x", A.outer, " but x has length ", x.n);
        // Output rows split by A's nnz per row (the CSR form's positions).
        if (!may_block)
          part = spmspv::push_partition(in.prepared.operands[0].levels[1].pos.as<int64_t>(), A.inner, x.nnz, x.n, w);
      }
      const CsView<I, V>* block_views = blocks ? blocks->views.data() : nullptr;
      // One named result per lambda, returned as prvalues (see run_rowwise).
      auto dense = [&] {
        Tensor y = make_dense(alloc, 1, &A.inner, vt);
        spmspv::push_dense<S>(A, x, y.values.as_mut<V>(), part, w, spmspv::PushAccumulator::kAuto, block_views);
        return y;
      };
      // Into the caller's buffer by one chunk, which writes only after its workspace is sized:
      // of several, one could fail after another wrote its rows.
      auto dense_into = [&] {
        spmspv::push_dense<S>(A, x, static_cast<V*>(in.into->buffers->values), part, w, spmspv::PushAccumulator::kAuto,
                                 block_views);
        set_dense_layout(*in.into, A.inner, vt);
        in.into->written = true;
        return Tensor{};
      };
      auto sparse = [&] {
        // Collected in this thread's output scratch (push's touched lists are in each running
        // thread's Scratch::list), then copied at exact size; or written by the one chunk
        // straight into the caller's buffers (the kernel can only fail before its first write:
        // its workspaces are sized first).
        auto& ws = spmspv::Scratch<I, V>::get();
        ws.need(0, A.inner);
        spmspv::RowSink<I, V> sink;
        OutputTarget* direct = direct_target<I, V>(in, A.inner, part.chunks());
        sink.idx = direct ? static_cast<I*>(direct->buffers->crd) : ws.outi.data();
        sink.val = direct ? static_cast<V*>(direct->buffers->values) : ws.outv.data();
        spmspv::push_sparse<S>(A, x, part, w, sink, spmspv::PushAccumulator::kAuto, block_views);
        if (direct) {
          set_vector_layout(*direct, A.inner, vt, sink.count);
          direct->written = true;
          return Tensor{};
        }
        return sparse_result(sink, A.inner, in);
      };
      if (!in.req.options.dense_output) return sparse();
      return part.chunks() == 1 && dense_fits(in.into, A.inner) ? dense_into() : dense();
    });
  }
};

class Densify final : public SpmspvSchedule {
  static size_t workspace_bytes(int64_t n, ValueType vt) {
    return estimate_bytes(n, static_cast<size_t>(value_size(vt)) + 1);
  }

 public:
  sj_schedule schedule() const override { return SJ_SCHEDULE_DENSIFY; }
  Costing cost(const PlanInputs& in) const override {
    const Features f = features(in);
    double c = K + Cd * f.nx + Cr * f.m + Cg * f.nnz + (in.req.options.dense_output ? Cf * f.m : 0);
    // The workspace is a value and a byte per element of x, sized by x's length, not its
    // entries: over the memory cap it cannot run; a large one is first allocated and zeroed
    // (~0.1 ns per byte, not calibrated), which the model charges when it is large.
    const size_t ws = workspace_bytes(in.stats[1].cols, in.prepared.value_type);
    if (in.ctx.allocator.over_cap(ws))
      return Costing::yes(kOverMemoryCapCost, cat("scatter x into a dense workspace: its ", ws, " bytes (x has length ",
                                                  in.stats[1].cols, ") are over the memory cap"));
    if (ws > (size_t(32) << 20)) c += 0.1 * static_cast<double>(ws);
    return Costing::yes(c, "scatter x into a dense workspace, gather over A's rows");
  }
  Tensor run(const ExecInputs& in) const override {
    uses_of(in.req.operands[0], true);
    const int64_t n = in.prepared.operands[1].dims[0];
    in.ctx.allocator.charge(workspace_bytes(n, in.prepared.value_type),
                            [&] { return cat("spmspv densify workspace (x has length ", n, ")"); });
    return dispatch_kernel(in, [&](auto s, auto i, auto v) {
      using S = decltype(s);
      return run_rowwise<decltype(i), decltype(v)>(in, [](auto& A, auto& x, auto& sink, Workers& w) { spmspv::densify<S>(A, x, sink, w); });
    });
  }
};

class Search final : public SpmspvSchedule {
 public:
  sj_schedule schedule() const override { return SJ_SCHEDULE_SEARCH; }
  Costing cost(const PlanInputs& in) const override {
    const Features f = features(in);
    const double s = std::min(f.L, f.nx), l = std::max(f.L, f.nx);
    double c = K + Cr * f.m + Cb * f.m * s * (1 + (s > 0 ? lg(l / s) : 0));
    return Costing::yes(c, "row-wise, the shorter side gallops through the longer");
  }
  Tensor run(const ExecInputs& in) const override {
    uses_of(in.req.operands[0], true);
    return dispatch_kernel(in, [&](auto s, auto i, auto v) {
      using S = decltype(s);
      return run_rowwise<decltype(i), decltype(v)>(in, [](auto& A, auto& x, auto& sink, Workers& w) { spmspv::search<S>(A, x, sink, w); });
    });
  }
};

class Inner final : public SpmspvSchedule {
 public:
  sj_schedule schedule() const override { return SJ_SCHEDULE_INNER; }
  Costing cost(const PlanInputs& in) const override {
    const Features f = features(in);
    double c = K + Cr * f.m + Cm2 * (f.nnz + f.m * f.nx / 2);
    return Costing::yes(c, cat("row-wise coiteration of each row with x: ", kernels::describe(config_for(in))));
  }
  // The coiteration kernels (kernels/coiter_drivers.hpp), looked up once per plan.
  std::shared_ptr<const void> prepare(const PlanInputs& in, std::string* source, double* build_ms) const override {
    double us = 0;
    bool generated = false;
    auto cfg = std::make_shared<kernels::CoiterConfig>(kernels::resolve_coiter(
        config_for(in), in.prepared.index_type, in.prepared.value_type, in.req.options.semiring, false, &us, &generated));
    *source = !generated ? "built-in" : us > 0 ? "compiled" : "memory";
    *build_ms = us / 1000.0;
    return cfg;
  }
  Tensor run(const ExecInputs& in) const override {
    uses_of(in.req.operands[0], true);
    const auto& ops = in.prepared.operands;
    kernels::CoiterConfig cfg;
    if (in.state) {
      cfg = *static_cast<const kernels::CoiterConfig*>(in.state);
    } else {
      const double ra = ops[0].dims[0] ? double(ops[0].nnz()) / double(ops[0].dims[0]) : 0;
      cfg = kernels::coiter_config(in.req.options, in.prepared.index_type, in.prepared.value_type, ra,
                                   double(ops[1].nnz()));
    }
    return kernels::coiter_spmspv(ops[0], ops[1], in.req.options.semiring, cfg, in.req.options.dense_output != 0,
                                  in.ctx.allocator, &workers_of(in));
  }

 private:
  static kernels::CoiterConfig config_for(const PlanInputs& in) {
    return kernels::coiter_config(in.req.options, in.prepared.index_type, in.prepared.value_type,
                                  in.stats[0].row_mean, static_cast<double>(in.stats[1].nnz));
  }
};

class SpmvGather final : public ScheduleImpl {
 public:
  sj_op op() const override { return SJ_OP_SPMV; }
  sj_schedule schedule() const override { return SJ_SCHEDULE_DENSIFY; }
  Costing cost(const PlanInputs& in) const override {
    const MatrixStats& a = in.stats[0];
    return Costing::yes(K + Cr * a.rows + Cg2 * a.nnz, "row-wise gather from the dense x");
  }
  Tensor run(const ExecInputs& in) const override {
    return dispatch_kernel(in, [&](auto s, auto i, auto v) {
      using S = decltype(s);
      using I = decltype(i);
      using V = decltype(v);
      auto A = cs_view<I, V>(in.prepared.operands[0]);
      const Tensor& x = in.prepared.operands[1];
      if (A.inner != x.dims[0]) fail(SJ_ERR_SHAPE_MISMATCH, "spmv: A is ", A.outer, "x", A.inner, " but x has length ", x.dims[0]);
      Tensor y = make_dense(in.ctx.allocator, 1, &A.outer, in.prepared.value_type);
      spmspv::spmv_rows<S>(A, x.values.as<V>(), y.values.as_mut<V>(), workers_of(in));
      return y;
    });
  }
  // The row loop spmv_rows takes follows from the types, the semiring and x's size: kept here
  // for explain.
  struct RowLoop {
    bool gathers_serve = false;  // the gather loop has this semiring and these types, and the AVX-512 tier runs
    int64_t x_bytes = 0;
  };
  std::shared_ptr<const void> prepare(const PlanInputs& in, std::string* source, double* build_ms) const override {
    *source = "built-in";
    *build_ms = 0;
    auto loop = std::make_shared<RowLoop>();
    with_kernel_types(in.prepared.index_type, in.prepared.value_type, in.req.options.semiring, [&](auto s, auto i, auto v) {
      using V = decltype(v);
      loop->gathers_serve = spmv_gather_avx512::supports<decltype(s), decltype(i), V> && spmv_gather_avx512::available();
      loop->x_bytes = in.prepared.operands[1].dims[0] * static_cast<int64_t>(sizeof(V));
    });
    return loop;
  }
  std::string describe_state(const void* state) const override {
    if (!state) return "";
    const auto& loop = *static_cast<const RowLoop*>(state);
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.3g", static_cast<double>(loop.x_bytes) / (1 << 20));
    if (!loop.gathers_serve)
      return "row loop with scalar loads of x (the gather loop serves plus-times, min-plus and max-times over float "
             "or double where the AVX-512 tier runs: the CPU, capped by SPARSEJIT_ISA)";
    const bool in_window = gather_window::in_default_window(loop.x_bytes);
    if (gather_window::pays(loop.x_bytes))
      return cat("row loop reading x by AVX-512 gathers, eight products a block (x ", mib, " MiB: ",
                 in_window ? "larger than L2, at most a quarter of L3" : "gathers pinned on", ")");
    return cat("row loop with scalar loads of x (x ", mib, " MiB: ",
               in_window                                      ? "gathers pinned off"
               : loop.x_bytes <= gather_window::l2_bytes() ? "fits L2"
                                                              : "beyond a quarter of L3",
               ")");
  }
};

}  // namespace

void add_spmspv_schedules(std::vector<const ScheduleImpl*>& out) {
  static const Push push;
  static const Densify densify;
  static const Search search;
  static const Inner inner;
  static const SpmvGather spmv;
  out.push_back(&push);
  out.push_back(&densify);
  out.push_back(&search);
  out.push_back(&inner);
  out.push_back(&spmv);
}

}  // namespace sj

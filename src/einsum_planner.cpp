#include "src/einsum_planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

#include "cache/persistent_store.hpp"
#include "jit/llvm_backend.hpp"
#include "kernels/einsum_output.hpp"
#include "kernels/einsum_reference.hpp"
#include "kernels/spgemm_plan_state.hpp"
#include "src/derived_forms.hpp"
#include "src/dispatch.hpp"
#include "src/einsum_format.hpp"
#include "src/error.hpp"
#include "src/gather_window.hpp"
#include "src/json_writer.hpp"
#include "src/logging.hpp"
#include "src/operation.hpp"
#include "src/work_partition.hpp"

namespace sj::einsum {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Model constants (≈ ns on this machine, from bench_einsum): one step of a loop over a level,
// one comparison step of a merge (SIMD fast lane included), a search's fixed and per-halving
// cost (dependent loads: a search costs ~25-35 ns over 60 coordinates), one multiply-add, one
// output entry, and one converted entry (~20 ns, sort-based conversion) spread over the
// executions a plan is expected to serve (the converted form is kept with the operand's
// handle, so only the first execution pays it).
constexpr double kLoopStep = 1.0, kMergeStep = 1.5, kSearchBase = 6.0, kSearchStep = 3.0, kCompute = 1.0,
                 kEmit = 6.0, kConvertPerEntry = 20.0, kExpectedExecutions = 8.0;

// The schedule a built-in SpGEMM term runs (TermPlan::spgemm).
sj_schedule spgemm_schedule(const TermPlan& tp) {
  return tp.spgemm_kind == SpgemmAccumulator::Hash ? SJ_SCHEDULE_GUSTAVSON_HASH : SJ_SCHEDULE_GUSTAVSON_DENSE;
}

// The indices of access `a` in the level order of `spec`.
std::vector<int> level_indices(const Access& a, const FormatSpec& spec) {
  std::vector<int> out;
  for (int l = 0; l < spec.order; ++l) out.push_back(a.indices[spec.mode_order[l]]);
  return out;
}

bool is_subsequence(const std::vector<int>& sub, const std::vector<int>& seq) {
  size_t k = 0;
  for (int v : sub) {
    while (k < seq.size() && seq[k] != v) ++k;
    if (k == seq.size()) return false;
    ++k;
  }
  return true;
}

bool has_repeat(const std::vector<int>& order) {
  for (size_t a = 0; a < order.size(); ++a)
    for (size_t b = a + 1; b < order.size(); ++b)
      if (order[a] == order[b]) return true;
  return false;
}

std::string spec_key(const FormatSpec& s, IndexType it) { return cat("einsum-form:", format_text(s), ":", to_string(it)); }

// Mean and spread of the segment lengths of level l (compressed levels; exact, O(parents)).
struct LevelStats {
  double mean = 1, stddev = 0;
};
LevelStats level_stats(const Tensor& t, int l) {
  LevelStats s;
  if (l >= t.order) return s;
  const int64_t parents = l == 0 ? 1 : t.level_entries(l - 1);
  const Level& lv = t.levels[l];
  if (lv.kind == LevelKind::Dense) return {static_cast<double>(t.level_dim(l)), 0};
  if (lv.kind == LevelKind::Singleton || parents == 0) return s;
  const int64_t* pos = lv.pos.as<int64_t>();
  double sum = 0, sq = 0;
  for (int64_t p = 0; p < parents; ++p) {
    double len = static_cast<double>(pos[p + 1] - pos[p]);
    sum += len;
    sq += len * len;
  }
  s.mean = sum / parents;
  s.stddev = std::sqrt(std::max(0.0, sq / parents - s.mean * s.mean));
  return s;
}

// The position in the last level of `t` where the subtree of level-0 position p begins (p may be
// one past the end): the entries under level-0 positions [a, b) are last_level_begin(t, b) -
// last_level_begin(t, a), in O(order) however many positions the range holds.
int64_t last_level_begin(const Tensor& t, int64_t p) {
  for (int l = 1; l < t.order; ++l) {
    const Level& lv = t.levels[l];
    if (lv.kind == LevelKind::Dense) p *= t.level_dim(l);
    else if (lv.kind == LevelKind::Compressed) p = lv.pos.as<int64_t>()[p];
  }  // a singleton level keeps one entry per parent: p unchanged
  return p;
}

// Positions of level 0 of `t`.
int64_t level0_positions(const Tensor& t) {
  return std::max<int64_t>(0, t.levels[0].kind == LevelKind::Dense ? t.level_dim(0) : t.level_entries(0));
}

// Calls f(p, entries) for each position p of level 0 of `t` with the stored entries of its
// subtree (the last level's).
template <class F> void for_each_under_level0(const Tensor& t, F&& f) {
  if (t.order == 0) return;
  const int64_t n0 = level0_positions(t);
  int64_t begin = last_level_begin(t, 0);
  for (int64_t p = 0; p < n0; ++p) {
    const int64_t end = last_level_begin(t, p + 1);
    f(p, end - begin);
    begin = end;
  }
}

// Stored entries under each position of level 0 of `t` (the last level's entries of its subtree).
std::vector<int64_t> entries_under_level0(const Tensor& t) {
  if (t.order == 0) return {};
  std::vector<int64_t> out(static_cast<size_t>(level0_positions(t)));
  for_each_under_level0(t, [&](int64_t p, int64_t e) { out[static_cast<size_t>(p)] = e; });
  return out;
}

// True when every level of `t` is dense: the same number of entries under each coordinate.
bool all_dense(const Tensor& t) {
  for (int l = 0; l < t.order; ++l)
    if (t.levels[l].kind != LevelKind::Dense) return false;
  return true;
}

// Calls f(coordinate, position) for the entries of level l of `t` under position `parent`
// of level l-1 (level 0: the root). Dense and compressed levels.
template <class F> void for_segment(const Tensor& t, int l, int64_t parent, F&& f) {
  const Level& lv = t.levels[l];
  if (lv.kind == LevelKind::Dense) {
    const int64_t d = t.level_dim(l);
    for (int64_t c = 0; c < d; ++c) f(c, parent * d + c);
    return;
  }
  const int64_t* pos = lv.pos.as<int64_t>();
  with_types(t.index_type, ValueType::F64, [&](auto i, auto) {
    using I = decltype(i);
    const I* crd = lv.crd.as<I>();
    for (int64_t p = pos[parent]; p < pos[parent + 1]; ++p) f(static_cast<int64_t>(crd[p]), p);
  });
}

// The most stored entries under one position of level 0 of `t` (no array of them).
int64_t most_under_level0(const Tensor& t) {
  int64_t most = 0;
  for_each_under_level0(t, [&](int64_t, int64_t e) { most = std::max(most, e); });
  return most;
}

// The level references a loop binds, iterated and located.
std::vector<LevelRef> loop_refs(const Loop& lp) {
  std::vector<LevelRef> r = lp.iterate;
  r.insert(r.end(), lp.locate.begin(), lp.locate.end());
  return r;
}

// An upper bound of outer_work_prefix's total, found without its arrays: n, plus every entry of
// each factor whose level 0 the outermost loop binds, plus (second loop) every entry of such a
// factor's level 1 times the most entries under one coordinate of the factors whose level 0
// the second loop binds. A call whose bound is under min_parallel_work runs one chunk without
// building the prefix: that pass made small plans 1.08-1.29x slower at 2 threads than at 1
// (y(i)=A(i,k)*x(k) on 494_bus, 1138_bus; bench/threads_small.c).
int64_t outer_work_bound(const LoopNest& nest, const std::vector<Tensor>& held, int64_t n) {
  constexpr int64_t kHuge = std::numeric_limits<int64_t>::max() / 4;
  auto add = [&](int64_t a, int64_t b) { return std::min(kHuge, a + std::min(kHuge, b)); };
  auto mul = [&](int64_t a, int64_t b) { return a != 0 && b > kHuge / a ? kHuge : a * b; };
  int64_t bound = std::max<int64_t>(0, n);
  if (nest.loops.empty()) return bound;
  const Loop& l0 = nest.loops[0];
  for (const LevelRef& r : loop_refs(l0))
    if (r.level == 0) bound = add(bound, held[r.factor].nnz());
  if (nest.loops.size() < 2 || nest.loops[1].index == l0.index) return bound;
  const Loop& l1 = nest.loops[1];
  int64_t most = 0;
  for (const LevelRef& r : loop_refs(l1))
    if (r.level == 0 && !all_dense(held[r.factor])) most = add(most, most_under_level0(held[r.factor]));
  if (most == 0) return bound;
  for (const LevelRef& r0 : loop_refs(l0)) {
    if (r0.level != 0) continue;
    const Tensor& t = held[r0.factor];
    if (t.order < 2 || t.levels[1].kind == LevelKind::Singleton) continue;
    bound = add(bound, mul(t.level_entries(1), most));
  }
  return bound;
}

// Estimated work per coordinate of the outermost loop's index: 1, plus the entries under that
// coordinate of every factor whose level 0 the loop binds, plus (second loop) for each entry
// of such a factor's level 1, the entries under that coordinate of every factor whose level 0
// the second loop binds: the multiply count of a Gustavson row for SpGEMM, where a row's
// length alone says little. Serial, once per execution. Coordinates are summed in slots of
// `width` consecutive coordinates (slot c / width; at most kPartitionSlots of them): a chunk
// boundary needs no finer grain than that, a huge dimension (a vector of 2^31 coordinates)
// costs no dense array of it, and a factor whose level 0 is dense (CSR, dense) costs O(slots),
// not a pass over its rows. A compressed level 0 costs O(its entries), the second-loop
// refinement O(entries of level 1); it is skipped when its index is over kMaxWorkSlots.
constexpr int64_t kMaxWorkSlots = int64_t{1} << 22;
constexpr int64_t kPartitionSlots = int64_t{1} << 12;
// Estimated work per piece of a serial run into a streamed sparse output: the work bounds the
// piece's entries (multiplies for SpGEMM, entries of the inputs for a Hadamard product), so a
// piece stays well under the 64 MB an assembler may keep (16-24 bytes per entry).
constexpr int64_t kSerialPieceWork = int64_t{1} << 21;
std::vector<int64_t> outer_work_prefix(const LoopNest& nest, const std::vector<Tensor>& held, int64_t n, int64_t width) {
  const int64_t slots = (n + width - 1) / width;
  std::vector<int64_t> prefix(static_cast<size_t>(slots) + 1, 0);
  for (int64_t c = 0; c < slots; ++c) prefix[c + 1] = std::min(width, n - c * width);
  // the slot of coordinate c; width is 1 unless the dimension dwarfs the entries, and a 64-bit
  // division per entry was most of this function's time
  const auto slot = [width](int64_t c) { return static_cast<size_t>(width == 1 ? c : c / width); };
  if (nest.loops.size() >= 2) {
    const Loop& l0 = nest.loops[0];
    const Loop& l1 = nest.loops[1];
    // entries under each coordinate of the second loop's index, summed over the factors it
    // starts; a dense factor (SpMV's x, MTTKRP's B) adds the same to every coordinate, which is
    // proportional to the entries of level 1 that the level-0 term already counts: left out
    const int64_t n1 = l1.index == l0.index ? 0 : [&] {
      int64_t d = 0;
      for (auto& r : loop_refs(l1))
        if (r.level == 0 && !all_dense(held[r.factor])) d = std::max(d, held[r.factor].level_dim(0));
      return d > kMaxWorkSlots ? 0 : d;
    }();
    std::vector<int64_t> under1(static_cast<size_t>(n1), 0);
    bool any1 = false;
    for (auto& r : loop_refs(l1)) {
      if (r.level != 0 || n1 == 0) continue;
      const Tensor& t = held[r.factor];
      if (all_dense(t)) continue;
      const std::vector<int64_t> under = entries_under_level0(t);
      for_segment(t, 0, 0, [&](int64_t c, int64_t p) {
        if (c >= 0 && c < n1) under1[static_cast<size_t>(c)] += under[static_cast<size_t>(p)];
      });
      any1 = true;
    }
    // equal everywhere: proportional to the entries of level 1 as well; skip the pass over them
    if (any1 && std::all_of(under1.begin(), under1.end(), [&](int64_t u) { return u == under1[0]; })) any1 = false;
    if (any1)
      for (auto& r0 : loop_refs(l0)) {
        if (r0.level != 0) continue;
        const Tensor& t = held[r0.factor];
        if (t.order < 2 || t.levels[1].kind == LevelKind::Singleton) continue;
        bool second = false;  // the factor's level 1 is bound by the second loop
        for (auto& r : loop_refs(l1)) second |= r.factor == r0.factor && r.level == 1;
        if (!second) continue;
        for_segment(t, 0, 0, [&](int64_t c, int64_t p) {
          if (c < 0 || c >= n) return;
          int64_t w = 0;
          for_segment(t, 1, p, [&](int64_t k, int64_t) {
            if (k >= 0 && k < n1) w += under1[static_cast<size_t>(k)];
          });
          prefix[slot(c) + 1] += w;
        });
      }
  }
  const Loop& lp = nest.loops[0];
  auto add = [&](const LevelRef& r) {
    if (r.level != 0) return;
    const Tensor& t = held[r.factor];
    if (t.levels[0].kind == LevelKind::Dense) {  // slot by slot: the entries under its range
      const int64_t d = std::min(n, t.level_dim(0));
      int64_t begin = last_level_begin(t, 0);
      for (int64_t c = 0; c * width < d; ++c) {
        const int64_t end = last_level_begin(t, std::min(d, (c + 1) * width));
        prefix[static_cast<size_t>(c) + 1] += end - begin;
        begin = end;
      }
      return;
    }
    const std::vector<int64_t> under = entries_under_level0(t);
    const int64_t* pos = t.levels[0].pos.data() ? t.levels[0].pos.as<int64_t>() : nullptr;
    const int64_t begin = pos ? pos[0] : 0, end = pos ? pos[1] : static_cast<int64_t>(under.size());
    with_types(t.index_type, ValueType::F64, [&](auto i, auto) {
      using I = decltype(i);
      const I* crd = t.levels[0].crd.as<I>();
      for (int64_t p = begin; p < end; ++p)
        if (crd[p] >= 0 && crd[p] < n) prefix[slot(crd[p]) + 1] += under[static_cast<size_t>(p)];
    });
  };
  for (auto& r : lp.iterate) add(r);
  for (auto& r : lp.locate) add(r);
  for (int64_t c = 0; c < slots; ++c) prefix[c + 1] += prefix[c];
  return prefix;
}

// `where` workspaces handed to chunks: one per thread at most, reused (a consumer leaves its
// flags zeroed). Taken and returned once per chunk, never inside a loop.
struct WorkspacePool {
  struct Workspace {
    std::vector<double> d;
    std::vector<float> f;
    std::vector<uint8_t> flags;
    std::vector<int64_t> list;
    void* vals = nullptr;
  };
  int64_t n = 0;
  bool f32 = false;
  std::mutex mutex;
  std::vector<std::unique_ptr<Workspace>> free;
  std::unique_ptr<Workspace> take() {
    {
      std::lock_guard lock(mutex);
      if (!free.empty()) {
        auto w = std::move(free.back());
        free.pop_back();
        return w;
      }
    }
    auto w = std::make_unique<Workspace>();
    if (f32) w->f.assign(n, 0.f), w->vals = w->f.data();
    else w->d.assign(n, 0.0), w->vals = w->d.data();
    w->flags.assign(n, 0);
    w->list.assign(n, 0);
    return w;
  }
  void give(std::unique_ptr<Workspace> w) {
    std::lock_guard lock(mutex);
    free.push_back(std::move(w));
  }
};

}  // namespace

EinsumPlan::~EinsumPlan() = default;

void EinsumPlan::check_operands(const std::vector<Tensor>& ops, bool planning) {
  if (ops.size() != expr_.operands.size()) {
    std::string names;
    for (auto& n : expr_.operands) names += (names.empty() ? "" : ", ") + n;
    fail(SJ_ERR_INVALID_ARGUMENT, "the expression takes ", expr_.operands.size(), " operands (", names, ", in order of ",
         "first appearance), got ", ops.size());
  }
  // every access agrees with its tensor's order; every index has one extent
  std::vector<int64_t> dims(expr_.index_names.size(), -1);
  std::vector<std::string> where(expr_.index_names.size());
  for (auto& term : expr_.terms)
    for (auto& a : term.factors) {
      const Tensor& t = ops[expr_.operand_of(a)];
      check_operand(t, expr_, a);
      for (size_t m = 0; m < a.indices.size(); ++m) {
        int v = a.indices[m];
        if (dims[v] < 0) {
          dims[v] = t.dims[m];
          where[v] = Expression::access_text(expr_, a);
        } else if (dims[v] != t.dims[m]) {
          fail(SJ_ERR_SHAPE_MISMATCH, "index '", expr_.index_names[v], "' has extent ", dims[v], " in ", where[v], " but ",
               t.dims[m], " in ", Expression::access_text(expr_, a));
        }
      }
    }
  ValueType vt = ops.empty() ? ValueType::F64 : ops[0].value_type;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].value_type != vt)
      fail(SJ_ERR_TYPE_MISMATCH, expr_.operands[i], " holds ", to_string(ops[i].value_type), " values but ",
           expr_.operands[0], " holds ", to_string(vt));
  if (vt == ValueType::Bool && options_.semiring != SJ_SEMIRING_OR_AND)
    fail(SJ_ERR_TYPE_MISMATCH, "bool operands need the or-and semiring, not ", to_string(options_.semiring));
  if (planning) {
    index_dims_ = dims;
    value_type_ = vt;
    // Kernels run in the coordinate type most of the stored coordinates already have; the
    // result gets i64 when any operand has it (unless the options ask for a type).
    const IndexTypes types = index_types_of(ops);
    index_type_ = types.compute;
    result_index_type_ = types.result;
    for (auto& t : ops) given_.push_back(t.describe());
  } else if (dims != index_dims_) {
    fail(SJ_ERR_SHAPE_MISMATCH, "operands do not have the planned shapes");
  }
}

Tensor EinsumPlan::factor_tensor(const Tensor& operand, const FormatSpec& spec) const {
  // As it is also when only the label differs: a dense operand stores no coordinates. Kept in
  // its own derived forms, that copy (which shares them) made a cycle, and leaked the operand.
  if (already_in(operand, spec, index_type_)) return operand;
  auto make = [&] { return convert(operand, spec, index_type_, ctx_.allocator); };
  if (operand.derived) return operand.derived->get_or_make(spec_key(spec, index_type_), make);
  return make();
}

bool EinsumPlan::spgemm_shape(size_t t, int* left) const {
  auto csr_like = [](const FormatSpec& f) {
    return f.order == 2 && f.kinds[0] == LevelKind::Dense && f.kinds[1] == LevelKind::Compressed && f.unique[1];
  };
  if (!sparse_output_ || dense_temp_ || !csr_like(output_format_)) return false;
  // (bool values serve only or-and in the built-in kernels)
  if (value_type_ == ValueType::Bool && options_.semiring != SJ_SEMIRING_OR_AND) return false;
  const Term& term = expr_.terms[t];
  if (term.factors.size() != 2) return false;
  std::vector<int> lv[2];
  for (int f = 0; f < 2; ++f) {
    const FormatSpec& spec = operand_formats_[expr_.operand_of(term.factors[f])];
    if (term.factors[f].indices.size() != 2 || !csr_like(spec)) return false;
    lv[f] = level_indices(term.factors[f], spec);
  }
  return chained_matrix_product(lv[0], lv[1], level_indices(expr_.output, output_format_), left);
}

Tensor EinsumPlan::run_spgemm_term(size_t t, const std::vector<Tensor>& operands, Workers& workers) const {
  const TermPlan& tp = terms_[t];
  const Term& term = expr_.terms[t];
  // A factor's level arrays as a CSR matrix of its level order (a CSC operand: the CSR arrays
  // of its transpose).
  auto csr_of = [&](int f) {
    const int op = expr_.operand_of(term.factors[f]);
    Tensor x = factor_tensor(operands[op], operand_formats_[op]);
    if (x.mode_order[0] != 0) {
      const int64_t outer = x.level_dim(0), inner = x.level_dim(1);
      x.dims[0] = outer;
      x.dims[1] = inner;
      x.mode_order = {0, 1, 2, 3};
      x.derived = nullptr;  // its kept forms are of the operand as stored, not of this view
    }
    return x;
  };
  const Tensor L = csr_of(tp.spgemm_left), R = csr_of(1 - tp.spgemm_left);
  // The products are formed as mul(L, R): the factors' written order when L comes first, else
  // swapped, which every semiring's multiply allows bit for bit (IEEE products and sums
  // commute; only which of two NaN payloads survives may differ).
  Tensor C = run_gustavson_plan(L, R, options_.semiring, false, tp.spgemm_kind, !options_.recompute_structure,
                                tp.spgemm.get(), ctx_.allocator, workers);
  C.dims = output_dims_;  // C's levels are the output's (p, r)
  C.mode_order = output_format_.mode_order;
  return C;
}

// Estimated cost of running candidate c: walk the loops keeping the expected number of times
// each body runs, from the mean segment length of each level (exact for the operands' own
// layouts, uniform estimates for converted ones).
double EinsumPlan::simulate(const Term& term, const EinsumCandidate& c, const std::vector<Tensor>& ops) const {
  LoopNest nest = LoopNest::build(expr_, term, c.formats, {}, c.order, OutputMode::Dense, c.search);
  auto mean_len = [&](const LevelRef& r) -> double {
    const Tensor& t = ops[expr_.operand_of(term.factors[r.factor])];
    const FormatSpec& spec = c.formats[r.factor];
    if (!c.converted[r.factor]) return std::max(1e-9, level_stats(t, r.level).mean);
    // uniform estimate: entries at level l ≈ min(product of the level extents, nnz)
    double above = 1, here = 1;
    for (int l = 0; l <= r.level; ++l) {
      here *= static_cast<double>(t.dims[spec.mode_order[l]]);
      if (l < r.level) above = here;
    }
    const double nnz = static_cast<double>(t.nnz());
    return std::max(1e-9, std::min(here, nnz) / std::max(1.0, std::min(above, nnz)));
  };
  double n = 1, cost = 0;
  for (auto& lp : nest.loops) {
    const double d = std::max<double>(1, index_dims_[lp.index]);
    if (lp.kind == LoopKind::Forsame) {
      double p = 1;
      for (auto& r : lp.search) {
        double len = mean_len(r);
        cost += n * (kSearchBase + kSearchStep * std::log2(len + 1) * (c.search == SearchKind::Galloping ? 1.3 : 1.0));
        p *= std::min(1.0, len / d);
      }
      n *= p;
    } else if (lp.iterate.empty()) {
      cost += n * d * kLoopStep;
      n *= d;
    } else {
      double shortest = 1e300, sum = 0, p = 1;
      for (auto& r : lp.iterate) {
        double len = mean_len(r);
        sum += len;
        shortest = std::min(shortest, len);
      }
      for (auto& r : lp.iterate) p *= std::min(1.0, mean_len(r) / d);
      cost += n * sum * (lp.iterate.size() > 1 ? kMergeStep : kLoopStep);
      n *= lp.iterate.size() > 1 ? d * p : shortest;
    }
  }
  cost += n * kCompute;
  if (c.mode != OutputMode::Dense) cost += n * kEmit * 0.5;
  for (size_t f = 0; f < c.formats.size(); ++f)
    if (c.converted[f]) {
      const Tensor& t = ops[expr_.operand_of(term.factors[f])];
      // a conversion already kept with the operand's handle costs nothing more
      bool cached = false;
      if (t.derived) {
        std::lock_guard lock(t.derived->mutex);
        for (auto& [k, _] : t.derived->forms) cached |= k == spec_key(c.formats[f], index_type_);
      }
      if (!cached) cost += static_cast<double>(t.nnz()) * kConvertPerEntry / kExpectedExecutions;
    }
  return cost;
}

std::vector<EinsumCandidate> EinsumPlan::candidates_for(const Term& term, const IterationGraph& g,
                                                         const std::vector<Tensor>& ops) {
  std::vector<EinsumCandidate> out;
  const size_t nf = term.factors.size();
  std::vector<FormatSpec> base(nf);
  for (size_t f = 0; f < nf; ++f) base[f] = operand_formats_[expr_.operand_of(term.factors[f])];
  // search kind from the followers' statistics: galloping for short rows, binary for long or uneven ones
  auto search_kind = [&](const EinsumCandidate& c, std::string* why) {
    LoopNest nest = LoopNest::build(expr_, term, c.formats, {}, c.order, OutputMode::Dense, SearchKind::Binary);
    double worst_mean = 0, worst_sd = 0;
    for (auto& lp : nest.loops)
      for (auto& r : lp.search) {
        LevelStats s = level_stats(ops[expr_.operand_of(term.factors[r.factor])], r.level);
        worst_mean = std::max(worst_mean, s.mean);
        worst_sd = std::max(worst_sd, s.stddev);
      }
    const bool gallop = worst_mean <= 12 && worst_sd <= 2 * worst_mean + 1;
    char buf[128];
    std::snprintf(buf, sizeof buf, "searched segments: mean %.1f, stddev %.1f -> %s", worst_mean, worst_sd,
                  gallop ? "galloping" : "binary");
    *why = buf;
    return gallop ? SearchKind::Galloping : SearchKind::Binary;
  };
  auto add = [&](EinsumCandidate c) {
    c.cost = simulate(term, c, ops);
    out.push_back(std::move(c));
  };
  std::vector<std::vector<int>> orders;
  if (!tuning_.loop_order.empty()) {
    std::vector<int> forced;
    for (auto& name : tuning_.loop_order) {
      auto it = std::find(expr_.index_names.begin(), expr_.index_names.end(), name);
      if (it == expr_.index_names.end()) fail(SJ_ERR_INVALID_ARGUMENT, "loop order names unknown index '", name, "'");
      forced.push_back(static_cast<int>(it - expr_.index_names.begin()));
    }
    OutputMode m;
    if (!g.admits(forced))
      fail(SJ_ERR_INVALID_ARGUMENT, "loop order ", order_text(expr_, forced), " does not contain every tensor's level order (",
           g.describe(expr_, term), ")");
    if (!g.output_mode(forced, &m))
      fail(SJ_ERR_INVALID_ARGUMENT, "loop order ", order_text(expr_, forced), " cannot write the sparse output in order");
    orders.push_back(forced);
  } else {
    orders = g.loop_orders();
  }
  for (auto& o : orders) {
    EinsumCandidate c;
    c.order = o;
    g.output_mode(o, &c.mode);
    c.formats = base;
    c.converted.assign(nf, false);
    const bool repeat = has_repeat(o);
    c.schedule = repeat ? SJ_SCHEDULE_SEARCH : c.mode == OutputMode::Where ? SJ_SCHEDULE_FUSED : SJ_SCHEDULE_INNER;
    std::string why;
    if (repeat) c.search = search_kind(c, &why);
    c.note = cat("order ", order_text(expr_, o), repeat ? " (forsome/forsame; " + why + ")" : "",
                 c.mode == OutputMode::Where ? " with a where workspace" : "");
    add(std::move(c));
  }
  // transpose-then-compute: orders without repeats, converting each operand whose level order disagrees
  if (tuning_.loop_order.empty()) {
    std::vector<std::vector<int>> perms;
    for (auto& o : orders) {
      std::vector<int> p;
      for (int v : o)
        if (std::find(p.begin(), p.end(), v) == p.end()) p.push_back(v);
      if (std::find(perms.begin(), perms.end(), p) == perms.end()) perms.push_back(p);
    }
    for (auto& p : perms) {
      OutputMode m;
      if (!g.output_mode(p, &m)) continue;
      EinsumCandidate c;
      c.order = p;
      c.mode = m;
      c.formats = base;
      c.converted.assign(nf, false);
      std::string what;
      for (size_t f = 0; f < nf; ++f) {
        if (is_subsequence(g.constraints[f], p)) continue;
        FormatSpec s = base[f];
        std::vector<int> modes(s.order);
        for (int l = 0; l < s.order; ++l) modes[l] = s.mode_order[l];
        auto rank = [&](int mode) {
          return std::find(p.begin(), p.end(), term.factors[f].indices[mode]) - p.begin();
        };
        std::stable_sort(modes.begin(), modes.end(), [&](int a, int b) { return rank(a) < rank(b); });
        for (int l = 0; l < s.order; ++l) s.mode_order[l] = modes[l];
        // a non-unique/singleton pair only makes sense in place; use compressed levels when reordered
        for (int l = 0; l < s.order; ++l) {
          s.unique[l] = true;
          if (s.kinds[l] == LevelKind::Singleton) s.kinds[l] = LevelKind::Compressed;
        }
        c.formats[f] = s;
        c.converted[f] = true;
        what += cat(what.empty() ? "" : ", ", term.factors[f].tensor, " to ", format_text(s, expr_, term.factors[f]));
      }
      if (what.empty()) continue;  // nothing conflicts: already the plain candidate
      c.schedule = SJ_SCHEDULE_TRANSPOSE;
      c.note = cat("order ", order_text(expr_, p), ", convert ", what, " (kept with the operand)",
                   m == OutputMode::Where ? " with a where workspace" : "");
      add(std::move(c));
    }
  }
  return out;
}

EinsumPlan::EinsumPlan(const Context& ctx, std::string_view expression, const std::vector<Tensor>& operands,
                       const std::vector<std::optional<std::string>>& formats,
                       const std::optional<std::string>& output_format, const sj_op_options& options,
                       const EinsumTuning& tuning)
    : ctx_(ctx), expr_(parse(expression)), options_(options), tuning_(tuning) {
  auto t0 = std::chrono::steady_clock::now();
  if (options_.semiring < SJ_SEMIRING_PLUS_TIMES || options_.semiring > SJ_SEMIRING_PLUS_PAIR)
    fail(SJ_ERR_INVALID_ARGUMENT, "unknown semiring ", static_cast<int>(options_.semiring));
  check_operands(operands, true);
  if (!formats.empty() && formats.size() != operands.size())
    fail(SJ_ERR_INVALID_ARGUMENT, "formats: ", formats.size(), " entries for ", operands.size(), " operands");
  for (size_t i = 0; i < operands.size(); ++i) {
    const Access* first = nullptr;
    for (auto& term : expr_.terms)
      for (auto& a : term.factors)
        if (!first && a.tensor == expr_.operands[i]) first = &a;
    if (!formats.empty() && formats[i]) operand_formats_.push_back(parse_format(*formats[i], expr_, *first));
    else operand_formats_.push_back(format_spec_of(operands[i]));
  }
  // the output
  const int out_order = static_cast<int>(expr_.output.indices.size());
  for (int m = 0; m < out_order; ++m) output_dims_[m] = index_dims_[expr_.output.indices[m]];
  bool inputs_dense = true;
  for (auto& s : operand_formats_) inputs_dense &= all_dense(s);
  if (output_format) {
    output_format_ = parse_format(*output_format, expr_, expr_.output);
  } else if (out_order == 0 || inputs_dense) {
    output_format_ = out_order == 0 ? FormatSpec{} : format_spec(SJ_FORMAT_DENSE, out_order);
  } else {
    output_format_.order = out_order;
    for (int l = 0; l < out_order; ++l)
      output_format_.kinds[l] = (l == 0 && out_order > 1) ? LevelKind::Dense : LevelKind::Compressed;
  }
  sparse_output_ = out_order > 0 && !all_dense(output_format_);
  std::vector<int> out_levels = level_indices(expr_.output, output_format_);

  // graphs and candidates per term; a sparse output no order can write goes through a dense array
  for (int pass = 0; pass < 2; ++pass) {
    terms_.clear();
    bool all_ok = true;
    for (auto& term : expr_.terms) {
      TermPlan tp;
      tp.graph.sparse_output = sparse_output_ && !dense_temp_;
      tp.graph.output_levels = out_levels;
      for (size_t f = 0; f < term.factors.size(); ++f)
        tp.graph.constraints.push_back(level_indices(term.factors[f], operand_formats_[expr_.operand_of(term.factors[f])]));
      tp.candidates = candidates_for(term, tp.graph, operands);
      if (tp.candidates.empty()) all_ok = false;
      terms_.push_back(std::move(tp));
    }
    if (all_ok || dense_temp_) break;
    dense_temp_ = true;  // retry with the whole output as a dense array plus presence flags
  }
  // choose
  for (size_t t = 0; t < terms_.size(); ++t) {
    TermPlan& tp = terms_[t];
    const sj_schedule want = options_.schedule;
    if (want == SJ_SCHEDULE_REFERENCE) {
      tp.kernel_source = "reference";
      tp.parallel = reference_parallelism();
      continue;
    }
    // A matrix product is run by the built-in SpGEMM, as sj_spgemm runs it: the same Gustavson
    // algorithm as the fused loop nest, hand-tuned (sorting networks, the timed row loop, a
    // structure kept across executions), and nothing to compile. The generated nest took
    // 1.4-4x its time (docs/history.md, forty-third session). Forcing an einsum schedule keeps the nest,
    // and so does asking for code without SIMD (isa scalar, a baseline for the nest).
    int left = 0;
    if ((want == SJ_SCHEDULE_AUTO || want == SJ_SCHEDULE_GUSTAVSON_DENSE || want == SJ_SCHEDULE_GUSTAVSON_HASH) &&
        tuning_.loop_order.empty() && !tuning_.scalar_only && options_.isa != SJ_ISA_SCALAR &&
        spgemm_shape(t, &left)) {
      tp.spgemm = std::make_shared<GustavsonPlanState>();
      tp.spgemm_kind = want == SJ_SCHEDULE_GUSTAVSON_HASH ? SpgemmAccumulator::Hash : SpgemmAccumulator::Dense;
      tp.spgemm_left = left;
      tp.kernel_source = "built-in";
      tp.parallel.parallel = true;
      tp.parallel.index = out_levels[0];
      tp.parallel.level = "node";
      tp.parallel.reason = cat("node: the built-in SpGEMM's rows (", expr_.index_names[tp.parallel.index],
                               ", output level 0) split among threads by their multiplies, chunks taken dynamically "
                               "(one chunk when the work is small)");
      continue;
    }
    for (size_t c = 0; c < tp.candidates.size(); ++c) {
      const auto& cand = tp.candidates[c];
      if (want != SJ_SCHEDULE_AUTO && cand.schedule != want) continue;
      if (tp.chosen < 0 || cand.cost < tp.candidates[tp.chosen].cost) tp.chosen = static_cast<int>(c);
    }
    if (tp.chosen < 0) {
      std::string names;
      for (auto& c : tp.candidates) names += cat(", ", to_string(c.schedule));
      fail(SJ_ERR_INVALID_ARGUMENT, "schedule '", to_string(want), "' cannot serve ", expr_.canonical(),
           expr_.terms.size() > 1 ? cat(" (term ", t + 1, ")") : std::string(), " (available: auto, reference", names, ")");
    }
    const EinsumCandidate& c = tp.candidates[tp.chosen];
    tp.nest = LoopNest::build(expr_, expr_.terms[t], c.formats, out_levels, c.order, c.mode, c.search);
    tp.nest.presence = dense_temp_;
    tp.parallel = outer_loop_parallelism(expr_, tp.nest);
    jit::EinsumKernelSpec spec;
    spec.expr = &expr_;
    spec.term = &expr_.terms[t];
    spec.nest = &tp.nest;
    spec.index_type = index_type_;
    spec.value_type = value_type_;
    spec.semiring = options_.semiring;
    spec.scalar_only = tuning_.scalar_only || options_.isa == SJ_ISA_SCALAR;
    spec.start_output = !sparse_output_ && !dense_temp_ && expr_.terms.size() == 1;  // (else filled, then added to)
    auto store = ctx_.store();
    jit::EinsumCompileResult r = jit::compile_einsum_kernel(spec, store ? store.get() : nullptr);
    tp.compile_ms = r.ms;
    if (r.kernel) {
      tp.kernel = r.kernel;
      tp.kernel_source = r.source;
    } else {
      tp.kernel_source = "reference";
      tp.jit_error = r.error;
      tp.parallel = reference_parallelism();
      ctx_.logger->warn("einsum: LLVM compilation failed, using the reference evaluator: {}", r.error);
    }
  }
  plan_ms_ = ms_since(t0);
}

Tensor EinsumPlan::execute(const std::vector<Tensor>& operands) {
  check_operands(operands, false);
  for (size_t i = 0; i < operands.size(); ++i)
    if (operands[i].value_type != value_type_)
      fail(SJ_ERR_TYPE_MISMATCH, expr_.operands[i], " does not have the planned value type");
  auto t0 = std::chrono::steady_clock::now();
  const int out_order = output_format_.order;
  const sj_semiring sr = options_.semiring;
  // The dense output (or dense temporary) shared by all terms.
  Tensor dense_out;
  std::vector<uint8_t> present;
  const bool dense_result = !sparse_output_ || dense_temp_;
  int64_t out_size = 1;
  for (int m = 0; m < out_order; ++m) out_size *= std::max<int64_t>(output_dims_[m], 0);
  if (dense_result) {
    dense_out = make_dense(ctx_.allocator, out_order, output_dims_.data(), value_type_);
    dense_out.mode_order = output_format_.mode_order;
    // One compiled term whose kernel starts every entry itself needs no fill (a pass over the
    // whole output, then read again by the kernel).
    const bool kernel_starts = terms_.size() == 1 && terms_[0].kernel && terms_[0].kernel->starts_output;
    const double z = semiring_zero(sr);
    if (!kernel_starts)
      with_types(IndexType::I64, value_type_, [&](auto, auto v) {
        using V = decltype(v);
        V* p = dense_out.values.as_mut<V>();
        std::fill(p, p + out_size, static_cast<V>(z));
      });
    if (dense_temp_) present.assign(out_size, 0);
  }
  ReferenceResult ref;  // terms run by the reference evaluator
  std::vector<CooTensor> emitted;
  // Compiled terms into a sparse output are assembled as their kernels emit (sorted, unique):
  // one term into the result itself; several terms (one compressed level) each into a result of
  // its own, the results then summed row by row (sum_term_results).
  std::unique_ptr<StreamingAssembler> stream;  // (from the plan's stock, given back at the end)
  std::optional<Tensor> streamed;  // the same output built from a parallel run's pieces
  std::optional<Tensor> native;  // one term run by the built-in SpGEMM
  bool all_compiled = true;
  for (auto& tp : terms_) all_compiled &= tp.kernel != nullptr || tp.spgemm != nullptr;
  const SumPath sum = sum_path();
  const bool sum_of_streams = sum == SumPath::Rows;
  const bool streams = !dense_result && all_compiled && StreamingAssembler::supports(output_format_) &&
                       (terms_.size() == 1 || sum_of_streams);
  std::vector<Tensor> term_results;  // (sum_of_streams)
  std::vector<int64_t> dims(index_dims_.begin(), index_dims_.end());
  const auto [gather_lo, gather_hi] = gather_window::bounds();
  dims.push_back(gather_lo);  // after the extents, as the kernel reads them (jit/llvm_backend.hpp)
  dims.push_back(gather_hi);
  Workers workers = Workers::for_call(ctx_, options_.threads);
  for (size_t t = 0; t < terms_.size(); ++t) {
    TermPlan& tp = terms_[t];
    if (tp.spgemm) {
      Tensor C = run_spgemm_term(t, operands, workers);
      if (sum_of_streams) term_results.push_back(std::move(C));
      else if (sum == SumPath::None) native = std::move(C);
      else emitted.push_back(to_coo(C));  // in the output's level order, as a kernel's list
      continue;
    }
    if (!tp.kernel) {
      run_reference(static_cast<int>(t), operands, workers, ref);
      continue;
    }
    const Term& term = expr_.terms[t];
    std::vector<Tensor> held;
    std::vector<const void*> arrays(term.factors.size() * jit::kEinsumSlotsPerFactor, nullptr);
    for (size_t f = 0; f < term.factors.size(); ++f) {
      held.push_back(factor_tensor(operands[expr_.operand_of(term.factors[f])], tp.nest.factor_formats[f]));
      const Tensor& ft = held.back();
      for (int l = 0; l < ft.order; ++l) {
        arrays[f * jit::kEinsumSlotsPerFactor + 2 * l] = ft.levels[l].pos.data();
        arrays[f * jit::kEinsumSlotsPerFactor + 2 * l + 1] = ft.levels[l].crd.data();
      }
      arrays[f * jit::kEinsumSlotsPerFactor + 8] = ft.values.data();
    }
    // A term of a sum that is one operand as the output stores it (A in Z = A + B, both CSR) is
    // its own result: its kernel would only copy it.
    if (sum_of_streams && term.factors.size() == 1 && term.factors[0].indices == expr_.output.indices &&
        held[0].index_type == index_type_ && format_spec_of(held[0]) == output_format_) {
      term_results.push_back(held[0]);
      continue;
    }
    if (streams && !stream)
      stream = whole_output_assembler();
    // The outermost loop's coordinates, split into chunks by estimated work where the
    // dependence test allows (one chunk otherwise); [lo, hi) is passed to the kernel.
    const int64_t n0 = tp.nest.loops.empty() ? 1 : index_dims_[tp.nest.loops[0].index];
    Partition part;
    part.bounds = {0, std::max<int64_t>(0, n0)};
    int64_t entries = 0;
    for (const Tensor& h : held) entries += h.nnz();
    // A serial run into a streamed sparse output is split too, into pieces of bounded work:
    // one stream of a large result grows its vectors past what the plan keeps (AssemblerStock),
    // so every execution faulted hundreds of MB in again (A.*A on 9.6 M entries: 1.8 s at one
    // thread against 50 ms at two); pieces are kept, and joined as a parallel run's are.
    // Only where the work's bound allows more than one piece: the prefix below is a pass over
    // the operands that then made a single piece (12% of a y(i) = A(i,k) * x(k) on bayer10).
    // The bound, not the inputs' size, decides: a product's result can dwarf its inputs (A * A
    // on hangGlider_2: 15 k entries in, 2.1 M out, 314 ms an execution in one stream against
    // 17 ms in pieces). The bound is one pass over a level-0 position array, taken only where
    // the loop may be split.
    const bool serial_pieces = stream && workers.threads <= 1 && tp.parallel.parallel && n0 > 1 &&
                               outer_work_bound(tp.nest, held, n0) > kSerialPieceWork;
    // At several threads a bound on the work comes first: under the threshold, one chunk
    // without the prefix (worth_parallel says why in explain).
    const bool split = tp.parallel.parallel && n0 > 1 &&
                       (workers.threads > 1 ? worth_parallel(workers, outer_work_bound(tp.nest, held, n0))
                                            : serial_pieces);
    if (split) {
      // one slot per coordinate, or per run of them on a large dimension (kPartitionSlots)
      const int64_t wanted = std::min(kPartitionSlots, std::max<int64_t>(1024, 4 * entries));
      const int64_t width = std::max<int64_t>(1, (n0 + wanted - 1) / wanted);
      const std::vector<int64_t> prefix = outer_work_prefix(tp.nest, held, n0, width);
      const int64_t slots = static_cast<int64_t>(prefix.size()) - 1;
      if (workers.threads > 1) {
        part = partition_by_prefix(prefix.data(), slots, workers, "entries under each coordinate of the outermost loop");
      } else {
        workers.basis = "serial, in pieces of bounded estimated work (each kept by the plan)";
        part = partition_into(prefix.data(), slots, (prefix.back() + kSerialPieceWork - 1) / kSerialPieceWork);
      }
      for (auto& b : part.bounds) b = std::min(n0, b * width);
    }
    const int64_t chunks = part.chunks();
    WorkspacePool wspool;
    wspool.n = tp.nest.mode == OutputMode::Where ? index_dims_[tp.nest.out_indices.back()] : 0;
    wspool.f32 = value_type_ == ValueType::F32;
    // per chunk: a piece of the streamed output, or a coordinate list (joined in chunk order)
    std::vector<std::unique_ptr<StreamingAssembler>> pieces(stream && chunks > 1 ? chunks : 0);
    std::vector<std::unique_ptr<CooSink>> coos(!dense_result && !stream ? chunks : 0);
    workers.run_indexed(part, [&](int64_t c, int64_t lo, int64_t hi) {
      EmitSink* sink = nullptr;
      if (stream && chunks > 1) {
        pieces[c] = assemblers_.take(output_format_, output_dims_, lo, hi);
        sink = pieces[c].get();
      } else if (stream) {
        sink = stream.get();
      } else if (!dense_result) {
        coos[c] = std::make_unique<CooSink>(out_order, output_dims_);
        sink = coos[c].get();
      }
      std::unique_ptr<WorkspacePool::Workspace> ws;
      if (tp.nest.mode == OutputMode::Where) ws = wspool.take();
      tp.kernel->fn(arrays.data(), dims.data(), dense_result ? dense_out.values.mutable_data() : nullptr,
                    present.empty() ? nullptr : present.data(), sink, ws ? ws->vals : nullptr,
                    ws ? ws->flags.data() : nullptr, ws ? ws->list.data() : nullptr, lo, hi);
      if (ws) wspool.give(std::move(ws));
    });
    if (!pieces.empty()) {
      streamed = StreamingAssembler::finish_pieces(pieces, workers, part, index_type_, value_type_, ctx_.allocator);
      for (auto& piece : pieces) assemblers_.give(std::move(piece));
    }
    if (sum_of_streams) {
      term_results.push_back(streamed ? std::move(*streamed) : stream->finish(index_type_, value_type_, ctx_.allocator));
      streamed.reset();
      assemblers_.give(std::move(stream));
    }
    if (!coos.empty()) {
      CooTensor joined = std::move(coos[0]->coo);
      for (size_t c = 1; c < coos.size(); ++c) {
        const CooTensor& more = coos[c]->coo;
        for (int m = 0; m < out_order; ++m)
          joined.coords[m].insert(joined.coords[m].end(), more.coords[m].begin(), more.coords[m].end());
        joined.values.insert(joined.values.end(), more.values.begin(), more.values.end());
      }
      emitted.push_back(std::move(joined));
    }
  }
  Tensor result;
  if (dense_result) {
    // terms run by the reference evaluator add into the same array
    if (!ref.empty()) {
      with_types(IndexType::I64, value_type_, [&](auto, auto v) {
        using V = decltype(v);
        V* p = dense_out.values.as_mut<V>();
        for (auto& [c, x] : ref) {
          int64_t q = 0;
          for (int l = 0; l < out_order; ++l) q = q * output_dims_[output_format_.mode_order[l]] + c[output_format_.mode_order[l]];
          p[q] = static_cast<V>(semiring_add(sr, static_cast<double>(p[q]), x));
          if (!present.empty()) present[q] = 1;
        }
      });
    }
    if (!dense_temp_) {
      result = dense_out;
    } else {
      CooTensor coo;
      coo.order = out_order;
      coo.dims = output_dims_;
      with_types(IndexType::I64, value_type_, [&](auto, auto v) {
        using V = decltype(v);
        const V* p = dense_out.values.as<V>();
        std::array<int64_t, kMaxOrder> c{};
        for (int64_t q = 0; q < out_size; ++q) {
          if (!present[q]) continue;
          int64_t r = q;
          for (int l = out_order - 1; l >= 0; --l) {
            const int m = output_format_.mode_order[l];
            c[m] = r % output_dims_[m];
            r /= output_dims_[m];
          }
          for (int m = 0; m < out_order; ++m) coo.coords[m].push_back(c[m]);
          coo.values.push_back(static_cast<double>(p[q]));
        }
      });
      result = from_coo(coo, output_format_, index_type_, value_type_, ctx_.allocator);
    }
  } else if (sum_of_streams) {
    result = sum_term_results(term_results, output_format_, output_dims_, index_type_, value_type_, sr, ctx_.allocator,
                              workers);
  } else if (native) {
    result = std::move(*native);
  } else if (streamed) {
    result = std::move(*streamed);
  } else if (stream) {
    result = stream->finish(index_type_, value_type_, ctx_.allocator);
    assemblers_.give(std::move(stream));
  } else if (emitted.size() == 1 && ref.empty()) {
    result = from_coo(emitted[0], output_format_, index_type_, value_type_, ctx_.allocator);
  } else if (sum == SumPath::Lists) {
    // several compiled terms, each emitted in the output's level order: merged in that order
    std::unique_ptr<StreamingAssembler> joined = whole_output_assembler();
    join_sorted_terms(emitted, output_format_, sr, *joined);
    result = joined->finish(index_type_, value_type_, ctx_.allocator);
    assemblers_.give(std::move(joined));
  } else {
    // several terms: merge their entries with the semiring's add
    for (auto& coo : emitted)
      for (int64_t p = 0; p < coo.nnz(); ++p) {
        std::vector<int64_t> c(out_order);
        for (int m = 0; m < out_order; ++m) c[m] = coo.coords[m][p];
        auto [it, fresh] = ref.try_emplace(std::move(c), coo.values[p]);
        if (!fresh) it->second = semiring_add(sr, it->second, coo.values[p]);
      }
    result = reference_to_tensor(ref, output_format_, output_dims_, index_type_, value_type_, sr, ctx_.allocator);
  }
  to_output_index_type(result, options_.output_index_type, result_index_type_, ctx_.allocator);
  last_threads_ = workers.threads;
  last_chunks_ = workers.chunks;
  double ms = ms_since(t0);
  double expected = -1;
  first_execute_ms_.compare_exchange_strong(expected, ms);
  last_execute_ms_ = ms;
  ++executions_;
  return result;
}

std::unique_ptr<StreamingAssembler> EinsumPlan::whole_output_assembler() const {
  return assemblers_.take(output_format_, output_dims_, 0, output_format_.order > 0 ? output_dims_[output_format_.mode_order[0]] : 0);
}

std::string chosen_schedule_name(const TermPlan& tp) {
  if (tp.spgemm) return std::string(to_string(spgemm_schedule(tp)));
  return tp.chosen >= 0 ? std::string(to_string(tp.candidates[tp.chosen].schedule)) : std::string("reference");
}

EinsumPlan::SumPath EinsumPlan::sum_path() const {
  if (terms_.size() < 2 || !sparse_output_ || dense_temp_) return SumPath::None;
  for (auto& tp : terms_)
    if (!tp.kernel && !tp.spgemm) return SumPath::Map;
  // Rows add in the value type; f32 sums of three or more terms would then round at every
  // join where the reference rounds once (two agree: a float sum rounded from double is exact).
  if (one_compressed_level(output_format_) && (value_type_ != ValueType::F32 || terms_.size() == 2)) return SumPath::Rows;
  return StreamingAssembler::supports(output_format_) ? SumPath::Lists : SumPath::Map;
}

LoopParallelism EinsumPlan::reference_parallelism() const {
  LoopParallelism p;
  if (expr_.output.indices.empty()) {
    p.level = "sibling";
    p.reason = "the reference evaluator's join into a scalar output: every product adds into the one entry";
    return p;
  }
  p.parallel = true;
  p.index = expr_.output.indices[0];
  p.level = "node";
  p.reason = cat("node: the reference evaluator's join split by ranges of ", expr_.index_names[p.index],
                 ", an output index: each output entry is formed within one range");
  return p;
}

// A term of the reference evaluator: its join split by ranges of the output's first index
// (each output entry is formed within one range). Each chunk starts from the entries earlier
// terms left in its range, so every entry's sum continues exactly as in the serial join.
void EinsumPlan::run_reference(int t, const std::vector<Tensor>& operands, Workers& workers, ReferenceResult& ref) const {
  const ReferenceJoin join(expr_, t, operands, options_.semiring);
  const LoopParallelism& par = terms_[t].parallel;
  const int64_t n = par.parallel ? index_dims_[par.index] : 0;
  Partition part;
  part.bounds = {0, std::max<int64_t>(0, n)};
  if (par.parallel && workers.threads > 1 && n > 1) {
    int64_t entries = 0;
    for (auto& f : expr_.terms[t].factors) entries += operands[expr_.operand_of(f)].nnz();
    part = partition_even(n, std::max<int64_t>(1, entries / n), workers, "ranges of an output index (reference join)");
  }
  if (part.chunks() <= 1) {
    join.run(ref);
    return;
  }
  std::vector<ReferenceResult> pieces(static_cast<size_t>(part.chunks()));
  workers.run_indexed(part, [&](int64_t c, int64_t lo, int64_t hi) {
    pieces[c].insert(ref.lower_bound(std::vector<int64_t>{lo}), ref.lower_bound(std::vector<int64_t>{hi}));
    join.run(pieces[c], par.index, lo, hi);
  });
  for (int64_t c = 0; c < part.chunks(); ++c) {
    ref.erase(ref.lower_bound(std::vector<int64_t>{part.begin(c)}), ref.lower_bound(std::vector<int64_t>{part.end(c)}));
    ref.merge(pieces[c]);
  }
}

std::string EinsumPlan::explain_text() const {
  std::string out = cat("einsum ", expr_.canonical(), "  (semiring ", to_string(options_.semiring), ", schedule requested ",
                        to_string(options_.schedule), ")\n");
  for (size_t i = 0; i < expr_.operands.size(); ++i) {
    const Access* first = nullptr;
    for (auto& term : expr_.terms)
      for (auto& a : term.factors)
        if (!first && a.tensor == expr_.operands[i]) first = &a;
    out += cat("  ", expr_.operands[i], ": ", given_[i], "; read as ", format_text(operand_formats_[i], expr_, *first), "\n");
  }
  out += cat("  output ", Expression::access_text(expr_, expr_.output), ": ", format_text(output_format_, expr_, expr_.output),
             sparse_output_ ? (dense_temp_ ? " (sparse, through a dense array: no loop order writes it in order)" : " (sparse)")
                            : " (dense)",
             "\n");
  for (size_t t = 0; t < terms_.size(); ++t) {
    const TermPlan& tp = terms_[t];
    const Term& term = expr_.terms[t];
    std::string prod;
    for (size_t f = 0; f < term.factors.size(); ++f) prod += cat(f ? " * " : "", Expression::access_text(expr_, term.factors[f]));
    out += cat("  term ", t + 1, ": ", prod, "\n");
    out += cat("    iteration graph: ", tp.graph.describe(expr_, term), "\n");
    out += "    candidates:\n";
    for (size_t c = 0; c < tp.candidates.size(); ++c) {
      char line[1024];
      std::snprintf(line, sizeof line, "    %s %-10s %14.0f ns  %s\n", static_cast<int>(c) == tp.chosen ? "*" : " ",
                    std::string(to_string(tp.candidates[c].schedule)).c_str(), tp.candidates[c].cost,
                    tp.candidates[c].note.c_str());
      out += line;
    }
    out += cat("      reference      (the reference evaluator: join of stored entries)\n");
    if (tp.spgemm) {
      out += cat("    chosen: ", chosen_schedule_name(tp), ", the built-in SpGEMM as sj_spgemm runs it: ",
                 Expression::access_text(expr_, term.factors[tp.spgemm_left]), " * ",
                 Expression::access_text(expr_, term.factors[1 - tp.spgemm_left]),
                 " over their level arrays as CSR (the generated loop nests take 1.4-4x its time)\n");
      out += "    kernel: built-in (nothing to compile)\n";
      const std::string st = describe_gustavson_plan_state(*tp.spgemm, tp.spgemm_kind);
      if (!st.empty()) out += cat("    state: ", st, "\n");
      out += cat("    parallel: yes; ", tp.parallel.reason, "\n");
      continue;
    }
    if (tp.chosen >= 0) {
      out += cat("    chosen: ", to_string(tp.candidates[tp.chosen].schedule), ", order ",
                 order_text(expr_, tp.candidates[tp.chosen].order), "\n");
      out += "    loop nest:\n" + tp.nest.print(expr_, term);
    } else {
      out += "    chosen: reference (requested)\n";
    }
    char k[512];
    if (tp.kernel)
      std::snprintf(k, sizeof k, "    kernel: LLVM ORC, from %s in %.3f ms (target host)\n", tp.kernel_source.c_str(),
                    tp.compile_ms);
    else if (!tp.jit_error.empty())
      std::snprintf(k, sizeof k, "    kernel: reference evaluator (LLVM failed after %.3f ms: %.300s)\n", tp.compile_ms,
                    tp.jit_error.c_str());
    else
      std::snprintf(k, sizeof k, "    kernel: reference evaluator\n");
    out += k;
    if (tp.kernel && !tp.kernel->gathered.empty())
      out += cat("    gather blocks: ", tp.kernel->gathered, " (eight values a gather, for gathered vectors larger than L2 and at most a quarter of L3; else scalar loads)\n");
    if (!tp.kernel && tp.parallel.parallel)
      out += cat("    parallel: yes, the reference evaluator's join split among threads by ranges of ",
                 expr_.index_names[tp.parallel.index], "; ", tp.parallel.reason, "\n");
    else if (tp.parallel.index >= 0 && tp.parallel.parallel)
      out += cat("    parallel: yes, outermost loop ", expr_.index_names[tp.parallel.index],
                 " split among threads by estimated work, chunks taken dynamically (one chunk when the work is small); ",
                 tp.parallel.reason, "\n");
    else if (tp.parallel.index >= 0 && tp.kernel)
      out += cat("    parallel: no, outermost loop ", expr_.index_names[tp.parallel.index], " stays serial; ", tp.parallel.reason, "\n");
    else
      out += cat("    parallel: no, serial; ", tp.parallel.reason, "\n");
  }
  switch (sum_path()) {
    case SumPath::Rows:
      out += "  sum of terms: each term assembled on its own (one already in the output's layout taken as it is), "
             "the results added row by row in term order\n";
      break;
    case SumPath::Lists:
      out += "  sum of terms: the terms' entry lists, each in the output's order, merged; sums in double in term order, "
             "rounded once\n";
      break;
    case SumPath::Map:
      out += "  sum of terms: entries joined by coordinates (a term runs the reference evaluator, or a COO output)\n";
      break;
    case SumPath::None: break;
  }
  char threads[512];
  std::snprintf(threads, sizeof threads, "  threads: %d (requested %d); context %d (%s); last execution: %lld chunk(s)\n",
                last_threads_.load() > 0 ? last_threads_.load() : Workers::for_call(ctx_, options_.threads).threads,
                options_.threads, ctx_.threads, ctx_.threads_source.c_str(), static_cast<long long>(last_chunks_.load()));
  out += threads;
  char tail[256];
  std::snprintf(tail, sizeof tail, "  times: plan %.3f ms (compile included), first execute %.3f ms, last execute %.3f ms, %lld executions\n",
                plan_ms_, first_execute_ms_.load(), last_execute_ms_.load(), static_cast<long long>(executions_.load()));
  return out + tail;
}

std::string EinsumPlan::explain() const {
  JsonWriter w;
  w.begin_object().field("op", "einsum").field("expression", expr_.canonical());
  w.key("options").begin_object().field("semiring", to_string(options_.semiring))
      .field("schedule_requested", to_string(options_.schedule)).end_object();
  w.key("operands").begin_array();
  for (size_t i = 0; i < expr_.operands.size(); ++i)
    w.begin_object().field("name", expr_.operands[i]).field("given", given_[i])
        .field("format", format_text(operand_formats_[i])).end_object();
  w.end_array();
  w.key("output").begin_object().field("format", format_text(output_format_)).field("sparse", sparse_output_)
      .field("dense_temporary", dense_temp_).end_object();
  w.key("terms").begin_array();
  for (size_t t = 0; t < terms_.size(); ++t) {
    const TermPlan& tp = terms_[t];
    const Term& term = expr_.terms[t];
    w.begin_object().field("iteration_graph", tp.graph.describe(expr_, term));
    w.key("candidates").begin_array();
    for (auto& c : tp.candidates)
      w.begin_object().field("schedule", to_string(c.schedule)).field("order", order_text(expr_, c.order))
          .field("estimated_cost", c.cost).field("note", c.note).end_object();
    w.end_array();
    w.field("chosen", chosen_schedule_name(tp));
    if (tp.chosen >= 0) w.field("loop_nest", tp.nest.print(expr_, term));
    w.key("kernel").begin_object().field("source", tp.kernel_source).field("compile_ms", tp.compile_ms)
        .field("gather_blocks", tp.kernel ? tp.kernel->gathered : std::string()).field("error", tp.jit_error);
    if (tp.spgemm) w.field("state", describe_gustavson_plan_state(*tp.spgemm, tp.spgemm_kind));
    w.end_object();
    w.key("parallel").begin_object()
        .field("outer_index", tp.parallel.index >= 0 ? expr_.index_names[tp.parallel.index] : std::string())
        .field("parallel", tp.parallel.parallel).field("dependence", tp.parallel.level)
        .field("reason", tp.parallel.reason).end_object();
    w.end_object();
  }
  w.end_array();
  w.field("threads_requested", options_.threads)
      .field("context_threads", ctx_.threads)
      .field("context_threads_source", ctx_.threads_source)
      .field("threads", last_threads_.load() > 0 ? last_threads_.load() : Workers::for_call(ctx_, options_.threads).threads)
      .field("chunks", last_chunks_.load());
  w.key("timings_ms").begin_object().field("plan", plan_ms_).field("first_execute", first_execute_ms_.load())
      .field("last_execute", last_execute_ms_.load()).field("executions", executions_.load()).end_object();
  w.end_object();
  return w.str();
}

}  // namespace sj::einsum

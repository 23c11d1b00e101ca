// Drivers over the coiteration kernels; see kernels/coiter_drivers.hpp for the per-pair
// dispatch and the spec rule.
// The scalar merges inlined here are the drivers' short-pair path, which must keep up with
// the -O3 baseline loop of bench/bench_inner_spgemm.cpp (at -O2 it ran 0.7-0.9x of it).
#pragma GCC optimize("O3")
#include "kernels/coiter_drivers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "jit/isa.hpp"
#include "kernels/coiter_portable.hpp"
#include "kernels/ewise_kernels.hpp"
#include "kernels/sparse_assembly.hpp"
#include "src/dispatch.hpp"
#include "src/error.hpp"
#include "src/semiring.hpp"
#include "src/work_partition.hpp"

namespace sj::kernels {
namespace {

// Trims a pair whose coordinate ranges overlap (both non-empty) to the overlap: the first
// sa entries of a and sb of b are dropped, na and nb become the lengths that remain.
template <class I> inline void trim_range(const I* ac, int64_t& sa, int64_t& na, const I* bc, int64_t& sb, int64_t& nb) {
  sa = sb = 0;
  if (ac[0] < bc[0]) {
    sa = std::lower_bound(ac, ac + na, bc[0]) - ac;
    ac += sa, na -= sa;
  } else if (bc[0] < ac[0]) {
    sb = std::lower_bound(bc, bc + nb, ac[0]) - bc;
    bc += sb, nb -= sb;
  }
  if (na == 0 || nb == 0) return;
  if (ac[na - 1] > bc[nb - 1]) na = std::upper_bound(ac, ac + na, bc[nb - 1]) - ac;
  else if (bc[nb - 1] > ac[na - 1]) nb = std::upper_bound(bc, bc + nb, ac[na - 1]) - bc;
}

template <class I, class V>
inline void trim_pair(const I*& ac, const V*& av, int64_t& na, const I*& bc, const V*& bv, int64_t& nb) {
  int64_t sa, sb;
  trim_range(ac, sa, na, bc, sb, nb);
  ac += sa, av += sa, bc += sb, bv += sb;
}

template <class I> inline bool disjoint(const I* ac, int64_t na, const I* bc, int64_t nb) {
  return na == 0 || nb == 0 || ac[na - 1] < bc[0] || bc[nb - 1] < ac[0];
}

}  // namespace

// The fast-lane kernels of one action, widest last: a pair of trimmed length min(na, nb) goes
// to the last tier whose threshold it reaches (none: the inlined scalar merge).
struct CoiterTiers {
  struct Tier {
    void* fn = nullptr;
    int64_t min = std::numeric_limits<int64_t>::max();
  };
  Tier tier[3];
  int n = 0;
  int64_t first() const { return tier[0].min; }
  void* pick(int64_t m) const {
    int t = n - 1;
    while (t > 0 && m < tier[t].min) --t;
    return tier[t].fn;
  }
};

struct CoiterKernels {
  IndexType index = IndexType::I32;
  ValueType value = ValueType::F64;
  sj_semiring semiring = SJ_SEMIRING_PLUS_TIMES;
  bool with_emit = false;  // the emit kernels resolved (element-wise), else the dot ones
  CoiterTiers dot, emit;
  std::vector<std::shared_ptr<const void>> owners;  // keep the code alive (kernel cache eviction)
  double codegen_us = 0;
  bool generated = false;
};

namespace {

// The specs of the tiers of a config, narrowest first, with their thresholds.
std::vector<std::pair<jit::CoiterSpec, int64_t>> tier_specs(const CoiterConfig& cfg, IndexType it) {
  std::vector<std::pair<jit::CoiterSpec, int64_t>> out;
  jit::CoiterSpec s = cfg.spec;
  s.index = it;
  s.with_factor = false;
  if (it == IndexType::I64 && s.width > 8) s.width = 8;
  if (!cfg.tiered) {
    out.push_back({s, cfg.min_fast});  // -1: twice the width the generator gives
    return out;
  }
  const bool native = jit::resolve_isa(s.isa) == SJ_ISA_AVX512 && jit::host_features().vp2intersect;
  s.width = 4, s.phases = jit::kPhaseCompare, s.method = jit::CoiterMethod::Broadcast;
  out.push_back({s, cfg.min_fast >= 0 ? cfg.min_fast : 24});
  if (native) {
    s.width = 8, s.phases = 7, s.method = jit::CoiterMethod::Native;
    out.push_back({s, 48});
    if (it == IndexType::I32) {
      s.width = 16;
      out.push_back({s, 96});
    }
  }
  return out;
}

std::shared_ptr<const CoiterKernels> build_kernels(const CoiterConfig& cfg, IndexType it, ValueType vt,
                                                   sj_semiring semiring, bool with_emit) {
  auto k = std::make_shared<CoiterKernels>();
  k->index = it, k->value = vt, k->semiring = semiring, k->with_emit = with_emit;
  if (!cfg.use_jit || vt == ValueType::Bool) return k;
  for (auto [spec, min] : tier_specs(cfg, it)) {
    spec.value = vt == ValueType::F32 ? ValueType::F32 : ValueType::F64;
    spec.semiring = semiring;
    for (jit::CoiterAction a : {jit::CoiterAction::Dot, jit::CoiterAction::Emit}) {
      if ((a == jit::CoiterAction::Emit) != with_emit) continue;
      spec.action = a;
      jit::CoiterKernel kern = jit::compile_coiter(spec);
      k->codegen_us += kern.codegen_us;
      if (!kern.generated) continue;  // portable fallback: the inlined scalar merge is the same code
      k->generated = true;
      k->owners.push_back(kern.owner);
      CoiterTiers& t = a == jit::CoiterAction::Dot ? k->dot : k->emit;
      const int64_t thr = min >= 0 ? min : 2 * int64_t(kern.spec.width);
      // A narrower tier's threshold never exceeds a wider one's (forced thresholds may).
      if (t.n > 0 && thr < t.tier[t.n - 1].min) continue;
      t.tier[t.n++] = {kern.fn, thr};
    }
  }
  return k;
}

// The kernels a driver call uses: the resolved ones when they fit (no copy of the owner: the
// config outlives the call), else looked up now and held in `hold`.
template <class I, class V>
const CoiterKernels& kernels_for(const CoiterConfig& cfg, sj_semiring semiring, bool with_emit,
                                 std::shared_ptr<const CoiterKernels>& hold) {
  const IndexType it = index_type_of<I>();
  const ValueType vt = value_type_of<V>();
  const CoiterKernels* k = cfg.kernels.get();
  if (k && k->index == it && k->value == vt && k->semiring == semiring && k->with_emit == with_emit) return *k;
  hold = build_kernels(cfg, it, vt, semiring, with_emit);
  return *hold;
}

template <class S, class I, class V> struct Dotter {
  CoiterTiers fast;
  bool trim = true;
  std::shared_ptr<const CoiterKernels> hold;

  Dotter(const CoiterConfig& cfg, sj_semiring semiring) : trim(cfg.trim) {
    fast = kernels_for<I, V>(cfg, semiring, false, hold).dot;
  }
  // The kernel ABI: the count of matches; *out written only when it is > 0.
  inline int64_t operator()(const I* ac, const V* av, int64_t na, const I* bc, const V* bv, int64_t nb,
                            V* out) const {
    // Short pairs go straight to the inlined scalar merge, exactly the baseline loop: a range
    // test or a trim costs more than it saves there (measured on the short-row real matrices).
    if (std::min(na, nb) < fast.first()) return coiter_dot_portable<I, V, S, false>(ac, av, na, bc, bv, nb, out);
    return long_pair(ac, av, na, bc, bv, nb, out);
  }
  // Out of line, so that the sweep's loop around a short merge keeps its values in registers
  // (inlined, this path's spills made 1x1 merges on bcsstm25 1.4x slower than the scalar loop).
  [[gnu::noinline]] int64_t long_pair(const I* ac, const V* av, int64_t na, const I* bc, const V* bv, int64_t nb,
                                      V* out) const {
    if (trim) {
      if (disjoint(ac, na, bc, nb)) return 0;
      trim_pair(ac, av, na, bc, bv, nb);
    }
    const int64_t m = std::min(na, nb);
    if (m >= fast.first()) return reinterpret_cast<jit::CoiterDotFn<I, V>>(fast.pick(m))(ac, av, na, bc, bv, nb, out);
    return coiter_dot_portable<I, V, S, false>(ac, av, na, bc, bv, nb, out);
  }
};

// Emits the matched coordinates and products of a long pair (min(na, nb) >= fast.first()):
// the generated emit kernel (vpcompress) over the trimmed overlap. Pairs with the same
// coordinates (a structurally symmetric A in B o A^T) are multiplied pairwise without a merge.
// The row loop is ewise::mult_rows: it sends here the pairs with min(na, nb) >= fast.first(),
// except with the automatic tiers on AVX-512 (int32), where only pairs with a side over 64
// come, and only when a sample of the call's long pairs matches often enough
// (ewise::long_pair_route); the others take the merge schedule's row merge (one compare for a
// pair of single entries, the AVX-512 blocks, galloping when one side is 16x longer, or a
// scalar merge).
template <class S, class I, class V> struct Emitter {
  CoiterTiers fast;
  bool trim = true;
  std::shared_ptr<const CoiterKernels> hold;

  Emitter(const CoiterConfig& cfg, sj_semiring semiring) : trim(cfg.trim) {
    fast = kernels_for<I, V>(cfg, semiring, true, hold).emit;
  }
  int64_t emit_long(const I* ac, const V* av, int64_t na, const I* bc, const V* bv, int64_t nb, I* oc,
                    V* ov) const {
    if (na == nb && ewise::same_coordinates(ac, bc, na)) return ewise::multiply_same<S>(ac, av, bv, na, oc, ov);
    if (trim) {
      if (disjoint(ac, na, bc, nb)) return 0;
      trim_pair(ac, av, na, bc, bv, nb);
    }
    const int64_t m = std::min(na, nb);
    if (m >= fast.first())
      return reinterpret_cast<jit::CoiterEmitFn<I, V>>(fast.pick(m))(ac, av, na, bc, bv, nb, oc, ov);
    return ewise::merge_row_mult<S>(ac, av, 0, na, bc, bv, 0, nb, oc, ov, 0);
  }
};

int64_t checked_elements(int64_t rows, int64_t cols) {
  if (rows > 0 && cols > std::numeric_limits<int64_t>::max() / rows)
    fail(SJ_ERR_OVERFLOW, "dense result of ", rows, "x", cols, " elements does not fit");
  return rows * cols;
}

// The range test of sweep_row: two coordinates of B's column (its last one usually on another
// cache line) and a branch, to skip a merge whose coordinate ranges do not overlap. It pays
// only when the merge it may skip is not a few steps (min(na, n) >= kRangeTest) ...
constexpr int64_t kRangeTest = 4;
// ... and when it is both often true and predictable. Skipping a disjoint pair saves the walk
// of the lower segment, about one cycle a step (its branches predict well: one side is always
// lower); the test costs a load and, where skipping and merging alternate, a mispredicted
// branch. On banded matrices (bcsstk16, data_walshaw) the sweep meets long runs of disjoint
// pairs and the test made it 4-6x faster than the scalar loop; on scattered ones (bcsstm13,
// bcspwr06) outcomes alternate and it cost 25-50%.
constexpr double kMispredictSteps = 15.0;

// Whether the range test pays for this A and B, from a sample of runs of consecutive columns
// (as the sweep meets them) against a few rows: the merge steps skipped against one step per
// test plus a misprediction per change of outcome. At most ~1/64 of the sweep's pairs and
// 1024 of them are looked at; sweeps under 1024 pairs do not test.
template <class I, class V> bool range_test_pays(const CsView<I, V>& A, const CsView<I, V>& B) {
  const int64_t rows = A.outer, cols = B.outer;
  if (rows == 0 || cols == 0) return false;
  const double pairs = static_cast<double>(rows) * static_cast<double>(cols);
  if (pairs < 1024) return false;  // a sweep this small costs less than the sample
  const int64_t budget = static_cast<int64_t>(std::clamp(pairs / 64.0, 16.0, 1024.0));
  const int64_t sr = std::min<int64_t>(rows, 16);
  const int64_t run = std::min<int64_t>(cols, std::max<int64_t>(1, budget / sr));
  double saved = 0, cost = 0;
  for (int64_t r = 0; r < sr; ++r) {
    const int64_t i = r * (rows / sr);
    const int64_t a0 = A.pos[i], na = A.pos[i + 1] - a0;
    if (na < kRangeTest) continue;
    const I af = A.crd[a0], al = A.crd[a0 + na - 1];
    const int64_t j0 = (r * (cols / sr)) % (cols - run + 1);  // runs spread over the columns
    int last = -1;
    for (int64_t j = j0; j < j0 + run; ++j) {
      const int64_t p = B.pos[j], n = B.pos[j + 1] - p;
      if (n < kRangeTest) continue;
      cost += 1.0;
      int skip = 1;
      if (B.crd[p + n - 1] < af) saved += static_cast<double>(n);
      else if (B.crd[p] > al) saved += static_cast<double>(na);
      else skip = 0;
      if (last >= 0 && skip != last) cost += kMispredictSteps;
      last = skip;
    }
  }
  return saved > cost;
}

// Sweeps every column of B against row i of A, straight from B's arrays (a packed table of
// non-empty columns was slower on short-segment matrices: more bytes per column than pos +
// crd); store(j, run) runs the dot of the pair into where the caller wants it. `range_test`:
// range_test_pays (and the config trims).
template <class S, class I, class V, class Store>
inline void sweep_row(const CsView<I, V>& A, const CsView<I, V>& B, const Dotter<S, I, V>& dot, bool range_test,
                      int64_t i, Store&& store) {
  const int64_t a0 = A.pos[i], na = A.pos[i + 1] - a0;
  if (na == 0) return;
  const I* ac = A.crd + a0;
  const V* av = A.val + a0;
  const I afirst = ac[0], alast = ac[na - 1];
  const bool test = range_test && na >= kRangeTest;
  const int64_t* __restrict bpos = B.pos;
  const I* __restrict bcrd = B.crd;
  const V* __restrict bval = B.val;
  if (!test && na < dot.fast.first()) {
    // Every pair of this row is short: exactly the scalar loop, in a loop of its own (sharing
    // the loop below, its values lived on the stack: 1.3-1.9x slower on short-row matrices).
    for (int64_t j = 0, cols = B.outer; j < cols; ++j) {
      const int64_t p = bpos[j], n = bpos[j + 1] - p;
      store(static_cast<I>(j), [&](V* out) {
        return coiter_dot_portable<I, V, S, false>(ac, av, na, bcrd + p, bval + p, n, out);
      });
    }
    return;
  }
  for (int64_t j = 0, cols = B.outer; j < cols; ++j) {
    const int64_t p = bpos[j], n = bpos[j + 1] - p;
    if (n == 0 || (test && n >= kRangeTest && (bcrd[p + n - 1] < afirst || bcrd[p] > alast))) continue;
    store(static_cast<I>(j), [&](V* out) { return dot(ac, av, na, bcrd + p, bval + p, n, out); });
  }
}

template <class S, class I, class V>
void dense_into_typed(const Tensor& At, const Tensor& Bt, const CoiterConfig& cfg, sj_semiring semiring, V* c) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);  // CSC: outer = columns of B
  const int64_t rows = A.outer, cols = B.outer;
  const Dotter<S, I, V> dot(cfg, semiring);
  const bool range_test = cfg.trim && range_test_pays(A, B);
  std::fill_n(c, checked_elements(rows, cols), S::zero());
  for (int64_t i = 0; i < rows; ++i) {
    V* ci = c + i * cols;
    sweep_row(A, B, dot, range_test, i, [&](I j, auto&& run) { run(ci + j); });
  }
}

template <class S, class I, class V>
Tensor spgemm_typed(const Tensor& At, const Tensor& Bt, const CoiterConfig& cfg, sj_semiring semiring,
                    bool dense_output, const Allocator& alloc) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);  // CSC: outer = columns of B
  const int64_t rows = A.outer, cols = B.outer;
  const ValueType vt = value_type_of<V>() == ValueType::Bool ? At.value_type : value_type_of<V>();
  if (dense_output) {
    int64_t dims[2] = {rows, cols};
    checked_elements(rows, cols);
    Tensor C = make_dense(alloc, 2, dims, vt);
    dense_into_typed<S, I, V>(At, Bt, cfg, semiring, C.values.as_mut<V>());
    return C;
  }
  const Dotter<S, I, V> dot(cfg, semiring);
  const bool range_test = cfg.trim && range_test_pays(A, B);
  // The result is built in std::vector and copied out, so the memory cap is charged first:
  // at most (rows of A with entries) x (columns of B with entries) entries; when that bound
  // is over the cap, a symbolic pass (the same dots, values discarded) counts them exactly.
  int64_t exact = -1;
  if (alloc.memory_cap() != 0) {
    int64_t rows_used = 0, cols_used = 0;
    for (int64_t i = 0; i < rows; ++i) rows_used += A.pos[i + 1] != A.pos[i];
    for (int64_t j = 0; j < cols; ++j) cols_used += B.pos[j + 1] != B.pos[j];
    const size_t entry = sizeof(I) + sizeof(V), pos_bytes = estimate_bytes(rows + 1, sizeof(int64_t));
    int64_t bound;
    if (__builtin_mul_overflow(rows_used, cols_used, &bound)) bound = INT64_MAX;
    if (alloc.over_cap(estimate_bytes(bound, entry, pos_bytes))) {
      exact = 0;
      for (int64_t i = 0; i < rows; ++i)
        sweep_row(A, B, dot, range_test, i, [&](I, auto&& run) {
          V v;
          exact += run(&v) > 0;
        });
      alloc.charge(estimate_bytes(exact, entry, pos_bytes),
                   [&] { return cat("spgemm output (", rows, "x", cols, ", ", exact, " entries by a symbolic count)"); });
    }
  }
  CsResult<I, V> r;
  r.outer = rows;
  r.inner = cols;
  r.pos.assign(static_cast<size_t>(rows) + 1, 0);
  if (exact >= 0) {
    r.crd.reserve(static_cast<size_t>(exact));
    r.val.reserve(static_cast<size_t>(exact));
  }
  for (int64_t i = 0; i < rows; ++i) {
    sweep_row(A, B, dot, range_test, i, [&](I j, auto&& run) {
      V v;
      if (run(&v) > 0) {
        r.crd.push_back(j);
        r.val.push_back(v);
      }
    });
    r.pos[i + 1] = static_cast<int64_t>(r.crd.size());
  }
  return to_tensor(alloc, true, r, vt);
}

// Masked, SpMSpV and element-wise drivers split their rows among the call's threads
// (src/work_partition.hpp: chunks of equal estimated work, taken dynamically); each row is
// computed exactly as in the serial loop and sparse results are joined in row order
// (kernels/sparse_assembly.hpp), so results do not depend on the thread count.
template <class S, class I, class V>
Tensor masked_typed(const Tensor& Mt, const Tensor& At, const Tensor& Bt, const CoiterConfig& cfg,
                    sj_semiring semiring, const Allocator& alloc, Workers& w) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);
  const int64_t rows = A.outer, cols = B.outer;
  const int64_t* mpos = Mt.levels[1].pos.as<int64_t>();
  const I* mcrd = Mt.levels[1].crd.as<I>();
  const Dotter<S, I, V> dot(cfg, semiring);
  // Work of row i: its mask entries, each a dot over A's row and a column of B.
  const Partition part = partition_rows(rows, w, "mask entries x A's row length", [&](int64_t i) {
    return (mpos[i + 1] - mpos[i]) * (1 + A.pos[i + 1] - A.pos[i]);
  });
  return assemble_by_pieces<I, V>(w, part, rows, cols, mpos, 0, alloc, At.value_type, true,
                                  [&](int64_t r0, int64_t r1, I* oc, V* ov, int64_t* ends) {
                                    int64_t q = 0;
                                    for (int64_t i = r0; i < r1; ++i) {
                                      const int64_t a0 = A.pos[i], na = A.pos[i + 1] - a0;
                                      if (na > 0)
                                        for (int64_t pm = mpos[i]; pm < mpos[i + 1]; ++pm) {
                                          const I j = mcrd[pm];
                                          const int64_t b0 = B.pos[j];
                                          if (dot(A.crd + a0, A.val + a0, na, B.crd + b0, B.val + b0,
                                                  B.pos[j + 1] - b0, ov + q) > 0)
                                            oc[q++] = j;
                                        }
                                      ends[i] = q;
                                    }
                                    return q;
                                  });
}

template <class S, class I, class V>
Tensor spmspv_typed(const Tensor& At, const Tensor& xt, const CoiterConfig& cfg, sj_semiring semiring,
                    bool dense_output, const Allocator& alloc, Workers& w) {
  const auto A = cs_view<I, V>(At);
  const auto x = spvec_view<I, V>(xt);
  const Dotter<S, I, V> dot(cfg, semiring);
  const int64_t rows = A.outer;
  const Partition part = partition_by_prefix(A.pos, rows, w, "nnz of A's rows");
  auto row = [&](int64_t i, V* out) {
    const int64_t a0 = A.pos[i];
    return dot(A.crd + a0, A.val + a0, A.pos[i + 1] - a0, x.idx, x.val, x.nnz, out);
  };
  if (dense_output) {
    int64_t dims[1] = {rows};
    Tensor y = make_dense(alloc, 1, dims, At.value_type);
    V* yv = y.values.as_mut<V>();
    w.run(part, [&](int64_t r0, int64_t r1) {
      std::fill(yv + r0, yv + r1, S::zero());
      for (int64_t i = r0; i < r1; ++i) row(i, yv + i);
    });
    return y;
  }
  auto idx = std::make_unique_for_overwrite<I[]>(static_cast<size_t>(rows));
  auto val = std::make_unique_for_overwrite<V[]>(static_cast<size_t>(rows));
  return assemble_vector_pieces<I, V>(w, part, rows, alloc, At.value_type, idx.get(), val.get(),
                                      [&](int64_t r0, int64_t r1, I* oi, V* ov) {
                                        int64_t q = 0;
                                        for (int64_t i = r0; i < r1; ++i)
                                          if (row(i, ov + q) > 0) oi[q++] = static_cast<I>(i);
                                        return q;
                                      });
}

// One pass: the output is sized by min(nnz A, nnz B) on one thread, each chunk's by the sum of
// min(na, nb) over its rows on several (ewise::assemble_rows), and each segment pair
// emitted at the running end (shrunk to the exact size when less than half was used). A CSC
// pair is computed as the CSR pair of the transposes and relabelled.
template <class S, class I, class V>
Tensor ewise_typed(const Tensor& At, const Tensor& Bt, const CoiterConfig& cfg, sj_semiring semiring,
                   const Allocator& alloc, Workers& w) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);
  const Emitter<S, I, V> em(cfg, semiring);
  // A forced kernel or ISA (not the AVX-512 tiers) takes every pair it is long enough for.
  const ewise::LongRoute route =
      ewise::long_pair_route(A, B, em.fast.first(), ewise_samples_long_pairs(cfg, index_type_of<I>()));
  Tensor C = ewise::assemble_rows<I, V>(A, B, w, alloc, At.value_type,
                                        [](int64_t la, int64_t lb) { return std::min(la, lb); },
                                        [&](int64_t r0, int64_t r1, I* oc, V* ov, int64_t* ends) {
                                          return ewise::mult_rows<S>(
                                              A, B, r0, r1, oc, ov, ends, em.fast.first(), route,
                                              [&](int64_t a0, int64_t a1, int64_t b0, int64_t b1, int64_t q) {
                                                return q + em.emit_long(A.crd + a0, A.val + a0, a1 - a0, B.crd + b0,
                                                                        B.val + b0, b1 - b0, oc + q, ov + q);
                                              });
                                        });
  if (!is_csr(At)) {  // the CSR arrays of (A .* B)^T are the CSC arrays of A .* B
    std::swap(C.dims[0], C.dims[1]);
    std::swap(C.mode_order[0], C.mode_order[1]);
  }
  return C;
}

void check_types(const Tensor& a, const Tensor& b, const char* what) {
  if (a.index_type != b.index_type || a.value_type != b.value_type)
    fail(SJ_ERR_TYPE_MISMATCH, what, ": operands must share index and value types (", a.describe(), ", ",
         b.describe(), ")");
}

}  // namespace

jit::CoiterSpec choose_coiter_spec(const sj_op_options& o, IndexType it, ValueType vt, double mean_a,
                                   double mean_b) {
  jit::CoiterSpec s;
  s.action = jit::CoiterAction::Dot;
  s.index = it;
  s.value = vt == ValueType::F32 ? ValueType::F32 : ValueType::F64;
  s.semiring = o.semiring;
  s.isa = o.isa;
  s.skip_empty = true;
  s.skip_disjoint = false;
  // The rule (see the header).
  const double m = std::min(mean_a, mean_b);
  const bool native = jit::resolve_isa(o.isa) == SJ_ISA_AVX512 && jit::host_features().vp2intersect;
  if (native && m >= 96) {
    s.width = it == IndexType::I64 ? 8 : 16, s.phases = 7, s.method = jit::CoiterMethod::Native;
  } else if (native && m >= 12) {
    s.width = 8, s.phases = 7, s.method = jit::CoiterMethod::Native;
  } else {
    s.width = 4, s.phases = jit::kPhaseCompare, s.method = jit::CoiterMethod::Broadcast;
  }
  // Forced fields win.
  if (o.vector_width != 0) s.width = static_cast<uint8_t>(o.vector_width);
  if (it == IndexType::I64 && s.width > 8) s.width = 8;
  if (o.phases[0] != '\0') {
    auto p = jit::parse_phase_mask(o.phases);
    if (!p) fail(SJ_ERR_INVALID_ARGUMENT, "phase mask '", o.phases, "' must be three characters of 0/1");
    s.phases = *p;
  }
  switch (o.method) {
    case SJ_METHOD_BROADCAST: s.method = jit::CoiterMethod::Broadcast; break;
    case SJ_METHOD_ROTATE: s.method = jit::CoiterMethod::Rotate; break;
    case SJ_METHOD_NATIVE: s.method = jit::CoiterMethod::Native; break;
    default: break;
  }
  return s;
}

CoiterConfig coiter_config(const sj_op_options& o, IndexType it, ValueType vt, double mean_a, double mean_b) {
  CoiterConfig cfg;
  cfg.spec = choose_coiter_spec(o, it, vt, mean_a, mean_b);
  cfg.tiered = o.vector_width == 0 && o.phases[0] == '\0' && o.method == SJ_METHOD_AUTO;
  return cfg;
}

CoiterConfig resolve_coiter(const CoiterConfig& cfg, IndexType it, ValueType vt, sj_semiring semiring,
                            bool with_emit, double* codegen_us, bool* generated) {
  CoiterConfig out = cfg;
  out.kernels = build_kernels(cfg, it, vt, semiring, with_emit);
  if (codegen_us) *codegen_us = out.kernels->codegen_us;
  if (generated) *generated = out.kernels->generated;
  return out;
}

jit::CoiterSpec warm_coiter_kernel(const CoiterConfig& cfg, jit::CoiterAction action, double* codegen_us,
                                   bool* generated) {
  jit::CoiterSpec s = cfg.spec;
  s.action = action;
  s.with_factor = false;
  if (s.value != ValueType::F32) s.value = ValueType::F64;
  if (s.index == IndexType::I64 && s.width > 8) s.width = 8;
  jit::CoiterKernel k = jit::compile_coiter(s);
  if (codegen_us) *codegen_us = k.codegen_us;
  if (generated) *generated = k.generated && cfg.use_jit;
  return k.spec;
}

Tensor coiter_spgemm(const Tensor& A, const Tensor& Bcsc, sj_semiring semiring, const CoiterConfig& cfg,
                     bool dense_output, const Allocator& alloc) {
  if (!is_csr(A) || !is_csc(Bcsc)) fail(SJ_ERR_FORMAT, "inner-product spgemm: needs A CSR and B CSC");
  check_types(A, Bcsc, "inner-product spgemm");
  if (A.dims[1] != Bcsc.dims[0])
    fail(SJ_ERR_SHAPE_MISMATCH, "spgemm: A is ", A.dims[0], "x", A.dims[1], " but B is ", Bcsc.dims[0], "x",
         Bcsc.dims[1]);
  return with_kernel_types(A.index_type, A.value_type, semiring, [&](auto s, auto i, auto v) {
    return spgemm_typed<decltype(s), decltype(i), decltype(v)>(A, Bcsc, cfg, semiring, dense_output, alloc);
  });
}

void coiter_spgemm_dense_into(const Tensor& A, const Tensor& Bcsc, sj_semiring semiring, const CoiterConfig& cfg,
                              void* out) {
  if (!is_csr(A) || !is_csc(Bcsc)) fail(SJ_ERR_FORMAT, "inner-product spgemm: needs A CSR and B CSC");
  check_types(A, Bcsc, "inner-product spgemm");
  if (A.dims[1] != Bcsc.dims[0])
    fail(SJ_ERR_SHAPE_MISMATCH, "spgemm: A is ", A.dims[0], "x", A.dims[1], " but B is ", Bcsc.dims[0], "x",
         Bcsc.dims[1]);
  with_kernel_types(A.index_type, A.value_type, semiring, [&](auto s, auto i, auto v) {
    using V = decltype(v);
    dense_into_typed<decltype(s), decltype(i), V>(A, Bcsc, cfg, semiring, static_cast<V*>(out));
  });
}

Tensor coiter_masked_spgemm(const Tensor& M, const Tensor& A, const Tensor& Bcsc, sj_semiring semiring,
                            const CoiterConfig& cfg, const Allocator& alloc, Workers* workers) {
  if (!is_csr(M) || !is_csr(A) || !is_csc(Bcsc))
    fail(SJ_ERR_FORMAT, "inner-product masked spgemm: needs M, A CSR and B CSC");
  check_types(A, Bcsc, "inner-product masked spgemm");
  if (M.index_type != A.index_type) fail(SJ_ERR_TYPE_MISMATCH, "masked spgemm: M and A index types differ");
  if (A.dims[1] != Bcsc.dims[0] || M.dims[0] != A.dims[0] || M.dims[1] != Bcsc.dims[1])
    fail(SJ_ERR_SHAPE_MISMATCH, "masked spgemm: M is ", M.dims[0], "x", M.dims[1], ", A is ", A.dims[0], "x",
         A.dims[1], ", B is ", Bcsc.dims[0], "x", Bcsc.dims[1]);
  return with_kernel_types(A.index_type, A.value_type, semiring, [&](auto s, auto i, auto v) {
    Workers serial = Workers::serial();
    return masked_typed<decltype(s), decltype(i), decltype(v)>(M, A, Bcsc, cfg, semiring, alloc,
                                                               workers ? *workers : serial);
  });
}

Tensor coiter_spmspv(const Tensor& A, const Tensor& x, sj_semiring semiring, const CoiterConfig& cfg,
                     bool dense_output, const Allocator& alloc, Workers* workers) {
  if (!is_csr(A) || !is_sparse_vector(x)) fail(SJ_ERR_FORMAT, "row-wise spmspv: needs A CSR and x sparse");
  check_types(A, x, "row-wise spmspv");
  if (A.dims[1] != x.dims[0])
    fail(SJ_ERR_SHAPE_MISMATCH, "spmspv: A is ", A.dims[0], "x", A.dims[1], " but x has length ", x.dims[0]);
  return with_kernel_types(A.index_type, A.value_type, semiring, [&](auto s, auto i, auto v) {
    Workers serial = Workers::serial();
    return spmspv_typed<decltype(s), decltype(i), decltype(v)>(A, x, cfg, semiring, dense_output, alloc,
                                                               workers ? *workers : serial);
  });
}

Tensor coiter_ewise_mult(const Tensor& A, const Tensor& B, sj_semiring semiring, const CoiterConfig& cfg,
                         const Allocator& alloc, Workers* workers) {
  const bool same = (is_csr(A) && is_csr(B)) || (is_csc(A) && is_csc(B));
  if (!same) fail(SJ_ERR_FORMAT, "ewise_mult: needs two CSR or two CSC operands");
  check_types(A, B, "ewise_mult");
  if (A.dims[0] != B.dims[0] || A.dims[1] != B.dims[1])
    fail(SJ_ERR_SHAPE_MISMATCH, "ewise_mult: operands are ", A.dims[0], "x", A.dims[1], " and ", B.dims[0], "x",
         B.dims[1]);
  return with_kernel_types(A.index_type, A.value_type, semiring, [&](auto s, auto i, auto v) {
    Workers serial = Workers::serial();
    return ewise_typed<decltype(s), decltype(i), decltype(v)>(A, B, cfg, semiring, alloc, workers ? *workers : serial);
  });
}

template <class I, class V>
int64_t coiter_batched_dot(const CsView<I, V>& left, const int64_t* ra, const CsView<I, V>& right,
                           const int64_t* rb, int64_t npairs, sj_semiring semiring, const CoiterConfig& cfg,
                           V* out) {
  return with_semiring<V>(semiring, [&](auto sr) {
    using S = decltype(sr);
    const Dotter<S, I, V> dot(cfg, semiring);
    int64_t matched = 0;
    for (int64_t q = 0; q < npairs; ++q) {
      const int64_t a0 = left.pos[ra[q]], b0 = right.pos[rb[q]];
      out[q] = S::zero();
      matched += dot(left.crd + a0, left.val + a0, left.pos[ra[q] + 1] - a0, right.crd + b0, right.val + b0,
                     right.pos[rb[q] + 1] - b0, out + q) > 0;
    }
    return matched;
  });
}

template int64_t coiter_batched_dot<int32_t, float>(const CsView<int32_t, float>&, const int64_t*,
                                                    const CsView<int32_t, float>&, const int64_t*, int64_t,
                                                    sj_semiring, const CoiterConfig&, float*);
template int64_t coiter_batched_dot<int32_t, double>(const CsView<int32_t, double>&, const int64_t*,
                                                     const CsView<int32_t, double>&, const int64_t*, int64_t,
                                                     sj_semiring, const CoiterConfig&, double*);
template int64_t coiter_batched_dot<int64_t, float>(const CsView<int64_t, float>&, const int64_t*,
                                                    const CsView<int64_t, float>&, const int64_t*, int64_t,
                                                    sj_semiring, const CoiterConfig&, float*);
template int64_t coiter_batched_dot<int64_t, double>(const CsView<int64_t, double>&, const int64_t*,
                                                     const CsView<int64_t, double>&, const int64_t*, int64_t,
                                                     sj_semiring, const CoiterConfig&, double*);

bool ewise_samples_long_pairs(const CoiterConfig& cfg, IndexType it) {
  return cfg.tiered && cfg.use_jit && jit::effective_spec(cfg.spec).isa == SJ_ISA_AVX512 && it == IndexType::I32 &&
         intersect_avx512::available();
}

std::string describe(const CoiterConfig& cfg) {
  if (!cfg.use_jit) return "scalar merge (no JIT)";
  if (cfg.tiered) {
    std::string out = "per pair: scalar";
    for (auto& [spec, min] : tier_specs(cfg, cfg.spec.index)) {
      jit::CoiterSpec s = jit::effective_spec(spec);
      out += cat(", min(na,nb) >= ", min, ": n", int(s.width), " p", jit::phase_mask_string(s.phases), " ",
                 jit::to_string(s.method));
    }
    out += cat(" (isa=", jit::isa_name(jit::effective_spec(cfg.spec).isa), ")");
    if (cfg.trim) out += ", disjoint pairs skipped, segments trimmed to the overlap";
    return out;
  }
  jit::CoiterSpec s = jit::effective_spec(cfg.spec);
  std::string out = cat("n", int(s.width), " p", jit::phase_mask_string(s.phases), " ", jit::to_string(s.method),
                        " isa=", jit::isa_name(s.isa), ", fast lane at min(na,nb) >= ",
                        cfg.min_fast >= 0 ? cfg.min_fast : 2 * int64_t(s.width));
  if (cfg.trim) out += ", disjoint pairs skipped, segments trimmed to the overlap";
  return out;
}

}  // namespace sj::kernels

// Drivers over the coiteration kernels; see kernels/coiter_drivers.hpp for the per-pair
// dispatch and the spec rule.
#include "kernels/coiter_drivers.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "jit/isa.hpp"
#include "kernels/coiter_portable.hpp"
#include "src/dispatch.hpp"
#include "src/error.hpp"
#include "src/semiring.hpp"

namespace sj::kernels {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

template <class I> constexpr IndexType index_of() { return sizeof(I) == 4 ? IndexType::I32 : IndexType::I64; }
template <class V> constexpr ValueType value_of() {
  return std::is_same_v<V, float> ? ValueType::F32 : std::is_same_v<V, double> ? ValueType::F64 : ValueType::Bool;
}

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

// The kernel of one action for a driver's types, or none (bool values, portable fallback,
// use_jit off): then min_fast is kNever and the inlined scalar merge runs.
// `owner` keeps the code alive while the driver runs (the kernel cache may evict it).
template <class I, class V>
void* fast_kernel(const CoiterConfig& cfg, jit::CoiterAction action, int64_t* min_fast,
                  std::shared_ptr<const void>* owner) {
  *min_fast = kNever;
  if constexpr (std::is_same_v<V, uint8_t>) {
    return nullptr;
  } else {
    if (!cfg.use_jit) return nullptr;
    jit::CoiterSpec s = cfg.spec;
    s.action = action;
    s.index = index_of<I>();
    s.value = value_of<V>();
    s.with_factor = false;
    if (s.index == IndexType::I64 && s.width > 8) s.width = 8;
    jit::CoiterKernel k = jit::compile_coiter(s);
    if (!k.generated) return nullptr;
    *owner = k.owner;
    *min_fast = cfg.min_fast >= 0 ? cfg.min_fast : 2 * int64_t(k.spec.width);
    return k.fn;
  }
}

template <class S, class I, class V> struct Dotter {
  jit::CoiterDotFn<I, V> fast = nullptr;
  int64_t min_fast = kNever;
  bool trim = true;
  std::shared_ptr<const void> owner;

  Dotter(const CoiterConfig& cfg, sj_semiring semiring) : trim(cfg.trim) {
    CoiterConfig c = cfg;
    c.spec.semiring = semiring;
    fast = reinterpret_cast<jit::CoiterDotFn<I, V>>(fast_kernel<I, V>(c, jit::CoiterAction::Dot, &min_fast, &owner));
  }
  // The kernel ABI: the count of matches; *out written only when it is > 0.
  inline int64_t operator()(const I* ac, const V* av, int64_t na, const I* bc, const V* bv, int64_t nb,
                            V* out) const {
    if (trim) {
      if (disjoint(ac, na, bc, nb)) return 0;
      // Short pairs go straight to the scalar merge: trimming them costs more than it saves.
      if (std::min(na, nb) >= min_fast) trim_pair(ac, av, na, bc, bv, nb);
    }
    if (std::min(na, nb) >= min_fast) return fast(ac, av, na, bc, bv, nb, out);
    return coiter_dot_portable<I, V, S, false>(ac, av, na, bc, bv, nb, out);
  }
};

template <class S, class I, class V> struct Emitter {
  jit::CoiterEmitFn<I, V> fast = nullptr;
  jit::CoiterCountFn<I> fast_count = nullptr;
  int64_t min_fast = kNever, min_fast_count = kNever;
  bool trim = true;
  std::shared_ptr<const void> owner, owner_count;

  Emitter(const CoiterConfig& cfg, sj_semiring semiring) : trim(cfg.trim) {
    CoiterConfig c = cfg;
    c.spec.semiring = semiring;
    fast = reinterpret_cast<jit::CoiterEmitFn<I, V>>(fast_kernel<I, V>(c, jit::CoiterAction::Emit, &min_fast, &owner));
    fast_count =
        reinterpret_cast<jit::CoiterCountFn<I>>(fast_kernel<I, V>(c, jit::CoiterAction::Count, &min_fast_count, &owner_count));
  }
  inline int64_t count(const I* ac, int64_t na, const I* bc, int64_t nb) const {
    if (trim) {
      if (disjoint(ac, na, bc, nb)) return 0;
      if (std::min(na, nb) >= min_fast_count) {
        int64_t sa, sb;
        trim_range(ac, sa, na, bc, sb, nb);
        ac += sa, bc += sb;
      }
    }
    if (std::min(na, nb) >= min_fast_count) return fast_count(ac, na, bc, nb);
    return coiter_count_portable<I>(ac, na, bc, nb);
  }
  inline int64_t emit(const I* ac, const V* av, int64_t na, const I* bc, const V* bv, int64_t nb, I* oc,
                      V* ov) const {
    if (trim) {
      if (disjoint(ac, na, bc, nb)) return 0;
      if (std::min(na, nb) >= min_fast) trim_pair(ac, av, na, bc, bv, nb);
    }
    if (std::min(na, nb) >= min_fast) return fast(ac, av, na, bc, bv, nb, oc, ov);
    return coiter_emit_portable<I, V, S>(ac, av, na, bc, bv, nb, oc, ov);
  }
};

int64_t checked_elements(int64_t rows, int64_t cols) {
  if (rows > 0 && cols > std::numeric_limits<int64_t>::max() / rows)
    fail(SJ_ERR_OVERFLOW, "dense result of ", rows, "x", cols, " elements does not fit");
  return rows * cols;
}

template <class S, class I, class V>
Tensor spgemm_typed(const Tensor& At, const Tensor& Bt, const CoiterConfig& cfg, sj_semiring semiring,
                    bool dense_output, const Allocator& alloc) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);  // CSC: outer = columns of B
  const int64_t rows = A.outer, cols = B.outer;
  const Dotter<S, I, V> dot(cfg, semiring);
  // Sweep every column straight from B's arrays (a packed table of non-empty columns was
  // slower on short-segment matrices: more bytes per column than pos + crd).
  auto sweep_row = [&](int64_t i, auto&& store) {
    const int64_t a0 = A.pos[i], na = A.pos[i + 1] - a0;
    if (na == 0) return;
    const I* ac = A.crd + a0;
    const V* av = A.val + a0;
    const I afirst = ac[0], alast = ac[na - 1];
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t p = B.pos[j], n = B.pos[j + 1] - p;
      if (n == 0 || (dot.trim && (B.crd[p + n - 1] < afirst || B.crd[p] > alast))) continue;
      store(static_cast<I>(j), [&](V* out) { return dot(ac, av, na, B.crd + p, B.val + p, n, out); });
    }
  };
  const ValueType vt = value_of<V>() == ValueType::Bool ? At.value_type : value_of<V>();
  if (dense_output) {
    int64_t dims[2] = {rows, cols};
    Tensor C = make_dense(alloc, 2, dims, vt);
    V* c = C.values.as_mut<V>();
    std::fill_n(c, checked_elements(rows, cols), S::zero());
    for (int64_t i = 0; i < rows; ++i) {
      V* ci = c + i * cols;
      sweep_row(i, [&](I j, auto&& run) { run(ci + j); });
    }
    return C;
  }
  CsResult<I, V> r;
  r.outer = rows;
  r.inner = cols;
  r.pos.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    sweep_row(i, [&](I j, auto&& run) {
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

template <class S, class I, class V>
Tensor masked_typed(const Tensor& Mt, const Tensor& At, const Tensor& Bt, const CoiterConfig& cfg,
                    sj_semiring semiring, const Allocator& alloc) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);
  const int64_t rows = A.outer, cols = B.outer;
  const int64_t* mpos = Mt.levels[1].pos.as<int64_t>();
  const I* mcrd = Mt.levels[1].crd.as<I>();
  const Dotter<S, I, V> dot(cfg, semiring);
  CsResult<I, V> r;
  r.outer = rows;
  r.inner = cols;
  r.pos.assign(static_cast<size_t>(rows) + 1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t a0 = A.pos[i], na = A.pos[i + 1] - a0;
    if (na > 0) {
      for (int64_t pm = mpos[i]; pm < mpos[i + 1]; ++pm) {
        const I j = mcrd[pm];
        const int64_t b0 = B.pos[j];
        V v;
        if (dot(A.crd + a0, A.val + a0, na, B.crd + b0, B.val + b0, B.pos[j + 1] - b0, &v) > 0) {
          r.crd.push_back(j);
          r.val.push_back(v);
        }
      }
    }
    r.pos[i + 1] = static_cast<int64_t>(r.crd.size());
  }
  return to_tensor(alloc, true, r, At.value_type);
}

template <class S, class I, class V>
Tensor spmspv_typed(const Tensor& At, const Tensor& xt, const CoiterConfig& cfg, sj_semiring semiring,
                    bool dense_output, const Allocator& alloc) {
  const auto A = cs_view<I, V>(At);
  const auto x = spvec_view<I, V>(xt);
  const Dotter<S, I, V> dot(cfg, semiring);
  const int64_t rows = A.outer;
  if (dense_output) {
    int64_t dims[1] = {rows};
    Tensor y = make_dense(alloc, 1, dims, At.value_type);
    V* yv = y.values.as_mut<V>();
    std::fill_n(yv, rows, S::zero());
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t a0 = A.pos[i];
      dot(A.crd + a0, A.val + a0, A.pos[i + 1] - a0, x.idx, x.val, x.nnz, yv + i);
    }
    return y;
  }
  SpVecResult<I, V> y;
  y.n = rows;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t a0 = A.pos[i];
    V v;
    if (dot(A.crd + a0, A.val + a0, A.pos[i + 1] - a0, x.idx, x.val, x.nnz, &v) > 0) {
      y.idx.push_back(static_cast<I>(i));
      y.val.push_back(v);
    }
  }
  return to_tensor(alloc, y, At.value_type);
}

template <class S, class I, class V>
Tensor ewise_typed(const Tensor& At, const Tensor& Bt, const CoiterConfig& cfg, sj_semiring semiring,
                   const Allocator& alloc) {
  const auto A = cs_view<I, V>(At);
  const auto B = cs_view<I, V>(Bt);
  const Emitter<S, I, V> em(cfg, semiring);
  const int64_t outer = A.outer;
  std::vector<int64_t> pos(static_cast<size_t>(outer) + 1, 0);
  for (int64_t s = 0; s < outer; ++s) {
    const int64_t a0 = A.pos[s], b0 = B.pos[s];
    pos[s + 1] = pos[s] + em.count(A.crd + a0, A.pos[s + 1] - a0, B.crd + b0, B.pos[s + 1] - b0);
  }
  const bool csr = is_csr(At);
  Tensor C = make_compressed_matrix(alloc, csr, At.dims[0], At.dims[1], pos[outer], index_of<I>(), At.value_type);
  int64_t* cpos = C.levels[1].pos.as_mut<int64_t>();
  I* crd = C.levels[1].crd.as_mut<I>();
  V* val = C.values.as_mut<V>();
  std::copy(pos.begin(), pos.end(), cpos);
  for (int64_t s = 0; s < outer; ++s) {
    if (pos[s + 1] == pos[s]) continue;
    const int64_t a0 = A.pos[s], b0 = B.pos[s];
    const int64_t n = em.emit(A.crd + a0, A.val + a0, A.pos[s + 1] - a0, B.crd + b0, B.val + b0,
                              B.pos[s + 1] - b0, crd + pos[s], val + pos[s]);
    if (n != pos[s + 1] - pos[s])
      fail(SJ_ERR_INTERNAL, "ewise_mult: segment ", s, " emitted ", n, " entries but counted ", pos[s + 1] - pos[s]);
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

Tensor coiter_masked_spgemm(const Tensor& M, const Tensor& A, const Tensor& Bcsc, sj_semiring semiring,
                            const CoiterConfig& cfg, const Allocator& alloc) {
  if (!is_csr(M) || !is_csr(A) || !is_csc(Bcsc))
    fail(SJ_ERR_FORMAT, "inner-product masked spgemm: needs M, A CSR and B CSC");
  check_types(A, Bcsc, "inner-product masked spgemm");
  if (M.index_type != A.index_type) fail(SJ_ERR_TYPE_MISMATCH, "masked spgemm: M and A index types differ");
  if (A.dims[1] != Bcsc.dims[0] || M.dims[0] != A.dims[0] || M.dims[1] != Bcsc.dims[1])
    fail(SJ_ERR_SHAPE_MISMATCH, "masked spgemm: M is ", M.dims[0], "x", M.dims[1], ", A is ", A.dims[0], "x",
         A.dims[1], ", B is ", Bcsc.dims[0], "x", Bcsc.dims[1]);
  return with_kernel_types(A.index_type, A.value_type, semiring, [&](auto s, auto i, auto v) {
    return masked_typed<decltype(s), decltype(i), decltype(v)>(M, A, Bcsc, cfg, semiring, alloc);
  });
}

Tensor coiter_spmspv(const Tensor& A, const Tensor& x, sj_semiring semiring, const CoiterConfig& cfg,
                     bool dense_output, const Allocator& alloc) {
  if (!is_csr(A) || !is_sparse_vector(x)) fail(SJ_ERR_FORMAT, "row-wise spmspv: needs A CSR and x sparse");
  check_types(A, x, "row-wise spmspv");
  if (A.dims[1] != x.dims[0])
    fail(SJ_ERR_SHAPE_MISMATCH, "spmspv: A is ", A.dims[0], "x", A.dims[1], " but x has length ", x.dims[0]);
  return with_kernel_types(A.index_type, A.value_type, semiring, [&](auto s, auto i, auto v) {
    return spmspv_typed<decltype(s), decltype(i), decltype(v)>(A, x, cfg, semiring, dense_output, alloc);
  });
}

Tensor coiter_ewise_mult(const Tensor& A, const Tensor& B, sj_semiring semiring, const CoiterConfig& cfg,
                         const Allocator& alloc) {
  const bool same = (is_csr(A) && is_csr(B)) || (is_csc(A) && is_csc(B));
  if (!same) fail(SJ_ERR_FORMAT, "ewise_mult: needs two CSR or two CSC operands");
  check_types(A, B, "ewise_mult");
  if (A.dims[0] != B.dims[0] || A.dims[1] != B.dims[1])
    fail(SJ_ERR_SHAPE_MISMATCH, "ewise_mult: operands are ", A.dims[0], "x", A.dims[1], " and ", B.dims[0], "x",
         B.dims[1]);
  return with_kernel_types(A.index_type, A.value_type, semiring, [&](auto s, auto i, auto v) {
    return ewise_typed<decltype(s), decltype(i), decltype(v)>(A, B, cfg, semiring, alloc);
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

std::string describe(const CoiterConfig& cfg) {
  if (!cfg.use_jit) return "scalar merge (no JIT)";
  jit::CoiterSpec s = jit::effective_spec(cfg.spec);
  std::string out = cat("n", int(s.width), " p", jit::phase_mask_string(s.phases), " ", jit::to_string(s.method),
                        " isa=", jit::isa_name(s.isa), ", fast lane at min(na,nb) >= ",
                        cfg.min_fast >= 0 ? cfg.min_fast : 2 * int64_t(s.width));
  if (cfg.trim) out += ", disjoint pairs skipped, segments trimmed to the overlap";
  return out;
}

}  // namespace sj::kernels

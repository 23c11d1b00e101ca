#include "kernels/einsum_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "src/error.hpp"
#include "src/semiring.hpp"

namespace sj::einsum {

double semiring_zero(sj_semiring s) {
  return with_semiring<double>(s, [](auto sr) { return decltype(sr)::zero(); });
}
double semiring_add(sj_semiring s, double a, double b) {
  return with_semiring<double>(s, [&](auto sr) { return decltype(sr)::add(a, b); });
}
double semiring_mul(sj_semiring s, double a, double b) {
  return with_semiring<double>(s, [&](auto sr) { return decltype(sr)::mul(a, b); });
}

namespace {

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& k) const {
    size_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<size_t>(v)) * 1099511628211ull;
    return h;
  }
};

// One factor's entries, grouped by the coordinates of the indices bound before it.
struct FactorIndex {
  CooTensor coo;
  std::vector<int> bound_modes;  // modes whose index an earlier factor binds
  std::vector<int> new_modes;    // modes this factor binds
  std::unordered_map<std::vector<int64_t>, std::vector<int64_t>, KeyHash> groups;
};

}  // namespace

struct ReferenceJoin::Impl {
  const Expression* e = nullptr;
  const Term* tm = nullptr;
  sj_semiring s = SJ_SEMIRING_PLUS_TIMES;
  std::vector<FactorIndex> fx;
};

ReferenceJoin::ReferenceJoin(const Expression& e, int term, const std::vector<Tensor>& operands, sj_semiring s)
    : impl_(std::make_unique<Impl>()) {
  impl_->e = &e;
  impl_->tm = &e.terms[term];
  impl_->s = s;
  const Term& tm = e.terms[term];
  const size_t nf = tm.factors.size();
  auto& fx = impl_->fx;
  fx.resize(nf);
  std::vector<bool> bound(e.index_names.size(), false);
  for (size_t f = 0; f < nf; ++f) {
    const Access& a = tm.factors[f];
    fx[f].coo = to_coo(operands[e.operand_of(a)]);
    for (size_t m = 0; m < a.indices.size(); ++m)
      (bound[a.indices[m]] ? fx[f].bound_modes : fx[f].new_modes).push_back(static_cast<int>(m));
    for (int m : fx[f].new_modes) bound[a.indices[m]] = true;
    for (int64_t p = 0; p < fx[f].coo.nnz(); ++p) {
      std::vector<int64_t> key;
      for (int m : fx[f].bound_modes) key.push_back(fx[f].coo.coords[m][p]);
      fx[f].groups[key].push_back(p);
    }
  }
}

ReferenceJoin::~ReferenceJoin() = default;

void ReferenceJoin::run(ReferenceResult& into, int index, int64_t lo, int64_t hi) const {
  const Expression& e = *impl_->e;
  const Term& tm = *impl_->tm;
  const sj_semiring s = impl_->s;
  const auto& fx = impl_->fx;
  const size_t nf = tm.factors.size();
  std::vector<int64_t> value_of(e.index_names.size(), 0);
  std::vector<double> vals(nf, 0);
  // Depth-first join: factor f extends the assignment by its entries that agree with it.
  auto rec = [&](auto&& self, size_t f) -> void {
    if (f == nf) {
      double prod = vals[0];
      for (size_t g = 1; g < nf; ++g) prod = semiring_mul(s, prod, vals[g]);
      std::vector<int64_t> out;
      for (int v : e.output.indices) out.push_back(value_of[v]);
      auto [it, fresh] = into.try_emplace(std::move(out), prod);
      if (!fresh) it->second = semiring_add(s, it->second, prod);
      return;
    }
    const Access& a = tm.factors[f];
    std::vector<int64_t> key;
    for (int m : fx[f].bound_modes) key.push_back(value_of[a.indices[m]]);
    auto g = fx[f].groups.find(key);
    if (g == fx[f].groups.end()) return;
    for (int64_t p : g->second) {
      bool in_range = true;
      for (int m : fx[f].new_modes) {
        const int64_t c = fx[f].coo.coords[m][p];
        value_of[a.indices[m]] = c;
        if (a.indices[m] == index && (c < lo || c >= hi)) in_range = false;
      }
      if (!in_range) continue;
      vals[f] = fx[f].coo.values[p];
      self(self, f + 1);
    }
  };
  rec(rec, 0);
}

void evaluate_reference(const Expression& e, int term, const std::vector<Tensor>& operands, sj_semiring s,
                        ReferenceResult& into) {
  if (term < 0) {
    for (size_t t = 0; t < e.terms.size(); ++t) evaluate_reference(e, static_cast<int>(t), operands, s, into);
    return;
  }
  ReferenceJoin(e, term, operands, s).run(into);
}

Tensor reference_to_tensor(const ReferenceResult& r, const FormatSpec& spec, const std::array<int64_t, kMaxOrder>& dims,
                           IndexType it, ValueType vt, sj_semiring s, const Allocator& alloc) {
  const int order = spec.order;
  bool dense = true;
  for (int l = 0; l < order; ++l) dense &= spec.kinds[l] == LevelKind::Dense;
  if (dense) {
    Tensor t = make_dense(alloc, order, dims.data(), vt);
    t.mode_order = spec.mode_order;
    int64_t n = 1;
    for (int m = 0; m < order; ++m) n *= dims[m];
    const double zero = semiring_zero(s);
    auto position = [&](const std::vector<int64_t>& c) {
      int64_t p = 0;
      for (int l = 0; l < order; ++l) p = p * dims[spec.mode_order[l]] + c[spec.mode_order[l]];
      return p;
    };
    with_types(IndexType::I64, vt, [&](auto, auto v) {
      using V = decltype(v);
      V* out = t.values.as_mut<V>();
      for (int64_t p = 0; p < n; ++p) out[p] = static_cast<V>(zero);
      for (auto& [c, x] : r) out[position(c)] = static_cast<V>(std::is_same_v<V, uint8_t> ? (x != 0) : x);
    });
    return t;
  }
  CooTensor coo;
  coo.order = order;
  coo.dims = dims;
  for (auto& [c, x] : r) {
    for (int m = 0; m < order; ++m) coo.coords[m].push_back(c[m]);
    coo.values.push_back(vt == ValueType::Bool ? (x != 0 ? 1.0 : 0.0) : x);
  }
  return from_coo(coo, spec, it, vt, alloc);
}

}  // namespace sj::einsum

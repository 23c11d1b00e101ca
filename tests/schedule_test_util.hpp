// Helpers shared by the schedule test suites that go through the C API: a context and a
// tensor handle that clean up, handles made from random CsResult/SpVecResult inputs, and a
// bitwise comparison of two results.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "capi/handles.hpp"
#include "sparsejit/sparsejit.h"
#include "src/derived_forms.hpp"
#include "tests/random_matrices.hpp"
#include "tests/test_util.hpp"

namespace sj::test {

struct Ctx {
  sj_context* c = nullptr;
  Ctx() { EXPECT_EQ(sj_context_create(nullptr, &c), SJ_OK); }
  ~Ctx() { EXPECT_EQ(sj_context_destroy(c), SJ_OK) << sj_last_error_message(); }
};
struct H {
  sj_tensor* t = nullptr;
  H() = default;
  H(const H&) = delete;
  ~H() { sj_tensor_destroy(t); }
};

inline std::string msg() { return sj_last_error_message(); }

template <class I> constexpr sj_index_type itype() { return sizeof(I) == 4 ? SJ_INDEX_INT32 : SJ_INDEX_INT64; }
template <class V> constexpr sj_value_type vtype() {
  return std::is_same_v<V, float> ? SJ_VALUE_F32 : std::is_same_v<V, double> ? SJ_VALUE_F64 : SJ_VALUE_BOOL;
}

// Bitwise equality of two results (structure, coordinates, value bits).
inline ::testing::AssertionResult same_bits(const sj::Tensor& a, const sj::Tensor& b) {
  if (a.order != b.order || a.dims != b.dims || a.index_type != b.index_type || a.value_type != b.value_type)
    return ::testing::AssertionFailure() << "shape/type: " << a.describe() << " vs " << b.describe();
  const bool da = sj::is_dense(a), db = sj::is_dense(b);
  if (da != db) return ::testing::AssertionFailure() << "dense vs sparse";
  const size_t vs = sj::value_size(a.value_type);
  if (da) {
    int64_t n = 1;
    for (int k = 0; k < a.order; ++k) n *= a.dims[k];
    if (n && std::memcmp(a.values.data(), b.values.data(), vs * n) != 0)
      return ::testing::AssertionFailure() << "dense values differ";
    return ::testing::AssertionSuccess();
  }
  if (a.nnz() != b.nnz()) return ::testing::AssertionFailure() << "nnz " << a.nnz() << " vs " << b.nnz();
  const int last = a.order - 1;
  if (a.order == 2) {
    const int64_t outer = a.level_dim(0) + 1;
    if (std::memcmp(a.levels[1].pos.data(), b.levels[1].pos.data(), 8 * outer) != 0)
      return ::testing::AssertionFailure() << "positions differ";
  }
  const size_t is = sj::index_size(a.index_type);
  if (a.nnz() && std::memcmp(a.levels[last].crd.data(), b.levels[last].crd.data(), is * a.nnz()) != 0)
    return ::testing::AssertionFailure() << "coordinates differ";
  if (a.nnz() && std::memcmp(a.values.data(), b.values.data(), vs * a.nnz()) != 0)
    return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

// `plan` executed through sj_plan_execute_into, into buffers exactly as long as `ref` (the
// result of sj_plan_execute) needs, gives the same layout and the same bits. Flat results
// (CSR, CSC, sparse vector, dense) only.
inline ::testing::AssertionResult into_matches(sj_plan* plan, const sj_tensor* const* ops, int n,
                                               const sj::Tensor& ref) {
  const bool dense = sj::is_dense(ref);
  int64_t entries = ref.nnz();
  if (dense) {
    entries = 1;
    for (int k = 0; k < ref.order; ++k) entries *= ref.dims[k];
  }
  const int64_t pos_len = !dense && ref.order == 2 ? ref.level_dim(0) + 1 : 0;
  const size_t is = sj::index_size(ref.index_type), vs = sj::value_size(ref.value_type);
  std::vector<int64_t> pos(pos_len);
  std::vector<unsigned char> crd(dense ? 0 : is * entries), val(vs * entries);
  sj_output_buffers b{};
  b.struct_size = sizeof b;
  b.pos = pos.empty() ? nullptr : pos.data();
  b.pos_capacity = pos_len;
  b.crd = crd.empty() ? nullptr : crd.data();
  b.crd_capacity = dense ? 0 : entries;
  b.values = val.empty() ? nullptr : val.data();
  b.values_capacity = entries;
  sj_output_sizes sz{};
  sz.struct_size = sizeof sz;
  if (sj_plan_execute_into(plan, ops, n, &b, &sz) != SJ_OK) return ::testing::AssertionFailure() << msg();
  if (sz.values_len != entries || sz.crd_len != (dense ? 0 : entries) || sz.pos_len != pos_len ||
      sz.order != ref.order || sz.index_type != sj::to_c(ref.index_type) || sz.value_type != sj::to_c(ref.value_type))
    return ::testing::AssertionFailure() << "layout: values_len " << sz.values_len << " crd_len " << sz.crd_len
                                         << " pos_len " << sz.pos_len << " order " << sz.order << " for "
                                         << ref.describe();
  if (entries && std::memcmp(val.data(), ref.values.data(), vs * entries) != 0)
    return ::testing::AssertionFailure() << "values differ";
  if (dense) return ::testing::AssertionSuccess();
  const sj::Level& inner = ref.levels[ref.order - 1];
  if (entries && std::memcmp(crd.data(), inner.crd.data(), is * entries) != 0)
    return ::testing::AssertionFailure() << "coordinates differ";
  if (pos_len && std::memcmp(pos.data(), inner.pos.data(), 8 * pos_len) != 0)
    return ::testing::AssertionFailure() << "positions differ";
  return ::testing::AssertionSuccess();
}

// The same for a sparse vector result, into buffers with room for every one of its `n`
// elements (where SpMSpV's push writes y itself, or takes the plan's direct route): the first
// nnz entries are ref's bits and nothing past them is written.
inline ::testing::AssertionResult into_every_row_matches(sj_plan* plan, const sj_tensor* const* ops, int n,
                                                         const sj::Tensor& ref) {
  const int64_t len = ref.dims[0], entries = ref.nnz();
  const size_t is = sj::index_size(ref.index_type), vs = sj::value_size(ref.value_type);
  std::vector<unsigned char> crd(is * len + 1, 0xAB), val(vs * len + 1, 0xCD);  // + 1: never null
  sj_output_buffers b{};
  b.struct_size = sizeof b;
  b.crd = crd.data();
  b.crd_capacity = len;
  b.values = val.data();
  b.values_capacity = len;
  sj_output_sizes sz{};
  sz.struct_size = sizeof sz;
  if (sj_plan_execute_into(plan, ops, n, &b, &sz) != SJ_OK) return ::testing::AssertionFailure() << msg();
  if (sz.values_len != entries || sz.crd_len != entries || sz.index_type != sj::to_c(ref.index_type))
    return ::testing::AssertionFailure() << "layout: values_len " << sz.values_len << " for " << ref.describe();
  if (entries && (std::memcmp(crd.data(), ref.levels[0].crd.data(), is * entries) != 0 ||
                  std::memcmp(val.data(), ref.values.data(), vs * entries) != 0))
    return ::testing::AssertionFailure() << "entries differ";
  for (size_t k = is * entries; k < crd.size(); ++k)
    if (crd[k] != 0xAB) return ::testing::AssertionFailure() << "coordinate byte " << k << " written";
  for (size_t k = vs * entries; k < val.size(); ++k)
    if (val[k] != 0xCD) return ::testing::AssertionFailure() << "value byte " << k << " written";
  return ::testing::AssertionSuccess();
}

// Whether the plan has a direct route into the caller's buffers and whether its last
// execution took it (explain).
struct DirectRoute {
  bool offered = false, taken = false;
};
inline DirectRoute direct_route(sj_plan* plan) {
  const char* json = nullptr;
  EXPECT_EQ(sj_plan_explain(plan, &json), SJ_OK) << msg();
  const std::string j = json ? json : "";
  return {j.find("\"direct_route\":true") != std::string::npos,
          j.find("\"last_execution_direct\":true") != std::string::npos};
}
inline bool last_execution_direct(sj_plan* plan) { return direct_route(plan).taken; }

template <class I, class V> sj_tensor* csr_handle(sj_context* c, const sj::CsResult<I, V>& m) {
  sj_tensor* h = nullptr;
  EXPECT_EQ(sj_tensor_create_csr(c, m.outer, m.inner, itype<I>(), vtype<V>(), m.pos.data(), m.crd.data(), m.val.data(),
                                 SJ_TENSOR_COPY, &h),
            SJ_OK)
      << msg();
  return h;
}
template <class I, class V> sj_tensor* vec_handle(sj_context* c, const sj::SpVecResult<I, V>& x) {
  sj_tensor* h = nullptr;
  EXPECT_EQ(sj_tensor_create_sparse_vector(c, x.n, x.idx.size(), itype<I>(), vtype<V>(), x.idx.data(), x.val.data(),
                                           SJ_TENSOR_COPY, &h),
            SJ_OK)
      << msg();
  return h;
}

// Coiteration options a test forces on the schedules that run the generated kernels: the
// automatic rule (per-pair tiers), then every width x phase mask x method with the best ISA,
// the AVX2 kernels (widths 4 and 8, broadcast and rotate), and the portable kernel. A width
// the index type lacks (16 with i64) or a method the CPU lacks is narrowed by the generator.
struct CoiterForce {
  int width = 0;
  char phases[4] = "";
  sj_coiter_method method = SJ_METHOD_AUTO;
  sj_isa isa = SJ_ISA_AUTO;
  void apply(sj_op_options& o) const {
    o.vector_width = width;
    std::memcpy(o.phases, phases, sizeof o.phases);
    o.method = method;
    o.isa = isa;
  }
  std::string name() const {
    return "n" + std::to_string(width) + "/p" + phases + "/method " + std::to_string(method) + "/isa " +
           std::to_string(isa);
  }
};
inline std::vector<CoiterForce> coiter_forces() {
  std::vector<CoiterForce> out;
  out.push_back({});
  auto add = [&](int w, int ph, sj_coiter_method m, sj_isa isa) {
    CoiterForce f;
    f.width = w;
    for (int b = 0; b < 3; ++b) f.phases[b] = (ph >> (2 - b)) & 1 ? '1' : '0';
    f.phases[3] = '\0';
    f.method = m;
    f.isa = isa;
    out.push_back(f);
  };
  for (int w : {4, 8, 16})
    for (int ph = 0; ph < 8; ++ph)
      for (sj_coiter_method m : {SJ_METHOD_BROADCAST, SJ_METHOD_ROTATE, SJ_METHOD_NATIVE}) add(w, ph, m, SJ_ISA_AUTO);
  for (int w : {4, 8})
    for (int ph = 0; ph < 8; ++ph)
      for (sj_coiter_method m : {SJ_METHOD_BROADCAST, SJ_METHOD_ROTATE}) add(w, ph, m, SJ_ISA_AVX2);
  CoiterForce scalar;
  scalar.isa = SJ_ISA_SCALAR;
  out.push_back(scalar);
  return out;
}

}  // namespace sj::test

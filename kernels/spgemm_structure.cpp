// The structure of a SpGEMM product kept by a plan (see spgemm_structure.hpp).
#include "kernels/spgemm_structure.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/spgemm_gustavson.hpp"
#include "src/derived_forms.hpp"

namespace sj {

namespace {
const Level& compressed(const Tensor& t) { return t.levels[1]; }
size_t pos_bytes(int64_t outer) { return static_cast<size_t>(outer + 1) * sizeof(int64_t); }
}  // namespace

OperandStructure OperandStructure::record(const Tensor& t, const Allocator& alloc) {
  OperandStructure s;
  const Level& lv = compressed(t);
  s.outer_ = t.level_dim(0);
  s.inner_ = t.level_dim(1);
  s.nnz_ = t.nnz();
  s.index_type_ = t.index_type;
  s.given_pos_ = lv.pos.data();
  s.given_crd_ = lv.crd.data();
  s.handle_ = t.derived;
  s.shared_ = lv.pos.owned() && lv.crd.owned();
  if (s.shared_) {
    s.pos_ = lv.pos;
    s.crd_ = lv.crd;
  } else {
    const size_t pb = pos_bytes(s.outer_), cb = static_cast<size_t>(s.nnz_) * index_size(t.index_type);
    s.pos_ = Buffer::copy_of(alloc, lv.pos.data(), pb);
    s.crd_ = Buffer::copy_of(alloc, lv.crd.data(), cb);
    s.copied_ = pb + cb;
  }
  return s;
}

bool OperandStructure::same_as(const Tensor& t) const {
  // Equal positions imply an equal entry count (pos[outer]), so the count is not compared.
  if (t.order != 2 || t.levels.size() < 2 || t.index_type != index_type_ || t.level_dim(0) != outer_ ||
      t.level_dim(1) != inner_)
    return false;
  const Level& lv = compressed(t);
  if (lv.pos.data() == given_pos_ && lv.crd.data() == given_crd_) {
    if (shared_) return true;  // the recorded owned arrays themselves, kept alive by this record
    // The same live handle (an owner-equal weak pointer cannot outlive into another handle).
    if (t.derived && !handle_.owner_before(t.derived) && !t.derived.owner_before(handle_)) return true;
  }
  // (No memcmp of zero bytes: an empty array may be null, which memcmp must not be given.)
  const size_t crd_bytes = static_cast<size_t>(nnz_) * index_size(index_type_);
  return std::memcmp(pos_.data(), lv.pos.data(), pos_bytes(outer_)) == 0 &&
         (crd_bytes == 0 || std::memcmp(crd_.data(), lv.crd.data(), crd_bytes) == 0);
}

size_t SpgemmStructure::bytes() const {
  return pattern.levels[1].pos.bytes() + pattern.levels[1].crd.bytes() + work.size() * sizeof(int64_t) +
         a.copied_bytes() + b.copied_bytes();
}

namespace {
template <class I>
std::vector<int64_t> work_prefix(const Tensor& At, const Tensor& Bt, int64_t* flops) {
  const int64_t rows = At.level_dim(0);
  const int64_t* ap = At.levels[1].pos.as<int64_t>();
  const I* ac = At.levels[1].crd.as<I>();
  const int64_t* bp = Bt.levels[1].pos.as<int64_t>();
  std::vector<int64_t> w(static_cast<size_t>(rows) + 1);
  w[0] = 0;
  int64_t f = 0;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t r = 0;
    for (int64_t p = ap[i]; p < ap[i + 1]; ++p) r += bp[ac[p] + 1] - bp[ac[p]];
    f += r;
    w[i + 1] = w[i] + r + (ap[i + 1] - ap[i]) * 4 + 4;  // as the full kernel's split
  }
  *flops = f;
  return w;
}
}  // namespace

std::shared_ptr<const SpgemmStructure> keep_spgemm_structure(const Tensor& A, const Tensor& B, const Tensor& C,
                                                             const Allocator& alloc, int64_t execution) {
  const int64_t rows = C.dims[0], nnz = C.nnz();
  const size_t isz = static_cast<size_t>(index_size(C.index_type));
  const size_t pattern_bytes = pos_bytes(rows) + static_cast<size_t>(nnz) * isz;
  const size_t cap = alloc.memory_cap();
  const size_t limit = cap != 0 ? std::min(kKeptStructureMaxBytes, cap / 4) : kKeptStructureMaxBytes;
  if (pattern_bytes + pos_bytes(rows) > limit) return nullptr;
  auto s = std::make_shared<SpgemmStructure>();
  int64_t flops = 0;
  s->work = C.index_type == IndexType::I32 ? work_prefix<int32_t>(A, B, &flops) : work_prefix<int64_t>(A, B, &flops);
  if (dense_workspace_too_wide(B.level_dim(1), value_size(C.value_type),
                               static_cast<double>(A.nnz()) + static_cast<double>(flops), cap))
    return nullptr;
  s->a = OperandStructure::record(A, alloc);
  s->b = OperandStructure::record(B, alloc);
  Tensor& p = s->pattern;
  p.order = 2;
  p.dims = C.dims;
  p.mode_order = C.mode_order;
  p.index_type = C.index_type;
  p.value_type = C.value_type;
  p.levels.resize(2);
  p.levels[0].kind = LevelKind::Dense;
  p.levels[1].kind = LevelKind::Compressed;
  p.levels[1].pos = Buffer::copy_of(alloc, C.levels[1].pos.data(), pos_bytes(rows));
  p.levels[1].crd = Buffer::copy_of(alloc, C.levels[1].crd.data(), static_cast<size_t>(nnz) * isz);
  s->kept_at = execution;
  if (s->bytes() > limit) return nullptr;
  return s;
}

std::shared_ptr<const SpgemmStructure> KeptStructureSlot::match(const Tensor& A, const Tensor& B) const {
  std::shared_ptr<const SpgemmStructure> s = current();
  if (s && s->a.same_as(A) && s->b.same_as(B)) return s;
  return nullptr;
}

void KeptStructureSlot::keep(std::shared_ptr<const SpgemmStructure> s) {
  std::lock_guard lock(mutex_);
  kept_ = std::move(s);
}

std::shared_ptr<const SpgemmStructure> KeptStructureSlot::current() const {
  std::lock_guard lock(mutex_);
  return kept_;
}

}  // namespace sj

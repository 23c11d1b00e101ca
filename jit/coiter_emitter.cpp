#include "jit/coiter_emitter.hpp"

#include <bit>
#include <cstring>
#include <limits>

namespace sj::jit::detail {

using namespace asmjit;
namespace Inst = x86::Inst;

namespace {
int log2i(int v) { return std::countr_zero(unsigned(v)); }
template <class T> uint64_t bits_of(T v) {
  if constexpr (sizeof(T) == 4) return std::bit_cast<uint32_t>(v);
  else return std::bit_cast<uint64_t>(v);
}
}  // namespace

CoiterEmitter::CoiterEmitter(x86::Assembler& a_, const CoiterSpec& s)
    : a(a_),
      spec(s),
      n(s.width),
      cs(s.index == IndexType::I64 ? 8 : 4),
      vs(s.value == ValueType::F64 ? 8 : 4),
      log2n(log2i(s.width)),
      log2cs(log2i(cs)),
      log2vs(log2i(vs)),
      i64_(s.index == IndexType::I64),
      f64_(s.value == ValueType::F64) {}

x86::Mem CoiterEmitter::a_crd(const x86::Gp& idx, int e) const {
  return x86::ptr(ac, idx, log2cs, e * cs, cs);
}
x86::Mem CoiterEmitter::b_crd(const x86::Gp& idx, int e) const {
  return x86::ptr(bc, idx, log2cs, e * cs, cs);
}
x86::Mem CoiterEmitter::a_val(const x86::Gp& idx, int e) const {
  return x86::ptr(av, idx, log2vs, e * vs, vs);
}
x86::Mem CoiterEmitter::b_val(const x86::Gp& idx, int e) const {
  return x86::ptr(bv, idx, log2vs, e * vs, vs);
}
// Stack arguments sit above the return address, the pushes and the scratch area.
x86::Mem CoiterEmitter::result_arg() const {
  return x86::qword_ptr(x86::rsp, kScratchBytes + kPushes * 8 + 8);
}
x86::Mem CoiterEmitter::out_crd_arg() const { return result_arg(); }
x86::Mem CoiterEmitter::out_val_arg() const {
  return x86::qword_ptr(x86::rsp, kScratchBytes + kPushes * 8 + 16);
}

x86::Vec CoiterEmitter::vec(int id, int bytes) const {
  if (bytes <= 16) return x86::xmm(id);
  if (bytes == 32) return x86::ymm(id);
  return x86::zmm(id);
}

uint64_t CoiterEmitter::identity_bits() const {
  auto pick = [&](auto zero) -> uint64_t {
    using V = decltype(zero);
    switch (spec.semiring) {
      case SJ_SEMIRING_MIN_PLUS: return bits_of(std::numeric_limits<V>::infinity());
      case SJ_SEMIRING_MAX_TIMES: return bits_of(-std::numeric_limits<V>::infinity());
      case SJ_SEMIRING_OR_AND: return bits_of(V(0));
      default: return bits_of(V(-0.0));  // -0.0 + x == x bit for bit, for every x
    }
  };
  return f64_ ? pick(double{}) : pick(float{});
}

uint64_t CoiterEmitter::one_bits() const { return f64_ ? bits_of(1.0) : bits_of(1.0f); }

// ---------------------------------------------------------------------------------------
// Scalar arithmetic. min/max operand order reproduces std::min(acc, p) / std::max(acc, p):
// vminsd(p, acc) = p < acc ? p : acc, vmaxsd(p, acc) = p > acc ? p : acc (a NaN acc stays);
// keep_nan then takes a NaN p, as MinPlus / MaxTimes::add do.

void CoiterEmitter::scalar_product(const x86::Xmm& d, const x86::Xmm& x, const x86::Xmm& y,
                                   const x86::Xmm& tmp) {
  switch (spec.semiring) {
    case SJ_SEMIRING_PLUS_TIMES:
    case SJ_SEMIRING_MAX_TIMES: a.emit(val_inst(Inst::kIdVmulss, Inst::kIdVmulsd), d, x, y); break;
    case SJ_SEMIRING_MIN_PLUS: a.emit(val_inst(Inst::kIdVaddss, Inst::kIdVaddsd), d, x, y); break;
    case SJ_SEMIRING_OR_AND:  // (x != 0 && y != 0) ? 1 : 0; NaN counts as nonzero
      a.emit(val_inst(Inst::kIdVcmpss, Inst::kIdVcmpsd), tmp, y, x86::xmm(kZero), Imm(4));
      a.emit(val_inst(Inst::kIdVcmpss, Inst::kIdVcmpsd), d, x, x86::xmm(kZero), Imm(4));
      a.vandps(d, d, tmp);
      a.vandps(d, d, x86::xmm(kOne));
      break;
    case SJ_SEMIRING_PLUS_PAIR: a.vmovaps(d, x86::xmm(kOne)); break;
  }
}

void CoiterEmitter::scalar_accumulate(const x86::Xmm& acc, const x86::Xmm& p) {
  switch (spec.semiring) {
    case SJ_SEMIRING_PLUS_TIMES:
    case SJ_SEMIRING_PLUS_PAIR: a.emit(val_inst(Inst::kIdVaddss, Inst::kIdVaddsd), acc, acc, p); break;
    case SJ_SEMIRING_MIN_PLUS:
      a.emit(val_inst(Inst::kIdVminss, Inst::kIdVminsd), acc, p, acc);
      keep_nan(acc, p);
      break;
    case SJ_SEMIRING_MAX_TIMES:
      a.emit(val_inst(Inst::kIdVmaxss, Inst::kIdVmaxsd), acc, p, acc);
      keep_nan(acc, p);
      break;
    case SJ_SEMIRING_OR_AND:  // or on {0, 1} is max
      a.emit(val_inst(Inst::kIdVmaxss, Inst::kIdVmaxsd), acc, p, acc);
      break;
  }
}

void CoiterEmitter::vector_product(const x86::Vec& d, const x86::Vec& x, const x86::Vec& y,
                                   const x86::Vec& tmp) {
  int bytes = int(d.size());
  switch (spec.semiring) {
    case SJ_SEMIRING_PLUS_TIMES:
    case SJ_SEMIRING_MAX_TIMES: a.emit(val_inst(Inst::kIdVmulps, Inst::kIdVmulpd), d, x, y); break;
    case SJ_SEMIRING_MIN_PLUS: a.emit(val_inst(Inst::kIdVaddps, Inst::kIdVaddpd), d, x, y); break;
    case SJ_SEMIRING_OR_AND: vector_nonzero_and(d, x, y, tmp); break;
    case SJ_SEMIRING_PLUS_PAIR: a.emit(Inst::kIdVmovaps, d, vec(kOne, bytes)); break;
  }
}

void CoiterEmitter::fold_scratch_into_acc(int lanes) {
  x86::Xmm p = x86::xmm(3);
  for (int l = 0; l < lanes; ++l) {
    a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), p, x86::ptr(x86::rsp, l * vs, vs));
    scalar_accumulate(x86::xmm(kAcc), p);
  }
}

void CoiterEmitter::scalar_match(const x86::Gp& ia, const x86::Gp& jb) {
  x86::Xmm x = x86::xmm(2), y = x86::xmm(3), tmp = x86::xmm(4);
  switch (spec.action) {
    case CoiterAction::Count: break;
    case CoiterAction::Dot:
      a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), x, a_val(ia));
      a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), y, b_val(jb));
      scalar_product(x, x, y, tmp);
      scalar_accumulate(x86::xmm(kAcc), x);
      break;
    case CoiterAction::Emit:
      a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), x, a_val(ia));
      a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), y, b_val(jb));
      scalar_product(x, x, y, tmp);
      a.mov(t4, out_val_arg());
      a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), x86::ptr(t4, cnt, log2vs, 0, vs), x);
      a.mov(crd(t5), a_crd(ia));
      a.mov(t4, out_crd_arg());
      a.mov(x86::ptr(t4, cnt, log2cs, 0, cs), crd(t5));
      break;
  }
  a.inc(cnt);
}

// ---------------------------------------------------------------------------------------
// Scalar phases.

// All n*n pairs compared in general-purpose registers, branch-free:
// t0 bit ii = a[i+ii] matched, t1 bit jj = b[j+jj] matched.
void CoiterEmitter::scalar_phase1() {
  bool need_mb = spec.action != CoiterAction::Count;
  a.xor_(t0.r32(), t0.r32());
  a.xor_(t1.r32(), t1.r32());
  for (int ii = 0; ii < n; ++ii) {
    a.mov(crd(t2), a_crd(i, ii));
    a.xor_(t4.r32(), t4.r32());
    for (int jj = 0; jj < n; ++jj) {
      a.xor_(t3.r32(), t3.r32());
      a.cmp(crd(t2), b_crd(j, jj));
      a.sete(t3.r8());
      a.or_(t4.r32(), t3.r32());
      if (need_mb) {
        if (jj) a.shl(t3.r32(), jj);
        a.or_(t1.r32(), t3.r32());
      }
    }
    if (ii) a.shl(t4.r32(), ii);
    a.or_(t0.r32(), t4.r32());
  }
  coords_loaded_ = false;
}

// One trip per matched pair: tzcnt finds the next matched lane on each side (the k-th set
// bit of mask_a pairs with the k-th of mask_b: both blocks are sorted).
void CoiterEmitter::scalar_phase2() {
  if (spec.action != CoiterAction::Emit) {
    a.popcnt(t2, t0);
    a.add(cnt, t2);
  }
  if (spec.action == CoiterAction::Count) return;
  Label loop = a.newLabel(), done = a.newLabel();
  a.bind(loop);
  a.test(t0, t0);
  a.jz(done);
  a.tzcnt(t2, t0);
  a.tzcnt(t3, t1);
  a.add(t2, i);
  a.add(t3, j);
  if (spec.action == CoiterAction::Dot) {
    x86::Xmm x = x86::xmm(2), y = x86::xmm(3), tmp = x86::xmm(4);
    a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), x, a_val(t2));
    a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), y, b_val(t3));
    scalar_product(x, x, y, tmp);
    scalar_accumulate(x86::xmm(kAcc), x);
  } else {
    scalar_match(t2, t3);  // emit: stores and cnt += 1
  }
  a.blsr(t0, t0);
  a.blsr(t1, t1);
  a.jmp(loop);
  a.bind(done);
}

// Classic block merge: the side whose last coordinate is the smaller (or both) moves by n.
void CoiterEmitter::scalar_phase3() {
  a.mov(crd(t2), a_crd(i, n - 1));
  a.mov(crd(t3), b_crd(j, n - 1));
  a.xor_(t4.r32(), t4.r32());
  a.xor_(t5.r32(), t5.r32());
  a.cmp(crd(t2), crd(t3));
  a.setle(t4.r8());
  a.setge(t5.r8());
  a.shl(t4.r32(), log2n);
  a.shl(t5.r32(), log2n);
  a.add(i, t4);
  a.add(j, t5);
}

// The scalar epilogue: two-finger merge over what is left; branch only on a match.
void CoiterEmitter::tail_loop() {
  Label loop = a.newLabel(), match = a.newLabel(), done = a.newLabel();
  a.add(lim_a, n);  // back to na, nb
  a.add(lim_b, n);
  a.align(AlignMode::kCode, 16);
  a.bind(loop);
  a.cmp(i, lim_a);
  a.jge(done);
  a.cmp(j, lim_b);
  a.jge(done);
  a.mov(crd(t2), a_crd(i));
  a.xor_(t3.r32(), t3.r32());
  a.cmp(crd(t2), b_crd(j));
  a.je(match);
  a.setl(t3.r8());
  a.add(i, t3);
  a.xor_(t3.r32(), 1);
  a.add(j, t3);
  a.jmp(loop);
  a.bind(match);
  scalar_match(i, j);
  a.inc(i);
  a.inc(j);
  a.jmp(loop);
  a.bind(done);
}

void CoiterEmitter::finish() {
  if (spec.action == CoiterAction::Dot) {
    Label skip = a.newLabel();
    x86::Xmm acc = x86::xmm(kAcc);
    if (spec.reassociate && (spec.phases & kPhaseCompute) && simd_phase2_supported()) {
      reduce_vector_acc();  // -> xmm3, any lane order
      scalar_accumulate(acc, x86::xmm(3));
    }
    a.test(cnt, cnt);
    a.jz(skip);
    a.mov(t0, result_arg());
    if (spec.with_factor) {
      a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), x86::xmm(3), x86::ptr(t0, 0, vs));
      scalar_product(acc, acc, x86::xmm(3), x86::xmm(4));
    }
    a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), x86::ptr(t0, 0, vs), acc);
    a.bind(skip);
  }
}

void CoiterEmitter::emit() {
  // Frame: save the callee-saved registers used as temporaries, reserve the lane scratch.
  for (const x86::Gp& r : {x86::rbx, x86::rbp, x86::r12, x86::r13, x86::r14, x86::r15}) a.push(r);
  a.sub(x86::rsp, kScratchBytes);
  if (spec.action == CoiterAction::Count) {  // (ac, na, bc, nb) -> (ac, -, na, bc, -, nb)
    a.mov(x86::r9, x86::rcx);
    a.mov(x86::rcx, x86::rdx);
    a.mov(x86::rdx, x86::rsi);
  }
  a.xor_(cnt.r32(), cnt.r32());
  a.xor_(i.r32(), i.r32());
  a.xor_(j.r32(), j.r32());
  init_vector_constants();

  Label fast = a.newLabel(), tail = a.newLabel(), end = a.newLabel();
  if (spec.skip_disjoint) {  // no overlap of [a0, a_last] and [b0, b_last]: nothing to do
    a.test(lim_a, lim_a);
    a.jz(end);
    a.test(lim_b, lim_b);
    a.jz(end);
    a.mov(crd(t0), x86::ptr(ac, lim_a, log2cs, -cs, cs));
    a.cmp(crd(t0), x86::ptr(bc, 0, cs));
    a.jl(end);
    a.mov(crd(t0), x86::ptr(bc, lim_b, log2cs, -cs, cs));
    a.cmp(crd(t0), x86::ptr(ac, 0, cs));
    a.jl(end);
  }
  a.sub(lim_a, n);
  a.sub(lim_b, n);

  // The fast lane: both sides have >= n entries left.
  a.align(AlignMode::kCode, 16);
  a.bind(fast);
  a.cmp(i, lim_a);
  a.jg(tail);
  a.cmp(j, lim_b);
  a.jg(tail);
  coords_loaded_ = false;
  bool p1 = spec.phases & kPhaseCompare, p2 = spec.phases & kPhaseCompute,
       p3 = spec.phases & kPhaseAdvance;
  if (p1) simd_phase1();
  else scalar_phase1();
  if (p2 && simd_phase2_supported()) {
    simd_phase2();
  } else {
    if (p1) masks_to_gp();
    scalar_phase2();
  }
  if (p3) simd_phase3();
  else scalar_phase3();
  a.jmp(fast);

  a.bind(tail);
  tail_loop();
  a.bind(end);
  finish();
  leave_vector_state();
  a.add(x86::rsp, kScratchBytes);
  for (const x86::Gp& r : {x86::r15, x86::r14, x86::r13, x86::r12, x86::rbp, x86::rbx}) a.pop(r);
  a.ret();
}

}  // namespace sj::jit::detail

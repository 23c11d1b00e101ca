// Internal to jit/: the coiteration code generator's skeleton, shared by the AVX-512 and
// AVX2 emitters. The base class emits the frame, the dual-path loop, the scalar phases and
// the scalar epilogue; an ISA subclass emits the SIMD phases. Phases communicate through
// fixed registers (see the member comments), so any of the 8 phase masks composes.
#pragma once
#include <asmjit/x86.h>

#include "jit/coiter_spec.hpp"

namespace sj::jit::detail {

namespace x86 = asmjit::x86;

class CoiterEmitter {
 public:
  CoiterEmitter(x86::Assembler& a, const CoiterSpec& spec);
  virtual ~CoiterEmitter() = default;
  // Emits the whole function at the assembler's cursor.
  void emit();

 protected:
  // --- ISA hooks ---
  virtual void init_vector_constants() = 0;      // v_ident, v_one, v_zero, ...
  // Phase 1 SIMD: compare the blocks at i and j; leaves the match masks where
  // masks_to_gp() can find them; sets coords_loaded_ when va/vb hold the blocks.
  virtual void simd_phase1() = 0;
  virtual void masks_to_gp() = 0;                // -> t0 = mask_a, t1 = mask_b
  virtual bool simd_phase2_supported() const = 0;
  virtual void simd_phase2() = 0;                // masks from phase 1 (SIMD or scalar, in t0/t1)
  virtual void simd_phase3() = 0;
  virtual void reduce_vector_acc() = 0;          // reassociate: fold vacc into x3
  virtual void leave_vector_state() {}           // vzeroupper
  // d = (x != 0 && y != 0) ? 1.0 : 0.0 per lane (or-and's multiply; NaN counts as nonzero).
  virtual void vector_nonzero_and(const x86::Vec& d, const x86::Vec& x, const x86::Vec& y,
                                  const x86::Vec& tmp) = 0;
  // acc = p in the lanes where p is NaN (xmm/ymm/zmm; `lanes`, where given, limits it to
  // those): after vmin/vmax, which return the accumulator for a NaN p, min and max propagate
  // NaN as MinPlus / MaxTimes::add do (src/semiring.hpp).
  virtual void keep_nan(const x86::Vec& acc, const x86::Vec& p, const x86::KReg* lanes = nullptr) = 0;

  // --- shared pieces ---
  void scalar_phase1();                          // all pairs in GP: t0 = mask_a, t1 = mask_b
  void scalar_phase2();                          // bit loop over t0/t1
  void scalar_phase3();                          // advance the side(s) whose last is the min
  void tail_loop();
  void finish();

  // Scalar product p = mul(a, b) (a, b xmm registers; tmp clobbered) and acc = add(acc, p).
  void scalar_product(const x86::Xmm& dst, const x86::Xmm& a, const x86::Xmm& b,
                      const x86::Xmm& tmp);
  void scalar_accumulate(const x86::Xmm& acc, const x86::Xmm& p);
  // The same on vectors of any size (xmm/ymm/zmm).
  void vector_product(const x86::Vec& dst, const x86::Vec& a, const x86::Vec& b,
                      const x86::Vec& tmp);
  // Folds lanes [0, lanes) stored at [rsp] into x15 in lane order (exact).
  void fold_scratch_into_acc(int lanes);
  // One match at coordinate indices (ia, jb): the action's scalar work, cnt += 1.
  void scalar_match(const x86::Gp& ia, const x86::Gp& jb);

  // Memory operands.
  x86::Mem a_crd(const x86::Gp& idx, int elem = 0) const;  // ac[idx + elem]
  x86::Mem b_crd(const x86::Gp& idx, int elem = 0) const;
  x86::Mem a_val(const x86::Gp& idx, int elem = 0) const;
  x86::Mem b_val(const x86::Gp& idx, int elem = 0) const;
  x86::Mem scratch(int byte_offset = 0) const { return x86::ptr(x86::rsp, byte_offset); }
  x86::Mem result_arg() const;   // dot: V* result (7th argument, on the stack)
  x86::Mem out_crd_arg() const;  // emit: I* out_crd
  x86::Mem out_val_arg() const;  // emit: V* out_val
  x86::Gp crd(const x86::Gp& r) const { return i64_ ? x86::Gp(r.r64()) : x86::Gp(r.r32()); }  // coordinate-sized
  x86::Vec vec(int id, int bytes) const;  // xmm/ymm/zmm by size
  asmjit::InstId val_inst(asmjit::InstId ss, asmjit::InstId sd) const { return f64_ ? sd : ss; }

  // Bit patterns of the scalar identity of add and of 1.0 (value-sized).
  uint64_t identity_bits() const;
  uint64_t one_bits() const;

  x86::Assembler& a;
  CoiterSpec spec;
  const int n, cs, vs, log2n, log2cs, log2vs;  // width, coordinate and value sizes
  const bool i64_, f64_;
  bool coords_loaded_ = false;  // va/vb hold the current blocks (within one iteration)

  // Fixed registers. Arguments are normalised to: ac, av, na -> lim_a, bc, bv, nb -> lim_b.
  const x86::Gp ac = x86::rdi, av = x86::rsi, lim_a = x86::rdx, bc = x86::rcx, bv = x86::r8,
                lim_b = x86::r9, i = x86::r10, j = x86::r11, cnt = x86::rax;
  const x86::Gp t0 = x86::rbx, t1 = x86::rbp, t2 = x86::r12, t3 = x86::r13, t4 = x86::r14,
                t5 = x86::r15;
  // Vector registers: 0 = va, 1 = vb, 2..9 temporaries, 10 zero, 11 one, 12 identity,
  // 13/14 vector accumulators (reassociate), 15 the scalar accumulator.
  static constexpr int kVa = 0, kVb = 1, kZero = 10, kOne = 11, kIdent = 12, kVacc = 14,
                       kVacc2 = 13, kAcc = 15;
  static constexpr int kScratchBytes = 136;  // 128 bytes of lane scratch + alignment slack
  static constexpr int kPushes = 6;
};

// Entry points of the two ISA emitters (throw on an unsupported spec).
void emit_coiter_avx512(x86::Assembler& a, const CoiterSpec& spec);
void emit_coiter_avx2(x86::Assembler& a, const CoiterSpec& spec);

}  // namespace sj::jit::detail

// AVX-512 SIMD phases of the coiteration kernel: masks live in k2 (lanes of a's block that
// matched) and k3 (lanes of b's block); compress (vpcompress / vcompressp) lines up the
// matched values of both sides, since the k-th set bit of one mask pairs with the k-th set
// bit of the other (both blocks are sorted and unique).
#include <array>
#include <cstdint>

#include "jit/coiter_emitter.hpp"
#include "src/error.hpp"

namespace sj::jit::detail {

using namespace asmjit;
namespace Inst = x86::Inst;

namespace {

alignas(64) constexpr std::array<uint32_t, 16> kLaneIndex = {0, 1, 2,  3,  4,  5,  6,  7,
                                                             8, 9, 10, 11, 12, 13, 14, 15};

class Avx512Emitter final : public CoiterEmitter {
 public:
  using CoiterEmitter::CoiterEmitter;

 private:
  int cw() const { return n * cs; }  // bytes of a coordinate block
  int vw() const { return n * vs; }  // bytes of a value block (128: i32 n=16 f64, two halves)
  x86::Vec va() const { return vec(kVa, cw()); }
  x86::Vec vb() const { return vec(kVb, cw()); }
  InstId ci(InstId d, InstId q) const { return i64_ ? q : d; }  // coordinate-typed op
  x86::Mem bcast(x86::Mem m) const {
    return n == 4 ? m._1to4() : n == 8 ? m._1to8() : m._1to16();
  }
  bool two_halves() const { return vw() > 64; }
  bool masks_in_k_ = false;

  void load_blocks() {
    a.emit(Inst::kIdVmovdqu32, va(), x86::ptr(ac, i, log2cs, 0, cw()));
    a.emit(Inst::kIdVmovdqu32, vb(), x86::ptr(bc, j, log2cs, 0, cw()));
    coords_loaded_ = true;
  }

  void init_vector_constants() override {
    a.vxorps(x86::xmm(kZero), x86::xmm(kZero), x86::xmm(kZero));
    InstId bc_id = f64_ ? Inst::kIdVpbroadcastq : Inst::kIdVpbroadcastd;
    a.mov(t0, Imm(int64_t(identity_bits())));
    a.vmovq(x86::xmm(kIdent), t0);
    a.emit(bc_id, x86::zmm(kIdent), x86::xmm(kIdent));
    a.vmovaps(x86::xmm(kAcc), x86::xmm(kIdent));
    a.mov(t0, Imm(int64_t(one_bits())));
    a.vmovq(x86::xmm(kOne), t0);
    a.emit(bc_id, x86::zmm(kOne), x86::xmm(kOne));
    if (spec.reassociate) {
      a.vmovaps(x86::zmm(kVacc), x86::zmm(kIdent));
      a.vmovaps(x86::zmm(kVacc2), x86::zmm(kIdent));
    }
    if (two_halves()) {
      a.mov(t0, Imm(reinterpret_cast<intptr_t>(kLaneIndex.data())));
      a.vmovdqu32(x86::zmm(9), x86::ptr(t0));
    }
  }

  void simd_phase1() override {
    load_blocks();
    masks_in_k_ = true;
    bool need_mb = spec.action != CoiterAction::Count;
    InstId cmpeq = ci(Inst::kIdVpcmpeqd, Inst::kIdVpcmpeqq);
    switch (spec.method) {
      case CoiterMethod::Broadcast:  // n compares against broadcasts of b, n against a's
        for (int jj = 0; jj < n; ++jj) {
          a.emit(cmpeq, jj ? x86::k4 : x86::k2, va(), bcast(b_crd(j, jj)));
          if (jj) a.korw(x86::k2, x86::k2, x86::k4);
        }
        if (need_mb)
          for (int ii = 0; ii < n; ++ii) {
            a.emit(cmpeq, ii ? x86::k5 : x86::k3, vb(), bcast(a_crd(i, ii)));
            if (ii) a.korw(x86::k3, x86::k3, x86::k5);
          }
        break;
      case CoiterMethod::Rotate: {
        // Rotation r compares a[l] with b[(l + r) mod n]: its mask, rotated left by r, marks
        // the b lanes. Rotations accumulate unwrapped in 32 bits, then fold once.
        x86::Vec rot = vec(2, cw());
        a.emit(cmpeq, x86::k2, va(), vb());
        if (need_mb) a.kmovd(x86::k3, x86::k2);
        for (int r = 1; r < n; ++r) {
          a.emit(ci(Inst::kIdValignd, Inst::kIdValignq), rot, vb(), vb(), Imm(r));
          a.emit(cmpeq, x86::k4, va(), rot);
          a.korw(x86::k2, x86::k2, x86::k4);
          if (need_mb) {
            a.kshiftld(x86::k5, x86::k4, Imm(r));
            a.kord(x86::k3, x86::k3, x86::k5);
          }
        }
        if (need_mb) {
          a.kshiftrd(x86::k5, x86::k3, Imm(n));
          a.kord(x86::k3, x86::k3, x86::k5);
          a.kshiftld(x86::k3, x86::k3, Imm(32 - n));
          a.kshiftrd(x86::k3, x86::k3, Imm(32 - n));
        }
        break;
      }
      case CoiterMethod::Native:
        a.emit(ci(Inst::kIdVp2intersectd, Inst::kIdVp2intersectq), x86::k2, x86::k3, va(), vb());
        break;
    }
  }

  void masks_to_gp() override {
    a.kmovd(t0.r32(), x86::k2);
    a.kmovd(t1.r32(), x86::k3);
  }

  bool simd_phase2_supported() const override { return true; }

  void simd_phase2() override {
    if (masks_in_k_) {
      a.kmovd(t0.r32(), x86::k2);
    } else {
      a.kmovd(x86::k2, t0.r32());
      a.kmovd(x86::k3, t1.r32());
    }
    masks_in_k_ = false;  // (reset per iteration by the next phase 1)
    a.popcnt(t2.r32(), t0.r32());
    if (spec.action != CoiterAction::Emit) a.add(cnt, t2);
    if (spec.action == CoiterAction::Count) return;
    // (loaded before the skip branch: phase 3 relies on the blocks on every path)
    if (spec.action == CoiterAction::Emit && !coords_loaded_) load_blocks();
    Label skip = a.newLabel();
    if (spec.skip_empty) {
      a.test(t2.r32(), t2.r32());
      a.jz(skip);
    }
    a.mov(t3.r32(), -1);
    a.bzhi(t3.r32(), t3.r32(), t2.r32());
    a.kmovd(x86::k1, t3.r32());  // the first c lanes

    // Emit stores coordinates first (before the value path reuses registers).
    if (spec.action == CoiterAction::Emit) {
      x86::Vec c = vec(8, cw());
      a.k(x86::k2).z().emit(ci(Inst::kIdVpcompressd, Inst::kIdVpcompressq), c, va());
      a.mov(t4, out_crd_arg());
      a.k(x86::k1).emit(ci(Inst::kIdVmovdqu32, Inst::kIdVmovdqu64),
                        x86::ptr(t4, cnt, log2cs, 0, cw()), c);
    }

    InstId movu = val_inst(Inst::kIdVmovups, Inst::kIdVmovupd);
    InstId compress = val_inst(Inst::kIdVcompressps, Inst::kIdVcompresspd);
    int halves = two_halves() ? 2 : 1;
    int hw = halves == 2 ? 64 : vw();
    x86::Vec prod[2] = {vec(2, hw), vec(3, hw)};
    x86::KReg mask[2] = {x86::k1, x86::k7};
    if (halves == 1) {
      x86::Vec B = vec(3, hw), tmp = vec(4, hw);
      a.emit(movu, prod[0], x86::ptr(av, i, log2vs, 0, hw));
      a.k(x86::k2).z().emit(compress, prod[0], prod[0]);
      a.emit(movu, B, x86::ptr(bv, j, log2vs, 0, hw));
      a.k(x86::k3).z().emit(compress, B, B);
      vector_product(prod[0], prod[0], B, tmp);
    } else {
      // 16 doubles per side: compress lane indices, then gather both halves with vpermi2pd.
      x86::Zmm ia = x86::zmm(4), ib = x86::zmm(5), lo = x86::zmm(6), hi = x86::zmm(7);
      a.k(x86::k2).z().vpcompressd(ia, x86::zmm(9));
      a.k(x86::k3).z().vpcompressd(ib, x86::zmm(9));
      a.vmovupd(lo, x86::ptr(av, i, log2vs, 0, 64));
      a.vmovupd(hi, x86::ptr(av, i, log2vs, 64, 64));
      a.vpmovzxdq(x86::zmm(2), x86::ymm(4));
      a.vpermi2pd(x86::zmm(2), lo, hi);
      a.vextracti32x8(x86::ymm(8), ia, Imm(1));
      a.vpmovzxdq(x86::zmm(3), x86::ymm(8));
      a.vpermi2pd(x86::zmm(3), lo, hi);
      a.vmovupd(lo, x86::ptr(bv, j, log2vs, 0, 64));
      a.vmovupd(hi, x86::ptr(bv, j, log2vs, 64, 64));
      a.vpmovzxdq(x86::zmm(4), x86::ymm(5));
      a.vpermi2pd(x86::zmm(4), lo, hi);
      a.vextracti32x8(x86::ymm(8), ib, Imm(1));
      a.vpmovzxdq(x86::zmm(5), x86::ymm(8));
      a.vpermi2pd(x86::zmm(5), lo, hi);
      vector_product(x86::zmm(2), x86::zmm(2), x86::zmm(4), x86::zmm(6));
      vector_product(x86::zmm(3), x86::zmm(3), x86::zmm(5), x86::zmm(6));
      a.kshiftrw(x86::k7, x86::k1, Imm(8));
    }

    if (spec.action == CoiterAction::Emit) {
      a.mov(t4, out_val_arg());
      for (int h = 0; h < halves; ++h)
        a.k(mask[h]).emit(movu, x86::ptr(t4, cnt, log2vs, 64 * h, hw), prod[h]);
      a.add(cnt, t2);
    } else if (spec.reassociate) {
      for (int h = 0; h < halves; ++h) {
        x86::Vec acc = vec(h ? kVacc2 : kVacc, hw);
        switch (spec.semiring) {
          case SJ_SEMIRING_MIN_PLUS:
            a.k(mask[h]).emit(val_inst(Inst::kIdVminps, Inst::kIdVminpd), acc, prod[h], acc);
            keep_nan(acc, prod[h], &mask[h]);
            break;
          case SJ_SEMIRING_MAX_TIMES:
            a.k(mask[h]).emit(val_inst(Inst::kIdVmaxps, Inst::kIdVmaxpd), acc, prod[h], acc);
            keep_nan(acc, prod[h], &mask[h]);
            break;
          case SJ_SEMIRING_OR_AND:
            a.k(mask[h]).emit(val_inst(Inst::kIdVmaxps, Inst::kIdVmaxpd), acc, prod[h], acc);
            break;
          default:
            a.k(mask[h]).emit(val_inst(Inst::kIdVaddps, Inst::kIdVaddpd), acc, acc, prod[h]);
        }
      }
    } else {
      // Exact: pad the lanes past c with the identity, then fold all lanes in order.
      for (int h = 0; h < halves; ++h) {
        a.k(mask[h]).emit(val_inst(Inst::kIdVblendmps, Inst::kIdVblendmpd), prod[h],
                          vec(kIdent, hw), prod[h]);
        a.emit(movu, x86::ptr(x86::rsp, 64 * h, hw), prod[h]);
      }
      fold_scratch_into_acc(n);
    }
    a.bind(skip);
  }

  void simd_phase3() override {
    if (!coords_loaded_) load_blocks();
    // Both sides advance past min(last_a, last_b): count the lanes <= that minimum.
    x86::Vec m = vec(2, cw());
    a.emit(ci(Inst::kIdVpbroadcastd, Inst::kIdVpbroadcastq), m, a_crd(i, n - 1));
    a.emit(ci(Inst::kIdVpminsd, Inst::kIdVpminsq), m, m, bcast(b_crd(j, n - 1)));
    a.emit(ci(Inst::kIdVpcmpd, Inst::kIdVpcmpq), x86::k4, va(), m, Imm(2));  // <=
    a.emit(ci(Inst::kIdVpcmpd, Inst::kIdVpcmpq), x86::k5, vb(), m, Imm(2));
    a.kmovd(t2.r32(), x86::k4);
    a.popcnt(t2.r32(), t2.r32());
    a.add(i, t2);
    a.kmovd(t3.r32(), x86::k5);
    a.popcnt(t3.r32(), t3.r32());
    a.add(j, t3);
  }

  void reduce_vector_acc() override {
    int hw = two_halves() ? 64 : vw();
    InstId movu = val_inst(Inst::kIdVmovups, Inst::kIdVmovupd);
    a.emit(movu, x86::ptr(x86::rsp, 0, hw), vec(kVacc, hw));
    if (two_halves()) a.emit(movu, x86::ptr(x86::rsp, 64, 64), x86::zmm(kVacc2));
    a.vmovaps(x86::xmm(3), x86::xmm(kIdent));
    for (int l = 0; l < n; ++l) {
      a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), x86::xmm(4), x86::ptr(x86::rsp, l * vs, vs));
      scalar_accumulate(x86::xmm(3), x86::xmm(4));
    }
  }

  void leave_vector_state() override { a.vzeroupper(); }

  // k6 is free wherever min/max accumulate (it only serves or-and's vector product).
  void keep_nan(const x86::Vec& acc, const x86::Vec& p, const x86::KReg* lanes) override {
    const bool scalar = acc.size() == 16 && !lanes;
    const InstId cmp = scalar ? val_inst(Inst::kIdVcmpss, Inst::kIdVcmpsd) : val_inst(Inst::kIdVcmpps, Inst::kIdVcmppd);
    if (lanes) a.k(*lanes).emit(cmp, x86::k6, p, p, Imm(3));  // UNORD_Q: p is NaN
    else a.emit(cmp, x86::k6, p, p, Imm(3));
    if (scalar) a.k(x86::k6).emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), acc, acc, p);
    else a.k(x86::k6).emit(val_inst(Inst::kIdVmovaps, Inst::kIdVmovapd), acc, p);
  }

  void vector_nonzero_and(const x86::Vec& d, const x86::Vec& x, const x86::Vec& y,
                          const x86::Vec&) override {
    int bytes = int(d.size());
    InstId cmp = val_inst(Inst::kIdVcmpps, Inst::kIdVcmppd);
    a.emit(cmp, x86::k6, x, vec(kZero, bytes), Imm(4));  // NEQ_UQ: NaN is nonzero
    a.k(x86::k6).emit(cmp, x86::k6, y, vec(kZero, bytes), Imm(4));
    a.k(x86::k6).z().emit(val_inst(Inst::kIdVmovaps, Inst::kIdVmovapd), d, vec(kOne, bytes));
  }
};

}  // namespace

void emit_coiter_avx512(x86::Assembler& a, const CoiterSpec& spec) {
  Avx512Emitter(a, spec).emit();
}

}  // namespace sj::jit::detail

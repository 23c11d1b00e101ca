// AVX2 SIMD phases of the coiteration kernel (no mask registers, no compress): compare
// results go to general-purpose bit masks with vmovmskp; the compress of phase 2 is a
// permutation looked up by mask (vpermps / vpermd) and stores are masked with vmaskmov, so
// nothing is written past the count. Widths: one 256-bit register (i32: 4, 8; i64: 4); the
// vector compute phase needs n values in 256 bits (i32 n=8 with f64 uses the scalar one).
#include <array>
#include <cstdint>

#include "jit/coiter_emitter.hpp"
#include "src/error.hpp"

namespace sj::jit::detail {

using namespace asmjit;
namespace Inst = x86::Inst;

namespace {

using Row = std::array<uint32_t, 8>;

// kCompressPs[m]: dword lanes of the set bits of m, in order (then 0): compress 32-bit lanes.
constexpr std::array<Row, 256> make_compress_ps() {
  std::array<Row, 256> t{};
  for (int m = 0; m < 256; ++m) {
    int k = 0;
    for (int l = 0; l < 8; ++l)
      if (m >> l & 1) t[m][k++] = uint32_t(l);
  }
  return t;
}
// kCompressPd[m]: the same for 64-bit lanes, as dword pairs.
constexpr std::array<Row, 16> make_compress_pd() {
  std::array<Row, 16> t{};
  for (int m = 0; m < 16; ++m) {
    int k = 0;
    for (int l = 0; l < 4; ++l)
      if (m >> l & 1) t[m][k++] = uint32_t(2 * l), t[m][k++] = uint32_t(2 * l + 1);
  }
  return t;
}
// kLowPs[c] / kLowPd[c]: all-ones in the first c 32-/64-bit lanes.
constexpr std::array<Row, 9> make_low_ps() {
  std::array<Row, 9> t{};
  for (int c = 0; c <= 8; ++c)
    for (int l = 0; l < c; ++l) t[c][l] = ~0u;
  return t;
}
constexpr std::array<Row, 5> make_low_pd() {
  std::array<Row, 5> t{};
  for (int c = 0; c <= 4; ++c)
    for (int l = 0; l < 2 * c; ++l) t[c][l] = ~0u;
  return t;
}
// kRotate8[r]: vpermd indices rotating 8 dword lanes by r (lane l takes lane (l + r) % 8).
constexpr std::array<Row, 8> make_rotate8() {
  std::array<Row, 8> t{};
  for (int r = 0; r < 8; ++r)
    for (int l = 0; l < 8; ++l) t[r][l] = uint32_t((l + r) % 8);
  return t;
}

alignas(32) constexpr std::array<Row, 256> kCompressPs = make_compress_ps();
alignas(32) constexpr std::array<Row, 16> kCompressPd = make_compress_pd();
alignas(32) constexpr std::array<Row, 9> kLowPs = make_low_ps();
alignas(32) constexpr std::array<Row, 5> kLowPd = make_low_pd();
alignas(32) constexpr std::array<Row, 8> kRotate8 = make_rotate8();

Imm address_of(const void* p) { return Imm(reinterpret_cast<intptr_t>(p)); }

// Shuffle immediate rotating 4 lanes by r (lane l takes lane (l + r) % 4).
int rotate4_imm(int r) {
  int imm = 0;
  for (int l = 0; l < 4; ++l) imm |= ((l + r) % 4) << (2 * l);
  return imm;
}

class Avx2Emitter final : public CoiterEmitter {
 public:
  Avx2Emitter(x86::Assembler& a, const CoiterSpec& spec) : CoiterEmitter(a, spec) {
    if (n * cs > 32) fail(SJ_ERR_UNSUPPORTED, "AVX2 coiteration: width ", n, " exceeds 256 bits");
  }

 private:
  int cw() const { return n * cs; }
  int vw() const { return n * vs; }
  x86::Vec va() const { return vec(kVa, cw()); }
  x86::Vec vb() const { return vec(kVb, cw()); }
  InstId ci(InstId d, InstId q) const { return i64_ ? q : d; }
  InstId movmsk() const { return i64_ ? Inst::kIdVmovmskpd : Inst::kIdVmovmskps; }

  void load_blocks() {
    a.vmovdqu(va(), x86::ptr(ac, i, log2cs, 0, cw()));
    a.vmovdqu(vb(), x86::ptr(bc, j, log2cs, 0, cw()));
    coords_loaded_ = true;
  }

  void init_vector_constants() override {
    a.vxorps(x86::xmm(kZero), x86::xmm(kZero), x86::xmm(kZero));
    InstId bc_id = f64_ ? Inst::kIdVpbroadcastq : Inst::kIdVpbroadcastd;
    a.mov(t0, Imm(int64_t(identity_bits())));
    a.vmovq(x86::xmm(kIdent), t0);
    a.emit(bc_id, x86::ymm(kIdent), x86::xmm(kIdent));
    a.vmovaps(x86::xmm(kAcc), x86::xmm(kIdent));
    a.mov(t0, Imm(int64_t(one_bits())));
    a.vmovq(x86::xmm(kOne), t0);
    a.emit(bc_id, x86::ymm(kOne), x86::xmm(kOne));
    if (spec.reassociate) a.vmovaps(x86::ymm(kVacc), x86::ymm(kIdent));
  }

  void simd_phase1() override {
    load_blocks();
    bool need_mb = spec.action != CoiterAction::Count;
    InstId cmpeq = ci(Inst::kIdVpcmpeqd, Inst::kIdVpcmpeqq);
    InstId bcast = ci(Inst::kIdVpbroadcastd, Inst::kIdVpbroadcastq);
    x86::Vec t = vec(2, cw()), acc_a = vec(3, cw()), acc_b = vec(4, cw());
    switch (spec.method) {
      case CoiterMethod::Broadcast:
        for (int jj = 0; jj < n; ++jj) {
          a.emit(bcast, jj ? t : acc_a, b_crd(j, jj));
          if (jj) {
            a.emit(cmpeq, t, t, va());
            a.vpor(acc_a, acc_a, t);
          } else {
            a.emit(cmpeq, acc_a, acc_a, va());
          }
        }
        a.emit(movmsk(), t0.r32(), acc_a);
        if (need_mb) {
          for (int ii = 0; ii < n; ++ii) {
            a.emit(bcast, ii ? t : acc_b, a_crd(i, ii));
            if (ii) {
              a.emit(cmpeq, t, t, vb());
              a.vpor(acc_b, acc_b, t);
            } else {
              a.emit(cmpeq, acc_b, acc_b, vb());
            }
          }
          a.emit(movmsk(), t1.r32(), acc_b);
        }
        break;
      case CoiterMethod::Rotate:
      case CoiterMethod::Native: {  // (Native is Rotate here: effective_spec maps it)
        // Rotation r compares a[l] with b[(l + r) mod n]; its mask rotated left by r marks
        // the b lanes: accumulate shifted (unwrapped) in 32 bits, fold once at the end.
        x86::Vec hit = vec(4, cw()), idx = vec(5, cw());
        a.emit(cmpeq, acc_a, va(), vb());
        if (need_mb) a.emit(movmsk(), t1.r32(), acc_a);
        if (!i64_ && n == 8) a.mov(t5, address_of(kRotate8.data()));
        for (int r = 1; r < n; ++r) {
          if (i64_) {
            a.vpermq(t, vb(), Imm(rotate4_imm(r)));
          } else if (n == 4) {
            a.vpshufd(t, vb(), Imm(rotate4_imm(r)));
          } else {
            a.vmovdqu(idx, x86::ptr(t5, 32 * r, 32));
            a.vpermd(t, idx, vb());
          }
          a.emit(cmpeq, hit, va(), t);
          a.vpor(acc_a, acc_a, hit);
          if (need_mb) {
            a.emit(movmsk(), t2.r32(), hit);
            a.shl(t2.r32(), r);
            a.or_(t1.r32(), t2.r32());
          }
        }
        a.emit(movmsk(), t0.r32(), acc_a);
        if (need_mb) {
          a.mov(t2.r32(), t1.r32());
          a.shr(t2.r32(), n);
          a.or_(t1.r32(), t2.r32());
          a.and_(t1.r32(), (1 << n) - 1);
        }
        break;
      }
    }
  }

  void masks_to_gp() override {}  // already there

  bool simd_phase2_supported() const override { return vw() <= 32; }

  void simd_phase2() override {
    a.popcnt(t2.r32(), t0.r32());
    if (spec.action != CoiterAction::Emit) a.add(cnt, t2);
    if (spec.action == CoiterAction::Count) return;
    if (spec.action == CoiterAction::Emit && !coords_loaded_) load_blocks();
    Label skip = a.newLabel();
    if (spec.skip_empty) {
      a.test(t2.r32(), t2.r32());
      a.jz(skip);
    }
    InstId movu = val_inst(Inst::kIdVmovups, Inst::kIdVmovupd);
    x86::Ymm A = x86::ymm(2), B = x86::ymm(3), idx = x86::ymm(5), low = x86::ymm(6);
    // Compress both value blocks by permutation (a VEX load of 16 bytes clears the rest).
    a.mov(t4, address_of(f64_ ? (const void*)kCompressPd.data() : (const void*)kCompressPs.data()));
    a.mov(t3, t0);
    a.shl(t3, 5);
    a.vmovdqu(idx, x86::ptr(t4, t3, 0, 0, 32));
    a.emit(movu, vec(2, vw()), x86::ptr(av, i, log2vs, 0, vw()));
    a.vpermps(A, idx, A);
    a.mov(t3, t1);
    a.shl(t3, 5);
    a.vmovdqu(idx, x86::ptr(t4, t3, 0, 0, 32));
    a.emit(movu, vec(3, vw()), x86::ptr(bv, j, log2vs, 0, vw()));
    a.vpermps(B, idx, B);
    vector_product(A, A, B, x86::ymm(4));
    a.mov(t4, address_of(f64_ ? (const void*)kLowPd.data() : (const void*)kLowPs.data()));
    a.mov(t3, t2);
    a.shl(t3, 5);
    a.vmovdqu(low, x86::ptr(t4, t3, 0, 0, 32));  // the first c value lanes

    if (spec.action == CoiterAction::Emit) {
      x86::Ymm c = x86::ymm(7), clow = x86::ymm(8);
      a.mov(t4, address_of(i64_ ? (const void*)kCompressPd.data() : (const void*)kCompressPs.data()));
      a.mov(t3, t0);
      a.shl(t3, 5);
      a.vmovdqu(idx, x86::ptr(t4, t3, 0, 0, 32));
      a.vpermd(c, idx, x86::ymm(kVa));
      a.mov(t4, address_of(i64_ ? (const void*)kLowPd.data() : (const void*)kLowPs.data()));
      a.mov(t3, t2);
      a.shl(t3, 5);
      a.vmovdqu(clow, x86::ptr(t4, t3, 0, 0, 32));
      a.mov(t4, out_crd_arg());
      a.emit(ci(Inst::kIdVpmaskmovd, Inst::kIdVpmaskmovq), x86::ptr(t4, cnt, log2cs, 0, cw()),
             vec(8, cw()), vec(7, cw()));
      a.mov(t4, out_val_arg());
      a.emit(val_inst(Inst::kIdVmaskmovps, Inst::kIdVmaskmovpd), x86::ptr(t4, cnt, log2vs, 0, vw()),
             vec(6, vw()), vec(2, vw()));
      a.add(cnt, t2);
    } else {
      // Lanes past c become the identity: exact for the in-order fold, harmless for vacc.
      a.emit(val_inst(Inst::kIdVblendvps, Inst::kIdVblendvpd), A, x86::ymm(kIdent), A, low);
      if (spec.reassociate) {
        x86::Ymm acc = x86::ymm(kVacc);
        switch (spec.semiring) {
          case SJ_SEMIRING_MIN_PLUS:
            a.emit(val_inst(Inst::kIdVminps, Inst::kIdVminpd), acc, A, acc);
            keep_nan(acc, A, nullptr);
            break;
          case SJ_SEMIRING_MAX_TIMES:
            a.emit(val_inst(Inst::kIdVmaxps, Inst::kIdVmaxpd), acc, A, acc);
            keep_nan(acc, A, nullptr);
            break;
          case SJ_SEMIRING_OR_AND: a.emit(val_inst(Inst::kIdVmaxps, Inst::kIdVmaxpd), acc, A, acc); break;
          default: a.emit(val_inst(Inst::kIdVaddps, Inst::kIdVaddpd), acc, acc, A);
        }
      } else {
        a.emit(movu, x86::ptr(x86::rsp, 0, vw()), vec(2, vw()));
        fold_scratch_into_acc(n);
      }
    }
    a.bind(skip);
  }

  void simd_phase3() override {
    if (!coords_loaded_) load_blocks();
    x86::Vec m = vec(2, cw()), t = vec(3, cw());
    if (i64_) {  // AVX2 has no vpminsq: take the minimum in scalar code
      a.mov(t2, a_crd(i, n - 1));
      a.mov(t3, b_crd(j, n - 1));
      a.cmp(t2, t3);
      a.cmovg(t2, t3);
      a.vmovq(x86::xmm(2), t2);
      a.vpbroadcastq(m, x86::xmm(2));
    } else {
      a.vpbroadcastd(m, a_crd(i, n - 1));
      a.vpbroadcastd(t, b_crd(j, n - 1));
      a.vpminsd(m, m, t);
    }
    // Lanes > min stay; the others are consumed: advance by n - popcount(greater).
    InstId gt = ci(Inst::kIdVpcmpgtd, Inst::kIdVpcmpgtq);
    a.emit(gt, t, va(), m);
    a.emit(movmsk(), t2.r32(), t);
    a.popcnt(t2.r32(), t2.r32());
    a.add(i, n);
    a.sub(i, t2);
    a.emit(gt, t, vb(), m);
    a.emit(movmsk(), t3.r32(), t);
    a.popcnt(t3.r32(), t3.r32());
    a.add(j, n);
    a.sub(j, t3);
  }

  void reduce_vector_acc() override {
    a.emit(val_inst(Inst::kIdVmovups, Inst::kIdVmovupd), x86::ptr(x86::rsp, 0, vw()), vec(kVacc, vw()));
    a.vmovaps(x86::xmm(3), x86::xmm(kIdent));
    for (int l = 0; l < n; ++l) {
      a.emit(val_inst(Inst::kIdVmovss, Inst::kIdVmovsd), x86::xmm(4), x86::ptr(x86::rsp, l * vs, vs));
      scalar_accumulate(x86::xmm(3), x86::xmm(4));
    }
  }

  void leave_vector_state() override { a.vzeroupper(); }

  // xmm9/ymm9 is free in this emitter; lanes past the count hold the identity, never NaN.
  void keep_nan(const x86::Vec& acc, const x86::Vec& p, const x86::KReg*) override {
    const bool scalar = acc.size() == 16;
    const x86::Vec nan = scalar ? x86::Vec(x86::xmm(9)) : x86::Vec(x86::ymm(9));
    a.emit(scalar ? val_inst(Inst::kIdVcmpss, Inst::kIdVcmpsd) : val_inst(Inst::kIdVcmpps, Inst::kIdVcmppd), nan, p, p,
           Imm(3));  // UNORD_Q: p is NaN
    a.emit(val_inst(Inst::kIdVblendvps, Inst::kIdVblendvpd), acc, acc, p, nan);
  }

  void vector_nonzero_and(const x86::Vec& d, const x86::Vec& x, const x86::Vec& y,
                          const x86::Vec& tmp) override {
    int bytes = int(d.size());
    InstId cmp = val_inst(Inst::kIdVcmpps, Inst::kIdVcmppd);
    a.emit(cmp, tmp, y, vec(kZero, bytes), Imm(4));  // NEQ_UQ: NaN is nonzero
    a.emit(cmp, d, x, vec(kZero, bytes), Imm(4));
    a.vandps(d, d, tmp);
    a.vandps(d, d, vec(kOne, bytes));
  }
};

}  // namespace

void emit_coiter_avx2(x86::Assembler& a, const CoiterSpec& spec) { Avx2Emitter(a, spec).emit(); }

}  // namespace sj::jit::detail

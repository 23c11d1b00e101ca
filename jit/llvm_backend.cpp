// The LLVM module, libsparsejit-llvm.so: the code generator of index-notation kernels behind
// jit/llvm_backend.hpp, loaded by the library on first use (jit/llvm_module.hpp says why and
// what crosses the boundary; jit/llvm_loader.cpp loads it). Its one entry point is
// sparsejit_llvm_module.
#include "jit/llvm_module.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "kernels/emit_sink.hpp"
#include "src/build_id.hpp"
#include "src/error.hpp"

#include "llvm/ExecutionEngine/ObjectCache.h"
#include "llvm/ExecutionEngine/Orc/CompileUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

// Called by generated code (resolved as absolute symbols, never exported from the library).
extern "C" void sj_einsum_emit(void* sink, const int64_t* coords, double value) {
  auto* s = static_cast<sj::einsum::EmitSink*>(sink);
  s->emit(s, coords, value);
}

namespace sj::jit {
namespace {

using namespace llvm;
using einsum::LevelRef;
using einsum::Loop;
using einsum::LoopKind;
using einsum::LoopNest;
using einsum::OutputMode;

// ---------------------------------------------------------------------------------------------
// IR generation

class NestCodegen {
 public:
  NestCodegen(LLVMContext& c, Module& m, const LlvmCompileRequest& r)
      : C(c), M(m), B(c), spec(*r.spec), lane(r.lane), gathers_allowed(r.gathers), factor_texts(r.factor_texts),
        nest(*spec.nest), term(*spec.term), e(*spec.expr) {}

  // The loops given gather blocks (gen_gather_blocks), as "k: x(k)", one per loop; empty if none.
  std::string gathered;

  // Whether the kernel starts each dense output entry itself (EinsumKernel::starts_output): asked
  // to, and the outermost loops run densely over the output's indices in its layout order, so
  // each entry is reached once (per range [lo, hi) of the first), and set to zero() there
  // before any product is added.
  bool starts_output() const {
    const size_t d = nest.out_indices.size();
    if (!spec.start_output || nest.mode != OutputMode::Dense || nest.presence || d == 0 || d > nest.loops.size())
      return false;
    // (truth values: the caller's fill casts an infinite zero(); leave those to it)
    if (VT == i8 && (spec.semiring == SJ_SEMIRING_MIN_PLUS || spec.semiring == SJ_SEMIRING_MAX_TIMES)) return false;
    for (size_t m = 0; m < d; ++m) {
      const Loop& lp = nest.loops[m];
      if (lp.index != nest.out_indices[m] || lp.kind == LoopKind::Forsame || !lp.iterate.empty()) return false;
    }
    return true;
  }

  Function* run(const std::string& name) {
    i64 = Type::getInt64Ty(C);
    i8 = Type::getInt8Ty(C);
    i1 = Type::getInt1Ty(C);
    ptr = PointerType::getUnqual(C);
    IT = spec.index_type == IndexType::I32 ? Type::getInt32Ty(C) : i64;
    CT = spec.value_type == ValueType::F32 ? Type::getFloatTy(C) : Type::getDoubleTy(C);
    VT = spec.value_type == ValueType::F32 ? Type::getFloatTy(C)
         : spec.value_type == ValueType::F64 ? Type::getDoubleTy(C) : static_cast<Type*>(i8);
    auto* fty = FunctionType::get(Type::getVoidTy(C), {ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, i64, i64}, false);
    F = Function::Create(fty, Function::ExternalLinkage, name, M);
    for (auto& a : F->args())
      if (a.getType()->isPointerTy()) a.addAttr(Attribute::NoAlias);
    F->addFnAttr(Attribute::NoUnwind);
    emit_fn = Function::Create(FunctionType::get(Type::getVoidTy(C), {ptr, ptr, Type::getDoubleTy(C)}, false),
                               Function::ExternalLinkage, "sj_einsum_emit", M);
    sort_fn = Function::Create(FunctionType::get(Type::getVoidTy(C), {ptr, i64}, false), Function::ExternalLinkage,
                               "sj_einsum_sort", M);
    auto* entry = BasicBlock::Create(C, "entry", F);
    B.SetInsertPoint(entry);
    auto arg = F->arg_begin();
    Value* arrays = &*arg++;
    Value* dims = &*arg++;
    out = &*arg++;
    present = &*arg++;
    sink = &*arg++;
    ws_vals = &*arg++;
    ws_flags = &*arg++;
    ws_list = &*arg++;
    range_lo = &*arg++;
    range_hi = &*arg++;

    const size_t nf = term.factors.size();
    posp.assign(nf, {});
    crdp.assign(nf, {});
    pos.assign(nf, {});
    seg_end.assign(nf, {});
    valp.assign(nf, nullptr);
    for (size_t f = 0; f < nf; ++f) {
      const FormatSpec& fs = nest.factor_formats[f];
      auto slot = [&](int k) {
        return B.CreateLoad(ptr, B.CreateConstGEP1_64(ptr, arrays, f * kEinsumSlotsPerFactor + k));
      };
      for (int l = 0; l < fs.order; ++l) {
        posp[f].push_back(fs.kinds[l] == LevelKind::Compressed ? slot(2 * l) : nullptr);
        crdp[f].push_back(fs.kinds[l] != LevelKind::Dense ? slot(2 * l + 1) : nullptr);
        pos[f].push_back(B.CreateAlloca(i64, nullptr, "pos"));
        seg_end[f].push_back(B.CreateAlloca(i64, nullptr, "segend"));
      }
      valp[f] = slot(2 * 4);
    }
    dim.assign(e.index_names.size(), nullptr);
    idx.assign(e.index_names.size(), nullptr);
    for (size_t v = 0; v < e.index_names.size(); ++v) {
      dim[v] = B.CreateLoad(i64, B.CreateConstGEP1_64(i64, dims, v), "dim");
      idx[v] = B.CreateAlloca(i64, nullptr, "idx");
      B.CreateStore(B.getInt64(0), idx[v]);
    }
    gather_lo = B.CreateLoad(i64, B.CreateConstGEP1_64(i64, dims, e.index_names.size()), "gather.lo");
    gather_hi = B.CreateLoad(i64, B.CreateConstGEP1_64(i64, dims, e.index_names.size() + 1), "gather.hi");
    acc = B.CreateAlloca(CT, nullptr, "acc");
    found = B.CreateAlloca(i8, nullptr, "found");
    ws_count = B.CreateAlloca(i64, nullptr, "wscount");
    coords = B.CreateAlloca(i64, B.getInt32(4), "coords");

    gen(0);
    B.CreateRetVoid();
    return F;
  }

 private:
  // ---- semiring on the compute type
  Constant* zero() {
    switch (spec.semiring) {
      case SJ_SEMIRING_MIN_PLUS: return ConstantFP::getInfinity(CT, false);
      case SJ_SEMIRING_MAX_TIMES: return ConstantFP::getInfinity(CT, true);
      default: return ConstantFP::get(CT, 0.0);
    }
  }
  // Where an accumulator receives at least one product before it is read (an emitted entry, a
  // workspace entry's first touch): add(start(), p) is p, bit for bit, as the reference
  // evaluator's fold from the first product. Sums start from -0.0 (+0.0 + -0.0 is +0.0: a
  // lone -0.0 came out +0.0), min and max from their infinities (NaN wins either way).
  Constant* start() {
    if (spec.semiring == SJ_SEMIRING_PLUS_TIMES || spec.semiring == SJ_SEMIRING_PLUS_PAIR)
      return ConstantFP::get(CT, -0.0);
    return zero();
  }
  Value* truth(Value* a) { return B.CreateFCmpUNE(a, ConstantFP::get(CT, 0.0)); }
  Value* add(Value* a, Value* b) {
    switch (spec.semiring) {
      // MinPlus / MaxTimes::add (src/semiring.hpp): std::min / std::max, but a NaN b wins
      case SJ_SEMIRING_MIN_PLUS: return B.CreateSelect(B.CreateOr(B.CreateFCmpOLT(b, a), B.CreateFCmpUNO(b, b)), b, a);
      case SJ_SEMIRING_MAX_TIMES: return B.CreateSelect(B.CreateOr(B.CreateFCmpOLT(a, b), B.CreateFCmpUNO(b, b)), b, a);
      case SJ_SEMIRING_OR_AND: return B.CreateUIToFP(B.CreateOr(truth(a), truth(b)), CT);
      default: return B.CreateFAdd(a, b);
    }
  }
  Value* mul(Value* a, Value* b) {
    switch (spec.semiring) {
      case SJ_SEMIRING_MIN_PLUS: return B.CreateFAdd(a, b);
      case SJ_SEMIRING_OR_AND: return B.CreateUIToFP(B.CreateAnd(truth(a), truth(b)), CT);
      case SJ_SEMIRING_PLUS_PAIR: return ConstantFP::get(CT, 1.0);
      default: return B.CreateFMul(a, b);
    }
  }
  Value* load_value(size_t f, Value* p) {
    Value* v = B.CreateLoad(VT, B.CreateGEP(VT, valp[f], p));
    if (VT == i8) return B.CreateUIToFP(v, CT);
    return v;
  }
  void store_value(Value* where, Value* v) {
    if (VT == i8) B.CreateStore(B.CreateZExt(truth(v), i8), where);
    else B.CreateStore(v, where);
  }

  // ---- level access
  Value* crd(size_t f, int l, Value* p) {
    Value* c = B.CreateLoad(IT, B.CreateGEP(IT, crdp[f][l], p));
    return IT == i64 ? c : B.CreateSExt(c, i64);
  }
  Value* parent_pos(size_t f, int l) { return l == 0 ? B.getInt64(0) : static_cast<Value*>(B.CreateLoad(i64, pos[f][l - 1])); }
  std::pair<Value*, Value*> segment(const LevelRef& r) {
    const FormatSpec& fs = nest.factor_formats[r.factor];
    Value* parent = parent_pos(r.factor, r.level);
    if (fs.kinds[r.level] == LevelKind::Compressed) {
      Value* s = B.CreateLoad(i64, B.CreateGEP(i64, posp[r.factor][r.level], parent));
      Value* t = B.CreateLoad(i64, B.CreateGEP(i64, posp[r.factor][r.level], B.CreateAdd(parent, B.getInt64(1))));
      return {s, t};
    }
    // singleton: one coordinate per parent entry, or the parent's run of equal coordinates
    if (r.level > 0 && !fs.unique[r.level - 1]) return {parent, B.CreateLoad(i64, seg_end[r.factor][r.level - 1])};
    return {parent, B.CreateAdd(parent, B.getInt64(1))};
  }
  bool nonunique(const LevelRef& r) const { return !nest.factor_formats[r.factor].unique[r.level]; }
  // For a non-unique level at position p (coordinate c): the end of the run of c, stored.
  Value* run_end(const LevelRef& r, Value* p, Value* end, Value* c) {
    BasicBlock* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "run", F);
    auto* step = BasicBlock::Create(C, "run.step", F);
    auto* done = BasicBlock::Create(C, "run.done", F);
    Value* first = B.CreateAdd(p, B.getInt64(1));
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode* q = B.CreatePHI(i64, 2);
    q->addIncoming(first, pre);
    Value* in = B.CreateICmpSLT(q, end);
    auto* check = BasicBlock::Create(C, "run.check", F);
    B.CreateCondBr(in, check, done);
    B.SetInsertPoint(check);
    B.CreateCondBr(B.CreateICmpEQ(crd(r.factor, r.level, q), c), step, done);
    B.SetInsertPoint(step);
    q->addIncoming(B.CreateAdd(q, B.getInt64(1)), step);
    B.CreateBr(head);
    B.SetInsertPoint(done);
    PHINode* res = B.CreatePHI(i64, 2);
    res->addIncoming(q, head);
    res->addIncoming(q, check);
    B.CreateStore(res, seg_end[r.factor][r.level]);
    return res;
  }
  void locate(const Loop& lp, Value* v) {
    for (auto& r : lp.locate)
      B.CreateStore(B.CreateAdd(B.CreateMul(parent_pos(r.factor, r.level), dim[lp.index]), v), pos[r.factor][r.level]);
  }
  // lower_bound of v in crd[lo, hi)
  Value* lower_bound(const LevelRef& r, Value* lo0, Value* hi0, Value* v) {
    BasicBlock* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "bs", F);
    auto* body = BasicBlock::Create(C, "bs.body", F);
    auto* done = BasicBlock::Create(C, "bs.done", F);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode* lo = B.CreatePHI(i64, 2);
    PHINode* hi = B.CreatePHI(i64, 2);
    lo->addIncoming(lo0, pre);
    hi->addIncoming(hi0, pre);
    B.CreateCondBr(B.CreateICmpSLT(lo, hi), body, done);
    B.SetInsertPoint(body);
    Value* mid = B.CreateAdd(lo, B.CreateLShr(B.CreateSub(hi, lo), 1));
    Value* less = B.CreateICmpSLT(crd(r.factor, r.level, mid), v);
    lo->addIncoming(B.CreateSelect(less, B.CreateAdd(mid, B.getInt64(1)), lo), body);
    hi->addIncoming(B.CreateSelect(less, hi, mid), body);
    B.CreateBr(head);
    B.SetInsertPoint(done);
    return lo;
  }
  // Galloping from the segment start: probe start, start+1, start+3, ... then binary search.
  Value* gallop(const LevelRef& r, Value* start, Value* end, Value* v) {
    BasicBlock* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "gal", F);
    auto* check = BasicBlock::Create(C, "gal.check", F);
    auto* step = BasicBlock::Create(C, "gal.step", F);
    auto* done = BasicBlock::Create(C, "gal.done", F);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode* lo = B.CreatePHI(i64, 2);
    PHINode* hi = B.CreatePHI(i64, 2);
    PHINode* st = B.CreatePHI(i64, 2);
    lo->addIncoming(start, pre);
    hi->addIncoming(start, pre);
    st->addIncoming(B.getInt64(1), pre);
    B.CreateCondBr(B.CreateICmpSLT(hi, end), check, done);
    B.SetInsertPoint(check);
    B.CreateCondBr(B.CreateICmpSLT(crd(r.factor, r.level, hi), v), step, done);
    B.SetInsertPoint(step);
    lo->addIncoming(B.CreateAdd(hi, B.getInt64(1)), step);
    hi->addIncoming(B.CreateAdd(hi, st), step);
    st->addIncoming(B.CreateShl(st, 1), step);
    B.CreateBr(head);
    B.SetInsertPoint(done);
    PHINode* l2 = B.CreatePHI(i64, 2);
    PHINode* h2 = B.CreatePHI(i64, 2);
    l2->addIncoming(lo, head);
    l2->addIncoming(lo, check);
    h2->addIncoming(hi, head);
    h2->addIncoming(hi, check);
    Value* hic = B.CreateSelect(B.CreateICmpSLT(h2, end), h2, end);
    return lower_bound(r, l2, hic, v);
  }

  // The outermost loop runs coordinates [range_lo, range_hi) only: the part of a sorted
  // segment in that range (two binary searches, once per call).
  std::pair<Value*, Value*> narrow(const LevelRef& r, Value* start, Value* end) {
    Value* s = lower_bound(r, start, end, range_lo);
    Value* t = lower_bound(r, s, end, range_hi);
    return {s, t};
  }

  // ---- loops
  void gen(size_t k) {
    if (nest.mode == OutputMode::Where && static_cast<int>(k) == nest.where_at && !in_producer) {
      gen_where(k);
      return;
    }
    if (k == nest.loops.size()) {
      gen_compute();
      return;
    }
    if (k == 0 && nest.mode == OutputMode::Emit && nest.emit_after < 0) {
      gen_emitting([&] { gen_loop(k); });
      return;
    }
    gen_loop(k);
  }
  template <class Body> void gen_emitting(Body body) {
    B.CreateStore(start(), acc);  // emitted only once a product came (found)
    B.CreateStore(B.getInt8(0), found);
    body();
    auto* yes = BasicBlock::Create(C, "emit", F);
    auto* after = BasicBlock::Create(C, "emit.after", F);
    B.CreateCondBr(B.CreateICmpNE(B.CreateLoad(i8, found), B.getInt8(0)), yes, after);
    B.SetInsertPoint(yes);
    emit_entry(B.CreateLoad(CT, acc));
    B.CreateBr(after);
    B.SetInsertPoint(after);
  }
  // An entry of a sparse output: appended in the sink's lane while it has room, else handed
  // to sj_einsum_emit (kernels/emit_sink.hpp, EmitSink, says how the lane works).
  void emit_entry(Value* v) {
    for (size_t m = 0; m < e.output.indices.size(); ++m)
      B.CreateStore(B.CreateLoad(i64, idx[e.output.indices[m]]), B.CreateConstGEP1_64(i64, coords, m));
    Value* d = CT->isDoubleTy() ? v : B.CreateFPExt(v, Type::getDoubleTy(C));
    auto at = [&](size_t offset) { return B.CreateConstInBoundsGEP1_64(i8, sink, offset); };
    auto field = [&](size_t offset, Type* t) { return B.CreateLoad(t, at(offset)); };
    Value* n = field(offsetof(einsum::EmitSink, lane_n), i64);
    auto* fast = BasicBlock::Create(C, "emit.lane", F);
    auto* slow = BasicBlock::Create(C, "emit.call", F);
    auto* done = BasicBlock::Create(C, "emit.done", F);
    B.CreateCondBr(B.CreateICmpSLT(n, field(offsetof(einsum::EmitSink, lane_cap), i64)), fast, slow);
    B.SetInsertPoint(fast);
    auto coord = [&](size_t mode_offset) {
      return B.CreateLoad(i64, B.CreateGEP(i64, coords, field(mode_offset, i64)));
    };
    constexpr size_t mode0 = offsetof(einsum::EmitSink, lane_p_mode), mul0 = offsetof(einsum::EmitSink, lane_p_mul);
    Value* position = B.CreateSub(
        B.CreateAdd(B.CreateMul(coord(mode0), field(mul0, i64)),
                    B.CreateMul(coord(mode0 + sizeof(int64_t)), field(mul0 + sizeof(int64_t), i64))),
        field(offsetof(einsum::EmitSink, lane_p_base), i64));
    B.CreateStore(coord(offsetof(einsum::EmitSink, lane_j_mode)),
                  B.CreateGEP(i64, field(offsetof(einsum::EmitSink, lane_crd), ptr), n));
    B.CreateStore(d, B.CreateGEP(Type::getDoubleTy(C), field(offsetof(einsum::EmitSink, lane_val), ptr), n));
    Value* count = B.CreateGEP(i64, field(offsetof(einsum::EmitSink, lane_counts), ptr), position);
    B.CreateStore(B.CreateAdd(B.CreateLoad(i64, count), B.getInt64(1)), count);
    B.CreateStore(B.CreateAdd(n, B.getInt64(1)), at(offsetof(einsum::EmitSink, lane_n)));
    B.CreateBr(done);
    B.SetInsertPoint(slow);
    B.CreateCall(emit_fn, {sink, coords, d});
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }
  void body_of(size_t k) {
    if (nest.mode == OutputMode::Emit && static_cast<int>(k) == nest.emit_after) gen_emitting([&] { gen(k + 1); });
    else gen(k + 1);
  }

  void gen_loop(size_t k) {
    const Loop& lp = nest.loops[k];
    if (lp.kind == LoopKind::Forsame) return gen_forsame(k);
    if (lp.iterate.empty()) return gen_range(k);
    if (lp.iterate.size() == 1) return gen_single(k);
    gen_merge(k);
  }

  void gen_range(size_t k) {
    const Loop& lp = nest.loops[k];
    BasicBlock* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "range", F);
    auto* body = BasicBlock::Create(C, "range.body", F);
    auto* exit = BasicBlock::Create(C, "range.exit", F);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode* v = B.CreatePHI(i64, 2);
    v->addIncoming(k == 0 ? range_lo : static_cast<Value*>(B.getInt64(0)), pre);
    B.CreateCondBr(B.CreateICmpSLT(v, k == 0 ? range_hi : dim[lp.index]), body, exit);
    B.SetInsertPoint(body);
    B.CreateStore(v, idx[lp.index]);
    locate(lp, v);
    if (k + 1 == nest.out_indices.size() && starts_output()) store_value(output_entry(), zero());
    body_of(k);
    v->addIncoming(B.CreateAdd(v, B.getInt64(1)), B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
  }

  void gen_single(size_t k) {
    const Loop& lp = nest.loops[k];
    const LevelRef r = lp.iterate[0];
    auto [start, end] = segment(r);
    if (k == 0) std::tie(start, end) = narrow(r, start, end);
    if (auto roles = gather_roles(k)) start = gen_gather_blocks(k, *roles, start, end);  // the rest, scalar
    BasicBlock* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "iter", F);
    auto* body = BasicBlock::Create(C, "iter.body", F);
    auto* exit = BasicBlock::Create(C, "iter.exit", F);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode* p = B.CreatePHI(i64, 2);
    p->addIncoming(start, pre);
    B.CreateCondBr(B.CreateICmpSLT(p, end), body, exit);
    B.SetInsertPoint(body);
    Value* next = iteration(k, p, end);
    p->addIncoming(next, B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
  }

  // Loop k's body at position p of its one iterated level; returns the next position (past the
  // run of p's coordinate on a non-unique level, which needs the segment's end).
  Value* iteration(size_t k, Value* p, Value* end = nullptr) {
    const Loop& lp = nest.loops[k];
    const LevelRef r = lp.iterate[0];
    Value* v = crd(r.factor, r.level, p);
    Value* next = nonunique(r) ? run_end(r, p, end, v) : B.CreateAdd(p, B.getInt64(1));
    B.CreateStore(p, pos[r.factor][r.level]);
    B.CreateStore(v, idx[lp.index]);
    locate(lp, v);
    body_of(k);
    return next;
  }

  // Intersection of several sorted segments: all equal -> body and advance all; else advance
  // every finger behind the largest coordinate.
  void gen_merge(size_t k) {
    const Loop& lp = nest.loops[k];
    const size_t n = lp.iterate.size();
    std::vector<Value*> start(n), end(n);
    for (size_t i = 0; i < n; ++i) {
      std::tie(start[i], end[i]) = segment(lp.iterate[i]);
      if (k == 0) std::tie(start[i], end[i]) = narrow(lp.iterate[i], start[i], end[i]);
    }
    if (n == 2 && lane.width > 0 && simd_ok(lp.iterate[0]) && simd_ok(lp.iterate[1]))
      std::tie(start[0], start[1]) = gen_simd_lane(k, start[0], end[0], start[1], end[1]);
    BasicBlock* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "merge", F);
    auto* test = BasicBlock::Create(C, "merge.test", F);
    auto* match = BasicBlock::Create(C, "merge.match", F);
    auto* skip = BasicBlock::Create(C, "merge.skip", F);
    auto* exit = BasicBlock::Create(C, "merge.exit", F);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    std::vector<PHINode*> p(n);
    Value* live = nullptr;
    for (size_t i = 0; i < n; ++i) {
      p[i] = B.CreatePHI(i64, 3);
      p[i]->addIncoming(start[i], pre);
    }
    for (size_t i = 0; i < n; ++i) {
      Value* in = B.CreateICmpSLT(p[i], end[i]);
      live = live ? B.CreateAnd(live, in) : in;
    }
    B.CreateCondBr(live, test, exit);
    B.SetInsertPoint(test);
    std::vector<Value*> c(n);
    Value* v = nullptr;
    for (size_t i = 0; i < n; ++i) {
      c[i] = crd(lp.iterate[i].factor, lp.iterate[i].level, p[i]);
      v = v ? B.CreateSelect(B.CreateICmpSGT(c[i], v), c[i], v) : c[i];
    }
    Value* all = nullptr;
    for (size_t i = 0; i < n; ++i) {
      Value* eq = B.CreateICmpEQ(c[i], v);
      all = all ? B.CreateAnd(all, eq) : eq;
    }
    B.CreateCondBr(all, match, skip);
    // behind: advance fingers below v
    B.SetInsertPoint(skip);
    std::vector<Value*> p_skip(n);
    for (size_t i = 0; i < n; ++i) p_skip[i] = B.CreateAdd(p[i], B.CreateZExt(B.CreateICmpSLT(c[i], v), i64));
    BasicBlock* skip_end = B.GetInsertBlock();
    B.CreateBr(head);
    // match: bind, run the body, advance all
    B.SetInsertPoint(match);
    std::vector<Value*> p_next(n);
    for (size_t i = 0; i < n; ++i) {
      const LevelRef& r = lp.iterate[i];
      p_next[i] = nonunique(r) ? run_end(r, p[i], end[i], v) : B.CreateAdd(p[i], B.getInt64(1));
      B.CreateStore(p[i], pos[r.factor][r.level]);
    }
    B.CreateStore(v, idx[lp.index]);
    locate(lp, v);
    body_of(k);
    BasicBlock* match_end = B.GetInsertBlock();
    B.CreateBr(head);
    for (size_t i = 0; i < n; ++i) {
      p[i]->addIncoming(p_skip[i], skip_end);
      p[i]->addIncoming(p_next[i], match_end);
    }
    B.SetInsertPoint(exit);
  }

  bool simd_ok(const LevelRef& r) const {
    return nest.factor_formats[r.factor].kinds[r.level] == LevelKind::Compressed && !nonunique(r);
  }
  static Value* mask_bits(IRBuilder<>& b, Value* cmp, unsigned n) {
    return b.CreateZExt(b.CreateBitCast(cmp, IntegerType::get(b.getContext(), n)), b.getInt64Ty());
  }
  // The Splyce dual path's fast lane for a two-way intersection, run to the end of the shorter
  // segment: load up to W coordinates of each side (a masked load when fewer than W are left;
  // the missing lanes read as -1 on a's side and -2 on b's, which match nothing), compare all
  // pairs in vector registers (phase 1: VP2INTERSECT where the CPU has it, which also gives
  // b's lanes, else W broadcast compares), run the body for each match in coordinate order
  // (phases 2-3 scalar), and advance each block whose last coordinate is not beyond the
  // other's. A block may be partial, so segments shorter than W need no scalar epilogue (the
  // paper's design runs its scalar loop there, which costs the mispredictions SIMD saves).
  // Returns where the scalar merge resumes (one side is then exhausted).
  std::pair<Value*, Value*> gen_simd_lane(size_t k, Value* sa, Value* ea, Value* sb, Value* eb) {
    const Loop& lp = nest.loops[k];
    const LevelRef ra = lp.iterate[0], rb = lp.iterate[1];
    const unsigned W = lane.width;
    const Align al(IT == i64 ? 8 : 4);
    auto* VTy = FixedVectorType::get(IT, W);
    std::vector<Constant*> lanes_c;
    for (unsigned j = 0; j < W; ++j) lanes_c.push_back(ConstantInt::get(i64, j));
    Constant* iota = ConstantVector::get(lanes_c);
    BasicBlock* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "simd", F);
    auto* block = BasicBlock::Create(C, "simd.block", F);
    auto* mhead = BasicBlock::Create(C, "simd.match", F);
    auto* mbody = BasicBlock::Create(C, "simd.match.body", F);
    auto* advance = BasicBlock::Create(C, "simd.advance", F);
    auto* exit = BasicBlock::Create(C, "simd.exit", F);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode* pa = B.CreatePHI(i64, 2);
    PHINode* pb = B.CreatePHI(i64, 2);
    pa->addIncoming(sa, pre);
    pb->addIncoming(sb, pre);
    B.CreateCondBr(B.CreateAnd(B.CreateICmpSLT(pa, ea), B.CreateICmpSLT(pb, eb)), block, exit);
    B.SetInsertPoint(block);
    auto clamp = [&](Value* left) {
      return B.CreateSelect(B.CreateICmpSLT(left, B.getInt64(W)), left, B.getInt64(W));
    };
    Value* cnt_a = clamp(B.CreateSub(ea, pa));
    Value* cnt_b = clamp(B.CreateSub(eb, pb));
    auto block_load = [&](const LevelRef& r, Value* p, Value* cnt, int64_t pad) {
      Value* mask = B.CreateICmpULT(iota, B.CreateVectorSplat(W, cnt));
      return B.CreateMaskedLoad(VTy, B.CreateGEP(IT, crdp[r.factor][r.level], p), al, mask,
                                B.CreateVectorSplat(W, ConstantInt::get(IT, pad, true)));
    };
    Value* va = block_load(ra, pa, cnt_a, -1);
    Value* vb = block_load(rb, pb, cnt_b, -2);
    Value* hits = nullptr;
    Value* hits_b = nullptr;
    if (lane.native) {
      const Intrinsic::ID id = IT == i64 ? (W == 8 ? Intrinsic::x86_avx512_vp2intersect_q_512 : Intrinsic::x86_avx512_vp2intersect_q_256)
                                         : (W == 16 ? Intrinsic::x86_avx512_vp2intersect_d_512 : Intrinsic::x86_avx512_vp2intersect_d_256);
      Value* pair = B.CreateCall(Intrinsic::getDeclaration(&M, id), {va, vb});
      hits = mask_bits(B, B.CreateExtractValue(pair, 0), W);
      hits_b = mask_bits(B, B.CreateExtractValue(pair, 1), W);
    } else {
      // lanes of a equal to some lane of b: OR over W broadcasts of b's lanes
      Value* hit = nullptr;
      for (unsigned j = 0; j < W; ++j) {
        Value* bj = B.CreateVectorSplat(W, B.CreateExtractElement(vb, B.getInt32(j)));
        Value* eq = B.CreateICmpEQ(va, bj);
        hit = hit ? B.CreateOr(hit, eq) : eq;
      }
      hits = mask_bits(B, hit, W);
    }
    Value* last_a = crd(ra.factor, ra.level, B.CreateSub(B.CreateAdd(pa, cnt_a), B.getInt64(1)));
    Value* last_b = crd(rb.factor, rb.level, B.CreateSub(B.CreateAdd(pb, cnt_b), B.getInt64(1)));
    BasicBlock* block_end = B.GetInsertBlock();
    B.CreateBr(mhead);
    B.SetInsertPoint(mhead);
    PHINode* m = B.CreatePHI(i64, 2);
    m->addIncoming(hits, block_end);
    PHINode* mb = nullptr;
    if (hits_b) {
      mb = B.CreatePHI(i64, 2);
      mb->addIncoming(hits_b, block_end);
    }
    B.CreateCondBr(B.CreateICmpNE(m, B.getInt64(0)), mbody, advance);
    B.SetInsertPoint(mbody);
    Value* lane_a = B.CreateIntrinsic(Intrinsic::cttz, {i64}, {m, B.getTrue()});
    Value* c = B.CreateExtractElement(va, lane_a);
    // both segments are sorted and unique, so the j-th match of a pairs with the j-th of b
    Value* lane_b = mb ? B.CreateIntrinsic(Intrinsic::cttz, {i64}, {mb, B.getTrue()})
                       : B.CreateIntrinsic(Intrinsic::cttz, {i64},
                                           {mask_bits(B, B.CreateICmpEQ(vb, B.CreateVectorSplat(W, c)), W), B.getTrue()});
    Value* v = IT == i64 ? c : B.CreateSExt(c, i64);
    B.CreateStore(B.CreateAdd(pa, lane_a), pos[ra.factor][ra.level]);
    B.CreateStore(B.CreateAdd(pb, lane_b), pos[rb.factor][rb.level]);
    B.CreateStore(v, idx[lp.index]);
    locate(lp, v);
    body_of(k);
    BasicBlock* body_end = B.GetInsertBlock();
    m->addIncoming(B.CreateAnd(m, B.CreateSub(m, B.getInt64(1))), body_end);
    if (mb) mb->addIncoming(B.CreateAnd(mb, B.CreateSub(mb, B.getInt64(1))), body_end);
    B.CreateBr(mhead);
    B.SetInsertPoint(advance);
    Value* na = B.CreateSelect(B.CreateICmpSLE(last_a, last_b), B.CreateAdd(pa, cnt_a), pa);
    Value* nb = B.CreateSelect(B.CreateICmpSLE(last_b, last_a), B.CreateAdd(pb, cnt_b), pb);
    pa->addIncoming(na, advance);
    pb->addIncoming(nb, advance);
    B.CreateBr(head);
    B.SetInsertPoint(exit);
    return {pa, pb};
  }

  // v is bound: each follower searches it in its segment; the body runs where all have it.
  void gen_forsame(size_t k) {
    const Loop& lp = nest.loops[k];
    Value* v = B.CreateLoad(i64, idx[lp.index]);
    auto* skip = BasicBlock::Create(C, "forsame.skip", F);
    for (auto& r : lp.search) {
      auto [start, end] = segment(r);
      Value* p = lp.search_kind == einsum::SearchKind::Galloping ? gallop(r, start, end, v) : lower_bound(r, start, end, v);
      auto* check = BasicBlock::Create(C, "forsame.check", F);
      auto* hit = BasicBlock::Create(C, "forsame.hit", F);
      B.CreateCondBr(B.CreateICmpSLT(p, end), check, skip);
      B.SetInsertPoint(check);
      B.CreateCondBr(B.CreateICmpEQ(crd(r.factor, r.level, p), v), hit, skip);
      B.SetInsertPoint(hit);
      if (nonunique(r)) run_end(r, p, end, v);
      B.CreateStore(p, pos[r.factor][r.level]);
    }
    locate(lp, v);
    body_of(k);
    B.CreateBr(skip);
    B.SetInsertPoint(skip);
  }

  void gen_compute() {
    Value* prod = nullptr;
    for (size_t f = 0; f < term.factors.size(); ++f) {
      const int order = nest.factor_formats[f].order;
      Value* p = order == 0 ? B.getInt64(0) : static_cast<Value*>(B.CreateLoad(i64, pos[f][order - 1]));
      Value* x = load_value(f, p);
      prod = prod ? mul(prod, x) : x;  // a single factor keeps its value, whatever the semiring
    }
    accumulate(prod);
  }
  // Adds one product into the output (dense array, the emitted entry's sum, or the workspace).
  void accumulate(Value* prod) {
    switch (nest.mode) {
      case OutputMode::Dense: {
        Value* where = output_entry();
        Value* old = VT == i8 ? B.CreateUIToFP(B.CreateLoad(i8, where), CT) : static_cast<Value*>(B.CreateLoad(VT, where));
        store_value(where, add(old, prod));
        if (nest.presence) B.CreateStore(B.getInt8(1), B.CreateGEP(i8, present, output_position()));
        break;
      }
      case OutputMode::Emit:
        B.CreateStore(add(B.CreateLoad(CT, acc), prod), acc);
        B.CreateStore(B.getInt8(1), found);
        break;
      case OutputMode::Where: {
        Value* w = B.CreateLoad(i64, idx[nest.out_indices.back()]);
        Value* flag_at = B.CreateGEP(i8, ws_flags, w);
        Value* val_at = B.CreateGEP(CT, ws_vals, w);
        auto* fresh = BasicBlock::Create(C, "ws.new", F);
        auto* again = BasicBlock::Create(C, "ws.add", F);
        auto* done = BasicBlock::Create(C, "ws.done", F);
        B.CreateCondBr(B.CreateICmpEQ(B.CreateLoad(i8, flag_at), B.getInt8(0)), fresh, again);
        B.SetInsertPoint(fresh);
        B.CreateStore(B.getInt8(1), flag_at);
        Value* n = B.CreateLoad(i64, ws_count);
        B.CreateStore(w, B.CreateGEP(i64, ws_list, n));
        B.CreateStore(B.CreateAdd(n, B.getInt64(1)), ws_count);
        B.CreateStore(add(start(), prod), val_at);
        B.CreateBr(done);
        B.SetInsertPoint(again);
        B.CreateStore(add(B.CreateLoad(CT, val_at), prod), val_at);
        B.CreateBr(done);
        B.SetInsertPoint(done);
        break;
      }
    }
  }
  // The dense output's entry at the current output coordinates (row-major in its layout).
  Value* output_position() {
    Value* op = B.getInt64(0);
    for (int v : nest.out_indices) op = B.CreateAdd(B.CreateMul(op, dim[v]), B.CreateLoad(i64, idx[v]));
    return op;
  }
  Value* output_entry() { return B.CreateGEP(VT, out, output_position()); }

  // ---- gather blocks
  // The innermost loop over one sparse level whose coordinates locate dense vectors' values
  // (SpMV's x(k), read at A's columns) runs its first iteration alone, then
  // eight iterations at a time: the coordinates and the sparse factor's values by vector loads,
  // each located factor's values by one gather, the products by vector operations. The eight products then go to the output
  // one at a time and in order, as the scalar loop's would, so the result keeps its bits (a
  // product is the same in a lane as alone). The blocks run only while the gathered factors'
  // bytes lie in the window passed after dims (src/gather_window.hpp: larger than L2, at most a
  // quarter of L3); otherwise, and for the last iterations short of a block, the scalar loop.
  static constexpr unsigned kGatherLanes = 8;
  enum class Role { Stream, Gather, Invariant };  // per factor: read at p, located by v, fixed

  // The factors' roles where loop k can take gather blocks, else nothing: the innermost loop,
  // a unique last level of one factor iterated, dense vectors located, the rest fixed; float
  // or double values; a product that is one vector operation. Only vectors: a vector is read
  // again by every outer iteration, and gathers pay while it waits in L3; a row of a dense
  // matrix D(i,k) is read once, and gathers were slower than scalar loads there (y(i) =
  // A(i,k) * D(i,k), one thread: 600 x 1000 with 200 a row 1.40x, 60 x 200k with 4000 a row
  // 1.73x, 30 x 400k 1.26x).
  std::optional<std::vector<Role>> gather_roles(size_t k) const {
    if (!gathers_allowed || k + 1 != nest.loops.size() || term.factors.size() < 2) return std::nullopt;
    if (spec.value_type != ValueType::F32 && spec.value_type != ValueType::F64) return std::nullopt;
    if (spec.semiring != SJ_SEMIRING_PLUS_TIMES && spec.semiring != SJ_SEMIRING_MIN_PLUS &&
        spec.semiring != SJ_SEMIRING_MAX_TIMES)
      return std::nullopt;
    if (nest.mode == OutputMode::Where && nest.where_at == static_cast<int>(k) + 1) return std::nullopt;
    const Loop& lp = nest.loops[k];
    const LevelRef r = lp.iterate[0];
    if (r.level != nest.factor_formats[r.factor].order - 1 || nonunique(r)) return std::nullopt;
    std::vector<Role> roles(term.factors.size(), Role::Invariant);
    roles[r.factor] = Role::Stream;
    for (const LevelRef& l : lp.locate) {
      if (roles[l.factor] != Role::Invariant || l.level != 0 || nest.factor_formats[l.factor].order != 1) return std::nullopt;
      roles[l.factor] = Role::Gather;
    }
    if (lp.locate.empty()) return std::nullopt;
    return roles;
  }

  // Blocks of loop k from `start` while a whole block fits before `end`; returns where the
  // scalar loop goes on.
  Value* gen_gather_blocks(size_t k, const std::vector<Role>& roles, Value* start, Value* end) {
    const Loop& lp = nest.loops[k];
    const LevelRef r = lp.iterate[0];
    const Align value_align(VT->getPrimitiveSizeInBits() / 8);
    Value* bytes = B.getInt64(0);
    std::string names;
    for (size_t f = 0; f < roles.size(); ++f) {
      if (roles[f] != Role::Gather) continue;
      Value* n = B.getInt64(value_align.value());
      for (int v : term.factors[f].indices) n = B.CreateMul(n, dim[v]);
      bytes = B.CreateAdd(bytes, n);
      names += cat(names.empty() ? "" : ", ", factor_texts[f]);
    }
    gathered += cat(gathered.empty() ? "" : "; ", e.index_names[lp.index], ": ", names);
    Value* in_window = B.CreateAnd(B.CreateICmpSGT(bytes, gather_lo), B.CreateICmpSLE(bytes, gather_hi));
    BasicBlock* pre = B.GetInsertBlock();
    auto* first = BasicBlock::Create(C, "gather.first", F);
    auto* peel = BasicBlock::Create(C, "gather.peel", F);
    auto* head = BasicBlock::Create(C, "gather", F);
    auto* body = BasicBlock::Create(C, "gather.body", F);
    auto* exit = BasicBlock::Create(C, "gather.exit", F);
    B.CreateCondBr(in_window, first, exit);
    // The first iteration alone, then the blocks: a stand-alone copy of SpMV's loop (16 a row,
    // 600k columns) took 11.4 ms with blocks from a row's first entry against 7.9 ms so, which
    // leaves half of a row's loads of x to scalar loads beside one gather.
    B.SetInsertPoint(first);
    B.CreateCondBr(B.CreateICmpSLT(start, end), peel, exit);
    B.SetInsertPoint(peel);
    Value* second = iteration(k, start);
    BasicBlock* peeled = B.GetInsertBlock();
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode* p = B.CreatePHI(i64, 2);
    p->addIncoming(second, peeled);
    B.CreateCondBr(B.CreateICmpSLE(B.CreateAdd(p, B.getInt64(kGatherLanes)), end), body, exit);
    B.SetInsertPoint(body);
    auto* coords_type = FixedVectorType::get(IT, kGatherLanes);
    auto* values_type = FixedVectorType::get(VT, kGatherLanes);
    Value* c = B.CreateAlignedLoad(coords_type, B.CreateGEP(IT, crdp[r.factor][r.level], p),
                                   Align(IT->getPrimitiveSizeInBits() / 8));
    Value* c64 = IT == i64 ? c : B.CreateSExt(c, FixedVectorType::get(i64, kGatherLanes));
    Value* prod = nullptr;
    for (size_t f = 0; f < roles.size(); ++f) {
      const int order = nest.factor_formats[f].order;
      Value* x = nullptr;
      switch (roles[f]) {
        case Role::Stream:
          x = B.CreateAlignedLoad(values_type, B.CreateGEP(VT, valp[f], p), value_align);
          break;
        case Role::Gather: {  // the locate's position: parent * dim + coordinate
          Value* row = B.CreateGEP(VT, valp[f], B.CreateMul(parent_pos(f, order - 1), dim[lp.index]));
          x = B.CreateMaskedGather(values_type, B.CreateGEP(VT, row, c64), value_align);
          break;
        }
        case Role::Invariant: {
          Value* q = order == 0 ? B.getInt64(0) : static_cast<Value*>(B.CreateLoad(i64, pos[f][order - 1]));
          x = B.CreateVectorSplat(kGatherLanes, load_value(f, q));
          break;
        }
      }
      prod = prod ? mul(prod, x) : x;
    }
    for (unsigned j = 0; j < kGatherLanes; ++j) {  // the loop's body for each, in order
      Value* v = B.CreateExtractElement(c64, j);
      B.CreateStore(B.CreateAdd(p, B.getInt64(j)), pos[r.factor][r.level]);
      B.CreateStore(v, idx[lp.index]);
      locate(lp, v);
      Value* prod_j = B.CreateExtractElement(prod, j);
      if (nest.mode == OutputMode::Emit && static_cast<int>(k) == nest.emit_after) gen_emitting([&] { accumulate(prod_j); });
      else accumulate(prod_j);
    }
    p->addIncoming(B.CreateAdd(p, B.getInt64(kGatherLanes)), B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
    PHINode* rest = B.CreatePHI(i64, 3);
    rest->addIncoming(start, pre);
    rest->addIncoming(start, first);
    rest->addIncoming(p, head);
    return rest;
  }

  // where: producer (loops k..) into the workspace, then the consumer drains it in order.
  void gen_where(size_t k) {
    B.CreateStore(B.getInt64(0), ws_count);
    in_producer = true;
    gen(k);
    in_producer = false;
    Value* n = B.CreateLoad(i64, ws_count);
    B.CreateCall(sort_fn, {ws_list, n});
    const int w = nest.out_indices.back();
    BasicBlock* pre = B.GetInsertBlock();
    auto* head = BasicBlock::Create(C, "consume", F);
    auto* body = BasicBlock::Create(C, "consume.body", F);
    auto* exit = BasicBlock::Create(C, "consume.exit", F);
    B.CreateBr(head);
    B.SetInsertPoint(head);
    PHINode* t = B.CreatePHI(i64, 2);
    t->addIncoming(B.getInt64(0), pre);
    B.CreateCondBr(B.CreateICmpSLT(t, n), body, exit);
    B.SetInsertPoint(body);
    Value* c = B.CreateLoad(i64, B.CreateGEP(i64, ws_list, t));
    B.CreateStore(c, idx[w]);
    emit_entry(B.CreateLoad(CT, B.CreateGEP(CT, ws_vals, c)));
    B.CreateStore(B.getInt8(0), B.CreateGEP(i8, ws_flags, c));
    t->addIncoming(B.CreateAdd(t, B.getInt64(1)), B.GetInsertBlock());
    B.CreateBr(head);
    B.SetInsertPoint(exit);
  }

  LLVMContext& C;
  Module& M;
  IRBuilder<> B;
  const EinsumKernelSpec& spec;
  const SimdLane lane;
  const bool gathers_allowed;
  const std::vector<std::string>& factor_texts;
  const LoopNest& nest;
  const einsum::Term& term;
  const einsum::Expression& e;
  Function* F = nullptr;
  Function* emit_fn = nullptr;
  Function* sort_fn = nullptr;
  Type *i64 = nullptr, *i8 = nullptr, *i1 = nullptr, *ptr = nullptr, *IT = nullptr, *CT = nullptr, *VT = nullptr;
  Value *out = nullptr, *present = nullptr, *sink = nullptr, *ws_vals = nullptr, *ws_flags = nullptr, *ws_list = nullptr;
  Value *range_lo = nullptr, *range_hi = nullptr;
  Value *gather_lo = nullptr, *gather_hi = nullptr;  // the gather window (bytes), from dims
  std::vector<std::vector<Value*>> posp, crdp, pos, seg_end;
  std::vector<Value*> valp, dim, idx;
  Value *acc = nullptr, *found = nullptr, *ws_count = nullptr, *coords = nullptr;
  bool in_producer = false;
};

// ---------------------------------------------------------------------------------------------
// The process-wide JIT, its compiler and the object cache

// Objects keyed by module identifier: the identifier is the kernel's canonical key text,
// whose hash names the store entry (the library's side of LlvmCompileRequest::load); the
// payload starts with the text, checked on load.
class StoreObjectCache : public ObjectCache {
 public:
  const LlvmCompileRequest* request = nullptr;  // set for the compile in progress (under the compile mutex)
  bool hit = false;

  std::unique_ptr<MemoryBuffer> getObject(const Module* m) override {
    if (!request || !request->store) return nullptr;
    const std::string text = m->getModuleIdentifier();
    std::string payload;
    if (!request->load(request->store, text, &payload) || payload.size() < 8) return nullptr;
    uint64_t len;
    std::memcpy(&len, payload.data(), 8);
    if (len != text.size() || payload.size() < 8 + len || std::memcmp(payload.data() + 8, text.data(), len) != 0)
      return nullptr;  // a different kernel with the same hash: compile instead
    hit = true;
    StringRef obj(payload.data() + 8 + len, payload.size() - 8 - len);
    return MemoryBuffer::getMemBufferCopy(obj, "sj-einsum-cached");
  }
  void notifyObjectCompiled(const Module* m, MemoryBufferRef obj) override {
    if (!request || !request->store) return;
    const std::string text = m->getModuleIdentifier();
    std::string payload(8, '\0');
    uint64_t len = text.size();
    std::memcpy(payload.data(), &len, 8);
    payload += text;
    payload.append(obj.getBufferStart(), obj.getBufferSize());
    request->save(request->store, text, payload);
  }
};

// Asks the cache first (skipping optimisation on a hit), else runs the O3 pipeline and codegen.
class CachingOptimizingCompiler : public orc::IRCompileLayer::IRCompiler {
 public:
  CachingOptimizingCompiler(std::unique_ptr<TargetMachine> tm, StoreObjectCache& cache)
      : IRCompiler(orc::irManglingOptionsFromTargetOptions(tm->Options)), tm_(std::move(tm)), cache_(cache) {}
  Expected<std::unique_ptr<MemoryBuffer>> operator()(Module& m) override {
    if (auto cached = cache_.getObject(&m)) return cached;
    optimize(m);
    orc::SimpleCompiler compile(*tm_);
    auto obj = compile(m);
    if (obj) cache_.notifyObjectCompiled(&m, (*obj)->getMemBufferRef());
    return obj;
  }
  bool scalar_only = false;

 private:
  void optimize(Module& m) {
    LoopAnalysisManager lam;
    FunctionAnalysisManager fam;
    CGSCCAnalysisManager cgam;
    ModuleAnalysisManager mam;
    PipelineTuningOptions pto;
    pto.LoopVectorization = !scalar_only;
    pto.SLPVectorization = !scalar_only;
    PassBuilder pb(tm_.get(), pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
    mpm.run(m, mam);
  }
  std::unique_ptr<TargetMachine> tm_;
  StoreObjectCache& cache_;
};

struct Jit {
  std::unique_ptr<orc::LLJIT> lljit;
  StoreObjectCache cache;
  CachingOptimizingCompiler* compiler = nullptr;
  std::string cpu, features;
  std::string error;
  std::recursive_mutex mutex;  // one compile or removal at a time (recursive: a kernel dropped while compiling)
  std::map<std::string, std::weak_ptr<const EinsumKernel>> live;  // in-memory sharing by key text
  uint64_t counter = 0;
};

LlvmModuleHost g_host{};  // set once, by sparsejit_llvm_module

// Set at exit by a handler that sparsejit_llvm_module registers after libLLVM's static
// destructors (registered while it loaded), so it runs before them. A kernel that a host drops
// after that, from a static destructor of its own registered earlier, is left to the end of the
// process instead of reaching into a torn-down LLVM (linked at start-up, LLVM used to outlive
// every such destructor).
std::atomic<bool> g_exiting{false};

Jit& jit() {
  static Jit* j = [] {
    auto* j = new Jit;  // lives for the process (kernels may be destroyed during exit)
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    auto jtmb = orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      j->error = toString(jtmb.takeError());
      return j;
    }
    jtmb->setCodeGenOptLevel(CodeGenOpt::Aggressive);
    j->cpu = jtmb->getCPU();
    j->features = jtmb->getFeatures().getString();
    auto built = orc::LLJITBuilder()
                     .setJITTargetMachineBuilder(*jtmb)
                     .setCompileFunctionCreator([j](orc::JITTargetMachineBuilder b)
                                                    -> Expected<std::unique_ptr<orc::IRCompileLayer::IRCompiler>> {
                       auto tm = b.createTargetMachine();
                       if (!tm) return tm.takeError();
                       auto c = std::make_unique<CachingOptimizingCompiler>(std::move(*tm), j->cache);
                       j->compiler = c.get();
                       return c;
                     })
                     .create();
    if (!built) {
      j->error = toString(built.takeError());
      return j;
    }
    j->lljit = std::move(*built);
    auto& main = j->lljit->getMainJITDylib();
    auto& es = j->lljit->getExecutionSession();
    orc::SymbolMap syms;
    syms[es.intern("sj_einsum_emit")] = JITEvaluatedSymbol(pointerToJITTargetAddress(&sj_einsum_emit), JITSymbolFlags::Exported);
    syms[es.intern("sj_einsum_sort")] = JITEvaluatedSymbol(pointerToJITTargetAddress(g_host.sort_list), JITSymbolFlags::Exported);
    // The optimiser may turn a loop of stores into a call (a kernel that starts its dense
    // output zeroes a row of it: memset).
    syms[es.intern("memset")] = JITEvaluatedSymbol(pointerToJITTargetAddress(&std::memset), JITSymbolFlags::Exported);
    syms[es.intern("memcpy")] = JITEvaluatedSymbol(pointerToJITTargetAddress(&std::memcpy), JITSymbolFlags::Exported);
    syms[es.intern("memmove")] = JITEvaluatedSymbol(pointerToJITTargetAddress(&std::memmove), JITSymbolFlags::Exported);
    if (auto err = main.define(orc::absoluteSymbols(std::move(syms)))) j->error = toString(std::move(err));
    return j;
  }();
  return *j;
}

void remove_kernel(void* dylib) {
  if (g_exiting.load()) return;
  Jit& j = jit();
  std::lock_guard lock(j.mutex);
  auto* jd = static_cast<orc::JITDylib*>(dylib);
  if (auto err = j.lljit->getExecutionSession().removeJITDylib(*jd)) consumeError(std::move(err));
}

std::string host_target() {
  Jit& j = jit();
  return j.cpu + " " + j.features;
}

EinsumCompileResult compile(const LlvmCompileRequest& request) {
  EinsumCompileResult res;  // (its ms is the library's to measure: the load is part of it)
  const EinsumKernelSpec& spec = *request.spec;
  Jit& j = jit();
  if (!j.lljit) {
    res.error = "LLVM JIT unavailable: " + j.error;
    return res;
  }
  const std::string text = cat(request.key_prefix, "|cpu=", j.cpu, "|features=", j.features);
  std::lock_guard lock(j.mutex);
  if (auto it = j.live.find(text); it != j.live.end())
    if (auto k = it->second.lock()) {
      res.kernel = k;
      res.source = "memory";
      return res;
    }
  try {
    auto ctx = std::make_unique<LLVMContext>();
    auto mod = std::make_unique<Module>(text, *ctx);
    mod->setDataLayout(j.lljit->getDataLayout());
    mod->setTargetTriple(j.lljit->getTargetTriple().str());
    const std::string fname = "sj_einsum_kernel";
    NestCodegen gen(*ctx, *mod, request);
    Function* f = gen.run(fname);
    f->addFnAttr("target-cpu", spec.scalar_only ? "x86-64" : j.cpu);
    f->addFnAttr("target-features", spec.scalar_only ? "" : j.features);
    std::string verify;
    raw_string_ostream vs(verify);
    if (verifyModule(*mod, &vs)) {
      res.error = "generated IR does not verify: " + vs.str();
      return res;
    }
    auto jdx = j.lljit->createJITDylib(cat("sj_einsum_", ++j.counter));
    if (!jdx) {
      res.error = toString(jdx.takeError());
      return res;
    }
    orc::JITDylib& jd = *jdx;
    jd.addToLinkOrder(j.lljit->getMainJITDylib());
    auto kernel = std::make_shared<EinsumKernel>();
    kernel->dylib = &jd;  // removed with the kernel from here on
    kernel->remove = &remove_kernel;
    kernel->key_text = text;
    kernel->gathered = gen.gathered;
    kernel->starts_output = gen.starts_output();
    j.cache.request = &request;
    j.cache.hit = false;
    if (j.compiler) j.compiler->scalar_only = spec.scalar_only;
    if (auto err = j.lljit->addIRModule(jd, orc::ThreadSafeModule(std::move(mod), std::move(ctx)))) {
      res.error = toString(std::move(err));
      j.cache.request = nullptr;
      kernel->dylib = nullptr;
      (void)j.lljit->getExecutionSession().removeJITDylib(jd);
      return res;
    }
    auto addr = j.lljit->lookup(jd, fname);
    j.cache.request = nullptr;
    if (!addr) {
      res.error = toString(addr.takeError());
      kernel->dylib = nullptr;
      if (auto err = j.lljit->getExecutionSession().removeJITDylib(jd)) consumeError(std::move(err));
      return res;
    }
    kernel->fn = addr->toPtr<EinsumKernelFn>();
    res.source = j.cache.hit ? "disk" : "compiled";
    j.live[text] = kernel;
    // The lock guards removal too, so the kernel is handed out with it released.
    res.kernel = std::move(kernel);
  } catch (const std::exception& ex) {
    res.error = ex.what();
    return res;
  }
  return res;
}

constexpr LlvmModuleApi kApi{&compile, &host_target};

}  // namespace
}  // namespace sj::jit

// The one symbol the module exports (the library looks it up by name: kLlvmModuleEntry).
extern "C" __attribute__((visibility("default"))) const sj::jit::LlvmModuleApi* sparsejit_llvm_module(
    const sj::jit::LlvmModuleHost* host, std::string* error) {
  using namespace sj::jit;
  if (std::strcmp(host->build_id, sj::kBuildId) != 0) {
    *error = sj::cat("it is from build ", sj::kBuildId, ", the library is build ", host->build_id);
    return nullptr;
  }
  if (!g_host.sort_list) {  // (loaded once per process; the same host every time)
    g_host = *host;
    std::atexit([] { g_exiting.store(true); });
  }
  return &kApi;
}

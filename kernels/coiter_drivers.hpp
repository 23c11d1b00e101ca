// Drivers over the coiteration kernels (jit/coiter_jit.hpp): inner-product SpGEMM (dense,
// sparse and masked output), row-wise SpMSpV with a sparse x (dense or sparse y), the
// element-wise product with sparse output, and a batched dot. Single-threaded; results are
// bit-identical to the reference kernels (kernels/reference.hpp) because every kernel adds
// its products in coordinate order from the first one (see jit/coiter_spec.hpp).
//
// PER-PAIR DISPATCH (why the drivers never lose much to the scalar loop). Before a segment
// pair reaches a kernel the driver
//   1. skips it when either side is empty or the coordinate ranges [first, last] do not
//      overlap (no product can form: nothing is written, as for a kernel returning 0); the
//      inner-product sweep tests ranges only where a sample of its pairs says the skipped
//      merges outweigh the test and its mispredictions (banded: yes; scattered: no), and runs
//      rows whose every pair is short in a loop that is exactly the scalar baseline;
//   2. when the pair could take the fast lane (min(na, nb) >= 2n), trims both segments to the
//      overlapping coordinate range (a binary search on each end; coordinates outside it
//      cannot match, so the products and their order are unchanged); short pairs skip this;
//   3. sends the trimmed pair to the generated SIMD kernel only when min(na, nb) >= the fast
//      threshold (2n by default: below n the fast lane never runs, and with one block it does
//      not pay for the indirect call; measured on 0.1% density and on ca-GrQc, where a
//      threshold of n lost 10-15% to the scalar loop), else to the inlined branchy scalar merge;
//      with the automatic rule the kernel is chosen per pair from its length (TIERS below), so
//      matrices whose row lengths spread widely send each pair to the kernel that pays for it
//      (the element-wise multiply on AVX-512 routes otherwise: coiter_ewise_mult below).
// Kernels are looked up once per plan (resolve_coiter), so a call on a tiny input costs no
// kernel-cache lookup, and coiter_spgemm_dense_into writes into caller memory.
// Bool values (or-and over uint8_t) have no generated kernel and always take the scalar one.
//
// SPEC RULE (choose_coiter_spec; every field a caller forces through sj_op_options wins):
//   m = min(mean segment length of the left operand, of the right one)
//   with VP2INTERSECT (AVX-512 host):  m >= 96: n = 16 (i32; 8 for i64), phases "111", native
//                                      m >= 12: n = 8, phases "111", native
//                                      else     n = 4, phases "001", broadcast
//   otherwise (AVX-512 without it, AVX2): n = 4, phases "001", broadcast (the Splyce paper's
//                                      best; rotate-based wide blocks did not beat it there)
//   skip_empty is on (the compute phase is branched over when no lane matched); skip_disjoint
//   is off (the driver already does it, once per pair, with trimming).
//   A forced width 16 with i64 coordinates becomes 8 (the widest the i64 kernels have).
//   The thresholds come from bench/bench_coiter.cpp on this machine (mean 250: n16/111/native
//   best; mean 50: n8/111/native; mean 5: n4/001 within noise of everything, the fast lane
//   rarely runs).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "jit/coiter_jit.hpp"
#include "src/allocator.hpp"
#include "src/tensor.hpp"

namespace sj {
struct Workers;
}

namespace sj::kernels {

struct CoiterKernels;

// What a driver runs: the spec of its SIMD kernels (the action is set per driver) and
// whether to use them at all.
struct CoiterConfig {
  jit::CoiterSpec spec;     // action is ignored; value/index are set from the operands
  bool use_jit = true;      // false: the scalar merge everywhere (the baseline)
  bool trim = true;         // skip disjoint pairs and trim to the overlap (step 1-2 above)
  int64_t min_fast = -1;    // fast-lane threshold on min(na, nb); -1: twice the effective width
  // Per-pair tiers (the automatic rule, when the caller forced no width/phases/method): each
  // pair goes to the widest kernel its trimmed length min(na, nb) can fill, see TIERS below.
  bool tiered = false;
  // Kernels looked up once (resolve_coiter); without them a driver looks them up in the
  // kernel cache at the start of each call. Ignored when they were resolved for other types.
  std::shared_ptr<const CoiterKernels> kernels;
};

// TIERS (auto rule, per pair; thresholds on min(na, nb), from bench_coiter and
// bench_inner_spgemm on this machine: with a threshold of 8 the n4 kernel lost 10-25% to the
// inlined merge on bcsstk06 and hangGlider_2, rows of ~10-20; at 24 it no longer did):
//   min < 24                        inlined scalar merge (no call, no range test, no trim)
//   24 <= min < 48 (or no VP2INTERSECT)  n4, phases 001, broadcast
//   48 <= min < 96 (VP2INTERSECT)   n8, phases 111, native
//   min >= 96      (VP2INTERSECT)   n16 (i64: n8), phases 111, native
// All kernels add their products in coordinate order, so mixing them per pair changes no bit.

// The config for an operation's options: the spec rule below, tiered when the caller forced
// none of width, phases and method.
CoiterConfig coiter_config(const sj_op_options& options, IndexType it, ValueType vt, double mean_a, double mean_b);

// Looks the kernels of `cfg` up once for these types and semiring (all three actions, every
// tier) and returns cfg with them attached, so that a driver call costs no cache lookup.
// `with_emit`: the emit kernels (element-wise), else the dot ones. `codegen_us`
// receives the fresh code-generation time (0 when all were memoised), `generated` whether any
// kernel is generated code (false: the scalar merge everywhere). Used by prepare().
CoiterConfig resolve_coiter(const CoiterConfig& cfg, IndexType it, ValueType vt, sj_semiring semiring,
                            bool with_emit = false, double* codegen_us = nullptr, bool* generated = nullptr);

// The spec rule above. `mean_a`, `mean_b`: mean segment lengths (nnz / segments) of the two
// operands whose segments are intersected. Throws SJ_ERR_INVALID_ARGUMENT for a malformed
// phase mask (check_request already refuses those at the C boundary).
jit::CoiterSpec choose_coiter_spec(const sj_op_options& options, IndexType it, ValueType vt,
                                   double mean_a, double mean_b);

// Compiles (or finds memoised) the kernels a config needs for `action` and returns the
// effective spec; `codegen_us` receives the fresh code-generation time (0 when memoised),
// `generated` whether the kernel is generated code (false: portable). Used by prepare().
jit::CoiterSpec warm_coiter_kernel(const CoiterConfig& cfg, jit::CoiterAction action,
                                   double* codegen_us = nullptr, bool* generated = nullptr);

// C = A * B by inner products: A CSR (rows x k), Bcsc = B in CSC form (k x cols), same index
// and value type. Dense row-major result (zero() where no product formed) when
// `dense_output`, else CSR with sorted columns, (i,j) stored iff a product formed; the sparse
// result is assembled row by row (each candidate column dotted and appended, no atomics).
Tensor coiter_spgemm(const Tensor& A, const Tensor& Bcsc, sj_semiring semiring, const CoiterConfig& cfg,
                     bool dense_output, const Allocator& alloc);

// The dense product written into caller memory: `out` holds rows x cols values of A's value
// type, row-major; every element is written (zero() where no product formed). No allocation.
void coiter_spgemm_dense_into(const Tensor& A, const Tensor& Bcsc, sj_semiring semiring, const CoiterConfig& cfg,
                              void* out);

// C<M> = A * B: a dot only at M's stored (i,j) (M CSR, its values ignored; same index type).
// `workers` (here and below): the call's threads (src/work_partition.hpp); null: serial.
Tensor coiter_masked_spgemm(const Tensor& M, const Tensor& A, const Tensor& Bcsc, sj_semiring semiring,
                            const CoiterConfig& cfg, const Allocator& alloc, Workers* workers = nullptr);

// y = A * x, A CSR, x a sparse vector: each row of A dotted with x. Dense y (zero() where no
// product) when `dense_output`, else a sparse vector with y(i) stored iff a product formed.
Tensor coiter_spmspv(const Tensor& A, const Tensor& x, sj_semiring semiring, const CoiterConfig& cfg,
                     bool dense_output, const Allocator& alloc, Workers* workers = nullptr);

// C = A .* B, A and B compressed with the same orientation and shape (CSR with CSR or CSC
// with CSC); the result has A's orientation. One pass: arrays sized by a bound on the result
// (ewise::assemble_rows), each pair emitted at the running end (the emit kernel's vpcompress
// stores), shrunk when the bound was more than twice the result. The row loop is
// ewise::mult_rows: short pairs take the merge schedule's row merge, and with the automatic
// tiers on AVX-512 (int32) pairs up to 64 a side the blocks, longer ones the emit kernel or the
// blocks by a sample of the call's matches (ewise::long_pair_route).
Tensor coiter_ewise_mult(const Tensor& A, const Tensor& B, sj_semiring semiring, const CoiterConfig& cfg,
                         const Allocator& alloc, Workers* workers = nullptr);

// Batched dot over views: for each q in [0, npairs), out[q] = the dot of segment ra[q] of
// `left` with segment rb[q] of `right` (zero() where nothing matched); returns the number of
// pairs with at least one match. Typed: I in {int32_t, int64_t}, V in {float, double}.
template <class I, class V>
int64_t coiter_batched_dot(const CsView<I, V>& left, const int64_t* ra, const CsView<I, V>& right,
                           const int64_t* rb, int64_t npairs, sj_semiring semiring, const CoiterConfig& cfg,
                           V* out);

// Whether the element-wise multiply of `it` coordinates under `cfg` keeps pairs up to 64 a
// side in the AVX-512 blocks and routes longer ones by a sample of the call's matches
// (ewise::long_pair_route): the automatic kernel tiers resolved to AVX-512, int32, blocks
// available. Otherwise (a forced kernel or ISA, int64) pairs route by length alone. The one
// test both the run and the explain text ask.
bool ewise_samples_long_pairs(const CoiterConfig& cfg, IndexType it);

// "n8 p111 native isa=avx512, fast lane at min(na,nb) >= 8, trim" for explain notes.
std::string describe(const CoiterConfig& cfg);

}  // namespace sj::kernels

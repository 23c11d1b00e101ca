// Row-wise (Gustavson) SpGEMM kernels: C = A*B with A, B CSR of one index type, over any
// semiring, with a dense accumulator or a hash accumulator (Nagasaka et al.), sparse CSR
// output with sorted columns or a dense row-major output; and masked SpGEMM by
// saxpy-then-mask (Gustavson restricted to the mask row) or by a dot product per mask entry.
//
// Exactness: every kernel walks A's row in increasing k and starts each output value from its
// first product, so results are bit-identical to the reference kernels (reference.hpp).
//
// Threads: rows are split by estimated work (src/work_partition.hpp) among the `w` threads,
// each with its own thread-local workspaces; outputs are joined in row order
// (kernels/sparse_assembly.hpp), so results do not depend on the thread count.
//
// Output assembly: the result arrays are allocated once through the caller's allocator and
// each row is written straight into them. Their size is an upper bound (sum over rows of
// min(row flops, cols), or nnz(M) for masked products), computed in one O(nnz(A)) pass; rows
// are written back to back, so only the first nnz entries are ever touched. When that bound
// would be a large allocation (see kUpperBoundBytes) a symbolic count pass sizes the arrays
// exactly instead.
#pragma once
#include <cstdint>

#include "kernels/timed_choice.hpp"
#include "src/allocator.hpp"
#include "src/tensor.hpp"
#include "src/work_partition.hpp"

namespace sj {

enum class SpgemmAccumulator { Dense, Hash };

// Above this many bytes of upper-bound output arrays (or half the allocator's memory cap),
// SpGEMM counts the exact output size first.
inline constexpr int64_t kUpperBoundBytes = int64_t(256) << 20;

// Gustavson's dense accumulator (a stamp and a value per column of B, plus a bitmap of the
// columns) is sized by B's column count, not by the work. It is used only while it is small
// (at most kDenseWorkspaceFloor bytes) or not much larger than the data the product touches
// (kDenseWorkspacePerWork bytes of workspace per multiply or entry of A), and never over the
// allocator's memory cap. Otherwise ("wide" products, e.g. a few entries in 2^31 declared
// columns) the kernels use the hash accumulator without the bitmap (rows sorted by
// comparison), and masked saxpy searches the mask row instead of marking columns: workspaces
// proportional to the work, results bit-identical (same products in the same order).
inline constexpr int64_t kDenseWorkspaceFloor = int64_t(32) << 20;
inline constexpr int64_t kDenseWorkspacePerWork = 64;

// Bytes of the dense accumulator and bitmap for `cols` columns of `value_bytes` values.
size_t dense_workspace_bytes(int64_t cols, int value_bytes);
// True when that workspace would be too large for a product doing `work` multiplies and
// entry visits (see above); `cap` is the allocator's memory cap (0 = none).
bool dense_workspace_too_wide(int64_t cols, int value_bytes, double work, size_t cap);

// The dense accumulator has two loops over a row's products that give the same result: one
// branches on "is this column new to the row", one does not (it pays a few more instructions
// per product to never mispredict). Which is faster depends on how predictable that test is
// for the matrix, so a plan's executions try both and then keep the faster (`loop_choice`,
// kernels/timed_choice.hpp); without one (a one-off product) the branchy loop runs. Tests pin
// one loop (process-wide) to cover both.
enum class DenseRowLoop { Timed, Branching, BranchFree };
void set_dense_row_loop(DenseRowLoop loop);
// Products with fewer multiplies keep the branchy loop without timing (see the kernel).
inline constexpr int64_t kTimedRowLoopMinFlops = 16384;
// A product whose first execution found at least this many multiplies per result entry keeps
// the branchy loop without timing: most products of a row then land on a column already
// seen, the predictor learns that, and the branchy loop does less work. On the 33 real
// matrices timed (A*A), all 10 at 4 or more (bcsstk06-16, bcsstm13, dwt_992, lp_e226, mbeacxc,
// tomography, zenios: 6-38 multiplies per entry) chose the branchy loop, by 1.1-1.4x; the
// trials had run the slower loop twice on each.
inline constexpr int64_t kBranchyMultipliesPerEntry = 4;
// Why a TimedChoice of the row loop settled without its trials (TimedChoice::settle's reason).
enum RowLoopSettledBy : int { kRowLoopTimed = 0, kRowLoopSmallProduct = 1, kRowLoopRepeatedColumns = 2 };

// C = A*B (A, B CSR, same index and value type). Dense row-major result when `dense_output`.
// A wide product (dense_workspace_too_wide) runs the hash accumulator whichever `acc` asks.
Tensor spgemm_gustavson(const Tensor& A, const Tensor& B, sj_semiring semiring, bool dense_output,
                        SpgemmAccumulator acc, const Allocator& alloc, Workers& w,
                        const TimedChoice* loop_choice = nullptr);

// C = A*B computing only the values, over the structure `s` kept from an earlier product of
// operands with exactly A's and B's structure (kernels/spgemm_structure.hpp; the caller has
// checked that). The result shares s's position and coordinate arrays and is bit-identical
// to spgemm_gustavson's.
struct SpgemmStructure;
Tensor spgemm_values_only(const Tensor& A, const Tensor& B, const SpgemmStructure& s, sj_semiring semiring,
                          const Allocator& alloc, Workers& w);

// C<M> = A*B by saxpy-then-mask (M, A, B CSR; only M's structure is read); with `complement`,
// C<!M> = A*B: the entries of A*B where M stores nothing.
Tensor masked_spgemm_saxpy(const Tensor& M, const Tensor& A, const Tensor& B, bool complement, sj_semiring semiring,
                           const Allocator& alloc, Workers& w);

// C<M> = A*B by one sparse dot product per stored M(i,j): A's row i against B's column j.
// `Bcsc` is B in CSC form (same index type as A).
Tensor masked_spgemm_dot(const Tensor& M, const Tensor& A, const Tensor& Bcsc, sj_semiring semiring,
                         const Allocator& alloc, Workers& w);

}  // namespace sj

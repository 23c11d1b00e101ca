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

#include "src/allocator.hpp"
#include "src/tensor.hpp"
#include "src/work_partition.hpp"

namespace sj {

enum class SpgemmAccumulator { Dense, Hash };

// Above this many bytes of upper-bound output arrays (or half the allocator's memory cap),
// SpGEMM counts the exact output size first.
inline constexpr int64_t kUpperBoundBytes = int64_t(256) << 20;

// C = A*B (A, B CSR, same index and value type). Dense row-major result when `dense_output`.
Tensor spgemm_gustavson(const Tensor& A, const Tensor& B, sj_semiring semiring, bool dense_output,
                        SpgemmAccumulator acc, const Allocator& alloc, Workers& w);

// C<M> = A*B by saxpy-then-mask (M, A, B CSR; only M's structure is read).
Tensor masked_spgemm_saxpy(const Tensor& M, const Tensor& A, const Tensor& B, sj_semiring semiring,
                           const Allocator& alloc, Workers& w);

// C<M> = A*B by one sparse dot product per stored M(i,j): A's row i against B's column j.
// `Bcsc` is B in CSC form (same index type as A).
Tensor masked_spgemm_dot(const Tensor& M, const Tensor& A, const Tensor& Bcsc, sj_semiring semiring,
                         const Allocator& alloc, Workers& w);

}  // namespace sj

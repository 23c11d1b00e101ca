// The structure of a SpGEMM product, kept by a plan so that its later executions on operands
// of the same structure compute only the values (the numeric phase), as MKL's
// inspector-executor (sparse_sp2m's stages) and cuSPARSE's SpGEMM reuse do.
//
// Why: finding which columns each output row holds and putting them in order is half or more
// of a Gustavson product with short output rows (the marks, the column list and the sort per
// row: cage8, bcsstk21, add32 ~1.9x). With the structure known, a row is three plain loops:
// set its columns' accumulators to the semiring's exact identity, add every product with no
// test, gather the sums in the kept order.
//
// Soundness: the kept structure is used only when both operands have exactly the structure
// it was computed from (positions and coordinates, compared in full unless the arrays are
// provably the same: see OperandStructure). Values always come from the operands of the call,
// and products are added in the same order as the full kernel, so results are bit-identical
// to it (and to the reference).
//
// Results share the kept position and coordinate arrays (read-only, reference-counted):
// only the values are allocated per execution.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "src/allocator.hpp"
#include "src/tensor.hpp"

namespace sj {

struct DerivedForms;

// One compressed matrix's structure (its second level's positions and coordinates) as it
// was when a product's structure was kept, and the test of whether another matrix has it.
class OperandStructure {
 public:
  // Records t's structure: t's own arrays when the library owns them (an owned array never
  // changes and cannot be reused while referenced, so the same array means the same
  // structure), else copies (a caller's borrowed arrays may hold anything once their tensor
  // is destroyed).
  static OperandStructure record(const Tensor& t, const Allocator& alloc);
  // Whether t has exactly the recorded structure: the same arrays as recorded when that
  // proves it (owned arrays, or the same live handle), else compared entry by entry.
  bool same_as(const Tensor& t) const;
  // Bytes this record copied (0 when it shares owned arrays).
  size_t copied_bytes() const { return copied_; }

 private:
  Buffer pos_, crd_;                     // the recorded arrays (shared or copied)
  const void* given_pos_ = nullptr;      // the arrays t had
  const void* given_crd_ = nullptr;
  bool shared_ = false;                  // pos_/crd_ are t's own owned arrays
  std::weak_ptr<DerivedForms> handle_;   // t's handle: while the same handle lives, its arrays are unchanged
  int64_t outer_ = -1, inner_ = -1, nnz_ = -1;
  IndexType index_type_ = IndexType::I32;
  size_t copied_ = 0;
};

// The kept structure of C = A*B: C's positions and coordinates (exactly sized, shared with
// the results of later executions) and what the product was computed from.
struct SpgemmStructure {
  OperandStructure a, b;
  Tensor pattern;             // CSR rows x cols: pos and crd set, no values
  std::vector<int64_t> work;  // prefix sums of each row's multiplies (+ its entries): the parallel split
  int64_t kept_at = 0;        // the plan execution (1-based) whose result it came from
  size_t bytes() const;       // memory held for it (the pattern and copied operand arrays)
};

// Above this many bytes a structure is not kept (memory a plan would hold for its lifetime);
// nor over a quarter of the allocator's memory cap.
inline constexpr size_t kKeptStructureMaxBytes = size_t(256) << 20;

// The structure of C = A*B (C: a sparse CSR result of spgemm_gustavson on A and B), or null
// where it is not worth keeping: too large (above), or a product whose dense accumulator
// would be too wide for the values-only kernel (spgemm_gustavson.hpp). Fails only with
// SJ_ERR_OUT_OF_MEMORY (the copies).
std::shared_ptr<const SpgemmStructure> keep_spgemm_structure(const Tensor& A, const Tensor& B, const Tensor& C,
                                                             const Allocator& alloc, int64_t execution);

// A plan's kept structure, shared by its concurrent executions.
class KeptStructureSlot {
 public:
  // The kept structure when A and B have its operands' structure, else null.
  std::shared_ptr<const SpgemmStructure> match(const Tensor& A, const Tensor& B) const;
  void keep(std::shared_ptr<const SpgemmStructure> s);
  std::shared_ptr<const SpgemmStructure> current() const;

  // Counts for explain: executions that computed only values, and those that computed the
  // structure too.
  std::atomic<int64_t> values_only{0};
  std::atomic<int64_t> full{0};

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const SpgemmStructure> kept_;
};

}  // namespace sj

// The coiteration kernel spec: every input of the coiteration code generator, and the C ABI
// of the functions it returns. One struct, one packing, one text form.
//
// A kernel intersects two sorted, unique coordinate segments a = (ac, av, na) and
// b = (bc, bv, nb) and, for each coordinate present in both, performs its action:
//
//   dot:   int64_t fn(const I* ac, const V* av, int64_t na,
//                     const I* bc, const V* bv, int64_t nb, V* result)
//          Returns the number of matched pairs. When it is > 0, writes *result = the semiring
//          sum of mul(av[i], bv[j]) over matches. With spec.with_factor, *result is read on
//          entry as a loop-invariant factor f and the result is mul(sum, f); *result is left
//          untouched when there is no match.
//   emit:  int64_t fn(const I* ac, const V* av, int64_t na,
//                     const I* bc, const V* bv, int64_t nb, I* out_crd, V* out_val)
//          Writes the matched coordinates and mul(av[i], bv[j]) compactly, in coordinate
//          order; returns the count. out_crd/out_val need room for min(na, nb) entries; a
//          kernel never writes beyond the count it returns.
//   count: int64_t fn(const I* ac, int64_t na, const I* bc, int64_t nb)
//          Returns the number of matches (the symbolic pass of a sparse output).
//
// Contract on the inputs (callers validate; kernels do not): na, nb >= 0; coordinates within
// a segment strictly increasing and >= 0 (any value up to INT32_MAX / INT64_MAX); pointers
// may be unaligned; a segment with n == 0 may have null pointers. A kernel reads only
// [ac, ac + na), [av, av + na), [bc, bc + nb), [bv, bv + nb).
//
// Exactness: with reassociate == false the dot result is bit-identical to the scalar
// portable kernel (kernels/coiter_portable.hpp): products accumulated in increasing
// coordinate order starting from the first product. Generated code starts from the exact
// identity of the semiring's add (-0.0 for +, +inf for min, -inf for max, 0 for or), which
// gives the same bits for every input except NaN products under min-plus / max-times (where
// the NaN may be dropped instead of kept). With reassociate == true the vector compute phase
// keeps per-lane partial sums (results within rounding of the exact one).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sparsejit/sparsejit.h"
#include "src/types.hpp"

namespace sj::jit {

enum class CoiterAction : uint8_t { Dot = 0, Emit = 1, Count = 2 };

// How phase 1 compares the two blocks of n coordinates.
enum class CoiterMethod : uint8_t {
  Broadcast = 0,  // the Splyce paper: all pairs, one broadcast compare per element, both ways
  Rotate = 1,     // n rotations of b's block compared to a's (emulated VP2INTERSECT)
  Native = 2,     // the vp2intersect instruction (falls back to Rotate where absent)
};

// Phase mask bits: 1 = SIMD, 0 = scalar. Text form "321": "001" = only phase 1 SIMD.
inline constexpr uint8_t kPhaseCompare = 1;  // phase 1: load + compare
inline constexpr uint8_t kPhaseCompute = 2;  // phase 2: extract matched values + compute
inline constexpr uint8_t kPhaseAdvance = 4;  // phase 3: pointer advance

struct CoiterSpec {
  CoiterAction action = CoiterAction::Dot;
  ValueType value = ValueType::F64;   // F32 or F64 (or-and works on 0/1 floating values)
  IndexType index = IndexType::I32;
  sj_semiring semiring = SJ_SEMIRING_PLUS_TIMES;
  uint8_t width = 4;                  // n: 4, 8, 16 for I32; 4, 8 for I64
  uint8_t phases = kPhaseCompare;     // the paper's best, "001"
  CoiterMethod method = CoiterMethod::Broadcast;
  bool reassociate = false;           // allow vector partial sums (dot only)
  bool with_factor = false;           // dot: multiply the sum by *result read on entry
  bool skip_empty = false;            // branch over the compute phase when no lane matched
  bool skip_disjoint = false;         // return at once when the coordinate ranges don't overlap
  sj_isa isa = SJ_ISA_AUTO;           // AUTO: the best the CPU (and SPARSEJIT_ISA) allows

  bool operator==(const CoiterSpec&) const = default;

  // Every field in one integer: the memo key of the JIT and the input of kernel keys.
  uint64_t pack() const;
  // "dot f64 i32 plus-times n4 p001 broadcast isa=avx512" (+ flags): for logs and names.
  std::string to_string() const;
};

// Checks the fields are in range (width allowed for the index type, value type float);
// throws sj::Error(SJ_ERR_INVALID_ARGUMENT) otherwise.
void validate(const CoiterSpec& spec);

// "001" <-> 1; nullopt unless exactly three '0'/'1' characters.
std::optional<uint8_t> parse_phase_mask(std::string_view text);
std::string phase_mask_string(uint8_t phases);

std::string_view to_string(CoiterAction action);
std::string_view to_string(CoiterMethod method);
std::optional<CoiterMethod> parse_coiter_method(std::string_view name);  // broadcast|rotate|native

// The C ABI of generated and portable kernels (SysV x86-64, all arguments in registers
// except the 7th and 8th, which are on the stack).
template <class I, class V>
using CoiterDotFn = int64_t (*)(const I* ac, const V* av, int64_t na, const I* bc, const V* bv,
                                int64_t nb, V* result);
template <class I, class V>
using CoiterEmitFn = int64_t (*)(const I* ac, const V* av, int64_t na, const I* bc, const V* bv,
                                 int64_t nb, I* out_crd, V* out_val);
template <class I>
using CoiterCountFn = int64_t (*)(const I* ac, int64_t na, const I* bc, int64_t nb);

}  // namespace sj::jit

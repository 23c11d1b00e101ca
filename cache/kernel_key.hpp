// KernelKey: every input of a code generator (or of a remembered decision) in one plain,
// fixed-layout struct, plus the library version and build id. It is the only name a cached
// kernel, object file or plan decision has: the in-memory cache and the persistent store key
// by it, logs and explain print its to_string(), the warm-up manifest is that text, one key
// per line (parse() reads it back).
//
// The struct is POD with no padding (std::has_unique_object_representations): two keys are
// equal exactly when their bytes are, and hash64() over the bytes is the one hash. Unset
// fields are zero; "none" values are spelled "-" in the text form.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "sparsejit/sparsejit.h"
#include "src/types.hpp"

namespace sj::jit {
struct CoiterSpec;
}

namespace sj::cache {

// 64-bit hash of bytes, stable across processes, builds and machines (file names and entry
// checksums depend on it): a wyhash-style multiply-fold over 8-byte words, written here
// (absl::Hash is seeded per process, so it cannot name files).
uint64_t hash64(const void* data, size_t size, uint64_t seed = 0);

// What produced the cached thing; also the first word of its text form.
enum class KeyKind : uint8_t {
  None = 0,
  Coiter = 1,      // an asmjit coiteration kernel (jit/coiter_spec.hpp)
  Plan = 2,        // a plan / calibration decision (schedule, width, phases) for a stats bucket
  LlvmObject = 3,  // an LLVM ORC object for an index-notation loop nest
};

// Storage formats of operands, as small numbers: sj_format + 1, 0 = none (operand absent),
// 15 = a level list that matches no named format.
enum class KeyFormat : uint8_t {
  None = 0,
  Csr = 1,
  Csc = 2,
  Dcsr = 3,
  Coo = 4,
  SparseVector = 5,
  Dense = 6,
  Csf = 7,
  DenseColMajor = 8,
  Other = 15,
};
KeyFormat key_format(sj_format f);
std::string_view to_string(KeyFormat f);

// Bits of KernelKey::flags.
inline constexpr uint8_t kKeyReassociate = 1;   // coiter: vector partial sums allowed
inline constexpr uint8_t kKeyWithFactor = 2;    // coiter dot: multiply by *result
inline constexpr uint8_t kKeySkipEmpty = 4;     // coiter: branch over an empty compute phase
inline constexpr uint8_t kKeySkipDisjoint = 8;  // coiter: early exit on disjoint ranges
inline constexpr uint8_t kKeyTransposeA = 16;   // op option transpose_a
inline constexpr uint8_t kKeyTransposeB = 32;   // op option transpose_b
inline constexpr uint8_t kKeyDenseOutput = 64;  // op option dense_output
inline constexpr uint8_t kKeyMaskComplement = 128;  // op option mask_complement (plan decisions)

// Bits of KernelKey::isa_features: the CPU features the generated code may use.
inline constexpr uint32_t kFeatureAvx2 = 1;          // AVX2 + BMI1/2 + POPCNT
inline constexpr uint32_t kFeatureAvx512 = 2;        // AVX-512 F/VL/BW/DQ
inline constexpr uint32_t kFeatureVp2intersect = 4;  // AVX512_VP2INTERSECT

// The features of this host, as bits.
uint32_t host_feature_bits();

inline constexpr uint8_t kNoOp = 0xff;  // KernelKey::op when no drop-in operation applies
inline constexpr uint8_t kKeyLayoutVersion = 1;

struct KernelKey {
  uint8_t layout = kKeyLayoutVersion;  // bumps when fields change meaning
  KeyKind kind = KeyKind::None;
  uint8_t op = kNoOp;              // sj_op, or kNoOp
  uint8_t action = 0;              // jit::CoiterAction (coiter keys)
  uint8_t semiring = 0;            // sj_semiring
  uint8_t schedule = 0;            // sj_schedule (plan keys: the chosen schedule)
  IndexType index = IndexType::I32;
  ValueType value = ValueType::F64;
  uint8_t width = 0;               // SIMD vector width n (0 = none/auto)
  uint8_t phases = 0;              // phase mask bits (jit/coiter_spec.hpp)
  uint8_t method = 0;              // jit::CoiterMethod
  uint8_t isa = 0;                 // sj_isa the code is generated for
  uint8_t flags = 0;               // kKey* bits
  KeyFormat formats[3] = {};       // operand formats in call order (SpGEMM A,B; masked M,A,B)
  KeyFormat out_format = KeyFormat::None;
  uint8_t reserved[3] = {};        // zero; keeps the layout explicit
  uint32_t isa_features = 0;       // kFeature* bits
  uint64_t detail = 0;             // kind-specific: plan keys, the statistics bucket; LLVM
                                   // objects, hash64 of the canonical expression; coiter, 0
  char version[16] = {};           // SPARSEJIT_VERSION_STRING, NUL-padded
  char build_id[48] = {};          // sj::kBuildId (src/build_id.hpp), NUL-padded

  // A key of this kind with this library's version and build id filled in (every other
  // field zero / none). Use the factories below or set the fields after.
  static KernelKey make(KeyKind kind);
  // The key of a coiteration kernel: pass the effective spec (jit::effective_spec), the one
  // the generator builds; isa_features are the host's.
  static KernelKey for_coiter(const jit::CoiterSpec& spec);
  // The coiteration spec this key names (throws sj::Error(SJ_ERR_INVALID_ARGUMENT) unless
  // kind == Coiter).
  jit::CoiterSpec coiter_spec() const;

  uint64_t hash() const { return hash64(this, sizeof(KernelKey)); }
  // True when version and build id are this library's.
  bool is_current_build() const;
  // The same key with this library's version and build id (for manifests from other builds).
  KernelKey with_current_build() const;

  // "coiter op=- action=dot value=f64 index=i32 semiring=plus-times schedule=auto width=4
  //  phases=001 method=broadcast isa=avx512 features=avx2,avx512 formats=-,-,- out=- flags=-
  //  detail=0 version=0.1.0 build=abc-2024..." (one line, fields always in this order).
  std::string to_string() const;
  // The file name of the entry in the persistent store: "<kind>-<16 hex of hash()>.sje".
  std::string file_name() const;

  // Reads the to_string() form back. Fields are "name=value" in any order after the kind;
  // absent ones take their defaults; version/build absent = this library's. Throws
  // sj::Error(SJ_ERR_PARSE, "...") naming the bad token.
  static KernelKey parse(std::string_view text);

  friend bool operator==(const KernelKey& a, const KernelKey& b);
  friend bool operator!=(const KernelKey& a, const KernelKey& b) { return !(a == b); }
};

static_assert(std::is_trivially_copyable_v<KernelKey>);
static_assert(std::is_standard_layout_v<KernelKey>);
static_assert(std::has_unique_object_representations_v<KernelKey>, "KernelKey must have no padding");
static_assert(sizeof(KernelKey) == 96, "KernelKey layout changed: bump kKeyLayoutVersion");

struct KernelKeyHash {
  size_t operator()(const KernelKey& k) const { return static_cast<size_t>(k.hash()); }
};

std::string_view to_string(KeyKind kind);

}  // namespace sj::cache

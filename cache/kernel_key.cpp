#include "cache/kernel_key.hpp"

#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "jit/coiter_spec.hpp"
#include "jit/isa.hpp"
#include "sparsejit_build_info.hpp"
#include "src/build_id.hpp"
#include "src/error.hpp"

namespace sj::cache {

static_assert(sizeof(SPARSEJIT_VERSION_STRING) <= sizeof(KernelKey{}.version), "version string too long");
static_assert(sizeof(KernelKey{}.build_id) == kBuildIdCapacity, "KernelKey::build_id holds a build id");

namespace {

constexpr uint64_t kP0 = 0xa0761d6478bd642full;
constexpr uint64_t kP1 = 0xe7037ed1a0b428dbull;
constexpr uint64_t kP2 = 0x8ebc6af09c88c6e3ull;
constexpr uint64_t kP3 = 0x589965cc75374cc3ull;

inline uint64_t mum(uint64_t a, uint64_t b) {
  unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}
inline uint64_t read64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t read_tail(const uint8_t* p, size_t n) {  // 1..7 bytes
  uint64_t v = 0;
  std::memcpy(&v, p, n);
  return v;
}

// name <-> value tables for the small fields.
template <class E, size_t N>
using Table = std::array<std::pair<std::string_view, E>, N>;

constexpr Table<KeyKind, 4> kKinds{{
    {"none", KeyKind::None}, {"coiter", KeyKind::Coiter}, {"plan", KeyKind::Plan}, {"llvm", KeyKind::LlvmObject}}};
constexpr Table<KeyFormat, 10> kFormats{{{"-", KeyFormat::None},
                                         {"csr", KeyFormat::Csr},
                                         {"csc", KeyFormat::Csc},
                                         {"dcsr", KeyFormat::Dcsr},
                                         {"coo", KeyFormat::Coo},
                                         {"sparse-vector", KeyFormat::SparseVector},
                                         {"dense", KeyFormat::Dense},
                                         {"csf", KeyFormat::Csf},
                                         {"dense-col-major", KeyFormat::DenseColMajor},
                                         {"other", KeyFormat::Other}}};
constexpr Table<uint8_t, 7> kFlags{{{"reassoc", kKeyReassociate},
                                    {"factor", kKeyWithFactor},
                                    {"skip-empty", kKeySkipEmpty},
                                    {"skip-disjoint", kKeySkipDisjoint},
                                    {"transpose-a", kKeyTransposeA},
                                    {"transpose-b", kKeyTransposeB},
                                    {"dense-output", kKeyDenseOutput}}};
constexpr Table<uint32_t, 3> kFeatures{
    {{"avx2", kFeatureAvx2}, {"avx512", kFeatureAvx512}, {"vp2intersect", kFeatureVp2intersect}}};

template <class E, size_t N>
std::string_view name_of(const Table<E, N>& t, E e) {
  for (auto& [n, v] : t)
    if (v == e) return n;
  return "?";
}
template <class E, size_t N>
bool lookup(const Table<E, N>& t, std::string_view name, E* out) {
  for (auto& [n, v] : t)
    if (n == name) return *out = v, true;
  return false;
}

// "a,b,c" from the set bits; "-" when none.
template <class E, size_t N>
std::string bits_text(const Table<E, N>& t, E bits) {
  std::string s;
  for (auto& [n, v] : t)
    if (bits & v) s += s.empty() ? "" : ",", s += n;
  return s.empty() ? "-" : s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) out.push_back(s.substr(start, i - start)), start = i + 1;
  return out;
}

void copy_text(char* dst, size_t cap, std::string_view text, std::string_view what) {
  if (text.size() >= cap) fail(SJ_ERR_PARSE, "kernel key: ", what, " '", text, "' is longer than ", cap - 1, " characters");
  // Printable ASCII only: a NUL would cut the stored text short, so it would not print back the same.
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x21 || c > 0x7e) fail(SJ_ERR_PARSE, "kernel key: ", what, " has byte ", int(c), " at offset ", i, " (only printable ASCII)");
  }
  std::memset(dst, 0, cap);
  std::memcpy(dst, text.data(), text.size());
}

std::string_view fixed_text(const char* s, size_t cap) { return std::string_view(s, strnlen(s, cap)); }

std::string_view coiter_action_name(uint8_t a) { return jit::to_string(static_cast<jit::CoiterAction>(a)); }
std::string_view coiter_method_name(uint8_t m) { return jit::to_string(static_cast<jit::CoiterMethod>(m)); }

}  // namespace

uint64_t hash64(const void* data, size_t size, uint64_t seed) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint64_t h = seed ^ mum(seed ^ kP0, kP1 ^ size);
  size_t n = size;
  while (n >= 16) {
    h = mum(read64(p) ^ kP1, read64(p + 8) ^ h);
    p += 16, n -= 16;
  }
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = read64(p);
    b = n > 8 ? read_tail(p + 8, n - 8) : 0;
  } else if (n > 0) {
    a = read_tail(p, n);
  }
  h = mum(a ^ kP2 ^ h, b ^ kP3);
  return mum(h ^ kP0, static_cast<uint64_t>(size) ^ kP1);
}

KeyFormat key_format(sj_format f) {
  int v = static_cast<int>(f);
  if (v < 0 || v > SJ_FORMAT_DENSE_COL_MAJOR) return KeyFormat::Other;
  return static_cast<KeyFormat>(v + 1);
}
std::string_view to_string(KeyFormat f) { return name_of(kFormats, f); }
std::string_view to_string(KeyKind kind) { return name_of(kKinds, kind); }

uint32_t host_feature_bits() {
  const jit::HostFeatures& f = jit::host_features();
  uint32_t bits = 0;
  if (f.avx2) bits |= kFeatureAvx2;
  if (f.avx512) bits |= kFeatureAvx512;
  if (f.avx512 && f.vp2intersect) bits |= kFeatureVp2intersect;
  return bits;
}

bool operator==(const KernelKey& a, const KernelKey& b) { return std::memcmp(&a, &b, sizeof(KernelKey)) == 0; }

KernelKey KernelKey::make(KeyKind kind) {
  KernelKey k;  // every member has an initialiser and there is no padding: all bytes defined
  k.layout = kKeyLayoutVersion;
  k.kind = kind;
  k.op = kNoOp;
  std::memcpy(k.version, SPARSEJIT_VERSION_STRING, sizeof(SPARSEJIT_VERSION_STRING));
  std::memcpy(k.build_id, kBuildId, std::strlen(kBuildId) + 1);  // (at most kBuildIdCapacity: the script checks)
  return k;
}

KernelKey KernelKey::for_coiter(const jit::CoiterSpec& s) {
  KernelKey k = make(KeyKind::Coiter);
  k.action = static_cast<uint8_t>(s.action);
  k.value = s.value;
  k.index = s.index;
  k.semiring = static_cast<uint8_t>(s.semiring);
  k.width = s.width;
  k.phases = s.phases;
  k.method = static_cast<uint8_t>(s.method);
  k.isa = static_cast<uint8_t>(s.isa);
  k.flags = (s.reassociate ? kKeyReassociate : 0) | (s.with_factor ? kKeyWithFactor : 0) |
            (s.skip_empty ? kKeySkipEmpty : 0) | (s.skip_disjoint ? kKeySkipDisjoint : 0);
  k.isa_features = s.isa == SJ_ISA_SCALAR ? 0 : host_feature_bits();
  return k;
}

jit::CoiterSpec KernelKey::coiter_spec() const {
  if (kind != KeyKind::Coiter) fail(SJ_ERR_INVALID_ARGUMENT, "kernel key '", to_string(), "' is not a coiteration kernel");
  jit::CoiterSpec s;
  s.action = static_cast<jit::CoiterAction>(action);
  s.value = value;
  s.index = index;
  s.semiring = static_cast<sj_semiring>(semiring);
  s.width = width;
  s.phases = phases;
  s.method = static_cast<jit::CoiterMethod>(method);
  s.isa = static_cast<sj_isa>(isa);
  s.reassociate = flags & kKeyReassociate;
  s.with_factor = flags & kKeyWithFactor;
  s.skip_empty = flags & kKeySkipEmpty;
  s.skip_disjoint = flags & kKeySkipDisjoint;
  return s;
}

bool KernelKey::is_current_build() const {
  KernelKey cur = make(kind);
  return std::memcmp(version, cur.version, sizeof version) == 0 && std::memcmp(build_id, cur.build_id, sizeof build_id) == 0;
}

KernelKey KernelKey::with_current_build() const {
  KernelKey k = *this;
  KernelKey cur = make(kind);
  std::memcpy(k.version, cur.version, sizeof k.version);
  std::memcpy(k.build_id, cur.build_id, sizeof k.build_id);
  return k;
}

std::string KernelKey::to_string() const {
  std::string s(cache::to_string(kind));
  auto field = [&](std::string_view name, std::string_view value) {
    s += ' ';
    s += name;
    s += '=';
    s += value;
  };
  field("op", op == kNoOp ? std::string_view("-") : sj::to_string(static_cast<sj_op>(op)));
  field("action", coiter_action_name(action));
  field("value", sj::to_string(value));
  field("index", sj::to_string(index));
  field("semiring", sj::to_string(static_cast<sj_semiring>(semiring)));
  field("schedule", sj::to_string(static_cast<sj_schedule>(schedule)));
  field("width", std::to_string(width));
  field("phases", jit::phase_mask_string(phases));
  field("method", coiter_method_name(method));
  field("isa", jit::isa_name(static_cast<sj_isa>(isa)));
  field("features", bits_text(kFeatures, isa_features));
  std::string fm;
  for (int i = 0; i < 3; ++i) fm += (i ? "," : ""), fm += cache::to_string(formats[i]);
  field("formats", fm);
  field("out", cache::to_string(out_format));
  field("flags", bits_text(kFlags, flags));
  char hex[24];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(detail));
  field("detail", hex);
  field("version", fixed_text(version, sizeof version));
  field("build", fixed_text(build_id, sizeof build_id));
  return s;
}

std::string KernelKey::file_name() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%016llx.sje", std::string(cache::to_string(kind)).c_str(),
                static_cast<unsigned long long>(hash()));
  return buf;
}

KernelKey KernelKey::parse(std::string_view text) {
  std::vector<std::string_view> tokens;
  for (std::string_view t : split(text, ' '))
    for (std::string_view u : split(t, '\t'))
      if (!u.empty()) tokens.push_back(u);
  if (tokens.empty()) fail(SJ_ERR_PARSE, "kernel key: empty text");
  KeyKind kind;
  if (!lookup(kKinds, tokens[0], &kind) || kind == KeyKind::None)
    fail(SJ_ERR_PARSE, "kernel key: unknown kind '", tokens[0], "' (coiter, plan or llvm)");
  KernelKey k = make(kind);
  if (kind == KeyKind::Coiter) k.width = 4, k.phases = jit::kPhaseCompare;
  auto bad = [&](std::string_view token, std::string_view why) {
    fail(SJ_ERR_PARSE, "kernel key: bad field '", token, "': ", why);
  };
  for (size_t i = 1; i < tokens.size(); ++i) {
    std::string_view tok = tokens[i];
    size_t eq = tok.find('=');
    if (eq == std::string_view::npos) bad(tok, "expected name=value");
    std::string_view name = tok.substr(0, eq), v = tok.substr(eq + 1);
    if (name == "op") {
      if (v == "-") k.op = kNoOp;
      else if (auto o = parse_op(v)) k.op = static_cast<uint8_t>(*o);
      else bad(tok, "unknown operation");
    } else if (name == "action") {
      if (v == "dot") k.action = uint8_t(jit::CoiterAction::Dot);
      else if (v == "emit") k.action = uint8_t(jit::CoiterAction::Emit);
      else if (v == "count") k.action = uint8_t(jit::CoiterAction::Count);
      else bad(tok, "dot, emit or count");
    } else if (name == "value") {
      if (v == "f32") k.value = ValueType::F32;
      else if (v == "f64") k.value = ValueType::F64;
      else if (v == "bool") k.value = ValueType::Bool;
      else bad(tok, "f32, f64 or bool");
    } else if (name == "index") {
      if (v == "i32") k.index = IndexType::I32;
      else if (v == "i64") k.index = IndexType::I64;
      else bad(tok, "i32 or i64");
    } else if (name == "semiring") {
      if (auto s = parse_semiring(v)) k.semiring = uint8_t(*s);
      else bad(tok, "unknown semiring");
    } else if (name == "schedule") {
      if (auto s = parse_schedule(v)) k.schedule = uint8_t(*s);
      else bad(tok, "unknown schedule");
    } else if (name == "width") {
      int w = 0;
      auto r = std::from_chars(v.data(), v.data() + v.size(), w);
      if (r.ec != std::errc() || r.ptr != v.data() + v.size() || w < 0 || w > 64) bad(tok, "a width 0..64");
      k.width = uint8_t(w);
    } else if (name == "phases") {
      if (auto m = jit::parse_phase_mask(v)) k.phases = *m;
      else bad(tok, "three 0/1 characters, e.g. 001");
    } else if (name == "method") {
      if (auto m = jit::parse_coiter_method(v)) k.method = uint8_t(*m);
      else bad(tok, "broadcast, rotate or native");
    } else if (name == "isa") {
      if (auto a = jit::parse_isa_name(v)) k.isa = uint8_t(*a);
      else bad(tok, "auto, avx512, avx2 or scalar");
    } else if (name == "features") {
      k.isa_features = 0;
      if (v != "-")
        for (std::string_view f : split(v, ',')) {
          uint32_t bit;
          if (!lookup(kFeatures, f, &bit)) bad(tok, "features are avx2, avx512, vp2intersect or -");
          k.isa_features |= bit;
        }
    } else if (name == "formats") {
      auto parts = split(v, ',');
      if (parts.size() > 3) bad(tok, "at most three operand formats");
      for (size_t j = 0; j < 3; ++j) {
        k.formats[j] = KeyFormat::None;
        if (j < parts.size() && !lookup(kFormats, parts[j], &k.formats[j])) bad(tok, "unknown format");
      }
    } else if (name == "out") {
      if (!lookup(kFormats, v, &k.out_format)) bad(tok, "unknown format");
    } else if (name == "flags") {
      k.flags = 0;
      if (v != "-")
        for (std::string_view f : split(v, ',')) {
          uint8_t bit;
          if (!lookup(kFlags, f, &bit)) bad(tok, "unknown flag");
          k.flags |= bit;
        }
    } else if (name == "detail") {
      uint64_t d = 0;
      auto r = std::from_chars(v.data(), v.data() + v.size(), d, 16);
      if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size()) bad(tok, "a hexadecimal number");
      k.detail = d;
    } else if (name == "version") {
      copy_text(k.version, sizeof k.version, v, "version");
    } else if (name == "build") {
      copy_text(k.build_id, sizeof k.build_id, v, "build id");
    } else {
      bad(tok, "unknown field name");
    }
  }
  return k;
}

}  // namespace sj::cache

#include "src/types.hpp"

#include <array>
#include <utility>

namespace sj {
namespace {

template <class E, size_t N>
std::optional<E> lookup(const std::array<std::pair<std::string_view, E>, N>& table,
                        std::string_view name) {
  for (auto& [n, e] : table)
    if (n == name) return e;
  return std::nullopt;
}
template <class E, size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, E>, N>& table, E e) {
  for (auto& [n, v] : table)
    if (v == e) return n;
  return "?";
}

constexpr std::array<std::pair<std::string_view, sj_semiring>, 5> kSemirings{{
    {"plus-times", SJ_SEMIRING_PLUS_TIMES},
    {"min-plus", SJ_SEMIRING_MIN_PLUS},
    {"max-times", SJ_SEMIRING_MAX_TIMES},
    {"or-and", SJ_SEMIRING_OR_AND},
    {"plus-pair", SJ_SEMIRING_PLUS_PAIR},
}};
// The vocabulary of DESIGN.md "Schedule names".
constexpr std::array<std::pair<std::string_view, sj_schedule>, 10> kSchedules{{
    {"auto", SJ_SCHEDULE_AUTO},
    {"reference", SJ_SCHEDULE_REFERENCE},
    {"gustavson-dense", SJ_SCHEDULE_GUSTAVSON_DENSE},
    {"gustavson-hash", SJ_SCHEDULE_GUSTAVSON_HASH},
    {"inner", SJ_SCHEDULE_INNER},
    {"transpose", SJ_SCHEDULE_TRANSPOSE},
    {"search", SJ_SCHEDULE_SEARCH},
    {"densify", SJ_SCHEDULE_DENSIFY},
    {"push", SJ_SCHEDULE_PUSH},
    {"fused", SJ_SCHEDULE_FUSED},
}};
constexpr std::array<std::pair<std::string_view, sj_isa>, 4> kIsas{{
    {"auto", SJ_ISA_AUTO}, {"avx512", SJ_ISA_AVX512}, {"avx2", SJ_ISA_AVX2}, {"scalar", SJ_ISA_SCALAR},
}};
constexpr std::array<std::pair<std::string_view, sj_op>, 7> kOps{{
    {"spgemm", SJ_OP_SPGEMM},
    {"spgemm-masked", SJ_OP_SPGEMM_MASKED},
    {"spmspv", SJ_OP_SPMSPV},
    {"spmv", SJ_OP_SPMV},
    {"ewise-mult", SJ_OP_EWISE_MULT},
    {"ewise-add", SJ_OP_EWISE_ADD},
    {"transpose", SJ_OP_TRANSPOSE},
}};

}  // namespace

std::string_view to_string(LevelKind k) {
  switch (k) {
    case LevelKind::Dense: return "dense";
    case LevelKind::Compressed: return "compressed";
    case LevelKind::Singleton: return "singleton";
  }
  return "?";
}
std::string_view to_string(IndexType t) { return t == IndexType::I32 ? "i32" : "i64"; }
std::string_view to_string(ValueType t) {
  return t == ValueType::F32 ? "f32" : t == ValueType::F64 ? "f64" : "bool";
}
std::string_view to_string(sj_semiring s) { return name_of(kSemirings, s); }
std::string_view to_string(sj_schedule s) { return name_of(kSchedules, s); }
std::string_view to_string(sj_isa i) { return name_of(kIsas, i); }
std::string_view to_string(sj_op op) { return name_of(kOps, op); }

std::optional<sj_semiring> parse_semiring(std::string_view n) { return lookup(kSemirings, n); }
std::optional<sj_schedule> parse_schedule(std::string_view n) { return lookup(kSchedules, n); }
std::optional<sj_isa> parse_isa(std::string_view n) { return lookup(kIsas, n); }
std::optional<sj_op> parse_op(std::string_view n) { return lookup(kOps, n); }

IndexType from_c(sj_index_type t) { return t == SJ_INDEX_INT64 ? IndexType::I64 : IndexType::I32; }
ValueType from_c(sj_value_type t) {
  return t == SJ_VALUE_F32 ? ValueType::F32 : t == SJ_VALUE_F64 ? ValueType::F64 : ValueType::Bool;
}
LevelKind from_c(sj_level_kind k) {
  return k == SJ_LEVEL_DENSE ? LevelKind::Dense
         : k == SJ_LEVEL_SINGLETON ? LevelKind::Singleton
                                   : LevelKind::Compressed;
}
sj_index_type to_c(IndexType t) { return t == IndexType::I64 ? SJ_INDEX_INT64 : SJ_INDEX_INT32; }
sj_value_type to_c(ValueType t) {
  return t == ValueType::F32 ? SJ_VALUE_F32 : t == ValueType::F64 ? SJ_VALUE_F64 : SJ_VALUE_BOOL;
}
sj_level_kind to_c(LevelKind k) {
  return k == LevelKind::Dense ? SJ_LEVEL_DENSE
         : k == LevelKind::Singleton ? SJ_LEVEL_SINGLETON
                                     : SJ_LEVEL_COMPRESSED;
}

}  // namespace sj

// The small vocabulary every layer shares: level kinds, index and value types, semirings,
// schedules, ISAs and operation names, with their one text spelling each.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "sparsejit/sparsejit.h"

namespace sj {

enum class LevelKind : uint8_t { Dense, Compressed, Singleton };
enum class IndexType : uint8_t { I32, I64 };
enum class ValueType : uint8_t { F32, F64, Bool };

// The C enums are the source of truth; these aliases keep C++ code readable.
using Semiring = sj_semiring;
using Schedule = sj_schedule;
using Isa = sj_isa;
using OpKind = sj_op;

inline int index_size(IndexType t) { return t == IndexType::I32 ? 4 : 8; }
// The IndexType of a kernel's coordinate type (int32_t or int64_t).
template <class I> constexpr IndexType index_type_of() {
  static_assert(sizeof(I) == 4 || sizeof(I) == 8, "coordinates are 32- or 64-bit");
  return sizeof(I) == 4 ? IndexType::I32 : IndexType::I64;
}
// The ValueType of a kernel's value type (float, double, or uint8_t for bool).
template <class V> constexpr ValueType value_type_of() {
  static_assert(std::is_same_v<V, float> || std::is_same_v<V, double> || std::is_same_v<V, uint8_t>);
  return std::is_same_v<V, float> ? ValueType::F32 : std::is_same_v<V, double> ? ValueType::F64 : ValueType::Bool;
}
inline int value_size(ValueType t) { return t == ValueType::F32 ? 4 : t == ValueType::F64 ? 8 : 1; }

std::string_view to_string(LevelKind k);
std::string_view to_string(IndexType t);
std::string_view to_string(ValueType t);
std::string_view to_string(sj_semiring s);
std::string_view to_string(sj_schedule s);
std::string_view to_string(sj_isa i);
std::string_view to_string(sj_op op);

std::optional<sj_semiring> parse_semiring(std::string_view name);
std::optional<sj_schedule> parse_schedule(std::string_view name);
std::optional<sj_isa> parse_isa(std::string_view name);
std::optional<sj_op> parse_op(std::string_view name);

IndexType from_c(sj_index_type t);
ValueType from_c(sj_value_type t);
LevelKind from_c(sj_level_kind k);
sj_index_type to_c(IndexType t);
sj_value_type to_c(ValueType t);
sj_level_kind to_c(LevelKind k);

}  // namespace sj

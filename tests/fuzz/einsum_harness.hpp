// Fuzz harness for the index-notation parser (src/einsum_parser.hpp): any text either parses
// or throws sj::Error(SJ_ERR_PARSE); what parses is internally consistent (every index id
// names an index, every factor names an operand, output indices appear in every term) and
// its canonical text parses back to the same canonical text.
#pragma once
#include <cstdint>
#include <string_view>

#include "src/einsum_parser.hpp"
#include "src/error.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace sj::fuzz {

inline int einsum(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    sj::einsum::Expression e = sj::einsum::parse(text);
    const int n_index = static_cast<int>(e.index_names.size());
    auto check_access = [&](const sj::einsum::Access& a) {
      for (int i : a.indices) SJ_FUZZ_CHECK(i >= 0 && i < n_index, "index id out of range");
      SJ_FUZZ_CHECK(a.offset <= text.size(), "access offset past the text");
    };
    check_access(e.output);
    for (const auto& t : e.terms)
      for (const auto& f : t.factors) {
        check_access(f);
        const int op = e.operand_of(f);
        SJ_FUZZ_CHECK(op >= 0 && op < static_cast<int>(e.operands.size()), "factor names no operand");
      }
    const std::string canon = e.canonical();
    sj::einsum::Expression again = sj::einsum::parse(canon);
    SJ_FUZZ_CHECK(again.canonical() == canon, "canonical text does not parse back to itself");
  } catch (const Error& err) {
    SJ_FUZZ_CHECK(err.status() == SJ_ERR_PARSE, err.what());
  }
  return 0;
}

}  // namespace sj::fuzz

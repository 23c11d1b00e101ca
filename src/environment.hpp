// The library's environment variables (README "Environment variables"). Each is read once, by
// the code it configures. A value that is set but not understood is reported on stderr, once
// per variable, naming the variable, the value, what it accepts and what is used instead; the
// default then applies. Not through the context loggers: SPARSEJIT_LOG configures those, and
// these settings belong to the process, not to one context.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace sj::env {

// The variable's value; nullopt when it is unset or empty.
std::optional<std::string_view> value(const char* name);

// Reports "sparsejit [warning] NAME='VALUE' is not ACCEPTED; using USED" on stderr, once per NAME.
void report_bad(const char* name, std::string_view value, std::string_view accepted, std::string_view used);

// Which of `choices` the variable names (its index); nullopt when it is unset or empty, or when
// it names none of them (reported, with `used` as what applies instead).
std::optional<size_t> choice(const char* name, std::initializer_list<std::string_view> choices,
                             std::string_view used);

}  // namespace sj::env

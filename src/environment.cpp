#include "src/environment.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace sj::env {

std::optional<std::string_view> value(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string_view(v);
}

void report_bad(const char* name, std::string_view value, std::string_view accepted, std::string_view used) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>>* reported = new std::set<std::string, std::less<>>();  // leaked: usable at exit
  {
    std::lock_guard lock(mutex);
    if (!reported->insert(std::string(name)).second) return;
  }
  std::fprintf(stderr, "sparsejit [warning] %s='%.*s' is not %.*s; using %.*s\n", name, static_cast<int>(value.size()),
               value.data(), static_cast<int>(accepted.size()), accepted.data(), static_cast<int>(used.size()),
               used.data());
}

std::optional<size_t> choice(const char* name, std::initializer_list<std::string_view> choices,
                             std::string_view used) {
  const std::optional<std::string_view> v = value(name);
  if (!v) return std::nullopt;
  std::string accepted = "one of ";
  size_t i = 0;
  for (std::string_view c : choices) {
    if (*v == c) return i;
    accepted.append(i++ ? "|" : "").append(c);
  }
  report_bad(name, *v, accepted, used);
  return std::nullopt;
}

}  // namespace sj::env

// The build id that goes into every kernel key and cache entry, and that the LLVM module and the
// library must share. It lives in a source generated before every build
// (cmake/write_build_info.cmake -> generated/sparsejit_build_id.cpp), so that a new id
// recompiles that one file, not the files that use it.
#pragma once

#include <cstddef>

namespace sj {

// The room for it in KernelKey::build_id and the store's entry header, NUL included (the
// generating script refuses a longer id).
inline constexpr std::size_t kBuildIdCapacity = 48;

// The git commit and time of the last configure, and a hash of the library's sources.
extern const char kBuildId[];
// "<version>+<build id>", what sj_version() returns.
extern const char kVersionAndBuildId[];

}  // namespace sj

// What a sj_context holds: the allocator for results, the logger, thread count and cache
// settings. Shared by every call made with the context (all members are read-only after
// creation, so concurrent use needs no lock).
#pragma once
#include <memory>
#include <string>

#include "spdlog/logger.h"
#include "src/allocator.hpp"

namespace sj {

struct Context {
  explicit Context(const sj_config& config);

  sj_config config;  // as given (cache_dir copied below)
  Allocator allocator;
  std::shared_ptr<spdlog::logger> logger;
  int threads = 1;
  std::string cache_dir;
};

}  // namespace sj

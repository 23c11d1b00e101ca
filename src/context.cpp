#include "src/context.hpp"

#include <thread>

#include "src/logging.hpp"

namespace sj {

Context::Context(const sj_config& c)
    : config(c), allocator(c.allocator), logger(make_logger(c.log_level, c.log_callback, c.log_user)) {
  threads = c.threads > 0 ? c.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (c.cache_dir) cache_dir = c.cache_dir;
  config.cache_dir = nullptr;  // the copy above owns the text
  allocator.set_memory_cap(c.memory_cap_bytes);
}

}  // namespace sj

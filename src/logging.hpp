// Logging through spdlog. Each context has a logger whose sink is the host's callback (so a
// host routes messages to its own logger) or stderr; the level comes from the config, and
// SPARSEJIT_LOG (trace|debug|info|warn|error|off) overrides it. By default only errors print.
#pragma once
#include <memory>

#include "sparsejit/sparsejit.h"
#include "spdlog/logger.h"

namespace sj {

std::shared_ptr<spdlog::logger> make_logger(sj_log_level level, sj_log_callback callback, void* user);

// The level SPARSEJIT_LOG asks for, or `fallback` when it is unset or unknown (reported once,
// src/environment.hpp).
sj_log_level log_level_from_env(sj_log_level fallback);

// Logger for code that runs without a context (JIT fallbacks, cache warnings). Its messages
// go to every registered context logger (each applies its own level and sink, so a host's
// callback receives them too); with no context registered, to stderr at the level
// SPARSEJIT_LOG asks for (default: errors only).
spdlog::logger& global_logger();

// Contexts made through the C API register their loggers for global messages while they live.
void register_context_logger(const std::shared_ptr<spdlog::logger>& logger);
void unregister_context_logger(const spdlog::logger* logger);

}  // namespace sj

#include "src/logging.hpp"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "spdlog/details/null_mutex.h"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "src/environment.hpp"

namespace sj {
namespace {

spdlog::level::level_enum to_spdlog(sj_log_level l) {
  switch (l) {
    case SJ_LOG_TRACE: return spdlog::level::trace;
    case SJ_LOG_DEBUG: return spdlog::level::debug;
    case SJ_LOG_INFO: return spdlog::level::info;
    case SJ_LOG_WARN: return spdlog::level::warn;
    case SJ_LOG_ERROR: return spdlog::level::err;
    case SJ_LOG_OFF: return spdlog::level::off;
  }
  return spdlog::level::err;
}
sj_log_level from_spdlog(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace: return SJ_LOG_TRACE;
    case spdlog::level::debug: return SJ_LOG_DEBUG;
    case spdlog::level::info: return SJ_LOG_INFO;
    case spdlog::level::warn: return SJ_LOG_WARN;
    case spdlog::level::err:
    case spdlog::level::critical: return SJ_LOG_ERROR;
    default: return SJ_LOG_OFF;
  }
}

// Hands each formatted message to the host's callback.
class CallbackSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  CallbackSink(sj_log_callback cb, void* user) : cb_(cb), user_(user) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    cb_(from_spdlog(msg.level), text.c_str(), user_);
  }
  void flush_() override {}

 private:
  sj_log_callback cb_;
  void* user_;
};

}  // namespace

sj_log_level log_level_from_env(sj_log_level fallback) {
  static constexpr sj_log_level kLevels[] = {SJ_LOG_TRACE, SJ_LOG_DEBUG, SJ_LOG_INFO, SJ_LOG_WARN,
                                             SJ_LOG_WARN,  SJ_LOG_ERROR, SJ_LOG_OFF};
  const std::optional<size_t> i = env::choice(
      "SPARSEJIT_LOG", {"trace", "debug", "info", "warn", "warning", "error", "off"}, "the configured level");
  return i ? kLevels[*i] : fallback;
}

std::shared_ptr<spdlog::logger> make_logger(sj_log_level level, sj_log_callback callback, void* user) {
  spdlog::sink_ptr sink;
  if (callback) sink = std::make_shared<CallbackSink>(callback, user);
  else sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("sparsejit", sink);
  if (!callback) logger->set_pattern("sparsejit [%l] %v");
  logger->set_level(to_spdlog(log_level_from_env(level)));
  return logger;
}

namespace {

// The context loggers that receive global messages.
struct ContextLoggers {
  std::mutex mutex;
  std::vector<std::shared_ptr<spdlog::logger>> loggers;
};
ContextLoggers& context_loggers() {
  static auto* r = new ContextLoggers();  // leaked: usable during static destruction
  return *r;
}

// Sends a global message to each registered context logger, or to stderr when there is none.
// No lock of its own (its state is immutable), so a host callback that logs again cannot
// deadlock on it.
class ForwardingSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  ForwardingSink() : fallback_(make_logger(SJ_LOG_ERROR, nullptr, nullptr)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::vector<std::shared_ptr<spdlog::logger>> targets;
    {
      std::lock_guard lock(context_loggers().mutex);
      targets = context_loggers().loggers;
    }
    if (targets.empty()) targets.push_back(fallback_);
    for (auto& l : targets) l->log(msg.level, msg.payload);
  }
  void flush_() override {}

 private:
  std::shared_ptr<spdlog::logger> fallback_;
};

}  // namespace

spdlog::logger& global_logger() {
  static auto* logger = [] {
    auto* l = new spdlog::logger("sparsejit-global", std::make_shared<ForwardingSink>());
    l->set_level(spdlog::level::trace);  // each receiving logger filters by its own level
    return l;
  }();
  return *logger;
}

void register_context_logger(const std::shared_ptr<spdlog::logger>& logger) {
  std::lock_guard lock(context_loggers().mutex);
  context_loggers().loggers.push_back(logger);
}

void unregister_context_logger(const spdlog::logger* logger) {
  auto& r = context_loggers();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.loggers, [&](const auto& l) { return l.get() == logger; });
}

}  // namespace sj

// Logging as a host sees it: the context's callback receives every message at or above its
// level, including those logged outside a context call (JIT fallbacks, cache warnings go
// through sj::global_logger), and by default nothing below an error is printed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sparsejit/sparsejit.h"
#include "src/logging.hpp"

namespace {

struct Collected {
  std::vector<std::pair<sj_log_level, std::string>> messages;
};
void collect(sj_log_level level, const char* message, void* user) {
  static_cast<Collected*>(user)->messages.push_back({level, message});
}

sj_context* context_with_callback(sj_log_level level, Collected* sink) {
  sj_config cfg;
  sj_config_init(&cfg);
  cfg.log_level = level;
  cfg.log_callback = collect;
  cfg.log_user = sink;
  sj_context* c = nullptr;
  EXPECT_EQ(sj_context_create(&cfg, &c), SJ_OK) << sj_last_error_message();
  return c;
}

TEST(EmbeddingLogging, GlobalMessagesReachEveryLiveContextCallback) {
  if (std::getenv("SPARSEJIT_LOG")) GTEST_SKIP() << "SPARSEJIT_LOG overrides the configured levels";
  Collected warn_sink, error_sink;
  sj_context* warn_ctx = context_with_callback(SJ_LOG_WARN, &warn_sink);
  sj_context* error_ctx = context_with_callback(SJ_LOG_ERROR, &error_sink);
  sj::global_logger().warn("code generation failed for 'test'; using the portable kernel");
  sj::global_logger().error("a global error");
  ASSERT_EQ(warn_sink.messages.size(), 2u);
  EXPECT_EQ(warn_sink.messages[0].first, SJ_LOG_WARN);
  EXPECT_NE(warn_sink.messages[0].second.find("portable kernel"), std::string::npos);
  EXPECT_EQ(warn_sink.messages[1].first, SJ_LOG_ERROR);
  ASSERT_EQ(error_sink.messages.size(), 1u) << "the error-level context gets only the error";
  EXPECT_EQ(error_sink.messages[0].second, "a global error");
  ASSERT_EQ(sj_context_destroy(warn_ctx), SJ_OK);
  sj::global_logger().error("after the first context is gone");
  EXPECT_EQ(warn_sink.messages.size(), 2u) << "a destroyed context receives nothing";
  EXPECT_EQ(error_sink.messages.size(), 2u);
  ASSERT_EQ(sj_context_destroy(error_ctx), SJ_OK);
}

TEST(EmbeddingLogging, NothingBelowErrorIsPrintedByDefault) {
  if (std::getenv("SPARSEJIT_LOG")) GTEST_SKIP() << "SPARSEJIT_LOG overrides the default level";
  sj_context* c = nullptr;
  testing::internal::CaptureStderr();
  ASSERT_EQ(sj_context_create(nullptr, &c), SJ_OK);
  sj::global_logger().warn("a warning nobody asked for");
  sj::global_logger().info("an info line");
  ASSERT_EQ(sj_context_destroy(c), SJ_OK);
  sj::global_logger().debug("a debug line without any context");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// Sets SPARSEJIT_LOG for one scope and puts the previous value back.
class ScopedLogEnv {
 public:
  explicit ScopedLogEnv(const char* value) {
    if (const char* v = std::getenv("SPARSEJIT_LOG")) saved_ = v;
    if (value) ::setenv("SPARSEJIT_LOG", value, 1);
    else ::unsetenv("SPARSEJIT_LOG");
  }
  ~ScopedLogEnv() {
    if (saved_) ::setenv("SPARSEJIT_LOG", saved_->c_str(), 1);
    else ::unsetenv("SPARSEJIT_LOG");
  }

 private:
  std::optional<std::string> saved_;
};

// A context at `level` with a callback: a global debug and error line, and the context's own
// messages of a SpGEMM (its plan is logged at debug level).
Collected messages_at(sj_log_level level) {
  Collected sink;
  sj_context* c = context_with_callback(level, &sink);
  sj::global_logger().debug("a global debug line");
  sj::global_logger().error("a global error line");
  sj_tensor* a = nullptr;
  sj_tensor* r = nullptr;
  EXPECT_EQ(sj_tensor_read_file(c, SPARSEJIT_SOURCE_DIR "/data/karate.mtx", &a), SJ_OK) << sj_last_error_message();
  EXPECT_EQ(sj_spgemm(c, a, a, nullptr, &r), SJ_OK) << sj_last_error_message();
  sj_tensor_destroy(r);
  sj_tensor_destroy(a);
  EXPECT_EQ(sj_context_destroy(c), SJ_OK);
  return sink;
}
bool has(const Collected& c, const std::string& text) {
  for (auto& [level, m] : c.messages)
    if (m.find(text) != std::string::npos) return true;
  return false;
}

// SPARSEJIT_LOG, read when a context is made, overrides the configured level both ways; an
// unknown value keeps the configured one.
TEST(EmbeddingLogging, SparsejitLogOverridesTheConfiguredLevel) {
  {
    ScopedLogEnv env("debug");  // an error-level config made verbose
    Collected c = messages_at(SJ_LOG_ERROR);
    EXPECT_TRUE(has(c, "a global debug line"));
    EXPECT_TRUE(has(c, "a global error line"));
    EXPECT_TRUE(has(c, "plan spgemm")) << "the context's own debug messages";
  }
  {
    ScopedLogEnv env("off");  // a debug-level config silenced
    Collected c = messages_at(SJ_LOG_DEBUG);
    EXPECT_TRUE(c.messages.empty()) << c.messages.size() << " messages, first: " << c.messages[0].second;
  }
  {
    ScopedLogEnv env("warn");
    Collected c = messages_at(SJ_LOG_TRACE);
    EXPECT_FALSE(has(c, "a global debug line"));
    EXPECT_FALSE(has(c, "plan spgemm"));
    EXPECT_TRUE(has(c, "a global error line"));
  }
  {
    ScopedLogEnv env("loud");  // not a level: the config's level stands
    Collected c = messages_at(SJ_LOG_DEBUG);
    EXPECT_TRUE(has(c, "a global debug line"));
    EXPECT_TRUE(has(c, "plan spgemm"));
  }
  {
    ScopedLogEnv env(nullptr);  // unset: the config's level
    Collected c = messages_at(SJ_LOG_ERROR);
    EXPECT_FALSE(has(c, "a global debug line"));
    EXPECT_FALSE(has(c, "plan spgemm"));
    ASSERT_EQ(c.messages.size(), 1u);
    EXPECT_EQ(c.messages[0].first, SJ_LOG_ERROR);
  }
}

// Without a callback and with the defaults, errors do reach stderr (only errors).
TEST(EmbeddingLogging, ErrorsArePrintedByDefault) {
  ScopedLogEnv env(nullptr);
  sj_context* c = nullptr;
  ASSERT_EQ(sj_context_create(nullptr, &c), SJ_OK);
  testing::internal::CaptureStderr();
  sj::global_logger().warn("a warning nobody asked for");
  sj::global_logger().error("an error the host should see");
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_EQ(sj_context_destroy(c), SJ_OK);
  EXPECT_NE(err.find("an error the host should see"), std::string::npos) << err;
  EXPECT_EQ(err.find("a warning"), std::string::npos) << err;
}

}  // namespace

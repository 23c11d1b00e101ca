// Logging as a host sees it: the context's callback receives every message at or above its
// level, including those logged outside a context call (JIT fallbacks, cache warnings go
// through sj::global_logger), and by default nothing below an error is printed.
#include <gtest/gtest.h>

#include <cstdlib>
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

}  // namespace

// Status names, the per-thread last-error message and the version.
#include <string>

#include "capi/boundary.hpp"
#include "sparsejit_build_info.hpp"
#include "src/build_id.hpp"

namespace sj::capi {
namespace {
thread_local std::string g_last_error;
}
void set_last_error(const char* message) { g_last_error = message; }
const std::string& last_error() { return g_last_error; }
}  // namespace sj::capi

extern "C" {

SJ_API const char* sj_status_string(sj_status s) {
  switch (s) {
    case SJ_OK: return "SJ_OK: success";
    case SJ_ERR_NULL_POINTER: return "SJ_ERR_NULL_POINTER: a required pointer was NULL";
    case SJ_ERR_INVALID_ARGUMENT: return "SJ_ERR_INVALID_ARGUMENT: an argument is out of range";
    case SJ_ERR_INVALID_TENSOR: return "SJ_ERR_INVALID_TENSOR: tensor arrays failed validation";
    case SJ_ERR_SHAPE_MISMATCH: return "SJ_ERR_SHAPE_MISMATCH: operand shapes do not fit";
    case SJ_ERR_TYPE_MISMATCH: return "SJ_ERR_TYPE_MISMATCH: operand types do not fit";
    case SJ_ERR_FORMAT: return "SJ_ERR_FORMAT: the tensor format does not fit";
    case SJ_ERR_OVERFLOW: return "SJ_ERR_OVERFLOW: a size does not fit its type";
    case SJ_ERR_OUT_OF_MEMORY: return "SJ_ERR_OUT_OF_MEMORY: allocation failed";
    case SJ_ERR_IO: return "SJ_ERR_IO: file input/output failed";
    case SJ_ERR_PARSE: return "SJ_ERR_PARSE: malformed input";
    case SJ_ERR_UNSUPPORTED: return "SJ_ERR_UNSUPPORTED: not supported";
    case SJ_ERR_JIT: return "SJ_ERR_JIT: code generation failed";
    case SJ_ERR_CACHE: return "SJ_ERR_CACHE: the kernel cache is unusable";
    case SJ_ERR_INTERNAL: return "SJ_ERR_INTERNAL: internal error";
  }
  return "unknown sj_status";
}

SJ_API const char* sj_last_error_message(void) { return sj::capi::last_error().c_str(); }

SJ_API const char* sj_version(int* major, int* minor, int* patch) {
  if (major) *major = SPARSEJIT_VERSION_MAJOR;
  if (minor) *minor = SPARSEJIT_VERSION_MINOR;
  if (patch) *patch = SPARSEJIT_VERSION_PATCH;
  return sj::kVersionAndBuildId;
}

}  // extern "C"

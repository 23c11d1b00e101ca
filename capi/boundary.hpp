// The C boundary: every exported function runs its body through guarded(), which turns
// sj::Error, std::bad_alloc and anything else into an sj_status and the per-thread message.
// No exception ever crosses into C.
#pragma once
#include <new>
#include <stdexcept>
#include <string>

#include "src/error.hpp"

namespace sj::capi {

void set_last_error(const char* message);
const std::string& last_error();

template <class F> sj_status guarded(F&& body) noexcept {
  try {
    body();
    return SJ_OK;
  } catch (const Error& e) {
    set_last_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return SJ_ERR_OUT_OF_MEMORY;
  } catch (const std::length_error& e) {
    // A container asked for more elements than any memory holds (a size derived from huge
    // dimensions): the same condition as a failed allocation, reported before allocating.
    set_last_error((std::string("out of memory: a size derived from the operands is too large (") + e.what() + ")").c_str());
    return SJ_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error((std::string("internal error: ") + e.what()).c_str());
    return SJ_ERR_INTERNAL;
  } catch (...) {
    set_last_error("internal error: unknown exception");
    return SJ_ERR_INTERNAL;
  }
}

// Throws SJ_ERR_NULL_POINTER naming the argument when p is null.
inline void require(const void* p, const char* what) {
  if (!p) fail(SJ_ERR_NULL_POINTER, what, " is NULL");
}

}  // namespace sj::capi

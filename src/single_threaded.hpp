// What a process that has never started a second thread may skip: nothing can race there, so a
// count may be a plain load and store (src/call_counter.hpp) and a short critical section needs
// no lock. libstdc++'s shared_ptr skips its locked reference counts the same way. The test is
// glibc's __libc_single_threaded, which pthread_create clears before the new thread runs (threads
// made without it, as by a raw clone, would break shared_ptr too).
#pragma once
#include <mutex>
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define SJ_HAVE_SINGLE_THREADED 1
#endif

namespace sj {

inline bool process_is_single_threaded() {
#ifdef SJ_HAVE_SINGLE_THREADED
  return __libc_single_threaded != 0;
#else
  return false;
#endif
}

// A lock_guard that takes no lock in a single-threaded process: an uncontended lock and unlock
// were ~2.5 of the ~78 ns of a tiny drop-in SpMSpV. Only for sections that cannot start a
// thread (planning can: the pool starts lazily), so the process stays single-threaded until
// the section ends; whether it locked is remembered, so the unlock matches the lock.
class LockUnlessSingleThreaded {
 public:
  explicit LockUnlessSingleThreaded(std::mutex& m) : m_(process_is_single_threaded() ? nullptr : &m) {
    if (m_) m_->lock();
  }
  ~LockUnlessSingleThreaded() {
    if (m_) m_->unlock();
  }
  LockUnlessSingleThreaded(const LockUnlessSingleThreaded&) = delete;
  LockUnlessSingleThreaded& operator=(const LockUnlessSingleThreaded&) = delete;

 private:
  std::mutex* m_;
};

}  // namespace sj

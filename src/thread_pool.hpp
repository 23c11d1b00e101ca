// The worker threads of one context, and the one way kernels use them: parallel_for over a
// number of chunks, handed out one at a time by an atomic counter (dynamic balancing).
//
// Why our own pool on std::thread and not OpenMP (Debian's libgomp): CI runs the suite
// under ThreadSanitizer, and libgomp's barriers and task queues use synchronisation TSan
// cannot see unless libgomp itself is rebuilt with TSan, which gives false race reports on
// every parallel region. An own pool is also per context (sized from sj_config.threads)
// instead of one process-wide team, is safe to call from many caller threads at once and
// from inside its own workers (no nested-team rules), and turns a worker's exception into
// the call's error without touching the OpenMP runtime. Our loops need only "run chunk c on
// some thread", which is ~100 lines.
//
// Concurrency: any number of threads may call parallel_for on one pool at once, nested
// calls included. The caller always runs chunks itself, so a call finishes even when every
// worker is busy with other calls; idle workers join calls in the order they were made.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sj {

class ThreadPool {
 public:
  // `threads` is the most threads one call uses, the caller included: threads - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs body(c) once for every c in [0, chunks) on at most `threads` threads (this one
  // included). Returns when every chunk has run. When a body throws, no further chunks are
  // started and the first exception is rethrown here (after all threads have left the call).
  void parallel_for(int64_t chunks, int threads, const std::function<void(int64_t)>& body);

 private:
  struct Job {
    const std::function<void(int64_t)>* body = nullptr;
    int64_t chunks = 0;
    std::atomic<int64_t> next{0};
    int helper_slots = 0;  // workers that may still join (guarded by the pool's mutex)
    int helpers = 0;       // workers inside run() (guarded by done_mutex)
    std::mutex done_mutex;
    std::condition_variable done;
    std::exception_ptr error;  // guarded by done_mutex
    void run();
  };
  void worker_loop();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job*> queue_;  // calls that still have helper slots
  bool stop_ = false;
};

}  // namespace sj

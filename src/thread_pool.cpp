#include "src/thread_pool.hpp"

#include <algorithm>
#include <system_error>

namespace sj {

ThreadPool::ThreadPool(int threads) {
  const int n = std::max(1, threads) - 1;
  workers_.reserve(static_cast<size_t>(n));
  // A thread the system refuses to start (a process or user thread limit) is not an error: the
  // pool runs with the workers it has, and results do not depend on their number.
  for (int i = 0; i < n; ++i) {
    try {
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error&) {
      break;
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Job::run() {
  for (;;) {
    const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
    if (c >= chunks) return;
    try {
      (*body)(c);
    } catch (...) {
      next.store(chunks, std::memory_order_relaxed);  // start no more chunks
      std::lock_guard lock(done_mutex);
      if (!error) error = std::current_exception();
      return;
    }
  }
}

void ThreadPool::worker_loop() {
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = queue_.front();
      if (--job->helper_slots == 0) queue_.pop_front();
      // Registered before the pool lock is released: the caller, which removes its job under
      // that lock, then waits for exactly the helpers that got in.
      std::lock_guard dl(job->done_mutex);
      ++job->helpers;
    }
    job->run();
    std::lock_guard dl(job->done_mutex);
    if (--job->helpers == 0) job->done.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t chunks, int threads, const std::function<void(int64_t)>& body) {
  if (chunks <= 0) return;
  const int helpers = static_cast<int>(std::min<int64_t>({threads - 1, chunks - 1, int64_t(workers_.size())}));
  if (helpers <= 0) {
    for (int64_t c = 0; c < chunks; ++c) body(c);
    return;
  }
  Job job;
  job.body = &body;
  job.chunks = chunks;
  job.helper_slots = helpers;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(&job);
  }
  if (helpers == 1) wake_.notify_one();
  else wake_.notify_all();
  job.run();
  {
    // Slots no worker took are withdrawn, so no worker can join after this.
    std::lock_guard lock(mutex_);
    auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
  }
  std::unique_lock dl(job.done_mutex);
  job.done.wait(dl, [&] { return job.helpers == 0; });
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace sj

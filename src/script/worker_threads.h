// SPDX-License-Identifier: Apache-2.0
// The threads of a formatting pipeline and the lock they share: started
// together, and stopped and joined together when the pipeline ends.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace bpfprof::script {

// Workers wait for work on one condition variable, the pipeline's writer for
// finished work on another, both under mutex(). Destroying it stops the
// workers (wait_for_work returns false) and joins them: declare it after
// everything the workers use, so that it is destroyed first.
class WorkerThreads {
 public:
  // Starts `n` threads running `body`, which returns once wait_for_work()
  // says stop.
  WorkerThreads(unsigned n, const std::function<void()>& body) {
    for (unsigned i = 0; i < n; i++) threads_.emplace_back(body);
  }
  ~WorkerThreads() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;

  std::mutex& mutex() { return mu_; }

  // Worker side, `lock` held on mutex(): waits until `ready()` (called under
  // the lock). False: the pipeline is ending, the worker returns.
  template <class Ready>
  bool wait_for_work(std::unique_lock<std::mutex>& lock, Ready ready) {
    work_cv_.wait(lock, [&] { return stop_ || ready(); });
    return !stop_;
  }
  // Wakes the workers after work was added (call without the lock).
  void work_added() { work_cv_.notify_all(); }

  // Writer side, `lock` held on mutex(): waits until `done()`.
  template <class Done>
  void wait_until_done(std::unique_lock<std::mutex>& lock, Done done) {
    done_cv_.wait(lock, done);
  }
  // Wakes the writer after work was finished (call without the lock).
  void work_done() { done_cv_.notify_all(); }

 private:
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  bool stop_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace bpfprof::script

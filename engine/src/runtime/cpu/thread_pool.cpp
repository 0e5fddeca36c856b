#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "knobs/knobs.h"
#include "runtime/cpu/cpu.h"

namespace loom::runtime::cpu {

namespace {

// Workers wait for a job; each job is split into one contiguous chunk per thread.
class ThreadPool {
 public:
  ThreadPool() {
    const unsigned n = knobs::threads() > 0 ? static_cast<unsigned>(knobs::threads())
                                            : std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < n; i++) workers_.emplace_back([this, i] { loop(i); });
    threads_ = static_cast<int>(n);
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto &w : workers_) w.join();
  }

  int threads() const { return threads_; }

  void run(const std::function<void(int)> &job) {
    std::lock_guard<std::mutex> serial(run_mu_);
    {
      std::lock_guard<std::mutex> l(mu_);
      job_ = &job;
      pending_ = threads_ - 1;
      generation_++;
    }
    cv_.notify_all();
    job(0);
    std::unique_lock<std::mutex> l(mu_);
    done_cv_.wait(l, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(int idx) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)> *job;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      (*job)(idx);
      std::lock_guard<std::mutex> l(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)> *job_ = nullptr;
  int pending_ = 0, threads_ = 1;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

ThreadPool &pool() {
  static auto *p = new ThreadPool();  // leaked on purpose: kernels may run during static destruction
  return *p;
}

}  // namespace

int pool_threads() { return pool().threads(); }

void parallel_run(int threads, const std::function<void(int)> &job) {
  pool().run([&](int idx) {
    if (idx < threads) job(idx);
  });
}

}  // namespace loom::runtime::cpu

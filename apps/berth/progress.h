// A progress bar on stderr for long `berth simulate` runs:
//
//   [##########....................]  2/6  33%  elapsed 4.1s  eta 8.2s
//
// Appears only after `delay` (short runs print nothing), redraws at most
// every `interval` (a ticker thread keeps the elapsed time moving even when
// progress reports are rare, and report bursts cost no output), and Finish()
// (or the destructor) draws the last state and ends the line, so the
// summary that follows starts on a clean line. Update() is thread-safe and
// cheap (two atomic stores, no lock, no output). The caller decides whether
// to show it at all (see ShouldShowProgress).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace berth::apps {

// On by default only when stderr is a terminal; `force` turns it on anyway,
// `quiet` turns it off (quiet wins).
bool ShouldShowProgress(bool force, bool quiet);

class ProgressBar {
 public:
  struct Options {
    std::FILE* out = stderr;
    std::chrono::milliseconds delay{1000};
    std::chrono::milliseconds interval{100};
    int width = 30;  // characters inside the brackets
  };

  ProgressBar();
  explicit ProgressBar(Options options);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Records progress: `done` of `total` units (total <= 0: unknown).
  void Update(int64_t done, int64_t total);
  // Stops the ticker; if the bar was shown, draws the last state and a newline.
  // Idempotent.
  void Finish();

  // The bar's text for a state (no carriage return), for tests.
  static std::string Line(int64_t done, int64_t total, double elapsed_s, int width);

 private:
  void Tick();
  void DrawLocked();

  Options options_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool finished_ = false;
  bool shown_ = false;
  size_t last_len_ = 0;
  std::atomic<int64_t> done_{0};  // written by Update() without the lock
  std::atomic<int64_t> total_{0};
  std::thread ticker_;
};

}  // namespace berth::apps

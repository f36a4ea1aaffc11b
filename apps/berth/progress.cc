// Progress bar.
#include "progress.h"

#include <unistd.h>

#include <algorithm>

namespace berth::apps {
namespace {

std::string Seconds(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  return buf;
}

}  // namespace

bool ShouldShowProgress(bool force, bool quiet) {
  if (quiet) return false;
  return force || isatty(STDERR_FILENO) == 1;
}

ProgressBar::ProgressBar() : ProgressBar(Options{}) {}

ProgressBar::ProgressBar(Options options) : options_(options), start_(std::chrono::steady_clock::now()) {
  ticker_ = std::thread([this] { Tick(); });
}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(int64_t done, int64_t total) {
  total_.store(total, std::memory_order_relaxed);
  done_.store(done, std::memory_order_relaxed);
}

void ProgressBar::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (shown_) {
    DrawLocked();
    std::fputc('\n', options_.out);
    std::fflush(options_.out);
  }
}

std::string ProgressBar::Line(int64_t done, int64_t total, double elapsed_s, int width) {
  std::string s = "[";
  if (total > 0) {
    const double frac = std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0);
    const int fill = static_cast<int>(frac * width);
    s += std::string(fill, '#') + std::string(width - fill, '.') + "]  ";
    s += std::to_string(done) + "/" + std::to_string(total) + "  " + std::to_string(static_cast<int>(frac * 100)) +
         "%  elapsed " + Seconds(elapsed_s);
    if (done > 0 && done < total) s += "  eta " + Seconds(elapsed_s * (total - done) / done);
  } else {
    // Unknown total: a marker that moves with time.
    const int pos = static_cast<int>(elapsed_s * 10) % width;
    s += std::string(pos, '.') + "#" + std::string(width - pos - 1, '.') + "]  elapsed " + Seconds(elapsed_s);
  }
  return s;
}

void ProgressBar::Tick() {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, options_.delay, [this] { return stop_; })) return;
  while (true) {
    DrawLocked();
    if (cv_.wait_for(lock, options_.interval, [this] { return stop_; })) return;
  }
}

void ProgressBar::DrawLocked() {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = Line(done_.load(std::memory_order_relaxed), total_.load(std::memory_order_relaxed), elapsed,
                          options_.width);
  const size_t len = line.size();
  if (len < last_len_) line += std::string(last_len_ - len, ' ');  // erase the longer previous text
  last_len_ = len;
  std::fputc('\r', options_.out);
  std::fputs(line.c_str(), options_.out);
  std::fflush(options_.out);
  shown_ = true;
}

}  // namespace berth::apps

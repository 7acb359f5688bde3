// Dashboard: pages from a snapshot and the sampled history.
#include "dashboard/dashboard.h"

#include <utility>

#include "base/time.h"
#include "dashboard/render.h"

namespace vscaler::dashboard {
namespace {

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Dashboard::Dashboard(ScalerSource source, DashboardOptions options)
    : source_(std::move(source)), options_(options), history_(options.history) {}

Dashboard::~Dashboard() {
  stop();
}

void Dashboard::start() {
  std::lock_guard lock(thread_mutex_);
  if (sampler_.joinable()) return;
  stopping_ = false;
  sampler_ = std::thread([this] { sample_loop(); });
}

void Dashboard::stop() {
  {
    std::lock_guard lock(thread_mutex_);
    if (!sampler_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  sampler_.join();
}

void Dashboard::sample_loop() {
  std::unique_lock lock(thread_mutex_);
  while (!stopping_) {
    lock.unlock();
    auto scalers = source_();
    {
      std::lock_guard history(history_mutex_);
      history_.observe(scalers, unix_now());
    }
    lock.lock();
    wake_.wait_for(lock, options_.sample_every, [this] { return stopping_; });
  }
}

Model Dashboard::model_at(std::int64_t now) {
  auto scalers = source_();
  std::lock_guard lock(history_mutex_);
  history_.observe(scalers, now);
  return build_model(scalers, history_, base::rfc3339_seconds(now), &views_);
}

Model Dashboard::model() {
  return model_at(unix_now());
}

std::string Dashboard::html(const std::string& only_namespace) {
  std::int64_t now = unix_now();
  Model model = model_at(now);
  return render_html(model, only_namespace, now, options_.history.window.count());
}

std::string Dashboard::json(const std::string& only_namespace) {
  return render_json(model(), only_namespace).dump();
}

}  // namespace vscaler::dashboard

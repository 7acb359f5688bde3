// Dashboard: pages from a snapshot and the sampled history.
#include "dashboard/dashboard.h"

#include <algorithm>
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

Dashboard::Dashboard(ScalerSource source, DashboardOptions options, TemplateReader templates)
    : source_(std::move(source)),
      options_(options),
      read_templates_(std::move(templates)),
      history_(options.history) {}

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
    refresh_templates(scalers);
    lock.lock();
    wake_.wait_for(lock, options_.sample_every, [this] { return stopping_; });
  }
}

void Dashboard::refresh_templates(const std::vector<std::shared_ptr<const api::Scaler>>& scalers) {
  if (!read_templates_) return;
  std::set<std::pair<std::string, std::string>> wanted;  // (namespace, kind)
  for (const auto& scaler : scalers) {
    if (scaler && scaler->update_mode == api::UpdateMode::kOff) {
      wanted.emplace(scaler->ns, scaler->target.kind);
    }
  }
  const auto now = std::chrono::steady_clock::now();
  const bool new_kinds =
      !std::includes(listed_.begin(), listed_.end(), wanted.begin(), wanted.end());
  if (!new_kinds && now - listed_at_ < options_.templates_every) return;
  // Outside the lock: page views go on with the templates listed before.
  api::TemplateResources listed =
      wanted.empty() ? api::TemplateResources{} : read_templates_(wanted);
  listed_ = std::move(wanted);
  listed_at_ = now;
  std::lock_guard lock(history_mutex_);
  if (listed != off_templates_.resources) {
    off_templates_.resources = std::move(listed);
    ++off_templates_.version;
  }
}

Model Dashboard::model_at(std::int64_t now) {
  auto scalers = source_();
  std::lock_guard lock(history_mutex_);
  history_.observe(scalers, now);
  return build_model(scalers, history_, base::rfc3339_seconds(now), &views_, &off_templates_);
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

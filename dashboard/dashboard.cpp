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
    wake_requested_ = false;
    lock.unlock();
    auto scalers = source_();
    {
      std::lock_guard history(history_mutex_);
      history_.observe(scalers, unix_now());
    }
    refresh_templates(scalers);
    lock.lock();
    wake_.wait_for(lock, options_.sample_every, [this] { return stopping_ || wake_requested_; });
  }
}

bool Dashboard::stopping() {
  std::lock_guard lock(thread_mutex_);
  return stopping_;
}

void Dashboard::viewed() {
  if (!read_templates_) return;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(thread_mutex_);
    const bool quiet = !viewed_at_ || now - *viewed_at_ >= options_.templates_every;
    viewed_at_ = now;
    if (!quiet) return;
    wake_requested_ = true;
  }
  wake_.notify_all();
}

void Dashboard::refresh_templates(const std::vector<std::shared_ptr<const api::Scaler>>& scalers) {
  if (!read_templates_) return;
  const auto now = std::chrono::steady_clock::now();
  bool looked_at = false;
  {
    std::lock_guard lock(thread_mutex_);
    looked_at = viewed_at_ && now - *viewed_at_ < options_.templates_every;
  }
  if (!looked_at) {
    // Nobody looks: nothing is listed, and what was listed is forgotten (it would be shown as
    // known, however old, to the next view, which lists again at once).
    due_at_.clear();
    std::lock_guard lock(history_mutex_);
    if (!off_templates_.resources.empty()) {
      off_templates_.resources.clear();
      ++off_templates_.version;
    }
    return;
  }
  std::set<std::pair<std::string, std::string>> wanted;  // (namespace, kind)
  for (const auto& scaler : scalers) {
    if (scaler && scaler->update_mode == api::UpdateMode::kOff) {
      wanted.emplace(scaler->ns, scaler->target.kind);
    }
  }
  // Pairs without scalers in Off any more are forgotten, with their templates.
  auto replace = [&](const std::pair<std::string, std::string>& pair,
                     api::TemplateResources fresh) {
    std::lock_guard lock(history_mutex_);
    auto& held = off_templates_.resources;
    if (api::extract_templates(held, pair.first, pair.second) != fresh) ++off_templates_.version;
    held.merge(fresh);
  };
  for (auto it = due_at_.begin(); it != due_at_.end();) {
    if (wanted.contains(it->first)) {
      ++it;
      continue;
    }
    replace(it->first, {});
    it = due_at_.erase(it);
  }
  for (const auto& pair : wanted) {
    auto due = due_at_.find(pair);
    if (due != due_at_.end() && now < due->second) continue;
    if (stopping()) return;
    // Outside the lock: page views go on with the templates listed before.
    api::TemplateResources fresh;
    if (!read_templates_(pair.first, pair.second, fresh)) {
      due_at_[pair] = now + options_.failed_templates_retry;  // what was listed is kept
      continue;
    }
    due_at_[pair] = now + options_.templates_every;
    replace(pair, std::move(fresh));
  }
}

Model Dashboard::model_at(std::int64_t now) {
  auto scalers = source_();
  Model model;
  {
    std::lock_guard lock(history_mutex_);
    history_.observe(scalers, now);
    model = build_model(scalers, history_, base::rfc3339_seconds(now), &views_, &off_templates_);
  }
  viewed();  // after this view is built: a list it wakes serves the next one
  return model;
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

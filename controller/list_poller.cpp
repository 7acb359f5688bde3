// ListPoller: a list every period into a cache's rebuild.
#include "controller/list_poller.h"

#include "base/log.h"

namespace vscaler::controller {

namespace {
constexpr std::string_view kPollerLogger = "poller";
}  // namespace

ListPoller::ListPoller(kube::Client client, kube::ResourceType resource, std::string what,
                       std::string ns, std::chrono::milliseconds period, Rebuild rebuild,
                       OnChange on_change)
    : client_(std::move(client)),
      resource_(std::move(resource)),
      what_(std::move(what)),
      ns_(std::move(ns)),
      period_(period),
      rebuild_(std::move(rebuild)),
      on_change_(std::move(on_change)) {}

ListPoller::~ListPoller() {
  stop();
}

void ListPoller::start() {
  thread_ = std::thread([this] { run(); });
}

void ListPoller::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ListPoller::poll_once() {
  kube::ListOptions options;
  options.transform = [](nlohmann::json& item) {
    auto metadata = item.find("metadata");
    if (metadata != item.end() && metadata->is_object()) metadata->erase("managedFields");
  };
  auto listed = client_.list(resource_, ns_, options);
  if (!listed.ok()) {
    log::warn(kPollerLogger, "listing " + what_ + " failed; keeping the last ones",
              {{"error", listed.error().message}});
    return false;
  }
  std::vector<std::shared_ptr<const nlohmann::json>> objects;
  objects.reserve(listed.value().items.size());
  for (auto& item : listed.value().items) {
    objects.push_back(std::make_shared<const nlohmann::json>(std::move(item)));
  }
  std::vector<std::string> changed;
  if (int unreadable = rebuild_(objects, &changed); unreadable > 0) {
    log::warn(kPollerLogger, what_ + " with malformed quantities are not applied",
              {{"namespaces", std::to_string(unreadable)}});
  }
  if (polled_ && !changed.empty() && on_change_) {
    log::info(kPollerLogger, what_ + " changed; reconciling their namespaces' scalers",
              {{"namespaces", std::to_string(changed.size())}});
    on_change_(changed);
  }
  polled_ = true;
  return true;
}

void ListPoller::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    poll_once();
    lock.lock();
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

}  // namespace vscaler::controller

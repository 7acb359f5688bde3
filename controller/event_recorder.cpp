#include "controller/event_recorder.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iterator>
#include <utility>

#include "base/log.h"
#include "base/time.h"

namespace vscaler::controller {
namespace {

using nlohmann::json;
constexpr std::string_view kEventsLogger = "events";

// What makes two records the same event (client-go's aggregation key, plus the message: a
// different message is news, not a repeat).
std::string key_of(const EventRecord& record) {
  std::string key;
  key.reserve(record.ns.size() + record.name.size() + record.uid.size() + record.reason.size() +
              record.message.size() + 8);
  for (const std::string* part :
       {&record.ns, &record.name, &record.uid, &record.reason, &record.message}) {
    key += *part;
    key += '\x1f';
  }
  key += record.warning ? 'W' : 'N';
  return key;
}

// A name unique per Event, as client-go makes them: the object's name, a dot, a hex suffix.
std::string event_name(const std::string& scaler) {
  static std::atomic<uint64_t> sequence{0};
  auto nanos = std::chrono::system_clock::now().time_since_epoch().count();
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".%llx%llx", static_cast<unsigned long long>(nanos),
                static_cast<unsigned long long>(sequence.fetch_add(1)));
  return scaler + suffix;
}

}  // namespace

base::Result<base::Unit, kube::ApiError> KubeEventWriter::create(const json& event) {
  auto created = client_.create(kube::resources::kEvents,
                                event["metadata"]["namespace"].get<std::string>(), event);
  if (!created.ok()) return base::fail(std::move(created).error());
  return base::Unit{};
}

base::Result<base::Unit, kube::ApiError> KubeEventWriter::bump(const std::string& ns,
                                                               const std::string& name,
                                                               int64_t count,
                                                               const std::string& last_timestamp) {
  json patch = {{"count", count}, {"lastTimestamp", last_timestamp}};
  auto patched = client_.patch(kube::resources::kEvents, ns, name, kube::PatchType::kMerge, patch);
  if (!patched.ok()) return base::fail(std::move(patched).error());
  return base::Unit{};
}

EventRecorder::EventRecorder(EventWriter& writer, EventRecorderOptions options)
    : writer_(writer), options_(options) {}

EventRecorder::~EventRecorder() {
  stop();
}

void EventRecorder::record(EventRecord record) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || pending_.size() >= options_.max_pending) {
      ++stats_.dropped;
      return;
    }
    pending_.push_back(std::move(record));
  }
  pending_cv_.notify_one();
}

void EventRecorder::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void EventRecorder::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    stats_.dropped += pending_.size();
    pending_.clear();
  }
  pending_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::size_t EventRecorder::flush() {
  std::size_t written = 0;
  for (;;) {
    EventRecord record;
    {
      std::lock_guard lock(mutex_);
      if (pending_.empty()) break;
      record = std::move(pending_.front());
      pending_.pop_front();
    }
    write(record);
    ++written;
  }
  write_bumps(std::nullopt);
  return written;
}

EventRecorderStats EventRecorder::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void EventRecorder::run() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mutex_);
  for (;;) {
    auto ready = [this] { return stopping_ || !pending_.empty() || Clock::now() >= next_bump_; };
    if (next_bump_ == Clock::time_point::max()) {
      pending_cv_.wait(lock, ready);
    } else {
      // Woken early when a record arrives or an earlier bump becomes due.
      pending_cv_.wait_until(lock, next_bump_, ready);
    }
    if (stopping_) return;
    if (!pending_.empty()) {
      EventRecord record = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      write(record);
      lock.lock();
      continue;
    }
    if (Clock::now() >= next_bump_) {
      lock.unlock();
      write_bumps(Clock::now());
      lock.lock();
    }
  }
}

bool EventRecorder::write_bump(Seen& event) {
  auto bumped = writer_.bump(event.ns, event.event_name, event.count, event.last_stamp);
  std::lock_guard lock(mutex_);
  if (bumped.ok()) {
    event.stored_count = event.count;
    event.last_write = std::chrono::steady_clock::now();
    ++stats_.bump_writes;
    return true;
  }
  ++stats_.failed;
  // The stored Event may be gone (TTL, deleted): the next repeat posts a new one.
  log::warn(kEventsLogger, "bumping an event's count failed",
            {{"event", event.ns + "/" + event.event_name}, {"error", bumped.error().to_string()}});
  return false;
}

void EventRecorder::write_bumps(std::optional<std::chrono::steady_clock::time_point> until) {
  using Clock = std::chrono::steady_clock;
  std::lock_guard writing(write_mutex_);
  Clock::time_point next = Clock::time_point::max();
  for (auto it = seen_.begin(); it != seen_.end();) {
    Seen& event = it->second;
    if (event.count == event.stored_count) {
      ++it;
      continue;
    }
    Clock::time_point due = event.last_write + options_.bump_interval;
    if (until && due > *until) {
      next = std::min(next, due);
      ++it;
      continue;
    }
    it = write_bump(event) ? std::next(it) : seen_.erase(it);
  }
  std::lock_guard lock(mutex_);
  next_bump_ = next;  // write() changes seen_ only under write_mutex_: nothing else is due
}

void EventRecorder::write(const EventRecord& record) {
  std::lock_guard writing(write_mutex_);
  auto now = std::chrono::steady_clock::now();
  std::string stamp = base::rfc3339_now();
  std::string key = key_of(record);
  auto seen = seen_.find(key);
  if (seen != seen_.end() && now - seen->second.last < options_.window) {
    Seen& event = seen->second;
    ++event.count;
    event.last = now;
    event.last_stamp = stamp;
    {
      std::lock_guard lock(mutex_);
      ++stats_.bumped;
    }
    if (now - event.last_write >= options_.bump_interval) {
      if (!write_bump(event)) seen_.erase(seen);
      return;
    }
    // Written a moment ago: fold this repeat into the bump due when the interval has passed.
    auto due = event.last_write + options_.bump_interval;
    bool earlier = false;
    {
      std::lock_guard lock(mutex_);
      earlier = due < next_bump_;
      if (earlier) next_bump_ = due;
    }
    if (earlier) pending_cv_.notify_all();
    return;
  }
  std::string name = event_name(record.name);
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", record.ns}}},
                {"involvedObject",
                 {{"apiVersion", "scaling.vscaler.dev/v1beta1"},
                  {"kind", "VerticalScaler"},
                  {"name", record.name},
                  {"namespace", record.ns},
                  {"uid", record.uid},
                  {"resourceVersion", record.resource_version}}},
                {"reason", record.reason},
                {"message", record.message},
                {"type", record.warning ? "Warning" : "Normal"},
                {"source", {{"component", "vscaler"}}},
                {"reportingComponent", "vscaler"},
                {"firstTimestamp", stamp},
                {"lastTimestamp", stamp},
                {"count", 1}};
  auto created = writer_.create(event);
  std::lock_guard lock(mutex_);
  if (!created.ok()) {
    // Best effort by design: an Event refused (quota, RBAC) never fails a reconcile.
    ++stats_.failed;
    log::warn(kEventsLogger, "recording an event failed",
              {{"scaler", record.ns + "/" + record.name},
               {"reason", record.reason},
               {"error", created.error().to_string()}});
    return;
  }
  ++stats_.created;
  if (seen_.size() >= options_.max_tracked) {
    // Forget the least recently seen event: a repeat of it, if any, posts a new Event.
    auto oldest = std::min_element(seen_.begin(), seen_.end(), [](const auto& a, const auto& b) {
      return a.second.last < b.second.last;
    });
    seen_.erase(oldest);
  }
  seen_[key] = Seen{name, record.ns, 1, 1, now, now, stamp};
}

}  // namespace vscaler::controller

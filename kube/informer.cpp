#include "kube/informer.h"

#include <algorithm>
#include <exception>
#include <random>

#include "base/log.h"
#include "kube/object_meta.h"
#include "kube/watch.h"

namespace vscaler::kube {
namespace {

using nlohmann::json;
using ObjectPtr = Store::ObjectPtr;

std::string resource_version_of(const json& object) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return {};
  auto version = metadata->find("resourceVersion");
  if (version == metadata->end() || !version->is_string()) return {};
  return version->get<std::string>();
}

// How long the server asked us to wait before asking again (429/503 Retry-After); 0 when it
// did not say.
std::chrono::milliseconds retry_after_of(const ApiError& error) {
  return error.retry_after
             ? std::chrono::duration_cast<std::chrono::milliseconds>(*error.retry_after)
             : std::chrono::milliseconds(0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Store

ObjectPtr Store::get(std::string_view key) const {
  std::shared_lock lock(mutex_);
  auto it = objects_.find(std::string(key));
  return it == objects_.end() ? nullptr : object_of(it->first, it->second);
}

std::vector<ObjectPtr> Store::list() const {
  std::shared_lock lock(mutex_);
  std::vector<ObjectPtr> out;
  out.reserve(objects_.size());
  for (const auto& [key, entry] : objects_) out.push_back(object_of(key, entry));
  return out;
}

std::vector<std::string> Store::keys() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(objects_.size());
  for (const auto& [key, entry] : objects_) out.push_back(key);
  return out;
}

size_t Store::size() const {
  std::shared_lock lock(mutex_);
  return objects_.size();
}

std::string Store::key_of(const json& object) {
  return object_key(object);
}

ObjectPtr Store::object_of(std::string_view key, const Entry& entry) {
  if (entry.object) return entry.object;
  json metadata = json::object();
  auto slash = key.find('/');
  if (slash == std::string_view::npos) {
    metadata["name"] = std::string(key);
  } else {
    metadata["namespace"] = std::string(key.substr(0, slash));
    metadata["name"] = std::string(key.substr(slash + 1));
  }
  if (!entry.resource_version.empty()) metadata["resourceVersion"] = entry.resource_version;
  if (entry.generation != 0) metadata["generation"] = entry.generation;
  return std::make_shared<const json>(json{{"metadata", std::move(metadata)}});
}

std::optional<Store::Entry> Store::put(const std::string& key, Entry entry) {
  std::unique_lock lock(mutex_);
  auto [it, added] = objects_.try_emplace(key, std::move(entry));
  if (added) return std::nullopt;
  Entry previous = std::move(it->second);
  it->second = std::move(entry);
  return previous;
}

std::optional<Store::Entry> Store::erase(const std::string& key) {
  std::unique_lock lock(mutex_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  Entry previous = std::move(it->second);
  objects_.erase(it);
  return previous;
}

// ---------------------------------------------------------------------------------------------
// Informer

Informer::Informer(Client client, InformerOptions options, InformerHandlers handlers)
    : client_(std::move(client)), options_(std::move(options)), handlers_(std::move(handlers)) {}

Informer::~Informer() {
  stop();
}

void Informer::start() {
  std::lock_guard join_lock(join_mutex_);
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { run(); });
}

void Informer::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (current_watch_) current_watch_->cancel();
  }
  changed_.notify_all();
  // Two threads may call stop() at once; joining one std::thread twice is undefined.
  std::lock_guard join_lock(join_mutex_);
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool Informer::wait_for_sync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return synced_.load() || stopping_; });
  return synced_.load();
}

InformerStats Informer::stats() const {
  InformerStats stats;
  stats.lists = lists_.load();
  stats.expired_relists = expired_relists_.load();
  stats.watches = watches_.load();
  stats.watch_failures = watch_failures_.load();
  stats.events = events_.load();
  stats.malformed = malformed_.load();
  return stats;
}

std::string Informer::resource_version() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

bool Informer::sleep_for(std::chrono::milliseconds delay) {
  std::unique_lock lock(mutex_);
  return !changed_.wait_for(lock, delay, [&] { return stopping_; });
}

void Informer::skip_malformed(const char* what, std::string_view why) {
  malformed_.fetch_add(1);
  log::warn("kube.informer", "skipping a malformed object",
            {{"informer", options_.name}, {"what", what}, {"error", std::string(why)}});
}

template <typename F>
void Informer::notify(const char* what, F&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    log::error("kube.informer", "handler threw; event dropped for this handler",
               {{"informer", options_.name}, {"handler", what}, {"error", e.what()}});
  }
}

Store::Entry Informer::kept(const json& object) const {
  Store::Entry entry;
  entry.resource_version = resource_version_of(object);
  entry.generation = meta_generation(object);
  if (!options_.keep_metadata) entry.object = std::make_shared<const json>(object);
  return entry;
}

std::string Informer::ingest_listed(json& item) {
  std::string key = Store::key_of(item);
  if (key.empty()) {
    skip_malformed("listed object", "metadata.name is missing or not a string");
    return key;
  }
  if (options_.transform) {
    try {
      options_.transform(item);
    } catch (const std::exception& e) {
      skip_malformed("listed object", e.what());
      return {};
    }
  }
  Store::Entry entry = kept(item);
  std::string version = entry.resource_version;
  auto previous = store_.put(key, std::move(entry));
  if (!previous) {
    if (handlers_.on_add) notify("on_add", [&] { handlers_.on_add(item); });
  } else if (previous->resource_version != version) {
    if (handlers_.on_update) {
      ObjectPtr old_object = Store::object_of(key, *previous);
      notify("on_update", [&] { handlers_.on_update(*old_object, item); });
    }
  }
  return key;
}

bool Informer::relist(std::string& resource_version, std::chrono::milliseconds& retry_after) {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.limit = options_.page_size;
  // Each item is stored and reported as its page arrives, so that a long list is never held
  // whole (as parsed JSON it is several times its size on the wire): only the current page and
  // the store's kept copies are. Each object's handlers run after its own store update; the
  // deletes a relist finds are reported once the whole list is in. A list that fails half way
  // leaves the objects it delivered updated (newer versions, never older) and deletes nothing.
  std::unordered_set<std::string> listed_keys;
  int attempt = 0;
  list_options.on_item = [&](json& item, int restart) {
    if (restart != attempt) {
      // An expired continue token: the list starts over from a new snapshot, which alone
      // decides what is gone.
      listed_keys.clear();
      attempt = restart;
    }
    std::string key = ingest_listed(item);
    if (!key.empty()) listed_keys.insert(std::move(key));
  };
  auto listed = client_.list(options_.type, options_.ns, list_options);
  if (!listed) {
    log::warn("kube.informer", "list failed",
              {{"informer", options_.name}, {"error", listed.error().to_string()}});
    retry_after = retry_after_of(listed.error());
    return false;
  }
  for (const std::string& key : store_.keys()) {
    if (listed_keys.count(key) != 0) continue;
    auto gone = store_.erase(key);
    if (gone && handlers_.on_delete) {
      ObjectPtr last_known = Store::object_of(key, *gone);
      notify("on_delete", [&] { handlers_.on_delete(*last_known); });
    }
  }
  resource_version = listed->resource_version;
  lists_.fetch_add(1);
  {
    std::lock_guard lock(mutex_);
    resource_version_ = resource_version;
  }
  if (!synced_.exchange(true)) {
    log::info("kube.informer", "synced",
              {{"informer", options_.name}, {"objects", std::to_string(listed_keys.size())}});
  }
  changed_.notify_all();
  return true;
}

void Informer::apply(const WatchEvent& event) {
  events_.fetch_add(1);
  if (event.type == EventType::kBookmark) return;
  std::string key = Store::key_of(event.object);
  if (key.empty()) {
    // One bad event must not end the informer (or the process): the next relist corrects the
    // store if the server really holds such an object.
    skip_malformed("watch event", "metadata.name is missing or not a string");
    return;
  }
  json received = event.object;
  if (options_.transform) {
    try {
      options_.transform(received);
    } catch (const std::exception& e) {
      skip_malformed("watch event", e.what());
      return;
    }
  }
  if (event.type == EventType::kDeleted) {
    store_.erase(key);
    if (handlers_.on_delete) notify("on_delete", [&] { handlers_.on_delete(received); });
    return;
  }
  auto previous = store_.put(key, kept(received));
  if (previous) {
    if (handlers_.on_update) {
      ObjectPtr old_object = Store::object_of(key, *previous);
      notify("on_update", [&] { handlers_.on_update(*old_object, received); });
    }
  } else if (handlers_.on_add) {
    notify("on_add", [&] { handlers_.on_add(received); });
  }
}

std::chrono::milliseconds jittered_backoff(std::chrono::milliseconds delay, double unit) {
  const auto half = delay / 2;
  const double spread = std::clamp(unit, 0.0, 1.0) * static_cast<double>((delay - half).count());
  return half + std::chrono::milliseconds(static_cast<std::int64_t>(spread));
}

void Informer::run() {
  std::mt19937_64 random(std::random_device{}());
  std::chrono::milliseconds backoff = options_.initial_backoff;
  // Waits for the backoff, or longer when the server said how long (a 429's Retry-After).
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto back_off = [&](std::chrono::milliseconds at_least) {
    bool go_on = sleep_for(std::max(jittered_backoff(backoff, unit(random)), at_least));
    backoff = std::min(backoff * 2, options_.max_backoff);
    return go_on;
  };
  std::string resource_version;
  bool need_list = true;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    if (need_list) {
      std::chrono::milliseconds retry_after{0};
      if (!relist(resource_version, retry_after)) {
        if (!back_off(retry_after)) return;
        continue;
      }
      need_list = false;
    }
    WatchOptions watch_options;
    watch_options.label_selector = options_.label_selector;
    watch_options.field_selector = options_.field_selector;
    watch_options.resource_version = resource_version;
    watch_options.allow_bookmarks = true;
    const auto base =
        static_cast<unsigned long long>(std::max<long long>(1, options_.watch_timeout.count()));
    watch_options.timeout = std::chrono::seconds(static_cast<long long>(base + random() % base));
    std::unique_ptr<Watch> watch = client_.watch(options_.type, options_.ns, watch_options);
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      current_watch_ = watch.get();
    }
    watches_.fetch_add(1);
    const auto watch_started = std::chrono::steady_clock::now();
    auto result = watch->run([&](const WatchEvent& event) {
      apply(event);
      std::lock_guard lock(mutex_);
      resource_version_ = watch->resource_version();
      return true;
    });
    {
      std::lock_guard lock(mutex_);
      current_watch_ = nullptr;
      if (!watch->resource_version().empty()) resource_version_ = watch->resource_version();
    }
    // Resume after the last event or bookmark seen: nothing in between is lost.
    if (!watch->resource_version().empty()) resource_version = watch->resource_version();
    if (result && (watch->events() > 0 ||
                   std::chrono::steady_clock::now() - watch_started >= std::chrono::seconds(1))) {
      backoff = options_.initial_backoff;  // the server ended the watch at its timeout
      continue;
    }
    if (result) {
      // Ended at once, cleanly and empty (client-go's reflector: "very short watch"): something
      // between here and the API server closes watches. Asking again at once would loop as
      // fast as it answers; back off as after a failure.
      watch_failures_.fetch_add(1);
      log::warn("kube.informer", "watch ended at once without events; backing off",
                {{"informer", options_.name}, {"backoff_ms", std::to_string(backoff.count())}});
      if (!back_off(std::chrono::milliseconds(0))) return;
      continue;
    }
    const ApiError& error = result.error();
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    if (watch->events() > 0) backoff = options_.initial_backoff;
    if (is_expired(error)) {
      // The version we would resume from was compacted: only a new list can tell what happened.
      expired_relists_.fetch_add(1);
      log::info("kube.informer", "watch expired; relisting",
                {{"informer", options_.name}, {"resourceVersion", resource_version}});
      need_list = true;
      continue;
    }
    watch_failures_.fetch_add(1);
    log::warn("kube.informer", "watch failed; reconnecting",
              {{"informer", options_.name},
               {"error", error.to_string()},
               {"backoff_ms", std::to_string(std::max(backoff, retry_after_of(error)).count())}});
    // A transport failure (API server restarting) resumes from the same version; an answer from
    // the server that is neither success nor expiry (say "too large resource version") is not
    // fixed by asking again the same way, so relist.
    if (error.code != 0 && !is_retryable(error)) need_list = true;
    if (!back_off(retry_after_of(error))) return;
  }
}

}  // namespace vscaler::kube

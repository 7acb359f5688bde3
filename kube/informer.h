// Informer: keeps an in-memory copy of a collection (list, then watch from the list's version
// with bookmarks) and tells handlers what changed. After an expired watch it relists and reports
// exactly the differences (adds, updates, deletes that happened meanwhile); on errors it
// reconnects from the last version seen, with backoff. The operator runs one for VerticalScalers.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kube/client.h"

namespace vscaler::kube {

class Watch;
struct WatchEvent;

/// A thread-safe map "namespace/name" (or "name" for cluster-scoped objects) -> object. Objects
/// are immutable once stored; readers get shared pointers and never block the informer for long.
/// With InformerOptions::keep_metadata an entry is only the key, resourceVersion and generation
/// (~100 bytes instead of a JSON tree), and readers get a small object rebuilt from them.
class Store {
 public:
  using ObjectPtr = std::shared_ptr<const nlohmann::json>;

  /// One stored object: its resourceVersion and generation, and the object itself unless the
  /// store keeps metadata only.
  struct Entry {
    std::string resource_version;  ///< metadata.resourceVersion ("" when missing)
    std::int64_t generation = 0;   ///< metadata.generation (0 when missing)
    ObjectPtr object;              ///< the whole (transformed) object; null = metadata only
  };

  /// The object stored under `key`, or null.
  ObjectPtr get(std::string_view key) const;
  /// A snapshot of every stored object (in no particular order).
  std::vector<ObjectPtr> list() const;
  /// A snapshot of every key.
  std::vector<std::string> keys() const;
  /// How many objects are stored.
  size_t size() const;

  /// The store key of an object: "namespace/name", or "name" when it has no namespace; "" when
  /// metadata.name is missing or not a string (never throws, whatever the object's shape).
  static std::string key_of(const nlohmann::json& object);
  /// What readers get for an entry: its object, or {metadata: {name, namespace,
  /// resourceVersion, generation}} rebuilt from the key and the entry.
  static ObjectPtr object_of(std::string_view key, const Entry& entry);

 private:
  friend class Informer;
  std::optional<Entry> put(const std::string& key, Entry entry);  // returns the previous one
  std::optional<Entry> erase(const std::string& key);

  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, Entry> objects_;
};

/// The wait of one backoff step: `delay` / 2 plus `unit` (a draw from [0, 1)) times `delay` / 2
/// ("equal jitter"): never more than `delay`, never less than half of it.
std::chrono::milliseconds jittered_backoff(std::chrono::milliseconds delay, double unit);

/// What to watch and how patiently.
struct InformerOptions {
  ResourceType type;             ///< the collection to mirror
  std::string ns;                ///< "" = all namespaces
  std::string label_selector;    ///< only objects with matching labels
  std::string field_selector;    ///< only objects with matching fields
  std::int64_t page_size = 500;  ///< list page size
  /// Each watch asks the server to end it after a random time in [watch_timeout,
  /// 2 * watch_timeout), so that many informers do not reconnect in step.
  std::chrono::seconds watch_timeout{300};
  /// Delay after the first failure, doubled on each further one up to max_backoff; reset once
  /// a watch delivers events or ends normally. Each wait is drawn from [delay / 2, delay]
  /// (jittered_backoff), so informers that failed together (an API server restarting) do not
  /// all come back in the same instant. A failure whose answer carries a Retry-After (429
  /// throttling) waits at least that long.
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{30'000};
  /// Name in log lines.
  std::string name = "informer";
  /// Applied to every object, listed or from a watch event, before it is stored or handed to a
  /// handler (client-go's SetTransform): drop what no handler reads, such as
  /// metadata.managedFields, which is most of a small object's memory. Must keep
  /// metadata.name, metadata.namespace and metadata.resourceVersion. Runs on the informer's
  /// thread; empty = store objects as received.
  std::function<void(nlohmann::json& object)> transform;
  /// The store keeps of each object only its key, resourceVersion and generation: handlers
  /// still get the whole object as it arrived (on_add, the new side of on_update), while the old
  /// side of on_update and a relist's on_delete get {metadata: {name, namespace,
  /// resourceVersion, generation}}. An operator that parses objects into a form of its own sets
  /// this instead of keeping a second copy of each. false = keep the whole object.
  bool keep_metadata = false;
};

/// Called on the informer's thread, after the store has been updated, one at a time. They must
/// be quick (no API calls: enqueue work instead) and should not throw (an exception is logged
/// and swallowed).
struct InformerHandlers {
  std::function<void(const nlohmann::json& object)> on_add;
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& new_object)> on_update;
  /// `last_known` is the deleted object as the DELETED event carried it, or, when the deletion
  /// was found by a relist, the last version the store held.
  std::function<void(const nlohmann::json& last_known)> on_delete;
};

/// Counters, for tests and metrics.
struct InformerStats {
  std::uint64_t lists = 0;            ///< complete lists (the first one included)
  std::uint64_t expired_relists = 0;  ///< relists caused by an expired watch (410)
  std::uint64_t watches = 0;          ///< watch requests made
  std::uint64_t watch_failures = 0;   ///< watches that ended in an error other than expiry
  std::uint64_t events = 0;           ///< watch events applied (bookmarks included)
  std::uint64_t malformed = 0;        ///< objects skipped: no usable name, or the transform threw
};

/// List-and-watch of one collection on a thread of its own.
class Informer {
 public:
  Informer(Client client, InformerOptions options, InformerHandlers handlers);
  /// Stops the thread if it runs.
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  /// Starts the list-and-watch thread. Call once.
  void start();
  /// Stops the thread and waits for it; handlers are not called after it returns. Callable from
  /// any thread but a handler; idempotent.
  void stop();

  /// True once the first complete list is in the store (and stays true).
  bool has_synced() const { return synced_.load(); }
  /// Waits until has_synced() or the timeout; returns has_synced().
  bool wait_for_sync(std::chrono::milliseconds timeout) const;

  /// The objects seen; safe from any thread.
  const Store& store() const { return store_; }
  /// Counters since start().
  InformerStats stats() const;
  /// The resourceVersion the informer would resume from.
  std::string resource_version() const;

 private:
  void run();
  /// Lists into the store; on failure returns false and sets `retry_after` to the wait the
  /// server asked for (0 when none).
  bool relist(std::string& resource_version, std::chrono::milliseconds& retry_after);
  void apply(const WatchEvent& event);
  /// Stores a listed object (transformed, validated) and reports it as an add, or as an update
  /// when its version changed; returns its key, "" when it was skipped as malformed.
  std::string ingest_listed(nlohmann::json& item);
  /// The store's entry for `object` (whole, or metadata only: options_.keep_metadata).
  Store::Entry kept(const nlohmann::json& object) const;
  /// Logs and counts an object that cannot be stored; the caller skips it.
  void skip_malformed(const char* what, std::string_view why);
  bool sleep_for(std::chrono::milliseconds delay);  // false when stopping
  template <typename F>
  void notify(const char* what, F&& call);

  Client client_;
  InformerOptions options_;
  InformerHandlers handlers_;
  Store store_;
  std::thread thread_;

  std::mutex join_mutex_;     // serialises joins of thread_ by concurrent stop() calls
  mutable std::mutex mutex_;  // guards stopping_, current_watch_, resource_version_
  mutable std::condition_variable changed_;
  bool stopping_ = false;
  Watch* current_watch_ = nullptr;
  std::string resource_version_;
  std::atomic<bool> synced_{false};

  std::atomic<std::uint64_t> lists_{0};
  std::atomic<std::uint64_t> expired_relists_{0};
  std::atomic<std::uint64_t> watches_{0};
  std::atomic<std::uint64_t> watch_failures_{0};
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> malformed_{0};
};

}  // namespace vscaler::kube

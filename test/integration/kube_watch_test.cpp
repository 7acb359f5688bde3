// Watches and the informer against the real local API server: event order, bookmarks, the
// server-side timeout, cancellation from another thread, and an informer that resumes after
// the API server restarts without losing an event. Also built under ThreadSanitizer.
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "kube/informer.h"
#include "kube/watch.h"
#include "kube_support.h"

using namespace kube_test;

namespace {

WatchOptions watch_from(const std::string& resource_version, int timeout_seconds) {
  WatchOptions options;
  options.resource_version = resource_version;
  options.timeout = std::chrono::seconds(timeout_seconds);
  return options;
}

std::string rv(const json& object) {
  return object["metadata"]["resourceVersion"];
}

// Everything an informer reported, in order, for checks from the test thread.
struct Recorder {
  std::mutex mutex;
  std::vector<std::string> log;                        // "add ns/a", "update ns/a", "delete ns/a"
  std::set<std::pair<std::string, std::string>> seen;  // (key, resourceVersion) delivered
  InformerHandlers handlers() {
    InformerHandlers h;
    h.on_add = [this](const json& o) { record("add", o); };
    h.on_update = [this](const json& old_object, const json& o) {
      CHECK(Store::key_of(old_object) == Store::key_of(o));
      record("update", o);
    };
    h.on_delete = [this](const json& o) { record("delete", o); };
    return h;
  }
  void record(const char* what, const json& object) {
    std::lock_guard lock(mutex);
    log.push_back(std::string(what) + " " + Store::key_of(object));
    seen.emplace(Store::key_of(object), rv(object));
  }
  size_t count(const std::string& entry) {
    std::lock_guard lock(mutex);
    return static_cast<size_t>(std::count(log.begin(), log.end(), entry));
  }
  bool saw(const std::string& key, const std::string& version) {
    std::lock_guard lock(mutex);
    return seen.count({key, version}) > 0;
  }
};

}  // namespace

TEST_CASE("watch from a list's resourceVersion delivers ADDED, MODIFIED, DELETED in order") {
  Client client = admin_client();
  TestNamespace ns(client);
  auto listed = client.list(resources::kConfigMaps, ns.name);
  REQUIRE(listed.ok());
  auto watch =
      client.watch(resources::kConfigMaps, ns.name, watch_from(listed->resource_version, 30));
  std::vector<std::pair<EventType, std::string>> events;
  std::thread watcher([&] {
    auto result = watch->run([&](const WatchEvent& event) {
      if (event.type == EventType::kBookmark) return true;
      events.emplace_back(event.type, event.object["metadata"]["name"].get<std::string>());
      return event.type != EventType::kDeleted;  // stop after the delete
    });
    CHECK_MESSAGE(result.ok(), (result.ok() ? "" : result.error().to_string()));
  });
  auto created = client.create(resources::kConfigMaps, ns.name, config_map("w", {{"v", "1"}}));
  REQUIRE(created.ok());
  REQUIRE(
      client
          .patch(resources::kConfigMaps, ns.name, "w", PatchType::kMerge, {{"data", {{"v", "2"}}}})
          .ok());
  REQUIRE(client.remove(resources::kConfigMaps, ns.name, "w").ok());
  watcher.join();
  using P = std::pair<EventType, std::string>;
  CHECK(events == std::vector<P>{P{EventType::kAdded, "w"}, P{EventType::kModified, "w"},
                                 P{EventType::kDeleted, "w"}});
  CHECK(watch->events() >= 3);
  CHECK(std::stoull(watch->resource_version()) > std::stoull(rv(*created)));
}

TEST_CASE("bookmarks advance the resume point; the server ends the watch at timeoutSeconds") {
  Client client = admin_client();
  TestNamespace ns(client);
  auto listed = client.list(resources::kConfigMaps, ns.name);
  REQUIRE(listed.ok());
  auto watch =
      client.watch(resources::kConfigMaps, ns.name, watch_from(listed->resource_version, 4));
  // The API server sends a bookmark shortly before the deadline when the resourceVersion moved
  // on meanwhile: a change elsewhere in the cluster (another namespace) does that.
  std::thread bump([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(client.create(resources::kConfigMaps, "default", config_map(unique_name("bump"))).ok());
  });
  int bookmarks = 0;
  auto start = Clock::now();
  auto result = watch->run([&](const WatchEvent& event) {
    if (event.type == EventType::kBookmark) ++bookmarks;
    return true;
  });
  bump.join();
  double took = seconds_since(start);
  REQUIRE_MESSAGE(result.ok(), (result.ok() ? "" : result.error().to_string()));
  CHECK(bookmarks >= 1);
  CHECK(std::stoull(watch->resource_version()) > std::stoull(listed->resource_version));
  CHECK(took > 3.0);
  CHECK(took < 8.0);
  std::fprintf(stderr, "measure: watch timeoutSeconds=4 ended after %.2f s with %d bookmark(s)\n",
               took, bookmarks);
}

TEST_CASE("cancel from another thread ends a quiet watch promptly, before or during run") {
  Client client = admin_client();
  auto early = client.watch(resources::kConfigMaps, "default", watch_from("", 60));
  early->cancel();
  auto start = Clock::now();
  auto result = early->run([](const WatchEvent&) { return true; });
  REQUIRE_FALSE(result.ok());
  CHECK(is_canceled(result.error()));
  CHECK(seconds_since(start) < 0.5);

  for (int delay_ms : {0, 1, 5, 50, 300}) {
    CAPTURE(delay_ms);
    auto watch = client.watch(resources::kConfigMaps, "default", watch_from("", 60));
    Clock::time_point canceled_at;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      canceled_at = Clock::now();
      watch->cancel();
    });
    auto ended = watch->run([](const WatchEvent&) { return true; });
    auto returned_at = Clock::now();
    canceller.join();
    REQUIRE_FALSE(ended.ok());
    CHECK_MESSAGE(is_canceled(ended.error()), ended.error().to_string());
    double lag = std::chrono::duration<double>(returned_at - canceled_at).count();
    CHECK(lag < 1.0);
    if (delay_ms == 300) std::fprintf(stderr, "measure: watch cancel took %.2f ms\n", lag * 1000);
  }
}

TEST_CASE("a watch the server refuses reports the server's error") {
  Client client = admin_client();
  WatchOptions options = watch_from("", 5);
  options.label_selector = "a b c";
  auto watch = client.watch(resources::kConfigMaps, "default", options);
  auto result = watch->run([](const WatchEvent&) { return true; });
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().kind == ErrorKind::kBadRequest);
  CHECK(result.error().code == 400);
}

TEST_CASE("informer: initial list, then add, update, delete; store; stop from another thread") {
  Client client = admin_client();
  TestNamespace ns(client);
  for (const char* name : {"a", "b", "c"}) {
    REQUIRE(client.create(resources::kConfigMaps, ns.name, config_map(name, {{"v", "0"}})).ok());
  }
  Recorder recorder;
  InformerOptions options;
  options.type = resources::kConfigMaps;
  options.ns = ns.name;
  options.page_size = 2;  // the initial list pages too
  options.name = "configmaps-test";
  Informer informer(client, options, recorder.handlers());
  CHECK_FALSE(informer.has_synced());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(10)));
  CHECK(informer.store().size() == 3);
  CHECK(recorder.count("add " + ns.name + "/a") == 1);

  REQUIRE(client.create(resources::kConfigMaps, ns.name, config_map("d")).ok());
  auto updated = client.patch(resources::kConfigMaps, ns.name, "a", PatchType::kMerge,
                              {{"data", {{"v", "1"}}}});
  REQUIRE(updated.ok());
  REQUIRE(client.remove(resources::kConfigMaps, ns.name, "b").ok());
  REQUIRE(eventually([&] { return recorder.count("delete " + ns.name + "/b") == 1; }));
  CHECK(recorder.count("add " + ns.name + "/d") == 1);
  CHECK(recorder.count("update " + ns.name + "/a") == 1);
  auto a = informer.store().get(ns.name + "/a");
  REQUIRE(a != nullptr);
  CHECK((*a)["data"]["v"] == "1");
  CHECK(informer.store().get(ns.name + "/b") == nullptr);
  auto keys = informer.store().keys();
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{ns.name + "/a", ns.name + "/c", ns.name + "/d"});
  CHECK(informer.stats().lists == 1);
  CHECK(informer.stats().expired_relists == 0);

  // Readers on other threads while events flow.
  std::atomic<bool> reading{true};
  std::atomic<int> malformed{0};
  std::thread reader([&] {
    while (reading.load()) {
      for (const auto& object : informer.store().list()) {
        if (!object->contains("metadata")) malformed.fetch_add(1);
      }
    }
  });
  for (int i = 0; i < 20; ++i) {
    REQUIRE(client
                .patch(resources::kConfigMaps, ns.name, "c", PatchType::kMerge,
                       {{"data", {{"v", std::to_string(i)}}}})
                .ok());
  }
  REQUIRE(eventually([&] { return (*informer.store().get(ns.name + "/c"))["data"]["v"] == "19"; }));
  reading.store(false);
  reader.join();
  CHECK(malformed.load() == 0);

  std::atomic<bool> stopped{false};
  auto start = Clock::now();
  std::thread stopper([&] {
    informer.stop();
    stopped.store(true);
  });
  stopper.join();
  CHECK(stopped.load());
  double took = seconds_since(start);
  CHECK(took < 1.0);
  std::fprintf(stderr, "measure: informer stop() took %.2f ms\n", took * 1000);
  size_t events_after_stop = recorder.log.size();
  REQUIRE(client.create(resources::kConfigMaps, ns.name, config_map("after-stop")).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(recorder.log.size() == events_after_stop);
}

TEST_CASE("after an API server restart the informer catches up: no change is lost") {
  Client client = admin_client();
  TestNamespace ns(client);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(
        client.create(resources::kConfigMaps, ns.name, config_map("a" + std::to_string(i))).ok());
  }
  Recorder recorder;
  InformerOptions options;
  options.type = resources::kConfigMaps;
  options.ns = ns.name;
  options.name = "restart-test";
  options.initial_backoff = std::chrono::milliseconds(100);
  options.max_backoff = std::chrono::milliseconds(500);
  Informer informer(client, options, recorder.handlers());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(10)));

  // A writer keeps writing through the restart, retrying each write until it lands. The watch
  // cache of the restarted server starts at the current etcd revision, so the informer's
  // resourceVersion is usually "too old" there (410): it relists and reports the differences.
  // Either way the last version of every object must reach the handlers. (The exact resumption
  // of a watch, event by event, is checked against a server without a watch cache in
  // kube_compaction_test.)
  std::mutex written_mutex;
  std::vector<std::pair<std::string, std::string>> written;  // (key, resourceVersion)
  std::atomic<bool> writing{true};
  std::atomic<int> failed_attempts{0};
  // Retries end after two minutes, so that a server that never comes back fails the test
  // instead of hanging it.
  auto give_up = Clock::now() + std::chrono::minutes(2);
  std::thread writer([&] {
    for (int i = 0; (writing.load() || i < 40) && Clock::now() < give_up; ++i) {
      std::string name = i % 3 == 2 ? "a" + std::to_string(i % 5) : "w" + std::to_string(i);
      for (;;) {
        Result<json, ApiError> result =
            i % 3 == 2 ? client.patch(resources::kConfigMaps, ns.name, name, PatchType::kMerge,
                                      {{"data", {{"i", std::to_string(i)}}}})
                       : client.create(resources::kConfigMaps, ns.name, config_map(name));
        if (!result.ok() && is_already_exists(result.error())) {
          result = client.get(resources::kConfigMaps, ns.name, name);  // the lost answer
        }
        if (result.ok()) {
          std::lock_guard lock(written_mutex);
          written.emplace_back(ns.name + "/" + name, rv(*result));
          break;
        }
        failed_attempts.fetch_add(1);
        if (Clock::now() > give_up) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (i > 400) break;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto restart_start = Clock::now();
  kube_test::sh("VSCALER_CLUSTER_DIR='" + required_env("VSCALER_CLUSTER_DIR") +
                "' '" VSCALER_SOURCE_DIR "/test/cluster/restart-apiserver.sh' >/dev/null 2>&1");
  double restart_seconds = seconds_since(restart_start);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  writing.store(false);
  writer.join();
  REQUIRE(client.remove(resources::kConfigMaps, ns.name, "a0").ok());

  std::map<std::string, std::string> final_versions;  // key -> last version written
  {
    std::lock_guard lock(written_mutex);
    for (const auto& [key, version] : written) final_versions[key] = version;
  }
  bool all_seen = eventually(
      [&] {
        for (const auto& [key, version] : final_versions) {
          if (key != ns.name + "/a0" && !recorder.saw(key, version)) return false;
        }
        return recorder.count("delete " + ns.name + "/a0") == 1;
      },
      std::chrono::seconds(20));
  for (const auto& [key, version] : final_versions) {
    if (key == ns.name + "/a0") continue;
    CHECK_MESSAGE(recorder.saw(key, version), key << " at " << version << " was not delivered");
  }
  CHECK(all_seen);
  // The store matches a fresh list exactly.
  auto fresh = client.list(resources::kConfigMaps, ns.name);
  REQUIRE(fresh.ok());
  std::map<std::string, std::string> listed_versions, stored_versions;
  for (const auto& item : fresh->items) listed_versions[Store::key_of(item)] = rv(item);
  for (const auto& object : informer.store().list()) {
    stored_versions[Store::key_of(*object)] = rv(*object);
  }
  CHECK(stored_versions == listed_versions);
  InformerStats stats = informer.stats();
  CHECK(stats.watch_failures >= 1);  // the restart broke the watch
  CHECK(stats.lists == 1 + stats.expired_relists);
  std::fprintf(stderr,
               "measure: API server restart %.1f s; %zu writes to %zu objects (%d failed "
               "attempts while down); informer: %llu watches, %llu watch failures, %llu expired "
               "relists; every object's last version delivered\n",
               restart_seconds, written.size(), final_versions.size(), failed_attempts.load(),
               static_cast<unsigned long long>(stats.watches),
               static_cast<unsigned long long>(stats.watch_failures),
               static_cast<unsigned long long>(stats.expired_relists));
  informer.stop();
}

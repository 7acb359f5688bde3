// Expiry and resumption against a private control plane whose API server runs with
// --watch-cache=false (the watch cache hides etcd compactions), so every watch and list is
// served from etcd: a watch from a compacted resourceVersion is Expired, an expired continue
// token restarts the list, the informer relists after a compaction and reports exactly what
// changed meanwhile, and a watch resumes event by event after an API server restart.
#include <httplib.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "kube/informer.h"
#include "kube/watch.h"
#include "kube_support.h"

using namespace kube_test;

namespace {

// One private control plane for the whole binary, started on first use and stopped at exit.
PrivateControlPlane& plane() {
  static PrivateControlPlane instance("--watch-cache=false");
  return instance;
}

Client plane_client() {
  auto config = load_kubeconfig(plane().kubeconfig());
  REQUIRE_MESSAGE(config.ok(), (config.ok() ? "" : config.error()));
  return make_client(*config);
}

std::string rv(const json& object) {
  return object["metadata"]["resourceVersion"];
}

// etcd's v3 JSON gateway: the current revision, and a compaction up to it.
long long etcd_revision() {
  httplib::Client etcd("127.0.0.1", plane().etcd_port());
  auto response = etcd.Post("/v3/kv/range", R"({"key":"Lw==","limit":"1"})", "application/json");
  REQUIRE(response);
  REQUIRE(response->status == 200);
  return std::stoll(json::parse(response->body)["header"]["revision"].get<std::string>());
}

long long compact_etcd() {
  long long revision = etcd_revision();
  httplib::Client etcd("127.0.0.1", plane().etcd_port());
  json body = {{"revision", std::to_string(revision)}, {"physical", true}};
  auto response = etcd.Post("/v3/kv/compaction", body.dump(), "application/json");
  REQUIRE(response);
  REQUIRE_MESSAGE(response->status == 200, response->body);
  return revision;
}

// A transport whose streams can be cut, as by a network partition: live watches fail with a
// transport error and new ones are refused until heal(). Ordinary requests pass.
class GatedTransport final : public Transport {
 public:
  explicit GatedTransport(std::shared_ptr<Transport> inner) : inner_(std::move(inner)) {}

  Result<HttpResponse, ApiError> send(const HttpRequest& request) override {
    return inner_->send(request);
  }
  std::unique_ptr<Stream> open_stream(HttpRequest request,
                                      std::chrono::milliseconds read_timeout) override {
    return std::make_unique<GatedStream>(*this,
                                         inner_->open_stream(std::move(request), read_timeout));
  }
  const ClientConfig& config() const override { return inner_->config(); }
  TransportStats stats() const override { return inner_->stats(); }

  void partition() {
    std::lock_guard lock(mutex_);
    cut_ = true;
    for (auto* stream : live_) stream->cut();
  }
  void heal() {
    std::lock_guard lock(mutex_);
    cut_ = false;
  }

 private:
  class GatedStream final : public Stream {
   public:
    GatedStream(GatedTransport& gate, std::unique_ptr<Stream> inner)
        : gate_(gate), inner_(std::move(inner)) {}
    Result<Unit, ApiError> run(const std::function<bool(std::string_view)>& on_data) override {
      {
        std::lock_guard lock(gate_.mutex_);
        if (gate_.cut_) return fail(make_error(ErrorKind::kTransport, "partitioned"));
        gate_.live_.insert(this);
      }
      auto result = inner_->run(on_data);
      std::lock_guard lock(gate_.mutex_);
      gate_.live_.erase(this);
      if (cut_by_gate_) return fail(make_error(ErrorKind::kTransport, "partitioned"));
      return result;
    }
    void cancel() override { inner_->cancel(); }
    void cut() {  // called with the gate's mutex held
      cut_by_gate_ = true;
      inner_->cancel();
    }

   private:
    GatedTransport& gate_;
    std::unique_ptr<Stream> inner_;
    bool cut_by_gate_ = false;
  };

  std::shared_ptr<Transport> inner_;
  std::mutex mutex_;
  bool cut_ = false;
  std::set<GatedStream*> live_;
};

struct Recorder {
  std::mutex mutex;
  std::vector<std::string> log;
  InformerHandlers handlers() {
    InformerHandlers h;
    h.on_add = [this](const json& o) { record("add " + name(o)); };
    h.on_update = [this](const json& old_object, const json& o) {
      record("update " + name(o) + " " + old_object["data"].value("v", "") + "->" +
             o["data"].value("v", ""));
    };
    h.on_delete = [this](const json& o) { record("delete " + name(o)); };
    return h;
  }
  static std::string name(const json& o) { return o["metadata"]["name"]; }
  void record(std::string entry) {
    std::lock_guard lock(mutex);
    log.push_back(std::move(entry));
  }
  std::vector<std::string> take() {
    std::lock_guard lock(mutex);
    auto out = std::move(log);
    log.clear();
    return out;
  }
};

}  // namespace

TEST_CASE("a watch from a compacted resourceVersion is Expired") {
  Client client = plane_client();
  TestNamespace ns(client);
  auto created = client.create(resources::kConfigMaps, ns.name, config_map("c", {{"v", "0"}}));
  REQUIRE(created.ok());
  for (int i = 1; i <= 3; ++i) {
    REQUIRE(client
                .patch(resources::kConfigMaps, ns.name, "c", PatchType::kMerge,
                       {{"data", {{"v", std::to_string(i)}}}})
                .ok());
  }
  compact_etcd();
  WatchOptions options;
  options.resource_version = rv(*created);
  options.timeout = std::chrono::seconds(10);
  auto watch = client.watch(resources::kConfigMaps, ns.name, options);
  int delivered = 0;
  auto result = watch->run([&](const WatchEvent&) {
    ++delivered;
    return true;
  });
  REQUIRE_FALSE(result.ok());
  CHECK_MESSAGE(is_expired(result.error()), result.error().to_string());
  CHECK(result.error().code == 410);
  CHECK(delivered == 0);
  std::fprintf(stderr, "measure: compacted watch -> %s\n", result.error().to_string().c_str());
}

TEST_CASE("an expired continue token restarts the list; with no restarts allowed it is Expired") {
  Client client = plane_client();
  TestNamespace ns(client);
  for (int i = 0; i < 25; ++i) {
    REQUIRE(
        client.create(resources::kConfigMaps, ns.name, config_map("l" + std::to_string(i))).ok());
  }
  ListOptions options;
  options.limit = 10;
  std::vector<ListPage> pages;
  options.on_page = [&](const ListPage& page) {
    pages.push_back(page);
    if (page.restart == 0 && page.index == 0) {
      // Between the first and second page: a write, then a compaction past the snapshot.
      CHECK(client.create(resources::kConfigMaps, ns.name, config_map("late")).ok());
      compact_etcd();
    }
  };
  auto listed = client.list(resources::kConfigMaps, ns.name, options);
  REQUIRE_MESSAGE(listed.ok(), listed.error().to_string());
  CHECK(listed->restarts == 1);
  std::set<std::string> names;
  for (const auto& item : listed->items) names.insert(item["metadata"]["name"]);
  CHECK(names.size() == listed->items.size());  // no duplicates from the abandoned attempt
  CHECK(names.count("late") == 1);
  CHECK(names.count("l0") == 1);
  CHECK(names.count("l24") == 1);
  CHECK(listed->items.size() >= 26);
  REQUIRE(pages.size() >= 2);
  CHECK(pages[1].restart == 1);
  CHECK(pages[1].index == 0);

  ListOptions strict;
  strict.limit = 10;
  strict.max_restarts = 0;
  strict.on_page = [&](const ListPage& page) {
    if (page.index == 0) {
      CHECK(client.create(resources::kConfigMaps, ns.name, config_map(unique_name("later"))).ok());
      compact_etcd();
    }
  };
  auto expired = client.list(resources::kConfigMaps, ns.name, strict);
  REQUIRE_FALSE(expired.ok());
  CHECK(is_expired(expired.error()));
  CHECK(expired.error().code == 410);
}

TEST_CASE(
    "after a compaction past its resourceVersion the informer relists and reports what "
    "changed and was deleted meanwhile") {
  Client admin = plane_client();
  TestNamespace ns(admin);
  for (const char* name : {"same", "changed", "deleted"}) {
    REQUIRE(admin.create(resources::kConfigMaps, ns.name, config_map(name, {{"v", "0"}})).ok());
  }
  auto gate = std::make_shared<GatedTransport>(admin.shared_transport());
  Client gated(gate);
  Recorder recorder;
  InformerOptions options;
  options.type = resources::kConfigMaps;
  options.ns = ns.name;
  options.name = "compaction-test";
  options.initial_backoff = std::chrono::milliseconds(50);
  options.max_backoff = std::chrono::milliseconds(200);
  Informer informer(gated, options, recorder.handlers());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(10)));
  // An event through the live watch first, so the resume point is a watched version.
  REQUIRE(admin.create(resources::kConfigMaps, ns.name, config_map("watched")).ok());
  REQUIRE(eventually([&] { return informer.store().size() == 4; }));
  auto before = recorder.take();
  CHECK(before.size() == 4);
  std::string resume_from = informer.resource_version();

  gate->partition();
  REQUIRE(admin
              .patch(resources::kConfigMaps, ns.name, "changed", PatchType::kMerge,
                     {{"data", {{"v", "1"}}}})
              .ok());
  REQUIRE(admin.remove(resources::kConfigMaps, ns.name, "deleted").ok());
  REQUIRE(admin.create(resources::kConfigMaps, ns.name, config_map("created", {{"v", "0"}})).ok());
  long long compacted_at = compact_etcd();
  CHECK(compacted_at > std::stoll(resume_from));
  gate->heal();

  REQUIRE(eventually([&] { return informer.stats().expired_relists == 1; }));
  REQUIRE(eventually([&] {
    return informer.store().get(ns.name + "/created") != nullptr &&
           informer.store().get(ns.name + "/deleted") == nullptr;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // nothing more may arrive
  auto after = recorder.take();
  std::sort(after.begin(), after.end());
  CHECK(after == std::vector<std::string>{"add created", "delete deleted", "update changed 0->1"});
  CHECK(informer.stats().lists == 2);
  auto same = informer.store().get(ns.name + "/same");
  REQUIRE(same != nullptr);
  CHECK((*informer.store().get(ns.name + "/changed"))["data"]["v"] == "1");

  // Watching again from the relist: later changes arrive as events.
  REQUIRE(admin.remove(resources::kConfigMaps, ns.name, "same").ok());
  REQUIRE(eventually([&] { return informer.store().get(ns.name + "/same") == nullptr; }));
  CHECK(recorder.take() == std::vector<std::string>{"delete same"});
  informer.stop();
}

TEST_CASE(
    "a watch resumes from its resourceVersion after the API server restarts; no event is "
    "lost") {
  Client client = plane_client();
  TestNamespace ns(client);
  auto listed = client.list(resources::kConfigMaps, ns.name);
  REQUIRE(listed.ok());

  // The watcher: reconnects after every failure from the last version it saw.
  std::mutex seen_mutex;
  std::vector<std::pair<std::string, std::string>> seen;  // (name, resourceVersion) in order
  std::atomic<bool> done{false};
  std::atomic<int> reconnects{0};
  std::atomic<int> expired{0};
  std::mutex watch_mutex;
  Watch* current = nullptr;
  std::thread watcher([&] {
    std::string from = listed->resource_version;
    while (!done.load()) {
      WatchOptions options;
      options.resource_version = from;
      options.timeout = std::chrono::seconds(30);
      auto watch = client.watch(resources::kConfigMaps, ns.name, options);
      {
        std::lock_guard lock(watch_mutex);
        if (done.load()) break;
        current = watch.get();
      }
      auto result = watch->run([&](const WatchEvent& event) {
        if (event.type == EventType::kBookmark) return true;
        std::lock_guard lock(seen_mutex);
        seen.emplace_back(event.object["metadata"]["name"], rv(event.object));
        return true;
      });
      {
        std::lock_guard lock(watch_mutex);
        current = nullptr;
      }
      if (!watch->resource_version().empty()) from = watch->resource_version();
      if (!result.ok() && is_expired(result.error())) expired.fetch_add(1);
      if (!result.ok() && !is_canceled(result.error())) {
        reconnects.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });

  // Writes before, during (retried until they land) and after the restart.
  std::vector<std::pair<std::string, std::string>> written;
  std::atomic<bool> writing{true};
  // Retries end after two minutes, so that a server that never comes back fails the test
  // instead of hanging it.
  auto give_up = Clock::now() + std::chrono::minutes(2);
  std::thread writer([&] {
    for (int i = 0; (writing.load() || i < 20) && Clock::now() < give_up; ++i) {
      std::string name = "r" + std::to_string(i % 7);
      for (;;) {
        auto result = client.patch(resources::kConfigMaps, ns.name, name, PatchType::kApply,
                                   config_map(name, {{"i", std::to_string(i)}}),
                                   WriteOptions{.field_manager = "resume-test",
                                                .dry_run = false,
                                                .force = true,
                                                .field_validation = ""});
        if (result.ok()) {
          written.emplace_back(name, rv(*result));
          break;
        }
        if (Clock::now() > give_up) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      if (i > 500) break;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto start = Clock::now();
  kube_test::sh("VSCALER_CLUSTER_DIR='" + plane().dir +
                "' '" VSCALER_SOURCE_DIR "/test/cluster/restart-apiserver.sh' >/dev/null 2>&1");
  double restart_seconds = seconds_since(start);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  writing.store(false);
  writer.join();

  bool caught_up = eventually([&] {
    std::lock_guard lock(seen_mutex);
    return seen.size() >= written.size();
  });
  done.store(true);
  {
    std::lock_guard lock(watch_mutex);
    if (current) current->cancel();
  }
  watcher.join();
  CHECK(caught_up);
  CHECK(reconnects.load() >= 1);
  CHECK(expired.load() == 0);
  std::lock_guard lock(seen_mutex);
  // Every write, in order, exactly once: nothing lost, nothing repeated across the reconnect.
  CHECK(seen == written);
  std::fprintf(stderr,
               "measure: private API server restart %.1f s; watch resumed after %d reconnect "
               "attempt(s), %zu/%zu events in order\n",
               restart_seconds, reconnects.load(), seen.size(), written.size());
}

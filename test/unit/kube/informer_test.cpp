// The informer against an in-memory fake API server (a Transport that serves list pages and
// watch streams from an event log): initial list, events, relist with differences after an
// expired watch (HTTP 410 and in-stream ERROR 410), resumption after a dropped stream without
// loss or relist, list failures with backoff, Retry-After of throttled requests, throwing
// handlers, and stop() from another thread. Runs under ThreadSanitizer in the sanitizer suite.
#include "kube/informer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kube/watch.h"
#include "test/unit/support/eventually.h"

using namespace vscaler::kube;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::map<std::string, std::string> query_of(const std::string& target) {
  std::map<std::string, std::string> out;
  auto q = target.find('?');
  if (q == std::string::npos) return out;
  std::string rest = target.substr(q + 1);
  size_t at = 0;
  while (at <= rest.size()) {
    size_t amp = rest.find('&', at);
    std::string pair = rest.substr(at, amp == std::string::npos ? std::string::npos : amp - at);
    auto eq = pair.find('=');
    if (eq != std::string::npos) out[pair.substr(0, eq)] = pair.substr(eq + 1);
    if (amp == std::string::npos) break;
    at = amp + 1;
  }
  return out;
}

HttpResponse response(int status, std::string body) {
  HttpResponse out;
  out.status = status;
  out.body = std::move(body);
  return out;
}

constexpr const char* kTooManyRequests =
    R"({"kind":"Status","status":"Failure","reason":"TooManyRequests","code":429})";

// An API server for one collection of ConfigMaps in namespace "ns", in memory.
class FakeServer {
 public:
  struct Event {
    std::string type;
    json object;
    long long rv;
  };

  void put(const std::string& name, const std::string& value) {
    std::lock_guard lock(mutex_);
    json object = {
        {"metadata",
         {{"name", name}, {"namespace", "ns"}, {"resourceVersion", std::to_string(++rv_)}}},
        {"data", {{"v", value}}}};
    std::string type = objects_.count(name) ? "MODIFIED" : "ADDED";
    objects_[name] = object;
    events_.push_back({type, object, rv_});
    changed_.notify_all();
  }
  void remove(const std::string& name) {
    std::lock_guard lock(mutex_);
    json object = objects_.at(name);
    objects_.erase(name);
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    events_.push_back({"DELETED", object, rv_});
    changed_.notify_all();
  }
  // A watch event whose object is whatever the test says (a malformed one, say); not stored.
  void put_event(const std::string& type, json object) {
    std::lock_guard lock(mutex_);
    events_.push_back({type, std::move(object), ++rv_});
    changed_.notify_all();
  }
  // Forgets history up to now: watches from older versions are Expired.
  void compact() {
    std::lock_guard lock(mutex_);
    compacted_ = rv_;
  }
  // Ends every open watch stream as a dropped connection would.
  void drop_streams() {
    std::lock_guard lock(mutex_);
    ++generation_;
    changed_.notify_all();
  }
  // While held, new watch requests fail at once, as with the server unreachable.
  void hold(bool held) {
    std::lock_guard lock(mutex_);
    held_ = held;
  }
  int active_streams() const { return active_.load(); }
  // Cuts the connection of every open watch and waits until none is open (with hold(true)
  // first, the informer is then disconnected until hold(false)).
  void disconnect() {
    hold(true);
    drop_streams();
    while (active_streams() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void set_list_failures(int n) {
    std::lock_guard lock(mutex_);
    list_failures_ = n;
  }
  // The next `n` watches end at once, cleanly and without an event.
  void set_empty_watches(int n) {
    std::lock_guard lock(mutex_);
    empty_watches_ = n;
  }
  // The next `lists` lists and `watches` watches are throttled: 429 with Retry-After: 1.
  void set_throttled(int lists, int watches) {
    std::lock_guard lock(mutex_);
    throttled_lists_ = lists;
    throttled_watches_ = watches;
  }
  // When each list and watch request arrived, in order.
  std::vector<std::pair<std::string, Clock::time_point>> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  void set_expiry_in_stream(bool in_stream) {
    std::lock_guard lock(mutex_);
    expiry_in_stream_ = in_stream;
  }
  int lists() {
    std::lock_guard lock(mutex_);
    return lists_;
  }
  int watches() {
    std::lock_guard lock(mutex_);
    return watches_;
  }

  HttpResponse list(const std::string& target) {
    std::lock_guard lock(mutex_);
    ++lists_;
    requests_.emplace_back("list", Clock::now());
    if (throttled_lists_ > 0) {
      --throttled_lists_;
      HttpResponse throttled = response(429, kTooManyRequests);
      throttled.retry_after = "1";
      return throttled;
    }
    if (list_failures_ > 0) {
      --list_failures_;
      return response(500, R"({"kind":"Status","code":500,"reason":"InternalError"})");
    }
    auto query = query_of(target);
    size_t limit = query.count("limit") ? std::stoul(query["limit"]) : 0;
    size_t start = query.count("continue") ? std::stoul(query["continue"]) : 0;
    json items = json::array();
    size_t index = 0;
    for (const auto& [name, object] : objects_) {
      if (index++ < start) continue;
      if (limit && items.size() == limit) break;
      items.push_back(object);
    }
    size_t next = start + items.size();
    json body = {{"kind", "ConfigMapList"},
                 {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                 {"items", items}};
    if (next < objects_.size()) body["metadata"]["continue"] = std::to_string(next);
    return response(200, body.dump());
  }

  // Serves a watch: history after `from`, then live events, until canceled or dropped.
  Result<Unit, ApiError> watch(const std::string& target,
                               const std::function<bool(std::string_view)>& on_data,
                               const std::atomic<bool>& canceled) {
    std::unique_lock lock(mutex_);
    ++watches_;
    requests_.emplace_back("watch", Clock::now());
    if (held_) return fail(make_error(ErrorKind::kTransport, "connection refused"));
    if (throttled_watches_ > 0) {
      --throttled_watches_;
      return fail(error_from_response(429, kTooManyRequests, "1"));
    }
    if (empty_watches_ > 0) {  // a clean end at once, no event (a proxy closing watches)
      --empty_watches_;
      return Unit{};
    }
    active_.fetch_add(1);
    struct Active {
      std::atomic<int>& count;
      ~Active() { count.fetch_sub(1); }
    } active{active_};
    long long from = std::stoll(query_of(target)["resourceVersion"]);
    if (from < compacted_) {
      std::string status = R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":)"
                           R"("too old resource version","reason":"Expired","code":410})";
      if (!expiry_in_stream_) return fail(error_from_response(410, status));
      std::string line = R"({"type":"ERROR","object":)" + status + "}\n";
      lock.unlock();
      on_data(line.substr(0, 10));  // split across pieces, as a real stream may be
      on_data(line.substr(10));
      return Unit{};
    }
    int generation = generation_;
    size_t next = 0;
    while (next < events_.size() && events_[next].rv <= from) ++next;
    for (;;) {
      while (next < events_.size()) {
        const Event& event = events_[next++];
        std::string line = json{{"type", event.type}, {"object", event.object}}.dump() + "\n";
        lock.unlock();
        // Deliver in two pieces to exercise the framer.
        bool go_on =
            on_data(line.substr(0, line.size() / 2)) && on_data(line.substr(line.size() / 2));
        lock.lock();
        if (!go_on) return Unit{};
      }
      if (canceled.load()) return fail(make_error(ErrorKind::kCanceled, "canceled"));
      if (generation != generation_) {
        return fail(make_error(ErrorKind::kTransport, "connection reset"));
      }
      changed_.wait_for(lock, std::chrono::milliseconds(20));
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, json> objects_;
  std::vector<Event> events_;
  long long rv_ = 100;
  long long compacted_ = 0;
  int generation_ = 0;
  int list_failures_ = 0;
  bool expiry_in_stream_ = false;
  bool held_ = false;
  int throttled_lists_ = 0;
  int throttled_watches_ = 0;
  int empty_watches_ = 0;
  std::vector<std::pair<std::string, Clock::time_point>> requests_;
  std::atomic<int> active_{0};
  int lists_ = 0;
  int watches_ = 0;
};

class FakeTransport final : public Transport {
 public:
  explicit FakeTransport(FakeServer& server) : server_(server) { config_.server = "fake"; }

  Result<HttpResponse, ApiError> send(const HttpRequest& request) override {
    return server_.list(request.target);
  }
  std::unique_ptr<Stream> open_stream(HttpRequest request, std::chrono::milliseconds) override {
    return std::make_unique<FakeStream>(server_, std::move(request.target));
  }
  const ClientConfig& config() const override { return config_; }
  TransportStats stats() const override { return {}; }

 private:
  class FakeStream final : public Stream {
   public:
    FakeStream(FakeServer& server, std::string target)
        : server_(server), target_(std::move(target)) {}
    Result<Unit, ApiError> run(const std::function<bool(std::string_view)>& on_data) override {
      if (canceled_.load()) return fail(make_error(ErrorKind::kCanceled, "canceled"));
      return server_.watch(target_, on_data, canceled_);
    }
    void cancel() override { canceled_.store(true); }

   private:
    FakeServer& server_;
    std::string target_;
    std::atomic<bool> canceled_{false};
  };

  FakeServer& server_;
  ClientConfig config_;
};

struct Recorder {
  std::mutex mutex;
  std::vector<std::string> log;
  InformerHandlers handlers() {
    InformerHandlers h;
    h.on_add = [this](const json& o) { record("add " + key(o) + "=" + value(o)); };
    h.on_update = [this](const json& old_object, const json& o) {
      record("update " + key(o) + "=" + value(old_object) + "->" + value(o));
    };
    h.on_delete = [this](const json& o) { record("delete " + key(o)); };
    return h;
  }
  static std::string key(const json& o) { return Store::key_of(o); }
  static std::string value(const json& o) {
    auto data = o.find("data");
    return data == o.end() ? "" : data->value("v", "");
  }
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
  size_t size() {
    std::lock_guard lock(mutex);
    return log.size();
  }
};

using vscaler::testing::eventually;

InformerOptions fast_options() {
  InformerOptions options;
  options.type = resources::kConfigMaps;
  options.ns = "ns";
  options.page_size = 2;
  options.initial_backoff = std::chrono::milliseconds(10);
  options.max_backoff = std::chrono::milliseconds(40);
  options.name = "unit";
  return options;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("informer: paged initial list, then watch events in order") {
  FakeServer server;
  server.put("a", "1");
  server.put("b", "1");
  server.put("c", "1");
  Recorder recorder;
  Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(),
                    recorder.handlers());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  CHECK(sorted(recorder.take()) ==
        std::vector<std::string>{"add ns/a=1", "add ns/b=1", "add ns/c=1"});
  server.put("a", "2");
  server.put("d", "1");
  server.remove("b");
  REQUIRE(eventually([&] { return recorder.size() == 3; }));
  CHECK(recorder.take() ==
        std::vector<std::string>{"update ns/a=1->2", "add ns/d=1", "delete ns/b"});
  CHECK(informer.store().size() == 3);
  CHECK((*informer.store().get("ns/a"))["data"]["v"] == "2");
  REQUIRE(eventually([&] { return informer.resource_version() == "106"; }));
  informer.stop();
}

TEST_CASE(
    "informer: an expired watch (HTTP 410 or in-stream ERROR 410) relists and reports "
    "exactly the differences") {
  for (bool in_stream : {false, true}) {
    CAPTURE(in_stream);
    FakeServer server;
    server.set_expiry_in_stream(in_stream);
    for (const char* name : {"same", "changed", "deleted"}) server.put(name, "0");
    Recorder recorder;
    Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(),
                      recorder.handlers());
    informer.start();
    REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
    REQUIRE(eventually([&] { return server.active_streams() == 1; }));
    recorder.take();
    server.disconnect();  // changes happen while the informer cannot watch
    server.put("changed", "1");
    server.remove("deleted");
    server.put("created", "0");
    server.compact();  // and the history it would resume from is gone
    server.hold(false);
    REQUIRE(eventually([&] { return informer.stats().expired_relists == 1; }));
    REQUIRE(eventually([&] { return recorder.size() == 3; }));
    CHECK(sorted(recorder.take()) == std::vector<std::string>{"add ns/created=0",
                                                              "delete ns/deleted",
                                                              "update ns/changed=0->1"});
    // The relist counts itself after its last handler ran (its deletes come once the whole
    // list is in), so the count may lag the events by a moment.
    CHECK(eventually([&] { return informer.stats().lists == 2; }));
    CHECK((*informer.store().get("ns/changed"))["data"]["v"] == "1");
    CHECK(informer.store().get("ns/deleted") == nullptr);
    // Watching resumes from the relist's version.
    server.put("same", "1");
    REQUIRE(eventually([&] { return recorder.size() == 1; }));
    CHECK(recorder.take() == std::vector<std::string>{"update ns/same=0->1"});
    informer.stop();
  }
}

TEST_CASE(
    "informer: the transform applies to listed and watched objects before store and handlers") {
  FakeServer server;
  server.put("a", "1");
  server.put("b", "1");
  server.put("c", "1");  // a second page (page_size 2)
  Recorder recorder;
  InformerOptions options = fast_options();
  int calls = 0;  // informer thread only
  options.transform = [&calls](json& object) {
    ++calls;
    object["data"]["v"] = object["data"].value("v", "") + "t";
    object["metadata"].erase("resourceVersionless");  // a no-op erase must be harmless
  };
  Informer informer(Client(std::make_shared<FakeTransport>(server)), options, recorder.handlers());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  CHECK(sorted(recorder.take()) ==
        std::vector<std::string>{"add ns/a=1t", "add ns/b=1t", "add ns/c=1t"});
  server.put("a", "2");
  server.remove("b");
  REQUIRE(eventually([&] { return recorder.size() == 2; }));
  CHECK(recorder.take() == std::vector<std::string>{"update ns/a=1t->2t", "delete ns/b"});
  CHECK((*informer.store().get("ns/a"))["data"]["v"] == "2t");
  CHECK((*informer.store().get("ns/c"))["data"]["v"] == "1t");
  // Versions stay intact, so watching resumes where it was.
  REQUIRE(eventually([&] { return informer.resource_version() == "105"; }));
  informer.stop();
  CHECK(calls == 5);  // three listed, one update, one delete: each object once
}

// Five ConfigMaps a..e listed in pages of 2; see(item) appends "name@requests so far" to seen, so
// a test can tell which page's request an item arrived with.
struct PagedList {
  FakeServer server;
  Client client{std::make_shared<FakeTransport>(server)};
  ListOptions options;
  std::vector<std::string> seen;
  PagedList() {
    for (const char* name : {"a", "b", "c", "d", "e"}) server.put(name, "1");
    options.limit = 2;
  }
  void see(const json& item) {
    seen.push_back(item["metadata"]["name"].get<std::string>() + "@" +
                   std::to_string(server.requests().size()));
  }
};

TEST_CASE("list: the transform runs on each page's items before the next page is asked for") {
  PagedList paged;
  auto& [server, client, options, seen] = paged;
  options.transform = [&](json& item) {
    paged.see(item);
    item["data"].erase("v");
  };
  auto list = client.list(resources::kConfigMaps, "ns", options);
  REQUIRE(list.ok());
  CHECK(seen == std::vector<std::string>{"a@1", "b@1", "c@2", "d@2", "e@3"});
  REQUIRE(list->items.size() == 5);
  for (const auto& item : list->items) CHECK_FALSE(item["data"].contains("v"));
}

TEST_CASE("informer: keep_metadata stores metadata only; handlers still get whole objects") {
  FakeServer server;
  server.put("a", "1");
  server.put("b", "1");
  server.put("c", "1");  // a second page (page_size 2)
  Recorder recorder;
  InformerOptions options = fast_options();
  options.keep_metadata = true;
  Informer informer(Client(std::make_shared<FakeTransport>(server)), options, recorder.handlers());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  CHECK(sorted(recorder.take()) ==
        std::vector<std::string>{"add ns/a=1", "add ns/b=1", "add ns/c=1"});
  CHECK_FALSE(informer.store().get("ns/a")->contains("data"));
  CHECK((*informer.store().get("ns/a"))["metadata"]["name"] == "a");
  CHECK((*informer.store().get("ns/a"))["metadata"]["namespace"] == "ns");
  CHECK((*informer.store().get("ns/a"))["metadata"]["resourceVersion"].is_string());
  server.put("a", "2");
  server.remove("b");
  REQUIRE(eventually([&] { return recorder.size() == 2; }));
  // The old side of an update is the kept copy (no data), the new side the whole object.
  CHECK(recorder.take() == std::vector<std::string>{"update ns/a=->2", "delete ns/b"});
  CHECK_FALSE(informer.store().get("ns/a")->contains("data"));
  CHECK(informer.store().size() == 2);
  informer.stop();
}

TEST_CASE("list: on_item receives each item as its page arrives; none are kept in the result") {
  PagedList paged;
  auto& [server, client, options, seen] = paged;
  options.on_item = [&](json& item, int restart) {
    CHECK(restart == 0);
    paged.see(item);
  };
  auto list = client.list(resources::kConfigMaps, "ns", options);
  REQUIRE(list.ok());
  CHECK(seen == std::vector<std::string>{"a@1", "b@1", "c@2", "d@2", "e@3"});
  CHECK(list->items.empty());
  CHECK_FALSE(list->resource_version.empty());
}

TEST_CASE("informer: a dropped stream resumes from the last version, without relist or loss") {
  FakeServer server;
  server.put("a", "0");
  Recorder recorder;
  Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(),
                    recorder.handlers());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  recorder.take();
  std::vector<std::string> expected;
  for (int round = 0; round < 5; ++round) {
    REQUIRE(eventually([&] { return server.active_streams() == 1; }));
    server.disconnect();
    for (int i = round * 10 + 1; i <= round * 10 + 10; ++i) {  // made while disconnected
      server.put("a", std::to_string(i));
      expected.push_back("update ns/a=" + std::to_string(i - 1) + "->" + std::to_string(i));
    }
    server.hold(false);
    REQUIRE(eventually([&] { return recorder.size() == expected.size(); }));
  }
  CHECK(recorder.take() == expected);
  CHECK(informer.stats().lists == 1);
  CHECK(informer.stats().expired_relists == 0);
  CHECK(informer.stats().watch_failures >= 5);
  CHECK(informer.resource_version() == "151");
  informer.stop();
}

TEST_CASE("informer: watches that end at once without events back off (client-go's rule)") {
  FakeServer server;
  server.put("a", "0");
  server.set_empty_watches(1'000'000);
  Recorder recorder;
  Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(),
                    recorder.handlers());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  // Backing off 10, 20, 40, 40, ... ms: about a dozen in 400 ms, not thousands.
  int watches = server.watches();
  CHECK(watches >= 3);
  CHECK(watches <= 30);
  CHECK(informer.stats().watch_failures >= 3);
  server.set_empty_watches(0);  // the path heals: events flow again
  server.put("a", "1");
  REQUIRE(eventually([&] { return recorder.size() == 2; }));
  informer.stop();
}

TEST_CASE("backoff: each wait is drawn from [delay / 2, delay], so informers spread out") {
  using std::chrono::milliseconds;
  CHECK(vscaler::kube::jittered_backoff(milliseconds(1000), 0.0) == milliseconds(500));
  CHECK(vscaler::kube::jittered_backoff(milliseconds(1000), 0.5) == milliseconds(750));
  CHECK(vscaler::kube::jittered_backoff(milliseconds(1000), 0.999) <= milliseconds(1000));
  CHECK(vscaler::kube::jittered_backoff(milliseconds(30'000), 1.0) == milliseconds(30'000));
  CHECK(vscaler::kube::jittered_backoff(milliseconds(1), 0.9) <= milliseconds(1));
  // At the cap, 100 informers failing together come back over 15 s, not at one instant.
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::set<std::int64_t> seconds;
  for (int i = 0; i < 100; ++i) {
    seconds.insert(vscaler::kube::jittered_backoff(milliseconds(30'000), unit(random)).count() /
                   1000);
  }
  CHECK(seconds.size() >= 10);
  CHECK(*seconds.begin() >= 15);
  CHECK(*seconds.rbegin() <= 30);
}

TEST_CASE("informer: list failures back off and retry; has_synced waits for a list") {
  FakeServer server;
  server.put("a", "0");
  server.set_list_failures(3);
  Recorder recorder;
  Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(),
                    recorder.handlers());
  informer.start();
  CHECK_FALSE(informer.has_synced());
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  CHECK(server.lists() == 4);
  CHECK(recorder.take() == std::vector<std::string>{"add ns/a=0"});
  informer.stop();
}

TEST_CASE("informer: a throttled list or watch (429) waits for its Retry-After, not the backoff") {
  FakeServer server;
  server.put("a", "0");
  server.set_throttled(1, 1);
  Recorder recorder;
  Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(),
                    recorder.handlers());  // backoff 10-40 ms
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  REQUIRE(eventually([&] { return server.requests().size() >= 4; }));
  auto requests = server.requests();
  // list (429), list, watch (429), watch: each retry at least 1 s after the throttled request.
  CHECK(requests[0].first == "list");
  CHECK(requests[1].first == "list");
  CHECK(requests[2].first == "watch");
  CHECK(requests[3].first == "watch");
  CHECK(requests[1].second - requests[0].second >= std::chrono::seconds(1));
  CHECK(requests[3].second - requests[2].second >= std::chrono::seconds(1));
  server.put("a", "1");
  REQUIRE(eventually([&] { return recorder.size() == 2; }));
  CHECK(recorder.take() == std::vector<std::string>{"add ns/a=0", "update ns/a=0->1"});
  CHECK(informer.stats().lists == 1);
  informer.stop();
}

TEST_CASE("informer: a throwing handler is logged and the informer goes on") {
  FakeServer server;
  Recorder recorder;
  InformerHandlers handlers = recorder.handlers();
  handlers.on_add = [&](const json& o) {
    recorder.record("add " + Store::key_of(o));
    if (o["metadata"]["name"] == "bad") throw std::runtime_error("handler bug");
  };
  Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(), handlers);
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  server.put("bad", "0");
  server.put("good", "0");
  REQUIRE(eventually([&] { return recorder.size() == 2; }));
  CHECK(recorder.take() == std::vector<std::string>{"add ns/bad", "add ns/good"});
  informer.stop();
}

TEST_CASE("informer: stop() from other threads, while watching, backing off, or never started") {
  FakeServer server;
  {
    Informer idle(Client(std::make_shared<FakeTransport>(server)), fast_options(), {});
    idle.stop();  // never started
  }
  {
    Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(), {});
    informer.start();
    REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
    REQUIRE(eventually([&] { return server.watches() >= 1; }));
    auto start = Clock::now();
    std::thread a([&] { informer.stop(); });
    std::thread b([&] { informer.stop(); });
    a.join();
    b.join();
    CHECK(Clock::now() - start < std::chrono::seconds(1));
  }
  {
    server.set_list_failures(1000);
    InformerOptions options = fast_options();
    options.initial_backoff = std::chrono::seconds(30);
    Informer informer(Client(std::make_shared<FakeTransport>(server)), options, {});
    informer.start();
    REQUIRE(eventually([&] { return server.lists() >= 1; }));
    auto start = Clock::now();
    informer.stop();  // interrupts the 30 s backoff
    CHECK(Clock::now() - start < std::chrono::seconds(1));
    CHECK_FALSE(informer.has_synced());
    CHECK_FALSE(informer.wait_for_sync(std::chrono::milliseconds(10)));
  }
  {
    server.set_list_failures(0);
    Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(), {});
    informer.start();
    // destroyed while running: the destructor stops it
  }
}

TEST_CASE("store: keys, snapshots and concurrent readers") {
  FakeServer server;
  for (int i = 0; i < 20; ++i) server.put("o" + std::to_string(i), "0");
  Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(), {});
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  std::atomic<bool> run{true};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (run.load()) {
        for (const auto& object : informer.store().list()) {
          if (object->contains("metadata")) reads.fetch_add(1);
        }
        (void)informer.store().get("ns/o1");
        (void)informer.store().keys();
      }
    });
  }
  for (int i = 0; i < 200; ++i) server.put("o" + std::to_string(i % 20), std::to_string(i));
  REQUIRE(eventually([&] { return (*informer.store().get("ns/o19"))["data"]["v"] == "199"; }));
  run.store(false);
  for (auto& reader : readers) reader.join();
  CHECK(reads.load() > 0);
  CHECK(informer.store().size() == 20);
  CHECK(Store::key_of(json{{"metadata", {{"name", "n"}}}}) == "n");
  CHECK(Store::key_of(json{{"metadata", {{"name", "n"}, {"namespace", "s"}}}}) == "s/n");
  informer.stop();
}

TEST_CASE(
    "informer: a malformed watch event is logged, counted and skipped; the informer goes on") {
  FakeServer server;
  server.put("a", "1");
  Recorder recorder;
  Informer informer(Client(std::make_shared<FakeTransport>(server)), fast_options(),
                    recorder.handlers());
  informer.start();
  REQUIRE(informer.wait_for_sync(std::chrono::seconds(5)));
  recorder.take();
  // metadata.name of the wrong type: json::value() threw type_error here, on the informer's
  // thread outside any try, and ended the process.
  server.put_event("ADDED", json{{"metadata", {{"name", 5}, {"namespace", "ns"}}}});
  server.put_event("MODIFIED", json{{"metadata", "not an object"}});
  server.put("b", "1");
  REQUIRE(eventually([&] { return recorder.size() == 1; }));
  CHECK(recorder.take() == std::vector<std::string>{"add ns/b=1"});
  CHECK(informer.stats().malformed == 2);
  CHECK(informer.store().size() == 2);
  informer.stop();
}

// History from Prometheus: the queries (VPA's CPU rate, the memory peak per step, pods by their
// controller's naming), the matrix answer parsed (bad values dropped, bad answers named), the
// points folded with their own timestamps and their weight, and the HTTP side against a local
// stand-in: paging under 11,000 points, the bearer token, errors and a timeout as values.
#include "recommender/prometheus_history.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <regex>
#include <thread>

#include "recommender/recommendation.h"
#include "recommender/scaler_history.h"
#include "test/unit/support/local_http_server.h"

using nlohmann::json;
using namespace vscaler::recommender;

namespace {

const TargetWorkload kWeb{"shop", "Deployment", "web"};

TimePoint at_hour(int hour) {
  return from_millis(std::int64_t(1'790'000'000'000) / 3'600'000 * 3'600'000 +
                     std::int64_t(hour) * 3'600'000);
}

/// A query_range answer with one series per (pod, container, values).
std::string matrix(const std::vector<std::tuple<std::string, std::string, json>>& series) {
  json result = json::array();
  for (const auto& [pod, container, values] : series) {
    result.push_back(
        {{"metric", {{"pod", pod}, {"container", container}, {"job", "k"}}}, {"values", values}});
  }
  return json{{"status", "success"}, {"data", {{"resultType", "matrix"}, {"result", result}}}}
      .dump();
}

}  // namespace

TEST_CASE("the queries: VPA's CPU rate and the memory peak per step, pods by controller naming") {
  PrometheusOptions options;
  // One series per pod and container: a restart's old and new cAdvisor series (other id and
  // name labels) summed (CPU) or the larger taken (memory), not one of them kept by the parser.
  CHECK(cpu_query(options, kWeb) ==
        "sum by (namespace, pod, container) "
        "(rate(container_cpu_usage_seconds_total{job=\"kubernetes-cadvisor\", "
        "namespace=\"shop\", pod=~\"web-[a-z0-9]{6,10}-[a-z0-9]{5}\", container!=\"POD\", "
        "container!=\"\"}[1h]))" +
            not_owned_by_target(options, kWeb));
  options.resolution = std::chrono::minutes(5);
  options.pod_label = "pod_name";
  options.container_label = "name";
  CHECK(memory_query(options, {"a", "StatefulSet", "db.main"}) ==
        "max by (namespace, pod_name, name) "
        "(max_over_time(container_memory_working_set_bytes{job=\"kubernetes-cadvisor\", "
        "namespace=\"a\", pod_name=~\"db\\\\.main-[0-9]+\", name!=\"POD\", name!=\"\"}[5m]))" +
            not_owned_by_target(options, {"a", "StatefulSet", "db.main"}));
  CHECK(pod_name_pattern({"a", "DaemonSet", "agent"}) == "agent-[a-z0-9]{5}");
}

TEST_CASE("long workload names: the pattern matches the pod names the API server cuts to 63") {
  // generateName is cut to 58 characters before its 5 random ones: a Deployment of 50
  // characters with a 9-character hash has pods "<name>-<first 7 of the hash><5>".
  const std::string name(50, 'a');
  const std::regex deployment(pod_name_pattern({"a", "Deployment", name}));
  CHECK(std::regex_match(name + "-7f9c5d8" + "x2k9p", deployment));      // hash of 9 or 10, cut
  CHECK(std::regex_match(name + "-7f9c5d-" + "x2k9p", deployment));      // hash of 6, whole
  CHECK_FALSE(std::regex_match(name + "-7f9c5d8b4-x2k9p", deployment));  // 64: no such pod
  CHECK_FALSE(std::regex_match(name + "-api-x2k9p", deployment));
  // The name alone fills the 58: nothing of the hash is left.
  const std::string longer(60, 'b');
  const std::regex cut(pod_name_pattern({"a", "Deployment", longer}));
  CHECK(std::regex_match(longer.substr(0, 58) + "x2k9p", cut));
  // A DaemonSet over 57 characters loses its "-".
  const std::string agent(60, 'c');
  CHECK(std::regex_match(agent.substr(0, 58) + "x2k9p",
                         std::regex(pod_name_pattern({"a", "DaemonSet", agent}))));
  // Up to the limit, the patterns are the short ones.
  CHECK(pod_name_pattern({"a", "Deployment", std::string(46, 'd')}) ==
        std::string(46, 'd') + "-[a-z0-9]{6,10}-[a-z0-9]{5}");
}

TEST_CASE("pods named like the target's but owned by another controller are left out") {
  PrometheusOptions options;
  // A Deployment's pods belong to its ReplicaSets; kube_pod_owner names another kind or name.
  CHECK(owner_pattern(kWeb) == "web-[a-z0-9]{6,10}");
  CHECK(owner_pattern({"a", "StatefulSet", "db.main"}) == "db\\.main");
  CHECK(not_owned_by_target(options, kWeb) ==
        " unless on(namespace, pod) max_over_time(kube_pod_owner{namespace=\"shop\", "
        "pod=~\"web-[a-z0-9]{6,10}-[a-z0-9]{5}\", owner_kind!=\"ReplicaSet\"}[1h])"
        " unless on(namespace, pod) max_over_time(kube_pod_owner{namespace=\"shop\", "
        "pod=~\"web-[a-z0-9]{6,10}-[a-z0-9]{5}\", owner_name!~\"web-[a-z0-9]{6,10}\"}[1h])");
  // Other cAdvisor label names: kube-state-metrics' pod / namespace copied to them to join.
  options.pod_label = "pod_name";
  options.namespace_label = "kubernetes_namespace";
  const std::string clause = not_owned_by_target(options, {"a", "DaemonSet", "agent"});
  CHECK(clause.find(" unless on(kubernetes_namespace, pod_name) label_replace(label_replace("
                    "max_over_time(kube_pod_owner{namespace=\"a\", pod=~\"agent-[a-z0-9]{5}\", "
                    "owner_kind!=\"DaemonSet\"}[1h]), \"pod_name\", \"$1\", \"pod\", \"(.*)\"), "
                    "\"kubernetes_namespace\", \"$1\", \"namespace\", \"(.*)\")") == 0);
  CHECK(clause.find("owner_name!~\"agent\"}[1h])") != std::string::npos);
  // A step shorter than kube-state-metrics' scrape interval still finds the owner series: the
  // window is at least an instant selector's 5 minutes.
  PrometheusOptions fine;
  fine.resolution = std::chrono::seconds(30);
  CHECK(not_owned_by_target(fine, kWeb).find("owner_kind!=\"ReplicaSet\"}[5m])") !=
        std::string::npos);
}

TEST_CASE("a matrix answer: points parsed, NaN and negative values dropped, bad answers named") {
  PrometheusOptions options;
  std::vector<PodSeries> out;
  std::size_t dropped = 0;
  auto parsed = parse_query_range(
      200,
      matrix(
          {{"web-7f9c5d8b4-abcde", "app", json::parse(R"([[1790000000, "0.25"], [1790003600, "NaN"],
                               [1790007200, "-0.1"], [1790010800.5, "0.5"]])")},
           {"web-7f9c5d8b4-abcde", "", json::array()}}),
      options, out, dropped);
  REQUIRE(parsed.ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].pod == "web-7f9c5d8b4-abcde");
  REQUIRE(out[0].points.size() == 2);
  CHECK(out[0].points[0].value == 0.25);
  CHECK(to_millis(out[0].points[1].time) == 1'790'010'800'500);
  CHECK(dropped == 2);

  auto error = parse_query_range(
      400, R"({"status":"error","errorType":"bad_data","error":"parse error at char 5"})", options,
      out, dropped);
  REQUIRE_FALSE(error.ok());
  CHECK(error.error() == "HTTP 400, bad_data: parse error at char 5");
  // Answers of another shape, or bytes that are not printable, are errors with safe messages,
  // never exceptions: nlohmann's value() throws on a member of another type, and a status patch
  // carrying invalid UTF-8 throws when it is written.
  auto typed = parse_query_range(
      200, R"({"status":"error","errorType":"x","error":{"msg":"nested"}})", options, out, dropped);
  REQUIRE_FALSE(typed.ok());
  CHECK(typed.error() == "HTTP 200, x: no error message");
  CHECK_FALSE(parse_query_range(200, R"({"status":1})", options, out, dropped).ok());
  auto binary = parse_query_range(502,
                                  "\xff\xfe"
                                  "<html>\x01"
                                  "bad gateway",
                                  options, out, dropped);
  REQUIRE_FALSE(binary.ok());
  CHECK(binary.error() ==
        "HTTP 502, not a Prometheus API answer (?"
        "?<html>?bad gateway)");
  CHECK(parse_query_range(200, matrix({{"p", "c", json::parse(R"([[1, 2]])")}}), options, out,
                          dropped)
            .error()
            .find("a malformed point") != std::string::npos);
  json labels = json::parse(R"({"status":"success","data":{"resultType":"matrix","result":[
      {"metric":{"pod":7,"container":"c"},"values":[]}, "not a series"]}})");
  CHECK(parse_query_range(200, labels.dump(), options, out, dropped).error() ==
        "a series is not an object");
  CHECK_FALSE(parse_query_range(200, "<html>not prometheus</html>", options, out, dropped).ok());
  CHECK(parse_query_range(200, R"({"status":"success","data":{"resultType":"vector",
      "result":[]}})",
                          options, out, dropped)
            .error()
            .find("not a matrix") != std::string::npos);
  CHECK(parse_query_range(200, matrix({{"p", "c", json::parse(R"([["x", "1"]])")}}), options, out,
                          dropped)
            .error()
            .find("a malformed point") != std::string::npos);
}

TEST_CASE("series whose pod or container label Kubernetes would refuse are nobody's: left out") {
  // A tenant's own exporter (honorLabels) can set them: terminal escapes, thousands of names.
  PrometheusOptions options;
  std::vector<PodSeries> out;
  std::size_t dropped = 0;
  const json points = json::parse(R"([[1790000000, "0.25"]])");
  auto parsed = parse_query_range(200,
                                  matrix({{"web-7f9c5d8b4-abcde", "app", points},
                                          {"web-7f9c5d8b4-abcde", "\x1b]52;c;aGk=\x07", points},
                                          {"web-7f9c5d8b4-abcde", "App", points},
                                          {"web-7f9c5d8b4-abcde", std::string(64, 'a'), points},
                                          {"web-7f9c5d8b4-abcde.", "app", points},
                                          {"web-7f9c5d8b4-abcde", "side-car", points}}),
                                  options, out, dropped);
  REQUIRE(parsed.ok());
  REQUIRE(out.size() == 2);
  CHECK(out[0].container == "app");
  CHECK(out[1].container == "side-car");
}

TEST_CASE("history points keep their time and count as resolution / interval samples") {
  AggregateOptions options;
  UsageHistory history;
  PodSeries cpu{"web-7f9c5d8b4-abcde", "app", {}};
  PodSeries memory{"web-7f9c5d8b4-abcde", "app", {}};
  PodSeries sidecar{"web-7f9c5d8b4-abcde", "proxy", {{at_hour(0), 0.1}}};
  for (int hour = 0; hour < 192; ++hour) {
    cpu.points.push_back({at_hour(hour), 0.3});
    memory.points.push_back({at_hour(hour), 400.0 * 1024 * 1024});
  }
  memory.points.push_back({at_hour(192), 500.0 * 1024 * 1024});  // memory alone at that time
  history.cpu = {cpu, sidecar};
  history.memory = {memory};
  ScalerHistory seeded;
  HistoryStats stats = seeded.seed(history, options, 60,
                                   [](std::string_view container) { return container == "app"; });
  CHECK(stats.points == 193);
  CHECK(stats.pods == 1);
  CHECK(stats.first == at_hour(0));
  CHECK(stats.last == at_hour(192));
  REQUIRE(seeded.aggregates().size() == 1);  // the sidecar is not recommended: no history
  const AggregateState& state = seeded.aggregates().at("app").state();
  CHECK(state.total_samples_count == 192 * 60);
  CHECK(state.first_sample_start == at_hour(0));
  CHECK(state.last_sample_start == at_hour(191));

  // Eight days of points counted as an hour of samples each give bounds as narrow as eight days
  // fed live; counted as one each (VPA's way) they stay wide.
  ScalerHistory as_vpa;
  as_vpa.seed(history, options, 1, [](std::string_view c) { return c == "app"; });
  RecommendationOptions rec_options;
  auto narrow = seeded.recommendations(options, rec_options);
  auto wide = as_vpa.recommendations(options, rec_options);
  REQUIRE(narrow.size() == 1);
  REQUIRE(wide.size() == 1);
  auto cores = [](const ResourceMap& map) { return map.at(kCpu).to_double(); };
  const double narrow_ratio = cores(narrow[0].upper_bound) / cores(narrow[0].target);
  const double wide_ratio = cores(wide[0].upper_bound) / cores(wide[0].target);
  CAPTURE(narrow_ratio);
  CAPTURE(wide_ratio);
  CHECK(narrow_ratio <= 1.5);
  CHECK(wide_ratio >= 4 * narrow_ratio);
  CHECK(cores(narrow[0].target) == cores(wide[0].target));  // the same histogram shape
}

TEST_CASE("Prometheus over HTTP: two range queries, paged, with the bearer token") {
  vscaler::testing::LocalHttpServer server;
  std::atomic<int> queries{0};
  std::string token_seen;
  std::vector<std::string> steps;
  server.server().Get("/api/v1/query_range", [&](const httplib::Request& request,
                                                 httplib::Response& response) {
    ++queries;
    token_seen = request.get_header_value("Authorization");
    steps.push_back(request.get_param_value("step"));
    const bool cpu = request.get_param_value("query").rfind("rate(", 0) == 0;
    const double start = std::stod(request.get_param_value("start"));
    response.set_content(matrix({{"web-7f9c5d8b4-abcde", "app",
                                  json::array({json::array({start, cpu ? "0.2" : "104857600"})})}}),
                         "application/json");
  });
  server.start();
  const std::string token_file = "/tmp/vscaler-prometheus-token-test";
  std::ofstream(token_file) << "s3cret\n";
  PrometheusOptions options;
  options.address = server.config().server;
  options.bearer_token_file = token_file;
  options.resolution = std::chrono::seconds(60);
  options.history_length = std::chrono::hours(24 * 8);  // 11,521 steps: two pages per query
  auto source = PrometheusHistory::create(options);
  REQUIRE(source.ok());
  auto loaded = (*source)->load(kWeb, at_hour(1000));
  REQUIRE_MESSAGE(loaded.ok(), (loaded.ok() ? "" : loaded.error().message));
  CHECK(queries == 4);
  CHECK(loaded->queries == 4);
  CHECK(token_seen == "Bearer s3cret");
  CHECK(steps.front() == "60");
  REQUIRE(loaded->cpu.size() == 1);
  CHECK(loaded->cpu[0].points.size() == 2);  // one point per page from the stand-in
  CHECK(loaded->memory[0].points[0].value == 104857600);
  std::remove(token_file.c_str());
}

TEST_CASE("an address with a user and password is refused at start, without repeating it") {
  // Its failures would be written into every scaler's RecommendationProvided message.
  PrometheusOptions options;
  for (const char* address : {"http://admin:s3cret@127.0.0.1:9090", "https://admin:s3cret@prom/x",
                              "admin:s3cret@prom:9090"}) {
    options.address = address;
    auto created = PrometheusHistory::create(options);
    REQUIRE_FALSE(created.ok());
    CHECK(created.error().find("user name or password") != std::string::npos);
    CHECK(created.error().find("s3cret") == std::string::npos);
  }
  options.address = "http://127.0.0.1:9090/prefix@1";  // an '@' in the path is not a user
  CHECK(PrometheusHistory::create(options).ok());
  options.address = "http://127.0.0.1:9090?x=a@b";  // nor in the query (refused for that)
  auto query = PrometheusHistory::create(options);
  REQUIRE_FALSE(query.ok());
  CHECK(query.error().find("user name or password") == std::string::npos);
}

TEST_CASE("Prometheus failures are errors in words: down, 5xx, slower than the timeout") {
  PrometheusOptions options;
  options.address = "http://127.0.0.1:1";  // nothing listens
  options.timeout = std::chrono::milliseconds(500);
  auto down = PrometheusHistory::create(options);
  REQUIRE(down.ok());
  auto refused = (*down)->load(kWeb, at_hour(0));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("Prometheus at http://127.0.0.1:1: ") == 0);
  CHECK(refused.error().source_down);  // the rest of the pass is not asked

  vscaler::testing::LocalHttpServer server;
  std::atomic<bool> slow{false};
  std::atomic<bool> too_many{false};
  std::mutex seen_mutex;
  std::string timeout_seen;
  server.server().Get("/api/v1/query_range", [&](const httplib::Request& request,
                                                 httplib::Response& response) {
    {
      std::lock_guard lock(seen_mutex);
      timeout_seen = request.get_param_value("timeout");
    }
    if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    if (too_many) {
      response.status = 422;
      response.set_content(
          R"({"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"})",
          "application/json");
      return;
    }
    response.status = 503;
    response.set_content(R"({"status":"error","errorType":"unavailable","error":"TSDB not ready"})",
                         "application/json");
  });
  server.start();
  options.address = server.config().server;
  auto source = PrometheusHistory::create(options);
  REQUIRE(source.ok());
  auto unavailable = (*source)->load(kWeb, at_hour(0));
  REQUIRE_FALSE(unavailable.ok());
  CHECK(unavailable.error().message.find("HTTP 503, unavailable: TSDB not ready") !=
        std::string::npos);
  CHECK(unavailable.error().source_down);
  {
    // Prometheus gives up on the query before vscaler does, and says why.
    std::lock_guard lock(seen_mutex);
    CHECK(timeout_seen == "450ms");
  }
  too_many = true;
  auto heavy = (*source)->load(kWeb, at_hour(0));
  REQUIRE_FALSE(heavy.ok());
  CHECK(heavy.error().message.find("HTTP 422, execution: query processing would load") !=
        std::string::npos);
  CHECK_FALSE(heavy.error().source_down);  // this target's query alone
  too_many = false;
  slow = true;
  const auto started = std::chrono::steady_clock::now();
  auto timed_out = (*source)->load(kWeb, at_hour(0));
  CHECK_FALSE(timed_out.ok());
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::milliseconds(1400));

  options.address = "prometheus:9090";
  CHECK_FALSE(PrometheusHistory::create(options).ok());
  options.address = "http://prometheus:9090";
  options.ca_file = "/nonexistent/ca.pem";
  auto no_ca = PrometheusHistory::create(options);
  REQUIRE_FALSE(no_ca.ok());
  CHECK(no_ca.error().find("--prometheus-ca-file") == 0);
}

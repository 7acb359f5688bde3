// Metrics registry: the exact Prometheus text format, idempotent registration, label handling and
// concurrent updates adding up.
#include "metrics/registry.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

using vscaler::metrics::format_value;
using vscaler::metrics::Registry;

TEST_CASE("metrics: counters, gauges and histograms render in the exact text format") {
  Registry registry;
  auto& requests = registry.counter("controller_runtime_webhook_requests_total",
                                    "Total number of admission requests by HTTP status code.",
                                    {"webhook", "code"});
  requests.with({"/mutate-deployments", "200"}).inc();
  requests.with({"/mutate-deployments", "200"}).inc(2);
  requests.with({"/mutate-deployments", "400"}).inc();
  requests.with({"/validate-verticalscalers", "200"}).inc();

  auto& expiry = registry.gauge("vscaler_serving_cert_expiry_timestamp_seconds",
                                "Expiry of the serving certificate.\nSeconds since the epoch.");
  expiry.get().set(1767225600);

  auto& latency =
      registry.histogram("controller_runtime_webhook_latency_seconds",
                         "Admission latency \\ in seconds.", {"webhook"}, {0.001, 0.01, 0.1});
  auto& mutate = latency.with({"/mutate-deployments"});
  mutate.observe(0.0005);
  mutate.observe(0.001);  // bounds are inclusive
  mutate.observe(0.05);
  mutate.observe(3);

  CHECK(
      registry.render() ==
      "# HELP controller_runtime_webhook_latency_seconds Admission latency \\\\ in seconds.\n"
      "# TYPE controller_runtime_webhook_latency_seconds histogram\n"
      "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/mutate-deployments\","
      "le=\"0.001\"} 2\n"
      "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/mutate-deployments\","
      "le=\"0.01\"} 2\n"
      "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/mutate-deployments\","
      "le=\"0.1\"} 3\n"
      "controller_runtime_webhook_latency_seconds_bucket{webhook=\"/mutate-deployments\","
      "le=\"+Inf\"} 4\n"
      "controller_runtime_webhook_latency_seconds_sum{webhook=\"/mutate-deployments\"} 3.0515\n"
      "controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate-deployments\"} 4\n"
      "# HELP controller_runtime_webhook_requests_total Total number of admission requests by "
      "HTTP status code.\n"
      "# TYPE controller_runtime_webhook_requests_total counter\n"
      "controller_runtime_webhook_requests_total{webhook=\"/mutate-deployments\",code=\"200\"} 3\n"
      "controller_runtime_webhook_requests_total{webhook=\"/mutate-deployments\",code=\"400\"} 1\n"
      "controller_runtime_webhook_requests_total{webhook=\"/validate-verticalscalers\","
      "code=\"200\"} 1\n"
      "# HELP vscaler_serving_cert_expiry_timestamp_seconds Expiry of the serving "
      "certificate.\\nSeconds since the epoch.\n"
      "# TYPE vscaler_serving_cert_expiry_timestamp_seconds gauge\n"
      "vscaler_serving_cert_expiry_timestamp_seconds 1767225600\n");
}

TEST_CASE("metrics: an unlabelled metric renders 0 before its first update; a labelled one not") {
  Registry registry;
  registry.counter("vscaler_webhook_enqueued_total", "Keys enqueued by the admission hook.");
  registry.counter("vscaler_webhook_rejected_total", "Requests refused before routing.",
                   {"reason"});
  registry.histogram("workqueue_queue_duration_seconds", "Time in the queue.", {}, {0.5});
  CHECK(registry.render() ==
        "# HELP vscaler_webhook_enqueued_total Keys enqueued by the admission hook.\n"
        "# TYPE vscaler_webhook_enqueued_total counter\n"
        "vscaler_webhook_enqueued_total 0\n"
        "# HELP workqueue_queue_duration_seconds Time in the queue.\n"
        "# TYPE workqueue_queue_duration_seconds histogram\n"
        "workqueue_queue_duration_seconds_bucket{le=\"0.5\"} 0\n"
        "workqueue_queue_duration_seconds_bucket{le=\"+Inf\"} 0\n"
        "workqueue_queue_duration_seconds_sum 0\n"
        "workqueue_queue_duration_seconds_count 0\n");
}

TEST_CASE("metrics: label values are escaped; children sort by label values") {
  Registry registry;
  auto& family = registry.gauge("g", "h", {"path"});
  family.with({"b\"q\\n\nx"}).set(-1.5);
  family.with({"a"}).set(std::numeric_limits<double>::infinity());
  CHECK(registry.render() ==
        "# HELP g h\n# TYPE g gauge\n"
        "g{path=\"a\"} +Inf\n"
        "g{path=\"b\\\"q\\\\n\\nx\"} -1.5\n");
}

TEST_CASE("metrics: a removed series stops rendering; the family renders nothing when empty") {
  Registry registry;
  auto& family = registry.gauge("g", "h", {"scaler", "bound"});
  family.with({"web", "target"}).set(2);
  family.with({"db", "target"}).set(3);
  CHECK(family.remove({"web", "target"}));
  CHECK_FALSE(family.remove({"web", "target"}));
  CHECK(registry.render() == "# HELP g h\n# TYPE g gauge\ng{scaler=\"db\",bound=\"target\"} 3\n");
  CHECK(family.remove({"db", "target"}));
  CHECK(registry.render().empty());
  // A series removed and used again starts afresh.
  CHECK(family.with({"web", "target"}).value() == 0);
}

TEST_CASE("metrics: sample values use the shortest exact form and the special spellings") {
  CHECK(format_value(0) == "0");
  CHECK(format_value(1) == "1");
  CHECK(format_value(0.005) == "0.005");
  CHECK(format_value(1e21) == "1e+21");
  CHECK(format_value(-2.5) == "-2.5");
  CHECK(format_value(std::nan("")) == "NaN");
  CHECK(format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
}

TEST_CASE("metrics: registration is idempotent and conflicts are refused") {
  Registry registry;
  auto& first = registry.counter("c_total", "help", {"a"});
  auto& again = registry.counter("c_total", "other help is fine", {"a"});
  CHECK(&first == &again);
  CHECK_THROWS_AS(registry.counter("c_total", "help", {"b"}), std::invalid_argument);
  CHECK_THROWS_AS(registry.gauge("c_total", "help", {"a"}), std::invalid_argument);
  CHECK_THROWS_AS(registry.counter("1bad", "help"), std::invalid_argument);
  CHECK_THROWS_AS(registry.counter("ok", "help", {"__reserved"}), std::invalid_argument);
  CHECK_THROWS_AS(registry.histogram("h", "help", {"le"}), std::invalid_argument);
  CHECK_THROWS_AS(registry.histogram("h", "help", {}, {1, 1}), std::invalid_argument);
  registry.histogram("h", "help", {}, {1, 2});
  CHECK_THROWS_AS(registry.histogram("h", "help", {}, {1, 3}), std::invalid_argument);
  CHECK_THROWS_AS(first.with({"x", "y"}), std::invalid_argument);
  CHECK(&first.with({"x"}) == &first.with({"x"}));
}

TEST_CASE("metrics: counters ignore negative and NaN increments; gauges go both ways") {
  Registry registry;
  auto& counter = registry.counter("c_total", "h").get();
  counter.inc(-5);
  counter.inc(std::nan(""));
  counter.inc(0.5);
  CHECK(counter.value() == 0.5);
  auto& gauge = registry.gauge("g", "h").get();
  gauge.inc();
  gauge.inc();
  gauge.dec();
  gauge.add(-3);
  CHECK(gauge.value() == -2);
}

TEST_CASE("metrics: a NaN observation lands in the +Inf bucket") {
  Registry registry;
  auto& histogram = registry.histogram("h", "h", {}, {1}).get();
  histogram.observe(std::nan(""));
  histogram.observe(0.5);
  auto snap = histogram.snapshot();
  CHECK(snap.cumulative == std::vector<std::uint64_t>{1, 2});
  CHECK(snap.count == 2);
}

TEST_CASE("metrics: concurrent updates from many threads all count") {
  Registry registry;
  auto& family = registry.counter("c_total", "h", {"worker"});
  auto& histogram = registry.histogram("h_seconds", "h", {}, {0.5}).get();
  constexpr int kThreads = 8;
  constexpr int kIncrements = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads share one child, half create their own while others render.
      std::string label = t % 2 == 0 ? "shared" : "own-" + std::to_string(t);
      for (int i = 0; i < kIncrements; ++i) {
        family.with({label}).inc();
        histogram.observe(i % 2 == 0 ? 0.25 : 1.0);
        if (i % 5000 == 0) (void)registry.render();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(family.with({"shared"}).value() == kThreads / 2 * kIncrements);
  CHECK(family.with({"own-1"}).value() == kIncrements);
  auto snap = histogram.snapshot();
  CHECK(snap.count == kThreads * kIncrements);
  CHECK(snap.cumulative[0] == kThreads * kIncrements / 2);
  CHECK(snap.sum == doctest::Approx(kThreads * kIncrements / 2 * 1.25));
}

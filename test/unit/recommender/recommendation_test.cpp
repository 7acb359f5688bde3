// The recommendation from a history: worked examples with the numbers stated, so they can fail.
// Bucket ends used below (VPA's layout): 0.3 core lies in [0.2813, 0.3054) and 400Mi in
// [423.8e6, 445.0e6) bytes, so steady usage there gives p50 = p90 = p95 = those ends.
#include "recommender/recommendation.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace vscaler::recommender;
using std::chrono::hours;
using std::chrono::minutes;
using vscaler::kube::Quantity;

namespace {
const TimePoint kT0 = from_millis(1'764'547'200'000);  // 2025-12-01T00:00:00Z
constexpr double kMi = 1024.0 * 1024.0;
const std::uint64_t kPod = pod_key("pod-1");

Quantity q(const char* text) {
  auto parsed = Quantity::parse(text);
  REQUIRE(parsed.ok());
  return *parsed;
}

// `n` samples one minute apart of constant usage.
ContainerAggregate steady(int n, double cpu, double memory) {
  AggregateOptions options;
  ContainerAggregate a;
  for (int m = 0; m < n; ++m) {
    REQUIRE(a.add_sample(options, kPod, {kT0 + minutes(m), cpu, memory}) == SampleOutcome::kAdded);
  }
  return a;
}

ContainerRecommendation recommend_one(const ContainerAggregate& a, const AllowedRange& range = {},
                                      int containers = 1) {
  return recommend("app", estimate(a, AggregateOptions{}, RecommendationOptions{}, containers),
                   range);
}
}  // namespace

TEST_CASE("steady usage: target = usage x 1.15 at the histogram's resolution") {
  auto r = recommend_one(steady(8 * 24 * 60, 0.3, 400 * kMi));
  // 0.3054 * 1.15 = 0.35120 -> 352m; 445019988.74 * 1.15 = 511772987.05 bytes = 488.06Mi,
  // rounded up to whole MiB (--round-memory-bytes 1Mi): 489Mi.
  CHECK(r.target.at(kCpu) == q("352m"));
  CHECK(r.target.at(kMemory) == q("489Mi"));
  CHECK(r.target.at(kMemory).to_string() == "489Mi");
  // Within one bucket width of usage x 1.15 (345m, 482344960 bytes): the bucket's end over its
  // start is 1.086 for 0.3 core and 1.074 for 400Mi.
  CHECK(r.target.at(kCpu) >= q("345m"));
  CHECK(r.target.at(kCpu).to_double() <= 0.345 * 1.086);
  CHECK(r.target.at(kMemory).to_double() >= 400 * kMi * 1.15);
  CHECK(r.target.at(kMemory).to_double() <= 400 * kMi * 1.15 * 1.074);
  CHECK(r.uncapped_target == r.target);
  // Eight days of history: confidence 8 -> upper x (1 + 1/8), lower x (1 + 0.001/8)^-2.
  CHECK(r.upper_bound.at(kCpu) == q("396m"));  // 0.35120 * 1.125 = 0.39510
  CHECK(r.lower_bound.at(kCpu) == q("352m"));  // 0.35120 * 0.99975 = 0.35111
}

TEST_CASE("confidence of 11 samples over 10 minutes widens the bounds") {
  auto a = steady(11, 0.3, 400 * kMi);
  // lifespan 10 min = 0.006944 days < samples 11/1440 = 0.007639: confidence 0.006944.
  CHECK(confidence(a.state(), hours(24)) == doctest::Approx(10.0 / 1440.0));
  auto r = recommend_one(a);
  CHECK(r.target.at(kCpu) == q("352m"));
  // upper = 0.35120 * (1 + 1/0.006944) = 0.35120 * 145 = 50.924 cores -> 50924m
  CHECK(r.upper_bound.at(kCpu) == q("50924m"));
  // lower = 0.35120 * (1 + 0.001/0.006944)^-2 = 0.35120 * 0.76410 = 0.26835 -> 269m
  CHECK(r.lower_bound.at(kCpu) == q("269m"));
  // memory: 511772987.05 * 145 = 74207083123 bytes = 70769.2Mi -> 70770Mi;
  // 511772987.05 * 0.76410 = 391043715 bytes = 372.93Mi -> 373Mi
  CHECK(r.upper_bound.at(kMemory) == q("70770Mi"));
  CHECK(r.lower_bound.at(kMemory) == q("373Mi"));
}

TEST_CASE("confidence counts samples per minute of a day, not the half-life") {
  // A day of history at one sample every 10 minutes: lifespan ~1 day but 144/1440 = 0.1.
  AggregateOptions options;
  options.cpu_half_life = minutes(5);  // a test-shortened half-life changes nothing here
  ContainerAggregate a;
  for (int i = 0; i <= 144; ++i) {
    (void)a.add_sample(options, kPod, {kT0 + minutes(10 * i), 0.3, 400 * kMi});
  }
  CHECK(confidence(a.state(), hours(24)) == doctest::Approx(145.0 / 1440.0));
}

TEST_CASE("a single sample: no confidence, unbounded upper bound held at the layout's maximum") {
  auto r = recommend_one(steady(1, 0.3, 400 * kMi));
  CHECK(r.target.at(kCpu) == q("352m"));
  CHECK(r.upper_bound.at(kCpu).to_double() >= 1000.0);
  CHECK(r.upper_bound.at(kMemory).to_double() >= 1e12);
  // The lower bound is 0 before the per-pod minimums: 25m and 250Mi for a lone container.
  CHECK(r.lower_bound.at(kCpu) == q("25m"));
  CHECK(r.lower_bound.at(kMemory) == q("250Mi"));
}

TEST_CASE("an OOM kill bumps the memory target") {
  AggregateOptions options;
  auto a = steady(60, 0.3, 400 * kMi);
  auto before = recommend_one(a);
  // used = max(request 512Mi, peak 400Mi) = 512Mi; max(612Mi, 614.4Mi) = 614.4Mi = 644245094 B,
  // in the bucket ending at 664.6e6: target = 664.6e6 * 1.15 >= 614.4Mi * 1.15.
  REQUIRE(a.record_oom(options, kPod, kT0 + minutes(60), 512 * kMi).ok());
  auto after = recommend_one(a);
  CHECK(after.target.at(kMemory) > before.target.at(kMemory));
  CHECK(after.target.at(kMemory).to_double() >= 614.4 * kMi * 1.15);
  CHECK(after.target.at(kMemory).to_double() <= 614.4 * kMi * 1.15 * 1.05);
  CHECK(after.target.at(kCpu) == before.target.at(kCpu));
}

namespace {
// VPA's exponential memory layout, written out from its definition (first bucket 1e7 bytes, each
// next 5% wider): bucket i starts at 1e7 * (1.05^i - 1) / 0.05, and a percentile is the end of
// the bucket where the cumulative weight reaches it.
double memory_bucket_end(double bytes) {
  const double first = 1e7, ratio = 1.05;
  const int i = int(std::log(bytes * (ratio - 1) / first + 1) / std::log(ratio));
  return first * (std::pow(ratio, i + 1) - 1) / (ratio - 1);
}
}  // namespace

TEST_CASE("three replicas at 256 / 512 / 1024 Mi: VPA's per-pod peaks give the band") {
  // A day at one sample a minute per pod, memory constant per pod: every window holds the three
  // pods' peaks with equal weight. p90 of {256, 512, 1024} reaches the 1024Mi bucket, p50 the
  // 512Mi one (the cumulative weight 2/3 >= 1/2). Confidence: lifespan 1439 minutes of 1440,
  // samples 3 x 1440 / 1440 = 3, so 1439/1440.
  AggregateOptions options;
  ContainerAggregate a;
  const double usage[] = {256 * kMi, 512 * kMi, 1024 * kMi};
  for (int m = 0; m < 1440; ++m) {
    for (int p = 0; p < 3; ++p) {
      REQUIRE(a.add_sample(options, pod_key("pod-" + std::to_string(p)),
                           {kT0 + minutes(m), 0.1, usage[p]}) == SampleOutcome::kAdded);
    }
  }
  const double conf = 1439.0 / 1440.0;
  CHECK(confidence(a.state(), hours(24)) == doctest::Approx(conf));
  const Estimate e = estimate(a, options, RecommendationOptions{}, 1);
  const double target = memory_bucket_end(1024 * kMi) * 1.15;
  const double lower = memory_bucket_end(512 * kMi) * 1.15 * std::pow(1 + 0.001 / conf, -2);
  CHECK(e.target.memory_bytes == doctest::Approx(target));
  CHECK(e.lower_bound.memory_bytes == doctest::Approx(lower));
  // In MiB: target 1181.3, lowerBound 598.4 (one window per container name would have made
  // both the 1024Mi pod's: lowerBound 1181.3 too).
  CHECK(target / kMi == doctest::Approx(1181.3).epsilon(0.0001));
  CHECK(lower / kMi == doctest::Approx(598.4).epsilon(0.0001));
}

TEST_CASE("per-pod minimums are shared equally among the pod's containers") {
  auto idle = steady(1440, 0.001, 1e6);
  auto one = recommend_one(idle, {}, 1);
  CHECK(one.target.at(kCpu) == q("25m"));
  CHECK(one.target.at(kMemory) == q("250Mi"));
  auto two = recommend_one(idle, {}, 2);
  CHECK(two.target.at(kCpu) == q("13m"));       // 12.5m rounded up
  CHECK(two.target.at(kMemory) == q("125Mi"));  // 131072000 bytes
  auto four = recommend_one(idle, {}, 4);
  // 6.25m is below the usage-based target: 1m usage lies in bucket 0, whose end is 10m; x 1.15.
  CHECK(four.target.at(kCpu) == q("12m"));
  CHECK(four.lower_bound.at(kMemory) == q("63Mi"));  // 62.5Mi rounded up to whole MiB
}

TEST_CASE("minAllowed/maxAllowed clamp every bound; uncappedTarget keeps the value before") {
  AllowedRange range;
  range.max_allowed[kCpu] = q("200m");
  range.min_allowed[kMemory] = q("1Gi");
  auto r = recommend_one(steady(1440, 0.3, 400 * kMi), range);
  CHECK(r.target.at(kCpu) == q("200m"));
  CHECK(r.uncapped_target.at(kCpu) == q("352m"));
  CHECK(r.upper_bound.at(kCpu) == q("200m"));
  CHECK(r.lower_bound.at(kCpu) == q("200m"));
  CHECK(r.target.at(kMemory) == q("1Gi"));
  CHECK(r.uncapped_target.at(kMemory) == q("489Mi"));
  CHECK(r.upper_bound.at(kMemory) >= q("1Gi"));
}

TEST_CASE("a min above a max: the max wins, as in VPA's capping (min first, then max)") {
  // minAllowed cpu 8 with a cap of 4 (the global flag, the largest node or a LimitRange's max).
  AllowedRange range;
  range.min_allowed[kCpu] = q("8");
  range.max_allowed[kCpu] = q("4");
  auto r = recommend_one(steady(1440, 0.3, 400 * kMi), range);
  CHECK(r.target.at(kCpu) == q("4"));
  CHECK(r.lower_bound.at(kCpu) == q("4"));
  CHECK(r.upper_bound.at(kCpu) == q("4"));
  CHECK(r.uncapped_target.at(kCpu) == q("352m"));
}

TEST_CASE("the status entry has VPA's shape") {
  auto r = recommend_one(steady(1440, 0.3, 400 * kMi));
  auto json = to_json(r);
  CHECK(json["containerName"] == "app");
  CHECK(json["target"]["cpu"] == "352m");
  CHECK(json["target"]["memory"] == "489Mi");
  CHECK(json.contains("lowerBound"));
  CHECK(json.contains("upperBound"));
  CHECK(json["uncappedTarget"]["cpu"] == "352m");
}

TEST_CASE(
    "published values round up once, to the steps of --round-cpu-millicores / -memory-bytes") {
  const auto history = steady(8 * 24 * 60, 0.3, 400 * kMi);
  const Estimate e = estimate(history, AggregateOptions{}, RecommendationOptions{}, 1);
  SUBCASE("steps of one millicore and one byte: the exact values") {
    auto r = recommend("app", e, {}, Rounding{1, 1});
    CHECK(r.target.at(kMemory).to_string() == "511772988");  // 511772987.05 rounded up
    CHECK(r.target.at(kCpu).to_string() == "352m");
  }
  SUBCASE("50m and 100Mi steps") {
    auto r = recommend("app", e, {}, Rounding{50, 100 * 1024 * 1024});
    CHECK(r.target.at(kCpu).to_string() == "400m");      // 351.2m -> 400m
    CHECK(r.target.at(kMemory).to_string() == "500Mi");  // 488.06Mi -> 500Mi
  }
  SUBCASE("a decimal step prints decimal units") {
    auto r = recommend("app", e, {}, Rounding{1, 1'000'000});
    CHECK(r.target.at(kMemory).to_string() == "512M");  // 511.77 MB -> 512M
  }
  SUBCASE("cores print as millicores, as the API server prints them") {
    CHECK(cpu_quantity(1.5).to_string() == "1500m");
    CHECK(cpu_quantity(2.0).to_string() == "2");
    CHECK(memory_quantity(1024.0 * kMi, 1024 * 1024).to_string() == "1Gi");
    CHECK(memory_quantity(1024.0 * kMi + 1, 1024 * 1024).to_string() == "1025Mi");
  }
}

TEST_CASE("parse_recommendation reads back what to_json wrote and names a bad field") {
  ContainerRecommendation r;
  r.container_name = "app";
  r.target = {{kCpu, q("312m")}, {kMemory, q("410Mi")}};
  r.lower_bound = {{kCpu, q("100m")}, {kMemory, q("300Mi")}};
  r.upper_bound = {{kCpu, q("2")}, {kMemory, q("1Gi")}};
  r.uncapped_target = {{kCpu, q("500m")}, {kMemory, q("410Mi")}};
  nlohmann::json status = {{"containerRecommendations", {to_json(r)}}};
  auto parsed = parse_recommendation(status);
  REQUIRE(parsed.ok());
  REQUIRE(parsed->size() == 1);
  CHECK((*parsed)[0] == r);
  CHECK(parse_recommendation(nlohmann::json())->empty());
  CHECK(parse_recommendation(nlohmann::json::object())->empty());
  status["containerRecommendations"][0]["target"]["cpu"] = "lots";
  auto bad = parse_recommendation(status);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().rfind("status.recommendation.containerRecommendations[0].target.cpu", 0) == 0);
}

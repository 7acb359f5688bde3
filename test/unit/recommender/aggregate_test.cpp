// ContainerAggregate: request-weighted CPU samples, one memory peak per aggregation interval,
// the per-pod duplicate filter, OOM kills as bumped memory samples, and the memory budget of a
// day of history.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

#include "recommender/container_aggregate.h"

using namespace vscaler::recommender;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

namespace {
const TimePoint kT0 = from_millis(1'764'547'200'000);  // 2025-12-01T00:00:00Z
constexpr double kMi = 1024.0 * 1024.0;
const std::uint64_t kPodA = pod_key("8f2d5c1e-aaaa-4d7e-9a55-000000000001");
const std::uint64_t kPodB = pod_key("8f2d5c1e-bbbb-4d7e-9a55-000000000002");

UsageSample sample(TimePoint t, double cpu, double memory, double request = 0.5) {
  return {t, cpu, memory, request};
}
}  // namespace

TEST_CASE("CPU samples weigh the container's CPU request, at least 0.1 core") {
  AggregateOptions options;
  ContainerAggregate a;
  CHECK(a.add_sample(options, kPodA, sample(kT0, 0.1, 1e8, 2.0)) == SampleOutcome::kAdded);
  CHECK(a.add_sample(options, kPodB, sample(kT0, 1.0, 1e8, 0.01)) == SampleOutcome::kAdded);
  const auto& buckets = a.state().cpu.buckets();
  REQUIRE(buckets.size() == 2);
  CHECK(buckets[0].weight == doctest::Approx(2.0));  // request 2 cores
  CHECK(buckets[1].weight == doctest::Approx(0.1));  // request 10m -> the minimum weight
  CHECK(a.state().total_samples_count == 2);
  CHECK(a.state().first_sample_start == kT0);
  CHECK(a.state().last_sample_start == kT0);
}

TEST_CASE("a sample not newer than its pod's last one is skipped; other pods' are not") {
  AggregateOptions options;
  ContainerAggregate a;
  CHECK(a.add_sample(options, kPodA, sample(kT0, 0.2, 1e8)) == SampleOutcome::kAdded);
  CHECK(a.add_sample(options, kPodA, sample(kT0, 0.2, 1e8)) == SampleOutcome::kStale);
  CHECK(a.add_sample(options, kPodA, sample(kT0 - seconds(15), 0.2, 1e8)) == SampleOutcome::kStale);
  CHECK(a.add_sample(options, kPodB, sample(kT0, 0.2, 1e8)) == SampleOutcome::kAdded);
  CHECK(a.add_sample(options, kPodA, sample(kT0 + seconds(15), 0.2, 1e8)) == SampleOutcome::kAdded);
  CHECK(a.add_sample(options, kPodA, sample(kT0 + minutes(1), -1, 1e8)) == SampleOutcome::kInvalid);
  CHECK(a.add_sample(options, kPodA, sample(kT0 + minutes(1), NAN, 1e8)) ==
        SampleOutcome::kInvalid);
  CHECK(a.state().total_samples_count == 3);
  CHECK(a.state().last_sample_start == kT0 + seconds(15));
}

TEST_CASE("memory keeps one peak per aggregation interval; a higher one replaces it") {
  AggregateOptions options;
  options.memory_aggregation_interval = hours(1);
  ContainerAggregate a;
  const auto& layout = ExponentialHistogramOptions::memory();
  (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 100e6));
  (void)a.add_sample(options, kPodA, sample(kT0 + minutes(10), 0.1, 300e6));
  (void)a.add_sample(options, kPodB, sample(kT0 + minutes(20), 0.1, 200e6));
  // One interval: the histogram holds only its peak, 300 MB, with weight 1 (at the window end).
  REQUIRE(a.state().memory.buckets().size() == 1);
  CHECK(a.state().memory.buckets()[0].index == layout.find_bucket(300e6));
  CHECK(a.state().memory_peak == 300e6);
  CHECK(a.state().window_end == kT0 + hours(1));
  // The next interval adds a second peak; an empty interval in between is skipped over.
  (void)a.add_sample(options, kPodA, sample(kT0 + hours(2) + minutes(5), 0.1, 150e6));
  CHECK(a.state().window_end == kT0 + hours(3));
  CHECK(a.state().memory_peak == 150e6);
  REQUIRE(a.state().memory.buckets().size() == 2);
  CHECK(a.state().memory.buckets()[0].index == layout.find_bucket(150e6));
}

TEST_CASE("a first sample of 0 bytes does not hide the window's real peak") {
  AggregateOptions options;
  ContainerAggregate a;
  (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 0));
  (void)a.add_sample(options, kPodA, sample(kT0 + minutes(1), 0.1, 300e6));
  REQUIRE(a.state().memory.buckets().size() == 1);
  CHECK(a.state().memory.buckets()[0].index ==
        ExponentialHistogramOptions::memory().find_bucket(300e6));
  CHECK(a.state().memory.total_weight() == doctest::Approx(1.0));
}

TEST_CASE("an OOM kill is a memory sample of max(used + 100Mi, 1.2 x used)") {
  AggregateOptions options;
  const auto& layout = ExponentialHistogramOptions::memory();
  SUBCASE("small request: +100Mi wins") {
    ContainerAggregate a;
    (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 200 * kMi));
    // used = max(request 300Mi, peak 200Mi) = 300Mi; needed = max(400Mi, 360Mi) = 400Mi.
    REQUIRE(a.record_oom(options, kT0 + minutes(1), 300 * kMi).ok());
    CHECK(a.state().oom_peak == 400 * kMi);
    CHECK(a.state().memory_peak == 200 * kMi);
    REQUIRE(a.state().memory.buckets().size() == 1);  // the OOM peak replaced the usage peak
    CHECK(a.state().memory.buckets()[0].index == layout.find_bucket(400 * kMi));
  }
  SUBCASE("large peak: x1.2 wins, and a second kill does not compound on the first") {
    ContainerAggregate a;
    (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 1024 * kMi));
    REQUIRE(a.record_oom(options, kT0 + minutes(1), 0).ok());
    CHECK(a.state().oom_peak == doctest::Approx(1.2 * 1024 * kMi));
    REQUIRE(a.record_oom(options, kT0 + minutes(2), 0).ok());
    CHECK(a.state().oom_peak == doctest::Approx(1.2 * 1024 * kMi));
    CHECK(a.state().memory.buckets().size() == 1);
  }
  SUBCASE("a kill older than one interval before the last sample is refused") {
    ContainerAggregate a;
    (void)a.add_sample(options, kPodA, sample(kT0 + hours(48), 0.1, 100 * kMi));
    auto old = a.record_oom(options, kT0, 100 * kMi);
    REQUIRE_FALSE(old.ok());
    CHECK(old.error().find("older") != std::string::npos);
  }
}

TEST_CASE("a restored aggregate treats samples up to its last one as counted") {
  AggregateOptions options;
  ContainerAggregate first;
  (void)first.add_sample(options, kPodA, sample(kT0, 0.2, 1e8));
  (void)first.add_sample(options, kPodA, sample(kT0 + minutes(1), 0.2, 1e8));
  ContainerAggregate restored(first.state());
  CHECK(restored.add_sample(options, kPodB, sample(kT0 + minutes(1), 0.2, 1e8)) ==
        SampleOutcome::kStale);
  CHECK(restored.add_sample(options, kPodB, sample(kT0 + minutes(2), 0.2, 1e8)) ==
        SampleOutcome::kAdded);
  CHECK(restored.state().total_samples_count == 3);
  CHECK_FALSE(restored.record_oom(options, kT0 + minutes(1), 0).ok());
}

namespace {
// A day at one sample a minute from two pods, usage given by `cpu(minute)` / `memory(minute)`.
template <typename Cpu, typename Memory>
std::size_t day_of_history_bytes(const char* shape, Cpu cpu, Memory memory) {
  AggregateOptions options;
  ContainerAggregate a;
  for (int m = 0; m < 24 * 60; ++m) {
    for (std::uint64_t pod : {kPodA, kPodB}) {
      (void)a.add_sample(options, pod, sample(kT0 + minutes(m), cpu(m), memory(m)));
    }
  }
  a.shrink_to_fit();
  std::printf(
      "recommender: a day of %s usage: %zu bytes per container (cpu %zu buckets, "
      "memory %zu)\n",
      shape, a.memory_bytes(), a.state().cpu.buckets().size(), a.state().memory.buckets().size());
  return a.memory_bytes();
}
// Deterministic noise in [0, 1) (a linear congruential generator, no global state).
double noise(int m) {
  std::uint32_t x = std::uint32_t(m) * 1664525u + 1013904223u;
  x ^= x >> 13;
  x *= 2654435761u;
  return double(x % 10000) / 10000.0;
}
}  // namespace

TEST_CASE("a day of history costs at most 1 KiB per container (CPU + memory)") {
  // Together with the aggregate's name and map node in its scaler, the budget is 1 KiB.
  CHECK(day_of_history_bytes(
            "steady", [](int) { return 0.3; }, [](int) { return 400 * kMi; }) <= 1024);
  CHECK(day_of_history_bytes(
            "noisy", [](int m) { return 0.05 + 1.95 * noise(m); },
            [](int m) { return (200 + 600 * noise(m + 7)) * kMi; }) <= 1024);
  CHECK(day_of_history_bytes(
            "sine", [](int m) { return 0.3 + 0.25 * std::sin(m * 2 * M_PI / 1440); },
            [](int m) { return (400 + 200 * std::sin(m * 2 * M_PI / 1440)) * kMi; }) <= 1024);
}

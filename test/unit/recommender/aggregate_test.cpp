// ContainerAggregate: CPU samples of equal weight, one memory peak per pod per aggregation
// interval, the per-pod duplicate filter, OOM kills as bumped memory samples of the killed pod,
// and the memory budget of a day of history.
#include <doctest/doctest.h>

#include <algorithm>
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

const std::uint64_t kPodC = pod_key("8f2d5c1e-cccc-4d7e-9a55-000000000003");

UsageSample sample(TimePoint t, double cpu, double memory) {
  return {t, cpu, memory};
}

// The buckets the memory histogram holds peaks in, smallest first.
std::vector<int> memory_peaks(const ContainerAggregate& a) {
  std::vector<int> out;
  for (const auto& b : a.state().memory.buckets()) out.push_back(b.index);
  return out;
}

int bucket(double bytes) {
  return ExponentialHistogramOptions::memory().find_bucket(bytes);
}
}  // namespace

TEST_CASE("every CPU sample weighs the same, whatever its pod's request (VPA 1.8)") {
  AggregateOptions options;
  ContainerAggregate a;
  CHECK(a.add_sample(options, kPodA, sample(kT0, 0.1, 1e8)) == SampleOutcome::kAdded);
  CHECK(a.add_sample(options, kPodB, sample(kT0, 1.0, 1e8)) == SampleOutcome::kAdded);
  const auto& buckets = a.state().cpu.buckets();
  REQUIRE(buckets.size() == 2);
  CHECK(buckets[0].weight == doctest::Approx(0.1));
  CHECK(buckets[1].weight == doctest::Approx(0.1));
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

TEST_CASE("memory keeps one peak per pod per aggregation interval; a higher one replaces it") {
  AggregateOptions options;
  options.memory_aggregation_interval = hours(1);
  ContainerAggregate a;
  (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 100e6));
  (void)a.add_sample(options, kPodA, sample(kT0 + minutes(10), 0.1, 300e6));
  (void)a.add_sample(options, kPodB, sample(kT0 + minutes(20), 0.1, 200e6));
  // One interval per pod: A's peak replaced its first sample; B keeps its own peak beside it.
  CHECK(memory_peaks(a) == std::vector<int>{bucket(200e6), bucket(300e6)});
  auto window_a = a.memory_window(kPodA);
  REQUIRE(window_a);
  CHECK(window_a->memory_peak == 300e6);
  CHECK(window_a->end == kT0 + hours(1));
  REQUIRE(a.memory_window(kPodB));
  CHECK(a.memory_window(kPodB)->end == kT0 + minutes(20) + hours(1));
  CHECK_FALSE(a.memory_window(kPodC));
  // A's next interval adds a third peak; an empty interval in between is skipped over.
  (void)a.add_sample(options, kPodA, sample(kT0 + hours(2) + minutes(5), 0.1, 150e6));
  window_a = a.memory_window(kPodA);
  REQUIRE(window_a);
  CHECK(window_a->end == kT0 + hours(3));
  CHECK(window_a->memory_peak == 150e6);
  CHECK(memory_peaks(a).size() == 3);
  CHECK(a.state().memory.total_weight() == doctest::Approx(3.0).epsilon(0.2));  // decayed
}

TEST_CASE("a smaller replica's peaks are kept beside the largest one's, not replaced by it") {
  // A StatefulSet whose primary uses 1 GiB and whose replicas use 256 and 512 MiB: one peak per
  // pod, so the band spans the three instead of collapsing onto the primary.
  AggregateOptions options;
  ContainerAggregate a;
  (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 1024 * kMi));
  (void)a.add_sample(options, kPodB, sample(kT0, 0.1, 256 * kMi));
  (void)a.add_sample(options, kPodC, sample(kT0, 0.1, 512 * kMi));
  // The primary grows 5%: only its own peak moves.
  (void)a.add_sample(options, kPodA, sample(kT0 + minutes(1), 0.1, 1.05 * 1024 * kMi));
  CHECK(memory_peaks(a) ==
        std::vector<int>{bucket(256 * kMi), bucket(512 * kMi), bucket(1.05 * 1024 * kMi)});
}

TEST_CASE("a first sample of 0 bytes does not hide the window's real peak") {
  AggregateOptions options;
  ContainerAggregate a;
  (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 0));
  (void)a.add_sample(options, kPodA, sample(kT0 + minutes(1), 0.1, 300e6));
  REQUIRE(a.state().memory.buckets().size() == 1);
  CHECK(a.state().memory.buckets()[0].index == bucket(300e6));
  CHECK(a.state().memory.total_weight() == doctest::Approx(1.0));
}

TEST_CASE("an OOM kill is a memory sample of max(used + 100Mi, 1.2 x used) of the killed pod") {
  AggregateOptions options;
  SUBCASE("small request: +100Mi wins") {
    ContainerAggregate a;
    (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 200 * kMi));
    // used = max(request 300Mi, peak 200Mi) = 300Mi; needed = max(400Mi, 360Mi) = 400Mi.
    REQUIRE(a.record_oom(options, kPodA, kT0 + minutes(1), 300 * kMi).ok());
    REQUIRE(a.memory_window(kPodA));
    CHECK(a.memory_window(kPodA)->oom_peak == 400 * kMi);
    CHECK(a.memory_window(kPodA)->memory_peak == 200 * kMi);
    // The OOM peak replaced the usage peak.
    CHECK(memory_peaks(a) == std::vector<int>{bucket(400 * kMi)});
  }
  SUBCASE("large peak: x1.2 wins, and a second kill does not compound on the first") {
    ContainerAggregate a;
    (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 1024 * kMi));
    REQUIRE(a.record_oom(options, kPodA, kT0 + minutes(1), 0).ok());
    CHECK(a.memory_window(kPodA)->oom_peak == doctest::Approx(1.2 * 1024 * kMi));
    REQUIRE(a.record_oom(options, kPodA, kT0 + minutes(2), 0).ok());
    CHECK(a.memory_window(kPodA)->oom_peak == doctest::Approx(1.2 * 1024 * kMi));
    CHECK(a.state().memory.buckets().size() == 1);
  }
  SUBCASE("the small replica's kill bumps from its own peak, not from the largest pod's") {
    ContainerAggregate a;
    (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 2048 * kMi));
    (void)a.add_sample(options, kPodB, sample(kT0, 0.1, 200 * kMi));
    REQUIRE(a.record_oom(options, kPodB, kT0 + minutes(1), 0).ok());
    // B: used 200Mi -> max(300Mi, 240Mi) = 300Mi, replacing B's 200Mi; A's 2Gi untouched.
    CHECK(a.memory_window(kPodB)->oom_peak == 300 * kMi);
    CHECK(memory_peaks(a) == std::vector<int>{bucket(300 * kMi), bucket(2048 * kMi)});
  }
  SUBCASE("a kill of a pod never sampled counts from its request") {
    ContainerAggregate a;
    REQUIRE(a.record_oom(options, kPodC, kT0, 512 * kMi).ok());
    CHECK(a.memory_window(kPodC)->oom_peak == doctest::Approx(614.4 * kMi));  // 1.2 x 512Mi
    // Its first usage sample afterwards is stale-checked against nothing: it is counted.
    CHECK(a.add_sample(options, kPodC, sample(kT0 + seconds(1), 0.1, 100 * kMi)) ==
          SampleOutcome::kAdded);
  }
  SUBCASE("a kill older than one interval before the pod's last sample is refused") {
    ContainerAggregate a;
    (void)a.add_sample(options, kPodA, sample(kT0 + hours(48), 0.1, 100 * kMi));
    auto old = a.record_oom(options, kPodA, kT0, 100 * kMi);
    REQUIRE_FALSE(old.ok());
    CHECK(old.error().find("older") != std::string::npos);
  }
}

TEST_CASE("a pod not heard of within the horizon is forgotten; its peak stays in the history") {
  AggregateOptions options;
  ContainerAggregate a;
  (void)a.add_sample(options, kPodA, sample(kT0, 0.1, 300 * kMi));
  (void)a.add_sample(options, kPodB, sample(kT0 + hours(2), 0.1, 100 * kMi));
  CHECK_FALSE(a.memory_window(kPodA));
  CHECK(memory_peaks(a).size() == 2);
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
  CHECK_FALSE(restored.record_oom(options, kPodA, kT0 + minutes(1), 0).ok());
  CHECK_FALSE(restored.memory_window(kPodA));  // windows are not checkpointed (as VPA's)
}

TEST_CASE(
    "a checkpoint leaves out the peaks of intervals still open: restored, none counts twice") {
  // Pod A: a day at 300Mi (closed), then 600Mi in the interval open at the checkpoint. Pod B: an
  // open interval whose entry is an OOM kill's bump (kept: a restored aggregate refuses to count
  // that kill again).
  AggregateOptions options;
  ContainerAggregate live;
  (void)live.add_sample(options, kPodA, sample(kT0, 0.2, 300 * kMi));
  (void)live.add_sample(options, kPodA, sample(kT0 + hours(25), 0.2, 600 * kMi));
  (void)live.add_sample(options, kPodB, sample(kT0 + hours(25), 0.2, 100 * kMi));
  REQUIRE(live.record_oom(options, kPodB, kT0 + hours(25) + seconds(10), 100 * kMi).ok());
  const auto now = kT0 + hours(26);
  std::vector<std::uint64_t> both = {kPodA, kPodB};
  std::sort(both.begin(), both.end());
  const DecayingHistogram written = live.checkpoint_memory(options, OpenIntervals{now, both});
  std::vector<int> kept;
  for (const auto& b : written.buckets()) kept.push_back(b.index);
  INFO("buckets: 200Mi " << bucket(200 * kMi) << ", 300Mi " << bucket(300 * kMi) << ", 600Mi "
                         << bucket(600 * kMi));
  CHECK(kept == std::vector<int>{bucket(200 * kMi), bucket(300 * kMi)});
  CHECK(memory_peaks(live) ==
        std::vector<int>{bucket(200 * kMi), bucket(300 * kMi), bucket(600 * kMi)});
  // Restored, the pod's next sample opens its interval anew: 600Mi is there once.
  AggregateState state = live.state();
  state.memory = written;
  ContainerAggregate restored(state);
  (void)restored.add_sample(options, kPodA, sample(now + minutes(1), 0.2, 600 * kMi));
  CHECK(memory_peaks(restored) ==
        std::vector<int>{bucket(200 * kMi), bucket(300 * kMi), bucket(600 * kMi)});
  // At a time every interval has closed by, nothing is left out.
  CHECK(live.checkpoint_memory(options, OpenIntervals{kT0 + hours(72), both}) ==
        live.state().memory);
  // Nor the open interval of a pod gone since (evicted, scaled away): it never samples again,
  // so its last peak is history to keep.
  CHECK(live.checkpoint_memory(options, OpenIntervals{now, {}}) == live.state().memory);
}

TEST_CASE("a history keeping a checkpoint's memory tail counts its OOM kills as seen") {
  // The checkpoint counted a kill (its peak raised to 500Mi) before its last sample; the history
  // replacing it (Prometheus' peaks, 400Mi) keeps that peak, and the same kill, still in the
  // pod's status at the next pass, is not counted a second time.
  AggregateOptions options;
  ContainerAggregate live;
  (void)live.add_sample(options, kPodA, sample(kT0, 0.2, 400 * kMi));
  REQUIRE(live.record_oom(options, kPodA, kT0 + seconds(30), 400 * kMi).ok());
  (void)live.add_sample(options, kPodA, sample(kT0 + minutes(1), 0.2, 400 * kMi));
  const ContainerAggregate checkpoint(live.state());
  ContainerAggregate fresh;
  (void)fresh.add_sample(options, kPodB, sample(kT0 + minutes(1), 0.2, 400 * kMi));
  CHECK(fresh.add_memory_tail_of(options, checkpoint) == 1);
  CHECK(memory_peaks(fresh) == std::vector<int>{bucket(400 * kMi), bucket(500 * kMi)});
  CHECK_FALSE(fresh.record_oom(options, kPodA, kT0 + seconds(30), 400 * kMi).ok());
  // A later kill counts.
  CHECK(fresh.record_oom(options, kPodA, kT0 + minutes(2), 400 * kMi).ok());
  // Nothing kept (no peak above the history's): a kill it already knew stays the history's to
  // count, since the peak it raised is not here.
  ContainerAggregate high;
  (void)high.add_sample(options, kPodB, sample(kT0 + minutes(1), 0.2, 900 * kMi));
  CHECK(high.add_memory_tail_of(options, checkpoint) == 0);
  CHECK(high.record_oom(options, kPodA, kT0 + seconds(30), 400 * kMi).ok());
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

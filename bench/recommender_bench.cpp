// recommender_bench: the recommender's computational core on its hot paths. Prints one row per
// line: id<TAB>label<TAB>value, like the other benches.
//   ingest: samples per second folded into per-container aggregates (add_sample: duplicate
//     filter, CPU histogram, memory peak), 1,000 containers x 2 pods x a day at one a minute.
//   recommend: containers per second through estimate + recommend (percentiles, bounds, rounding).
//   checkpoint: containers per second through encode + dump + parse + decode.
//   bytes_<shape> (lower is better): bytes per container (CPU + memory history, duplicate filter of
//   2 pods) after a
//     day at one sample a minute of steady, noisy and sine-shaped usage.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "recommender/checkpoint.h"
#include "recommender/recommendation.h"

namespace {

using namespace vscaler::recommender;
using Clock = std::chrono::steady_clock;
using std::chrono::minutes;

constexpr int kContainers = 1000;
constexpr int kPods = 2;
constexpr int kMinutes = 24 * 60;
constexpr double kMi = 1024.0 * 1024.0;
const TimePoint kT0 = from_millis(1'764'547'200'000);

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void row(const char* id, const char* label, double value) {
  std::printf("%s\t%s\t%.0f\n", id, label, value);
  std::fflush(stdout);
}

double noise(std::uint32_t x) {
  x = x * 1664525u + 1013904223u;
  x ^= x >> 13;
  x *= 2654435761u;
  return double(x % 10000) / 10000.0;
}

enum class Shape { kSteady, kNoisy, kSine };

UsageSample usage(Shape shape, int container, int minute) {
  double cpu = 0.3, memory = 400 * kMi;
  if (shape == Shape::kNoisy) {
    cpu = 0.05 + 1.95 * noise(std::uint32_t(container * kMinutes + minute));
    memory = (200 + 600 * noise(std::uint32_t(container * kMinutes + minute + 7))) * kMi;
  } else if (shape == Shape::kSine) {
    cpu = 0.3 + 0.25 * std::sin(minute * 2 * M_PI / kMinutes);
    memory = (400 + 200 * std::sin(minute * 2 * M_PI / kMinutes)) * kMi;
  }
  return {kT0 + minutes(minute), cpu, memory};
}

std::vector<ContainerAggregate> day_of(Shape shape, const AggregateOptions& options) {
  std::vector<ContainerAggregate> aggregates(kContainers);
  std::vector<std::uint64_t> pods;
  for (int p = 0; p < kPods; ++p) pods.push_back(pod_key("pod-uid-" + std::to_string(p)));
  for (int m = 0; m < kMinutes; ++m) {
    for (int c = 0; c < kContainers; ++c) {
      UsageSample s = usage(shape, c, m);
      for (auto pod : pods) (void)aggregates[std::size_t(c)].add_sample(options, pod, s);
    }
  }
  for (auto& a : aggregates) a.shrink_to_fit();
  return aggregates;
}

double bytes_per_container(const std::vector<ContainerAggregate>& aggregates) {
  std::size_t total = 0;
  for (const auto& a : aggregates) total += a.memory_bytes();
  return double(total) / double(aggregates.size());
}

}  // namespace

int main() {
  AggregateOptions options;
  auto start = Clock::now();
  auto noisy = day_of(Shape::kNoisy, options);
  row("ingest", "samples folded into aggregates, noisy usage (samples/s)",
      double(kContainers) * kPods * kMinutes / seconds_since(start));

  RecommendationOptions recommendation_options;
  start = Clock::now();
  std::size_t checksum = 0;
  for (int round = 0; round < 20; ++round) {
    for (const auto& a : noisy) {
      auto r = recommend("app", estimate(a, options, recommendation_options, 2), {});
      checksum += std::size_t(r.target.at(kCpu).nanos() & 1);
    }
  }
  row("recommend", "recommendations computed (containers/s)",
      20.0 * kContainers / seconds_since(start));

  ContainerAggregates scaler;
  for (int c = 0; c < 2; ++c) scaler["c" + std::to_string(c)] = noisy[std::size_t(c)];
  start = Clock::now();
  constexpr int kRounds = 2000;
  for (int round = 0; round < kRounds; ++round) {
    auto text = encode_checkpoint(scaler).dump();
    auto decoded = decode_checkpoint(nlohmann::json::parse(text), options);
    checksum += decoded.ok() ? decoded->size() : 0;
  }
  row("checkpoint", "checkpoint encode+decode, noisy day (containers/s)",
      2.0 * kRounds / seconds_since(start));

  row("bytes_steady", "bytes per container, a day of steady usage",
      bytes_per_container(day_of(Shape::kSteady, options)));
  row("bytes_noisy", "bytes per container, a day of noisy usage", bytes_per_container(noisy));
  row("bytes_sine", "bytes per container, a day of sine usage",
      bytes_per_container(day_of(Shape::kSine, options)));
  return checksum == 0 ? 1 : 0;  // keeps the work observable
}

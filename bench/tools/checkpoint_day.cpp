// checkpoint_day: prints VARIANTS lines (default 8), each one JSON object describing the filled
// history of one scaler whose pods have two containers, "app" and "sidecar", sampled by 2 pods
// once a minute over the day that ends now, with noisy usage (app 0.05-2 cores / 200-800 MiB,
// sidecar 0.01-0.2 cores / 30-130 MiB; each variant its own noise):
//   {"spec": <VerticalScalerCheckpoint spec, encode_checkpoint>,
//    "recommendation": <status.recommendation the recommender derives from it>,
//    "requests": {"app": {"cpu", "memory"}, "sidecar": {...}}}   (the targets)
// bench/sections/recommender_memory.sh creates the scalers' checkpoints (and status, and their
// Deployments' requests) from these lines, so the operator restores real, filled histories.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "recommender/checkpoint.h"
#include "recommender/recommendation.h"

namespace {

using namespace vscaler::recommender;
using nlohmann::json;

constexpr int kMinutes = 24 * 60;
constexpr double kMi = 1024.0 * 1024.0;

double noise(std::uint32_t x) {
  x = x * 1664525u + 1013904223u;
  x ^= x >> 13;
  x *= 2654435761u;
  return double(x % 10000) / 10000.0;
}

struct Shape {
  const char* name;
  double cpu_min, cpu_span;  // cores
  double mem_min, mem_span;  // MiB
};
constexpr Shape kShapes[] = {{"app", 0.05, 1.95, 200, 600}, {"sidecar", 0.01, 0.19, 30, 100}};

}  // namespace

int main(int argc, char** argv) {
  const int variants = argc > 1 ? std::atoi(argv[1]) : 8;
  AggregateOptions options;
  RecommendationOptions recommendation_options;
  const auto now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  const TimePoint start = now - std::chrono::minutes(kMinutes);
  const std::uint64_t pods[] = {pod_key("bench-pod-a"), pod_key("bench-pod-b")};
  for (int v = 0; v < variants; ++v) {
    ContainerAggregates aggregates;
    for (std::size_t c = 0; c < std::size(kShapes); ++c) {
      const Shape& shape = kShapes[c];
      ContainerAggregate& aggregate = aggregates[shape.name];
      for (int m = 0; m < kMinutes; ++m) {
        const auto seed = std::uint32_t((v * 2 + int(c)) * kMinutes * 4 + m * 2);
        UsageSample sample{start + std::chrono::minutes(m),
                           shape.cpu_min + shape.cpu_span * noise(seed),
                           (shape.mem_min + shape.mem_span * noise(seed + 1)) * kMi};
        for (auto pod : pods) (void)aggregate.add_sample(options, pod, sample);
      }
      aggregate.shrink_to_fit();
    }
    json recs = json::array();
    json requests = json::object();
    for (const auto& [name, aggregate] : aggregates) {
      auto rec = recommend(name, estimate(aggregate, options, recommendation_options, 2), {});
      requests[name] = {{"cpu", rec.target.at(kCpu).to_string()},
                        {"memory", rec.target.at(kMemory).to_string()}};
      recs.push_back(to_json(rec));
    }
    json line = {{"spec", encode_checkpoint(aggregates)},
                 {"recommendation", {{"containerRecommendations", std::move(recs)}}},
                 {"requests", std::move(requests)}};
    std::printf("%s\n", line.dump().c_str());
  }
  return 0;
}

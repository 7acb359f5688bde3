// history_fidelity: how close a recommendation from Prometheus' history comes to the one the same
// samples give when fed live (issue 31). Reads the per-step samples test/cluster/history.py
// --print-samples wrote (the samples a live sampler at that step reads), folds them as live
// passes (ScalerHistory::fold, one pass per step), loads the same pods' history from the
// Prometheus those samples were seeded into (PrometheusHistory, the operator's code, at
// --history-resolution), seeds a second history with it (each point counting as resolution /
// step samples), and prints both recommendations and the relative difference per resource and
// bound as JSON. Exit 1 when a difference exceeds --tolerance (default 0.02; the lowerBound's
// --lower-bound-tolerance, default the same), 2 on a usage or Prometheus error. The lowerBound is
// the 50th percentile: where a diurnal trace spends least time (a sine's middle), an hour's
// averaging moves it across the histogram's 5 % buckets more than the other bounds.
// Usage: history_fidelity --samples FILE --prometheus-address URL --kind StatefulSet --name web
//                         [--history-resolution-seconds 3600] [--tolerance 0.02]
//                         [--lower-bound-tolerance F]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "recommender/prometheus_history.h"
#include "recommender/recommendation.h"
#include "recommender/scaler_history.h"

namespace {

using namespace vscaler::recommender;
using nlohmann::json;

int usage(const std::string& why) {
  std::fprintf(stderr,
               "history_fidelity: %s\nusage: history_fidelity --samples FILE "
               "--prometheus-address URL --kind KIND --name NAME [--history-resolution-seconds "
               "N] [--tolerance F]\n",
               why.c_str());
  return 2;
}

json bounds(const ContainerRecommendation& rec) {
  json out;
  for (const auto& [name, map] : {std::pair{"target", &rec.target},
                                  {"lowerBound", &rec.lower_bound},
                                  {"upperBound", &rec.upper_bound}}) {
    for (const char* resource : {kCpu, kMemory}) {
      auto found = map->find(resource);
      if (found != map->end()) out[name][resource] = found->second.to_string();
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i + 1 < argc; i += 2) args[argv[i]] = argv[i + 1];
  for (const char* required : {"--samples", "--prometheus-address", "--kind", "--name"}) {
    if (!args.contains(required)) return usage(std::string(required) + " is required");
  }
  const double tolerance = args.contains("--tolerance") ? std::stod(args["--tolerance"]) : 0.02;
  const double lower_tolerance = args.contains("--lower-bound-tolerance")
                                     ? std::stod(args["--lower-bound-tolerance"])
                                     : tolerance;
  std::ifstream in(args["--samples"]);
  if (!in) return usage("cannot read " + args["--samples"]);
  std::stringstream text;
  text << in.rdbuf();
  const json samples = json::parse(text.str(), nullptr, false);
  if (samples.is_discarded() || !samples.contains("pods")) return usage("not --print-samples JSON");
  const std::string ns = samples.at("namespace");
  const std::string container = samples.at("container");
  const auto step = std::chrono::seconds(samples.at("step").get<int>());
  const TimePoint end = from_millis(samples.at("end").get<std::int64_t>() * 1000);
  AggregateOptions aggregate;
  RecommendationOptions recommendation;

  // Live: one pass per step, every pod's sample of that step.
  ScalerHistory live;
  std::vector<PodInfo> owned;
  for (const auto& [pod, rows] : samples.at("pods").items()) {
    PodInfo info;
    info.name = pod;
    info.uid = pod;
    info.containers = {{container, {}, {}}};
    owned.push_back(info);
  }
  const std::size_t steps = samples.at("pods").begin()->size();
  for (std::size_t i = 0; i < steps; ++i) {
    std::vector<PodUsage> metrics;
    for (const auto& [pod, rows] : samples.at("pods").items()) {
      const json& row = rows.at(i);
      metrics.push_back({ns,
                         pod,
                         from_millis(row.at(0).get<std::int64_t>() * 1000),
                         step,
                         {{container, row.at(1).get<double>(), row.at(2).get<double>()}}});
    }
    live.fold(metrics, owned, aggregate);
  }

  // From Prometheus: the operator's source and seed.
  PrometheusOptions options;
  options.address = args["--prometheus-address"];
  options.resolution = std::chrono::seconds(args.contains("--history-resolution-seconds")
                                                ? std::stoi(args["--history-resolution-seconds"])
                                                : 3600);
  options.history_length = std::chrono::duration_cast<Duration>(
      end - from_millis(samples.at("start").get<std::int64_t>() * 1000));
  auto source = PrometheusHistory::create(options);
  if (!source.ok()) return usage(source.error());
  auto loaded = (*source)->load({ns, args["--kind"], args["--name"]}, end);
  if (!loaded.ok()) return usage(loaded.error().message);
  ScalerHistory seeded;
  const double count =
      std::chrono::duration<double>(options.resolution) / std::chrono::duration<double>(step);
  HistoryStats stats = seeded.seed(*loaded, aggregate, count);

  auto live_recs = live.recommendations(aggregate, recommendation);
  auto seeded_recs = seeded.recommendations(aggregate, recommendation);
  if (live_recs.size() != 1 || seeded_recs.size() != 1) {
    return usage("expected one container's recommendation from each, got " +
                 std::to_string(live_recs.size()) + " and " + std::to_string(seeded_recs.size()));
  }
  json report = {{"live", bounds(live_recs[0])},
                 {"prometheus", bounds(seeded_recs[0])},
                 {"points", stats.points},
                 {"pods", stats.pods},
                 {"queries", loaded->queries},
                 {"resolution_seconds", options.resolution.count() / 1000},
                 {"weight", count}};
  double worst = 0;
  bool within = true;
  for (const auto& [name, pick] : {std::pair{"target", &ContainerRecommendation::target},
                                   {"lowerBound", &ContainerRecommendation::lower_bound},
                                   {"upperBound", &ContainerRecommendation::upper_bound}}) {
    for (const char* resource : {kCpu, kMemory}) {
      const double a = (live_recs[0].*pick).at(resource).to_double();
      const double b = (seeded_recs[0].*pick).at(resource).to_double();
      const double difference = a > 0 ? std::abs(b - a) / a : 0;
      report["difference"][name][resource] = std::round(difference * 10000) / 10000;
      worst = std::max(worst, difference);
      within =
          within && difference <= (std::string(name) == "lowerBound" ? lower_tolerance : tolerance);
    }
  }
  report["worst"] = std::round(worst * 10000) / 10000;
  report["tolerance"] = tolerance;
  report["lower_bound_tolerance"] = lower_tolerance;
  std::printf("%s\n", report.dump().c_str());
  return within ? 0 : 1;
}

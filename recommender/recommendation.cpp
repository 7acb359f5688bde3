// Percentiles -> margin -> confidence -> per-pod minimums -> rounding -> min/max clamping: the
// order of VPA's estimator chain (CreatePodResourceRecommender) and its capping processor.
#include "recommender/recommendation.h"

#include <algorithm>
#include <cmath>

#include "recommender/json_fields.h"

namespace vscaler::recommender {
namespace {

// VPA's confidence multiplier: estimate * (1 + multiplier / confidence)^exponent. At confidence
// 0 the upper bound is unbounded (capped by the caller) and the lower bound is 0.
double with_confidence(double value, double multiplier, double exponent, double conf) {
  if (!(conf > 0)) return exponent > 0 ? INFINITY : 0.0;
  return value * std::pow(1.0 + multiplier / conf, exponent);
}

Amounts percentiles(const ContainerAggregate& aggregate, const AggregateOptions& options,
                    double fraction) {
  return {aggregate.state().cpu.percentile(options.cpu_config(), fraction),
          aggregate.state().memory.percentile(options.memory_config(), fraction)};
}

Amounts scale(Amounts a, double cpu_factor, double memory_factor) {
  return {a.cpu_cores * cpu_factor, a.memory_bytes * memory_factor};
}

Amounts at_least(Amounts a, Amounts min) {
  return {std::max(a.cpu_cores, min.cpu_cores), std::max(a.memory_bytes, min.memory_bytes)};
}

// An unbounded upper bound is held at the histogram's largest value (1000 cores, 1e12 bytes).
Amounts finite(Amounts a) {
  const auto& cpu = ExponentialHistogramOptions::cpu();
  const auto& memory = ExponentialHistogramOptions::memory();
  return {std::min(a.cpu_cores, cpu.bucket_start(cpu.num_buckets() - 1)),
          std::min(a.memory_bytes, memory.bucket_start(memory.num_buckets() - 1))};
}

ResourceMap to_map(Amounts a, const Rounding& rounding) {
  return {{kCpu, cpu_quantity(a.cpu_cores, rounding.cpu_millicores)},
          {kMemory, memory_quantity(a.memory_bytes, rounding.memory_bytes)}};
}

}  // namespace

double confidence(const AggregateState& state, Duration confidence_interval) {
  if (state.total_samples_count == 0) return 0;
  double lifespan = double((state.last_sample_start - state.first_sample_start).count()) /
                    double(confidence_interval.count());
  double minutes = double(confidence_interval.count()) / 60'000.0;
  double samples = double(state.total_samples_count) / minutes;
  return std::min(lifespan, samples);
}

Estimate estimate(const ContainerAggregate& aggregate, const AggregateOptions& aggregate_options,
                  const RecommendationOptions& options, int containers_sharing) {
  const double margin = 1.0 + options.safety_margin;
  const double conf = confidence(aggregate.state(), options.confidence_interval);
  const double share = 1.0 / double(std::max(containers_sharing, 1));
  const Amounts minimum{options.pod_min_cpu_cores * share, options.pod_min_memory_bytes * share};

  Amounts target =
      scale(percentiles(aggregate, aggregate_options, options.target_percentile), margin, margin);
  Amounts lower = scale(percentiles(aggregate, aggregate_options, options.lower_bound_percentile),
                        margin, margin);
  Amounts upper = scale(percentiles(aggregate, aggregate_options, options.upper_bound_percentile),
                        margin, margin);
  upper = {with_confidence(upper.cpu_cores, 1.0, 1.0, conf),
           with_confidence(upper.memory_bytes, 1.0, 1.0, conf)};
  lower = {with_confidence(lower.cpu_cores, 0.001, -2.0, conf),
           with_confidence(lower.memory_bytes, 0.001, -2.0, conf)};
  return {at_least(target, minimum), at_least(lower, minimum), finite(at_least(upper, minimum))};
}

kube::Quantity clamp_to_range(const std::string& resource, const kube::Quantity& value,
                              const AllowedRange& range) {
  // A bound of 0 bounds nothing, as in VPA's capping (maybeCapToMin/Max skip a zero quantity):
  // maxAllowed cpu "0" would otherwise publish a target of 0.
  auto bound = [&resource](const ResourceMap& map) {
    const kube::Quantity* found = find(map, resource);
    return found != nullptr && *found != kube::Quantity() ? found : nullptr;
  };
  // Raised to the min, then capped to the max, as VPA's capping does (applyVPAPolicyForContainer):
  // where a min exceeds a max (a scaler's minAllowed above --container-recommendation-max-
  // allowed-*, the largest node or a LimitRange's max, which feed max_allowed), the max wins.
  kube::Quantity result = value;
  if (const auto* min = bound(range.min_allowed); min && result < *min) result = *min;
  if (const auto* max = bound(range.max_allowed); max && result > *max) result = *max;
  return result;
}

ContainerRecommendation recommend(const std::string& container_name, const Estimate& estimate,
                                  const AllowedRange& range, const Rounding& rounding) {
  ContainerRecommendation r;
  r.container_name = container_name;
  r.uncapped_target = to_map(estimate.target, rounding);
  r.target = r.uncapped_target;
  r.lower_bound = to_map(estimate.lower_bound, rounding);
  r.upper_bound = to_map(estimate.upper_bound, rounding);
  for (ResourceMap* bound : {&r.target, &r.lower_bound, &r.upper_bound}) {
    for (auto& [resource, value] : *bound) value = clamp_to_range(resource, value, range);
  }
  return r;
}

ContainerRecommendation controlled_only(ContainerRecommendation recommendation,
                                        ControlledResources controlled) {
  for (ResourceMap* bound : {&recommendation.target, &recommendation.lower_bound,
                             &recommendation.upper_bound, &recommendation.uncapped_target}) {
    if (!controlled.cpu) bound->erase(kCpu);
    if (!controlled.memory) bound->erase(kMemory);
  }
  return recommendation;
}

nlohmann::json to_json(const ContainerRecommendation& recommendation) {
  auto quantities = [](const ResourceMap& map) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [resource, value] : map) out[resource] = value.to_string();
    return out;
  };
  return {{"containerName", recommendation.container_name},
          {"target", quantities(recommendation.target)},
          {"lowerBound", quantities(recommendation.lower_bound)},
          {"upperBound", quantities(recommendation.upper_bound)},
          {"uncappedTarget", quantities(recommendation.uncapped_target)}};
}

kube::Result<std::vector<ContainerRecommendation>> parse_recommendation(
    const nlohmann::json& recommendation) {
  const std::string path = "status.recommendation.containerRecommendations";
  std::vector<ContainerRecommendation> out;
  if (recommendation.is_null()) return out;
  if (!recommendation.is_object()) return kube::fail("status.recommendation: must be an object");
  const nlohmann::json* list = child(recommendation, "containerRecommendations");
  if (list == nullptr || list->is_null()) return out;
  if (!list->is_array()) return kube::fail(path + ": must be a list");
  for (std::size_t i = 0; i < list->size(); ++i) {
    const nlohmann::json& item = (*list)[i];
    const std::string at = path + "[" + std::to_string(i) + "]";
    ContainerRecommendation r;
    r.container_name = std::string(string_field(item, "containerName"));
    if (r.container_name.empty()) return kube::fail(at + ".containerName: required");
    struct Field {
      const char* name;
      const char* dotted_name;  // as error paths name it
      ResourceMap* into;
    };
    for (Field field :
         {Field{"target", ".target", &r.target}, Field{"lowerBound", ".lowerBound", &r.lower_bound},
          Field{"upperBound", ".upperBound", &r.upper_bound},
          Field{"uncappedTarget", ".uncappedTarget", &r.uncapped_target}}) {
      auto values = resource_list(child(item, field.name), at, field.dotted_name);
      if (!values.ok()) return kube::fail(values.error());
      *field.into = std::move(values).value();
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace vscaler::recommender

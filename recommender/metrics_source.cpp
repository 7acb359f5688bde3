// The metrics source's requests: one GET and four lists per Deployment scaler.
#include "recommender/metrics_source.h"

#include <utility>

#include "recommender/limit_range.h"

namespace vscaler::recommender {
namespace {

using nlohmann::json;

SourceError api_failure(const std::string& what, kube::ApiError error) {
  std::string message = what + ": " + error.to_string();
  return SourceError{SourceErrorKind::kApi, std::move(message), std::move(error)};
}

SourceError invalid(const std::string& what, const std::string& why) {
  return SourceError{SourceErrorKind::kInvalidObject, what + ": " + why, std::nullopt};
}

// The parsers read a List document: the items a paginated list collected, as one.
json as_list(kube::ObjectList&& list) {
  return json{{"items", json(std::move(list.items))}};
}

void drop_managed_fields(json& item) {
  auto metadata = item.find("metadata");
  if (metadata != item.end() && metadata->is_object()) metadata->erase("managedFields");
}

}  // namespace

const char* to_string(SourceErrorKind kind) {
  switch (kind) {
    case SourceErrorKind::kMetricsUnavailable:
      return "MetricsUnavailable";
    case SourceErrorKind::kUnsupportedKind:
      return "UnsupportedKind";
    case SourceErrorKind::kWorkloadNotFound:
      return "WorkloadNotFound";
    case SourceErrorKind::kInvalidObject:
      return "InvalidObject";
    case SourceErrorKind::kApi:
      return "Api";
  }
  return "Api";
}

std::string SourceError::to_string() const {
  return std::string(recommender::to_string(kind)) + ": " + message;
}

bool is_metrics_unavailable(const kube::ApiError& error) {
  return error.code == 404 || error.code == 503;
}

MetricsSource::MetricsSource(kube::Client client, MetricsSourceOptions options)
    : client_(std::move(client)), options_(std::move(options)) {}

kube::Result<ScalerInputs, SourceError> MetricsSource::read(const TargetWorkload& target) const {
  const kube::ResourceType* type = workload_resource(target.kind);
  if (!type) {
    return kube::fail(SourceError{
        SourceErrorKind::kUnsupportedKind,
        "kind " + target.kind + " is not supported (Deployment, StatefulSet, DaemonSet)",
        std::nullopt});
  }
  const std::string& ns = target.namespace_;
  ScalerInputs inputs;
  const std::string workload_what = "get " + type->display() + " " + ns + "/" + target.name;
  auto object = client_.get(*type, ns, target.name);
  ++inputs.requests;
  if (!object.ok()) {
    if (kube::is_not_found(object.error())) {
      return kube::fail(SourceError{SourceErrorKind::kWorkloadNotFound,
                                    workload_what + ": " + object.error().to_string(),
                                    object.error()});
    }
    return kube::fail(api_failure(workload_what, object.error()));
  }
  auto workload = parse_workload(*object, target.kind);
  if (!workload.ok()) return kube::fail(invalid(workload_what, workload.error()));
  inputs.workload = std::move(workload).value();

  kube::ListOptions by_selector;
  by_selector.label_selector = inputs.workload.selector;
  by_selector.limit = options_.page_limit;

  const std::string pods_what = "list pods in " + ns + " by " + inputs.workload.selector;
  kube::ListOptions pod_options = by_selector;
  pod_options.transform = drop_managed_fields;
  auto pods = client_.list(kube::resources::kPods, ns, pod_options);
  if (!pods.ok()) return kube::fail(api_failure(pods_what, pods.error()));
  inputs.requests += pods->pages;
  auto parsed_pods = parse_pod_list(as_list(std::move(pods).value()));
  if (!parsed_pods.ok()) return kube::fail(invalid(pods_what, parsed_pods.error()));
  inputs.pods_listed = parsed_pods->pods.size();
  for (auto& message : parsed_pods->errors) inputs.skipped.push_back("pod " + message);

  std::vector<ReplicaSetInfo> replica_sets;
  if (target.kind == "Deployment") {
    const std::string what = "list replicasets.apps in " + ns + " by " + inputs.workload.selector;
    auto list = client_.list_metadata(kReplicaSets, ns, by_selector);
    if (!list.ok()) return kube::fail(api_failure(what, list.error()));
    inputs.requests += list->pages;
    auto parsed = parse_replica_set_list(as_list(std::move(list).value()));
    if (!parsed.ok()) return kube::fail(invalid(what, parsed.error()));
    replica_sets = std::move(parsed).value();
  }
  inputs.owned_pods = owned_pods(std::move(parsed_pods->pods), replica_sets, inputs.workload.ref);

  const std::string metrics_what =
      "list " + options_.pod_metrics.display() + " in " + ns + " by " + inputs.workload.selector;
  auto metrics = client_.list(options_.pod_metrics, ns, by_selector);
  if (!metrics.ok()) {
    if (!is_metrics_unavailable(metrics.error())) {
      return kube::fail(api_failure(metrics_what, metrics.error()));
    }
    ++inputs.requests;
    inputs.metrics_error =
        SourceError{SourceErrorKind::kMetricsUnavailable,
                    metrics_what + ": " + metrics.error().to_string(), metrics.error()};
  } else {
    inputs.requests += metrics->pages;
    auto parsed = parse_pod_metrics_list(as_list(std::move(metrics).value()));
    if (!parsed.ok()) return kube::fail(invalid(metrics_what, parsed.error()));
    inputs.metrics = std::move(parsed->pods);
    for (auto& message : parsed->errors) inputs.skipped.push_back("PodMetrics " + message);
  }

  const std::string ranges_what = "list limitranges in " + ns;
  kube::ListOptions range_options;
  range_options.limit = options_.page_limit;
  auto ranges = client_.list(kLimitRanges, ns, range_options);
  if (!ranges.ok()) return kube::fail(api_failure(ranges_what, ranges.error()));
  inputs.requests += ranges->pages;
  auto range = container_limit_range(as_list(std::move(ranges).value()));
  if (!range.ok()) return kube::fail(invalid(ranges_what, range.error()));
  inputs.limit_range = std::move(range).value();
  return inputs;
}

}  // namespace vscaler::recommender

// The metrics source's requests: one GET and four lists per Deployment scaler, or one GET per
// scaler and four lists per namespace a pass shares.
#include "recommender/metrics_source.h"

#include <functional>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "kube/object_meta.h"
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

// Makes a list hand its items to `parse` one page at a time, as a List document of that page's
// items (what parse_replica_set_list reads), instead of collecting them all: one page of
// metadata is held, not the namespace's. `restart` runs when an expired continue token started
// the list over: what was parsed from the abandoned attempt must be dropped.
void parse_by_page(kube::ListOptions& options, std::function<void(json page)> parse,
                   std::function<void()> restart) {
  auto batch = std::make_shared<json>(json::array());
  auto attempt = std::make_shared<int>(0);
  options.on_item = [batch, attempt, restart = std::move(restart)](json& item, int restarts) {
    if (restarts != *attempt) {
      *attempt = restarts;
      *batch = json::array();
      restart();
    }
    batch->push_back(std::move(item));
  };
  options.on_page = [batch, parse = std::move(parse)](const kube::ListPage&) {
    parse(json{{"items", std::exchange(*batch, json::array())}});
  };
}

// Makes a list hand each item to `parse` (parse_pod, parse_pod_metrics) as it is read: the
// parsed items into `out`, each item's error, after `what`, into `errors`; "items[N]" counts
// across pages. Only one item's JSON is held at a time, never a page's: metrics-server answers a
// PodMetrics list whole whatever `limit` says, and 10,000 pods' PodMetrics as one DOM were some
// 15 MB of the pass's peak. A list started over (an expired continue token) drops what the
// abandoned attempt parsed.
template <typename Parse, typename Item>
void collect_by_item(kube::ListOptions& options, Parse parse, std::vector<Item>& out,
                     std::vector<std::string>& errors, const std::string& what) {
  options.on_item = [parse, &out, &errors, what, attempt = 0, index = std::size_t{0}](
                        json& item, int restart) mutable {
    if (restart != attempt) {
      attempt = restart;
      index = 0;
      out.clear();
      errors.clear();
    }
    auto parsed = parse(item, "items[" + std::to_string(index++) + "]");
    if (parsed.ok()) {
      out.push_back(std::move(parsed).value());
    } else {
      errors.push_back(what + " " + parsed.error());
    }
  };
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

kube::Result<ScalerInputs, SourceError> MetricsSource::read(const TargetWorkload& target,
                                                            PassReads* pass) const {
  const kube::ResourceType* type = workload_resource(target.kind);
  if (!type) {
    return kube::fail(SourceError{
        SourceErrorKind::kUnsupportedKind,
        "kind " + target.kind + " is not supported (Deployment, StatefulSet, DaemonSet)",
        std::nullopt});
  }
  const std::string& ns = target.namespace_;
  ScalerInputs inputs;
  auto workload = read_workload(target, *type, pass, inputs.requests);
  if (!workload.ok()) return kube::fail(std::move(workload).error());
  inputs.workload = std::move(workload).value();

  if (pass == nullptr || !pass->shared(ns)) {
    auto lists = read_lists(ns, inputs.workload.selector, target.kind == "Deployment");
    if (!lists.ok()) return kube::fail(lists.error());
    inputs.requests += lists->requests;
    inputs.pods_listed = lists->pods.size();
    inputs.owned_pods =
        owned_pods(std::move(lists->pods), lists->replica_sets, inputs.workload.ref);
    inputs.metrics = std::move(lists->metrics);
    inputs.metrics_error = std::move(lists->metrics_error);
    inputs.limit_range = std::move(lists->limit_range);
    inputs.skipped = std::move(lists->skipped);
    return inputs;
  }

  const auto* shared = pass->find(ns);
  if (shared == nullptr) {
    shared = &pass->keep(ns, read_lists(ns, "", true));
    // The namespace's lists are charged to the scaler whose read made them.
    if (shared->ok()) {
      inputs.requests += (*shared)->lists.requests;
      inputs.skipped = (*shared)->lists.skipped;
    }
  }
  if (!shared->ok()) return kube::fail(shared->error());
  const IndexedLists& indexed = shared->value();
  const WorkloadLists& lists = indexed.lists;
  std::vector<PodInfo> selected = indexed.select(inputs.workload.label_selector);
  inputs.pods_listed = selected.size();
  inputs.owned_pods = owned_pods_by_lookup(
      std::move(selected), [&indexed](const std::string& uid) { return indexed.replica_set(uid); },
      inputs.workload.ref);
  for (const auto& pod : inputs.owned_pods) {
    if (const PodUsage* usage = indexed.metrics_of(pod.name)) inputs.metrics.push_back(*usage);
  }
  inputs.metrics_error = lists.metrics_error;
  inputs.limit_range = lists.limit_range;
  return inputs;
}

IndexedLists::IndexedLists(WorkloadLists read) : lists(std::move(read)) {
  for (std::uint32_t i = 0; i < lists.pods.size(); ++i) {
    for (const auto& [key, value] : lists.pods[i].labels) {
      std::string label;
      label.reserve(key.size() + 1 + value.size());
      label.append(key).append(1, '=').append(value);
      pods_by_label[std::move(label)].push_back(i);
    }
  }
  for (std::uint32_t i = 0; i < lists.replica_sets.size(); ++i) {
    replica_set_by_uid.emplace(lists.replica_sets[i].uid, i);
  }
  for (std::uint32_t i = 0; i < lists.metrics.size(); ++i) {
    metrics_by_pod.emplace(lists.metrics[i].name, i);
  }
}

std::vector<PodInfo> IndexedLists::select(const LabelSelector& selector) const {
  // The smallest bucket an equality names holds every pod that can match (a pod must carry
  // each key=value); without one (only In, NotIn, Exists...), every pod is a candidate.
  const std::vector<std::uint32_t>* smallest = nullptr;
  static const std::vector<std::uint32_t> kNone;
  for (const auto& requirement : selector.requirements) {
    const bool equality =
        requirement.op == LabelSelector::Requirement::Op::kEquals ||
        (requirement.op == LabelSelector::Requirement::Op::kIn && requirement.values.size() == 1);
    if (!equality || requirement.values.empty()) continue;
    auto it = pods_by_label.find(requirement.key + "=" + requirement.values.front());
    const std::vector<std::uint32_t>* bucket = it == pods_by_label.end() ? &kNone : &it->second;
    if (smallest == nullptr || bucket->size() < smallest->size()) smallest = bucket;
  }
  std::vector<PodInfo> selected;
  auto consider = [&](const PodInfo& pod) {
    if (matches(selector, pod.labels)) selected.push_back(pod);
  };
  if (smallest == nullptr) {
    for (const auto& pod : lists.pods) consider(pod);
  } else {
    for (std::uint32_t i : *smallest) consider(lists.pods[i]);
  }
  return selected;
}

const ReplicaSetInfo* IndexedLists::replica_set(const std::string& uid) const {
  auto it = replica_set_by_uid.find(uid);
  return it == replica_set_by_uid.end() ? nullptr : &lists.replica_sets[it->second];
}

const PodUsage* IndexedLists::metrics_of(const std::string& pod) const {
  auto it = metrics_by_pod.find(pod);
  return it == metrics_by_pod.end() ? nullptr : &lists.metrics[it->second];
}

kube::Result<WorkloadInfo, SourceError> MetricsSource::read_workload(const TargetWorkload& target,
                                                                     const kube::ResourceType& type,
                                                                     PassReads* pass,
                                                                     int& requests) const {
  const std::string& ns = target.namespace_;
  if (pass != nullptr && pass->shared(ns)) {
    // The namespace's workloads of this kind, listed once per pass.
    const auto* index = pass->find_workloads(ns, target.kind);
    if (index == nullptr) {
      index = &pass->keep_workloads(ns, target.kind, list_workloads(ns, type, target.kind));
      if (index->ok()) requests += (*index)->requests;
    }
    if (!index->ok()) return kube::fail(index->error());
    const std::string what = type.display() + " " + ns + "/" + target.name;
    auto found = (*index)->by_name.find(target.name);
    if (found == (*index)->by_name.end()) {
      return kube::fail(SourceError{SourceErrorKind::kWorkloadNotFound,
                                    what + ": not in the namespace's list (NotFound)",
                                    std::nullopt});
    }
    if (!found->second.ok()) return kube::fail(invalid(what, found->second.error()));
    return found->second.value();
  }
  const std::string what = "get " + type.display() + " " + ns + "/" + target.name;
  auto object = client_.get(type, ns, target.name);
  ++requests;
  if (!object.ok()) {
    if (kube::is_not_found(object.error())) {
      return kube::fail(SourceError{SourceErrorKind::kWorkloadNotFound,
                                    what + ": " + object.error().to_string(), object.error()});
    }
    return kube::fail(api_failure(what, object.error()));
  }
  auto workload = parse_workload(*object, target.kind);
  if (!workload.ok()) return kube::fail(invalid(what, workload.error()));
  return std::move(workload).value();
}

kube::Result<WorkloadIndex, SourceError> MetricsSource::list_workloads(
    const std::string& ns, const kube::ResourceType& type, const std::string& kind) const {
  WorkloadIndex index;
  kube::ListOptions options;
  options.limit = options_.page_limit;
  options.projection = workload_projection();
  int attempt = 0;
  options.on_item = [&index, &kind, &attempt](json& item, int restart) {
    if (restart != attempt) {  // the list started over: forget the abandoned attempt's items
      index.by_name.clear();
      attempt = restart;
    }
    const std::string name = kube::meta_string(item, "name");
    if (!name.empty()) index.by_name.insert_or_assign(name, parse_workload(item, kind));
  };
  auto list = client_.list(type, ns, options);
  if (!list.ok())
    return kube::fail(api_failure("list " + type.display() + " in " + ns, list.error()));
  index.requests = list->pages;
  return index;
}

kube::Result<WorkloadLists, SourceError> MetricsSource::read_lists(const std::string& ns,
                                                                   const std::string& selector,
                                                                   bool replica_sets) const {
  WorkloadLists lists;
  kube::ListOptions by_selector;
  by_selector.label_selector = selector;
  by_selector.limit = options_.page_limit;
  const std::string scope = selector.empty() ? " in " + ns : " in " + ns + " by " + selector;

  const std::string pods_what = "list pods" + scope;
  kube::ListOptions pod_options = by_selector;
  std::vector<std::string> pod_errors;
  pod_options.projection = pod_projection();
  collect_by_item(pod_options, parse_pod, lists.pods, pod_errors, "pod");
  auto pods = client_.list(kube::resources::kPods, ns, pod_options);
  if (!pods.ok()) return kube::fail(api_failure(pods_what, pods.error()));
  lists.requests += pods->pages;
  for (auto& message : pod_errors) lists.skipped.push_back(std::move(message));

  if (replica_sets) {
    const std::string what = "list replicasets.apps" + scope;
    kube::ListOptions rs_options = by_selector;
    rs_options.projection = replica_set_projection();
    parse_by_page(
        rs_options,
        [&](json page) {
          auto parsed = parse_replica_set_list(page);
          if (!parsed.ok()) {  // not reached: the page is a List of items
            lists.skipped.push_back("replicasets page: " + parsed.error());
            return;
          }
          for (auto& rs : *parsed) lists.replica_sets.push_back(std::move(rs));
        },
        [&] { lists.replica_sets.clear(); });
    auto list = client_.list_metadata(kReplicaSets, ns, rs_options);
    if (!list.ok()) return kube::fail(api_failure(what, list.error()));
    lists.requests += list->pages;
  }

  const std::string metrics_what = "list " + options_.pod_metrics.display() + scope;
  kube::ListOptions metrics_options = by_selector;
  std::vector<std::string> metrics_errors;
  metrics_options.projection = pod_metrics_projection();
  collect_by_item(metrics_options, parse_pod_metrics, lists.metrics, metrics_errors, "PodMetrics");
  auto metrics = client_.list(options_.pod_metrics, ns, metrics_options);
  if (!metrics.ok()) {
    if (!is_metrics_unavailable(metrics.error())) {
      return kube::fail(api_failure(metrics_what, metrics.error()));
    }
    ++lists.requests;
    lists.metrics.clear();
    lists.metrics_error =
        SourceError{SourceErrorKind::kMetricsUnavailable,
                    metrics_what + ": " + metrics.error().to_string(), metrics.error()};
  } else {
    lists.requests += metrics->pages;
    for (auto& message : metrics_errors) lists.skipped.push_back(std::move(message));
  }

  const std::string ranges_what = "list limitranges in " + ns;
  kube::ListOptions range_options;
  range_options.limit = options_.page_limit;
  auto ranges = client_.list(kube::resources::kLimitRanges, ns, range_options);
  if (!ranges.ok()) return kube::fail(api_failure(ranges_what, ranges.error()));
  lists.requests += ranges->pages;
  auto range = container_limit_range(as_list(std::move(ranges).value()));
  if (!range.ok()) return kube::fail(invalid(ranges_what, range.error()));
  lists.limit_range = std::move(range).value();
  return lists;
}

}  // namespace vscaler::recommender

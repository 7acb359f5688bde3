// MetricsSource: the recommender's reads for one scaler's pass, through the kube client. For the
// target workload it GETs the workload (uid, spec.selector, the template's requests), lists the
// pods by that selector, the ReplicaSets by it (Deployments only: the owner chain's middle link,
// metadata only), the namespace's PodMetrics by it and its LimitRanges, and keeps the pods whose
// owner chain leads to the target. Five requests per Deployment scaler (one page each), four for
// a StatefulSet or DaemonSet: the cost grows with the scalers, never with the cluster.
// In a namespace holding several scalers, a pass instead lists the namespace's pods, ReplicaSets,
// PodMetrics and LimitRanges once (PassReads) and matches each scaler's selector here, and finds
// each scaler's workload in one list per kind of the namespace (each item parsed as it arrives,
// none kept): a few lists per such namespace and pass, whatever its scalers (issue 34).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.h"
#include "kube/client.h"
#include "kube/errors.h"
#include "recommender/apply.h"
#include "recommender/pod_metrics.h"
#include "recommender/pods.h"
#include "recommender/workload.h"

namespace vscaler::recommender {

/// metrics.k8s.io/v1beta1 pods: the PodMetrics of a namespace.
inline const kube::ResourceType kPodMetrics{"metrics.k8s.io", "v1beta1", "pods", true};
/// apps/v1 replicasets.
inline const kube::ResourceType kReplicaSets{"apps", "v1", "replicasets", true};

/// Why a read for a scaler failed, as the caller branches on it.
enum class SourceErrorKind {
  kMetricsUnavailable,  ///< the metrics API answered 404 or 503 (absent or down): NoMetrics
  kUnsupportedKind,     ///< the target's kind is not Deployment, StatefulSet or DaemonSet
  kWorkloadNotFound,    ///< GET of the workload answered 404
  kInvalidObject,       ///< an object read does not parse (the message names the field)
  kApi,                 ///< any other API failure (see `api`; retry next pass)
};

/// "MetricsUnavailable", "UnsupportedKind", "WorkloadNotFound", "InvalidObject" or "Api".
const char* to_string(SourceErrorKind kind);

/// A failed read: the kind, a message naming the request, and the API error when there is one.
struct SourceError {
  SourceErrorKind kind = SourceErrorKind::kApi;  ///< what the caller branches on
  std::string message;                           ///< e.g. "list pods.metrics.k8s.io in shop: ..."
  std::optional<kube::ApiError> api;             ///< the API's answer, when the API failed
  /// One line: "MetricsUnavailable: list pods.metrics.k8s.io in shop: ServiceUnavailable ...".
  std::string to_string() const;
};

/// True for the answers that mean "no metrics API to ask" rather than a failure of this
/// request: 404 (the APIService is not registered) and 503 (it is registered but not available).
bool is_metrics_unavailable(const kube::ApiError& error);

/// The target of a scaler, in the scaler's namespace.
struct TargetWorkload {
  std::string namespace_;  ///< the scaler's (and the workload's) namespace
  std::string kind;        ///< Deployment, StatefulSet or DaemonSet (apps/v1)
  std::string name;        ///< the workload's name
};

/// What one read for one scaler found.
struct ScalerInputs {
  WorkloadInfo workload;            ///< the target's uid, selector and template containers
  std::vector<PodInfo> owned_pods;  ///< pods by the selector whose owner chain is the target's
  std::size_t pods_listed = 0;      ///< pods the selector matched (owned or not)
  std::vector<PodUsage> metrics;    ///< PodMetrics by the selector (fold_pass joins by name)
  /// Set (kMetricsUnavailable) when the metrics API was absent or down: `metrics` is then empty
  /// and the pods are still read, so the caller folds and reports NoMetrics / NoPodsMatched.
  std::optional<SourceError> metrics_error;
  std::optional<LimitRangeItem> limit_range;  ///< the namespace's merged Container LimitRange
  /// One message per pod or PodMetrics item skipped because it did not parse.
  std::vector<std::string> skipped;
  int requests = 0;  ///< API requests this read made (pages counted)
};

/// The lists a read takes its pods, ReplicaSets, PodMetrics and LimitRange from: by one
/// workload's selector, or a whole namespace's (PassReads).
struct WorkloadLists {
  std::vector<PodInfo> pods;
  std::vector<ReplicaSetInfo> replica_sets;  ///< empty unless read for a Deployment
  std::vector<PodUsage> metrics;
  std::optional<SourceError> metrics_error;  ///< as ScalerInputs::metrics_error
  std::optional<LimitRangeItem> limit_range;
  std::vector<std::string> skipped;  ///< as ScalerInputs::skipped
  int requests = 0;                  ///< API requests the lists took
};

/// A namespace-wide WorkloadLists indexed once per pass, so that each of its scalers finds its
/// own pods, their ReplicaSets and their PodMetrics by lookups: scanning the namespace's for
/// each scaler is 10,000 x 10,000 steps a pass at 10,000 scalers in one namespace.
struct IndexedLists {
  WorkloadLists lists;
  /// Pods (indices into lists.pods) by label, keyed "key=value".
  std::unordered_map<std::string, std::vector<std::uint32_t>> pods_by_label;
  /// lists.replica_sets by uid, lists.metrics by pod name (indices).
  std::unordered_map<std::string, std::uint32_t> replica_set_by_uid;
  std::unordered_map<std::string, std::uint32_t> metrics_by_pod;

  /// Indexes `read`.
  explicit IndexedLists(WorkloadLists read);
  /// The pods matching `selector`: those of the smallest label bucket its equality requirements
  /// name, each checked against the whole selector (every pod when it has none).
  std::vector<PodInfo> select(const LabelSelector& selector) const;
  /// The ReplicaSet of that uid, or nullptr.
  const ReplicaSetInfo* replica_set(const std::string& uid) const;
  /// The PodMetrics of that pod, or nullptr.
  const PodUsage* metrics_of(const std::string& pod) const;
};

/// One kind's workloads of a namespace, each parsed as its item arrived (the objects are not
/// kept): name -> WorkloadInfo, or the parse error naming the field.
struct WorkloadIndex {
  std::map<std::string, kube::Result<WorkloadInfo>, std::less<>> by_name;
  int requests = 0;  ///< API requests (pages) the list took
};

/// One pass's namespace-wide lists: for the namespaces named at construction (those holding
/// several scalers), the first scaler's read lists the namespace and later reads of the pass
/// reuse it (a failure too: the namespace's other scalers fail alike, without asking again).
/// Dropped with the pass. Used from the loop's one thread.
class PassReads {
 public:
  PassReads() = default;
  explicit PassReads(std::set<std::string> shared_namespaces)
      : shared_(std::move(shared_namespaces)) {}
  /// Whether reads in `ns` use namespace-wide lists.
  bool shared(const std::string& ns) const { return shared_.count(ns) > 0; }
  /// The lists of `ns` read so far in this pass, or nullptr.
  const kube::Result<IndexedLists, SourceError>* find(const std::string& ns) const {
    auto it = lists_.find(ns);
    return it == lists_.end() ? nullptr : &it->second;
  }
  /// Keeps what a read of `ns` gave, indexed.
  const kube::Result<IndexedLists, SourceError>& keep(const std::string& ns,
                                                      kube::Result<WorkloadLists, SourceError> r) {
    kube::Result<IndexedLists, SourceError> indexed =
        r.ok() ? kube::Result<IndexedLists, SourceError>(IndexedLists(std::move(r).value()))
               : kube::fail(std::move(r).error());
    return lists_.insert_or_assign(ns, std::move(indexed)).first->second;
  }
  /// The workloads of `kind` in `ns` listed so far in this pass, or nullptr: a shared
  /// namespace's scalers find their workload there instead of one GET each.
  const kube::Result<WorkloadIndex, SourceError>* find_workloads(const std::string& ns,
                                                                 const std::string& kind) const {
    auto it = workloads_.find(ns + "/" + kind);
    return it == workloads_.end() ? nullptr : &it->second;
  }
  /// Keeps what a list of `kind` in `ns` gave.
  const kube::Result<WorkloadIndex, SourceError>& keep_workloads(
      const std::string& ns, const std::string& kind, kube::Result<WorkloadIndex, SourceError> r) {
    return workloads_.insert_or_assign(ns + "/" + kind, std::move(r)).first->second;
  }

 private:
  std::set<std::string> shared_;
  std::map<std::string, kube::Result<IndexedLists, SourceError>> lists_;
  std::map<std::string, kube::Result<WorkloadIndex, SourceError>> workloads_;  // "ns/kind"
};

/// Settings of a MetricsSource.
struct MetricsSourceOptions {
  /// The PodMetrics resource to list; tests point it at a version nobody serves for a real 404.
  kube::ResourceType pod_metrics = kPodMetrics;
  /// Items per list page (0: one answer).
  std::int64_t page_limit = 500;
};

/// Reads a scaler's inputs (see the file comment). Thread-safe (the client is).
class MetricsSource {
 public:
  /// A source over `client` (the operator's, with get/list on what DESIGN.md's RBAC lists).
  explicit MetricsSource(kube::Client client, MetricsSourceOptions options = {});

  /// One pass's inputs for `target`. A missing or unavailable metrics API is not an error here
  /// (see ScalerInputs::metrics_error); every other failure is, and nothing partial is returned.
  /// With `pass` and a namespace it shares, the namespace's lists are read once per pass.
  kube::Result<ScalerInputs, SourceError> read(const TargetWorkload& target,
                                               PassReads* pass = nullptr) const;

 private:
  /// The four lists, by `selector` ("" for the whole namespace).
  kube::Result<WorkloadLists, SourceError> read_lists(const std::string& ns,
                                                      const std::string& selector,
                                                      bool replica_sets) const;
  /// The target's workload: from the pass's list of its kind in a shared namespace, else one
  /// GET; `requests` counts what it took.
  kube::Result<WorkloadInfo, SourceError> read_workload(const TargetWorkload& target,
                                                        const kube::ResourceType& type,
                                                        PassReads* pass, int& requests) const;
  /// Every workload of `kind` in `ns`, parsed item by item.
  kube::Result<WorkloadIndex, SourceError> list_workloads(const std::string& ns,
                                                          const kube::ResourceType& type,
                                                          const std::string& kind) const;

  kube::Client client_;
  MetricsSourceOptions options_;
};

}  // namespace vscaler::recommender

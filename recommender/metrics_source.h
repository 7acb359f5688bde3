// MetricsSource: the recommender's reads for one scaler's pass, through the kube client. For the
// target workload it GETs the workload (uid, spec.selector, the template's requests), lists the
// pods by that selector, the ReplicaSets by it (Deployments only: the owner chain's middle link,
// metadata only), the namespace's PodMetrics by it and its LimitRanges, and keeps the pods whose
// owner chain leads to the target. Five requests per Deployment scaler (one page each), four for
// a StatefulSet or DaemonSet: the cost grows with the scalers, never with the cluster.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
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
/// v1 limitranges.
inline const kube::ResourceType kLimitRanges{"", "v1", "limitranges", true};

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
  kube::Result<ScalerInputs, SourceError> read(const TargetWorkload& target) const;

 private:
  kube::Client client_;
  MetricsSourceOptions options_;
};

}  // namespace vscaler::recommender

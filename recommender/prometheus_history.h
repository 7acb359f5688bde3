// History from Prometheus (DESIGN.md "History from Prometheus"): the cAdvisor series a cluster's
// Prometheus already holds, read with two range queries per scaler — VPA's CPU query (a rate
// over each resolution step) and the memory working set's max_over_time (the peak of each step;
// VPA reads the bare gauge) — for the pods of the target by name and, where kube-state-metrics'
// kube_pod_owner series exist, by owner, paged under Prometheus' 11,000
// points per series. VPA's flag names where VPA has them (--history-length, --history-resolution,
// --prometheus-cadvisor-job-name, --container-pod-name-label, --container-name-label,
// --container-namespace-label), today's cAdvisor label names as defaults. Every failure is an
// error in words fit for a condition message; nothing here throws or blocks past the timeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "kube/transport.h"
#include "recommender/history_source.h"

namespace vscaler::recommender {

/// The flags of the Prometheus history source.
struct PrometheusOptions {
  /// --prometheus-address ("http://prometheus.monitoring:9090"); "" = no history source.
  std::string address;
  /// --history-length: how far back the history reaches (VPA: 8d).
  Duration history_length{std::chrono::hours(24 * 8)};
  /// --history-resolution: the step of the range queries and of each rate / max_over_time
  /// window (VPA: 1h).
  Duration resolution{std::chrono::hours(1)};
  /// --prometheus-cadvisor-job-name (VPA: kubernetes-cadvisor).
  std::string job = "kubernetes-cadvisor";
  /// --container-pod-name-label, --container-name-label, --container-namespace-label: the
  /// cAdvisor series' label names (VPA's defaults pod_name / name predate Kubernetes 1.16).
  std::string pod_label = "pod";
  std::string container_label = "container";
  std::string namespace_label = "namespace";
  /// --prometheus-timeout: the longest one query may take.
  std::chrono::milliseconds timeout{10'000};
  /// --prometheus-ca-file (PEM, "" = the system store) and --prometheus-bearer-token-file
  /// (re-read when it changes; "" = none).
  std::string ca_file;
  std::string bearer_token_file;
};

/// Prometheus' limit on the points of one series in one range query.
inline constexpr std::size_t kMaxPointsPerSeries = 11'000;

/// The RE2 pattern (anchored by Prometheus) of the pod names a workload's controller gives:
/// "<deployment>-<pod-template-hash>-<5>", "<statefulset>-<ordinal>", "<daemonset>-<5>".
std::string pod_name_pattern(const TargetWorkload& target);

/// The RE2 pattern of the name of the object that owns the target's pods: the StatefulSet or
/// DaemonSet itself, a Deployment's ReplicaSets "<deployment>-<pod-template-hash>".
std::string owner_pattern(const TargetWorkload& target);

/// "unless" clauses that take out of a query's series the pods kube-state-metrics'
/// kube_pod_owner says another controller owns (another owner_kind or owner_name): a Job "web"
/// has pods "web-24567", a StatefulSet "web-abc" pods "web-abc-0", both named like pods of other
/// workloads. Without kube-state-metrics (no kube_pod_owner series) the name alone selects.
std::string not_owned_by_target(const PrometheusOptions& options, const TargetWorkload& target);

/// The CPU query: the rate of container_cpu_usage_seconds_total over each resolution step, per
/// pod and container of `target` (the pause container "POD" and pod-level series left out; pods
/// named like the target's but owned by another controller left out, not_owned_by_target).
std::string cpu_query(const PrometheusOptions& options, const TargetWorkload& target);
/// The memory query: max_over_time of container_memory_working_set_bytes over each step.
std::string memory_query(const PrometheusOptions& options, const TargetWorkload& target);

/// Parses one /api/v1/query_range answer (HTTP `status`, `body`) into series, appended to `out`
/// (a pod and container already there gets the points appended). NaN, infinite and negative
/// values are dropped and counted in `dropped`; a series without the pod or container label is
/// skipped. An error names what is wrong with the answer (an "error" status with Prometheus'
/// own words, not JSON, not a matrix, a malformed point).
kube::Result<kube::Unit, std::string> parse_query_range(int status, std::string_view body,
                                                        const PrometheusOptions& options,
                                                        std::vector<PodSeries>& out,
                                                        std::size_t& dropped);

/// The Prometheus HTTP API as a HistorySource.
class PrometheusHistory final : public HistorySource {
 public:
  /// Checks the address and reads the CA file; the error says which flag is wrong.
  static kube::Result<std::unique_ptr<PrometheusHistory>> create(PrometheusOptions options);

  kube::Result<UsageHistory, HistoryError> load(const TargetWorkload& target,
                                                TimePoint now) override;

 private:
  PrometheusHistory(PrometheusOptions options, std::shared_ptr<kube::Transport> transport)
      : options_(std::move(options)), transport_(std::move(transport)) {}
  /// One range query over [start, end], paged; appends to `out`.
  kube::Result<kube::Unit, HistoryError> range(const std::string& query, TimePoint start,
                                               TimePoint end, std::vector<PodSeries>& out,
                                               UsageHistory& history);

  PrometheusOptions options_;
  std::shared_ptr<kube::Transport> transport_;
};

}  // namespace vscaler::recommender

// Options: vscaler's command-line flags (DESIGN.md "The process"), parsed and checked before
// anything starts, so a typo fails at once with a message naming the flag.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "kube/quantity.h"
#include "recommender/prometheus_history.h"

namespace vscaler::cmd {

/// Every flag with its default.
struct Options {
  std::string kubeconfig;  ///< empty: $KUBECONFIG, else in-cluster
  int webhook_port = 9443;
  std::string cert_dir = "/tmp/k8s-webhook-server/serving-certs";
  std::string metrics_addr = ":8080";
  /// --metrics-secure: /metrics over HTTPS, each caller's token reviewed (TokenReview) and
  /// authorized (SubjectAccessReview, get /metrics), as controller-runtime serves it.
  bool metrics_secure = false;
  std::string health_addr = ":8081";
  /// --dashboard-addr: the dashboard lists every tenant's workloads, so it is served apart, on
  /// loopback by default (kubectl port-forward reaches it); empty turns it off.
  std::string dashboard_addr = "127.0.0.1:8082";
  /// --webhook-client-ca-file: the webhook requires a client certificate signed by this CA.
  std::string webhook_client_ca_file;
  /// --webhook-max-buffered-bytes: request body bytes the webhook's connections may hold
  /// together; beyond it new bodies get 503 before they are read.
  std::size_t webhook_max_buffered_bytes = 64 * 1024 * 1024;
  std::chrono::milliseconds resync_period{60'000};
  int workers = 4;
  std::string namespace_;  ///< empty: all namespaces
  std::string log_level = "info";
  /// Take part in leader election for the Lease "vscaler"; without it the process leads alone.
  bool leader_elect = false;
  /// Where the Lease lives; empty: the pod's namespace (see kube::default_lease_namespace()).
  std::string leader_election_namespace;
  // --- the recommender (DESIGN.md "Recommendations"), one block ---
  /// --recommender-interval: how often usage is sampled; zero turns recommendations off.
  std::chrono::milliseconds recommender_interval{60'000};
  /// --checkpoint-interval: how often the histories are checkpointed.
  std::chrono::milliseconds checkpoint_interval{600'000};
  /// --cpu-histogram-decay-half-life.
  std::chrono::milliseconds cpu_histogram_decay_half_life{24 * 3'600'000};
  /// --memory-histogram-decay-half-life.
  std::chrono::milliseconds memory_histogram_decay_half_life{24 * 3'600'000};
  /// --memory-aggregation-interval.
  std::chrono::milliseconds memory_aggregation_interval{24 * 3'600'000};
  /// --memory-aggregation-interval-count (VPA's name): how many intervals a history spans; an
  /// aggregate without samples for that long is dropped.
  int memory_aggregation_interval_count = 8;
  /// --min-update-interval: least time between two recommendation-driven template patches of
  /// one workload.
  std::chrono::milliseconds min_update_interval{std::chrono::minutes(10)};
  /// --in-recommendation-bounds-eviction-lifetime-threshold (VPA's name): a pod running this long
  /// is resized in place when its requests are over 10 % from the target, even within the bounds.
  std::chrono::milliseconds in_bounds_lifetime_threshold{std::chrono::hours(12)};
  /// --evict-after-oom-threshold (VPA's name): a pod OOM-killed this soon after its start is
  /// resized at once.
  std::chrono::milliseconds evict_after_oom_threshold{std::chrono::minutes(10)};
  /// --round-cpu-millicores: published CPU rounds up to a multiple of this (VPA's flag).
  std::int64_t round_cpu_millicores = 1;
  /// --round-memory-bytes: published memory rounds up to a multiple of this (default 1Mi).
  std::int64_t round_memory_bytes = 1024 * 1024;
  /// VPA's estimator flags, with VPA's names, units and defaults:
  /// --recommendation-margin-fraction (the safety margin added to every bound),
  double recommendation_margin_fraction = 0.15;
  /// --pod-recommendation-min-cpu-millicores and --pod-recommendation-min-memory-mb (MiB, as
  /// VPA multiplies by 1024 * 1024): the least a pod is recommended, shared by its containers,
  double pod_min_cpu_millicores = 25;
  double pod_min_memory_mb = 250;
  /// --oom-bump-up-ratio and --oom-min-bump-up-bytes: an OOM kill counts as a memory peak of
  /// max(used x ratio, used + bytes).
  double oom_bump_up_ratio = 1.2;
  double oom_min_bump_up_bytes = 100.0 * 1024 * 1024;
  /// --container-recommendation-max-allowed-cpu / -memory: the most any container is
  /// recommended unless its scaler's maxAllowed says otherwise; unset: no such cap.
  std::optional<kube::Quantity> max_allowed_cpu;
  std::optional<kube::Quantity> max_allowed_memory;
  /// --prometheus-address and the history flags (DESIGN.md "History from Prometheus"): a scaler
  /// without a checkpoint starts from its target's history there; address "" = off.
  recommender::PrometheusOptions prometheus;
  bool help = false;
  bool version = false;
};

/// Parses `--flag value` and `--flag=value` forms. The error names the flag and the bad value.
kube::Result<Options> parse_options(const std::vector<std::string>& args);

/// Flag durations are Go's ("60s", "500ms", "1m30s", "0"), parsed where every folder parses them.
using base::parse_duration;

/// The --help text.
extern const char* const kUsage;

}  // namespace vscaler::cmd

// Parsing a metrics.k8s.io/v1beta1 PodMetricsList (what GET
// /apis/metrics.k8s.io/v1beta1/namespaces/NS/pods?labelSelector=... returns) into usage
// samples: per pod its timestamp and window, per container usage.cpu in cores rounded up to whole
// millicores and usage.memory (the working set) rounded up to whole bytes, as VPA reads them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "kube/json_projection.h"
#include "recommender/time.h"

namespace vscaler::recommender {

/// One container's usage in one PodMetrics.
struct ContainerUsage {
  std::string name;         ///< containers[].name
  double cpu_cores = 0;     ///< usage.cpu, rounded up to whole millicores
  double memory_bytes = 0;  ///< usage.memory, rounded up to whole bytes
};

/// One PodMetrics item.
struct PodUsage {
  std::string namespace_;                  ///< metadata.namespace
  std::string name;                        ///< metadata.name (PodMetrics carry no pod uid)
  TimePoint timestamp;                     ///< end of the measurement window
  Duration window{0};                      ///< its length
  std::vector<ContainerUsage> containers;  ///< per container usage
};

/// The items that parsed, and one message per item that did not (the item is skipped: one
/// pod's broken metrics must not cost the others their samples).
struct PodMetricsParse {
  std::vector<PodUsage> pods;       ///< the items that parsed
  std::vector<std::string> errors;  ///< e.g. "items[2].containers[0].usage.cpu: invalid ..."
};

/// Parses one PodMetrics of a list; the error names the field after `path` ("items[3]").
/// The parts of a PodMetrics parse_pod_metrics reads.
const kube::JsonProjection& pod_metrics_projection();

kube::Result<PodUsage> parse_pod_metrics(const nlohmann::json& item, const std::string& path);

/// Parses a PodMetricsList. An error only when the document is not a list at all (no `items`
/// array), naming what is wrong.
kube::Result<PodMetricsParse> parse_pod_metrics_list(const nlohmann::json& list);

}  // namespace vscaler::recommender

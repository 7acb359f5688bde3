// A workload's spec.selector (metav1.LabelSelector: matchLabels + matchExpressions) rendered as
// the labelSelector query value the API server takes ("app=web,tier in (a,b),!canary"), for the
// per-scaler pod and PodMetrics lists. Not URL-encoded: the caller encodes query values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/result.h"

namespace vscaler::recommender {

/// The selector string; an error naming the field for an unknown operator, a missing key or
/// values, or an empty selector (it would select every pod of the namespace).
kube::Result<std::string> label_selector_query(const nlohmann::json& selector);

}  // namespace vscaler::recommender

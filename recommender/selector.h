// A workload's spec.selector (metav1.LabelSelector: matchLabels + matchExpressions) rendered as
// the labelSelector query value the API server takes ("app=web,tier in (a,b),!canary"), for the
// per-scaler pod and PodMetrics lists (not URL-encoded: the caller encodes query values), and
// the same selector parsed, to match labels here when a pass read a whole namespace's pods once
// (recommender/pass_reads.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"

namespace vscaler::recommender {

/// An object's metadata.labels.
using Labels = std::map<std::string, std::string, std::less<>>;

/// A parsed metav1.LabelSelector: every requirement must hold.
struct LabelSelector {
  /// One matchLabels entry (kEquals, one value) or one matchExpressions entry.
  struct Requirement {
    enum class Op { kEquals, kIn, kNotIn, kExists, kDoesNotExist };
    std::string key;
    Op op = Op::kEquals;
    std::vector<std::string> values;  ///< sorted (the API server's canonical order)
  };
  std::vector<Requirement> requirements;  ///< matchLabels first, then matchExpressions
};

/// Parses spec.selector; an error naming the field for an unknown operator, a missing key or
/// values, or an empty selector (it would select every pod of the namespace).
kube::Result<LabelSelector> parse_label_selector(const nlohmann::json& selector);

/// The selector as a labelSelector query ("app=web,tier in (a,b),!canary").
std::string to_query(const LabelSelector& selector);

/// Whether `labels` satisfy every requirement (the API server's semantics: NotIn and
/// DoesNotExist hold for an absent key).
bool matches(const LabelSelector& selector, const Labels& labels);

/// parse_label_selector, then to_query.
kube::Result<std::string> label_selector_query(const nlohmann::json& selector);

}  // namespace vscaler::recommender

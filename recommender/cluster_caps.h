// Cluster caps: the most any container may be recommended, whatever its history says. No node can
// give one pod more than its allocatable, so a value above the largest node's is a pod that can
// never be scheduled (a young history's upper bound asks for 1,000 cores); the operator may cap
// further with --container-recommendation-max-allowed-cpu / -memory (VPA's flags). A scaler's own
// maxAllowed wins over both, as VPA's does over its global flags.
#pragma once

#include <nlohmann/json.hpp>

#include "recommender/recommendation.h"
#include "recommender/resources.h"

namespace vscaler::recommender {

/// The largest allocatable cpu and memory seen over a node list, each resource on its own (they
/// may come from different nodes: a cap, not a placement). Fed one node at a time, so a list of
/// 5,000 nodes is never held whole.
class LargestNode {
 public:
  /// Counts one v1 Node; a node without status.allocatable, or with a malformed quantity, adds
  /// nothing for that resource.
  void add(const nlohmann::json& node);
  /// cpu and memory, each present once some node had it.
  const ResourceMap& allocatable() const { return largest_; }

 private:
  ResourceMap largest_;
};

/// Per resource, the smaller of `largest_node` and `global_max` (either may lack a resource; a
/// `global_max` of 0 is none, as VPA ignores a zero cap).
ResourceMap cluster_caps(const ResourceMap& largest_node, const ResourceMap& global_max);

/// `range` with `caps` as its max for each resource the scaler's maxAllowed does not set (or
/// sets to 0, which bounds nothing).
AllowedRange within_cluster_caps(AllowedRange range, const ResourceMap& caps);

}  // namespace vscaler::recommender

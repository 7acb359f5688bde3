// The bounds rule and the rate limit, checked per container and resource in order.
#include "recommender/update_rule.h"

namespace vscaler::recommender {
namespace {

// Why `container`'s `resource` request is out of bounds, or "" when it is within them.
std::string out_of_bounds(const AppliedContainer& container, const std::string& resource) {
  const auto& r = *container.recommendation;
  const auto* lower = find(r.lower_bound, resource);
  const auto* upper = find(r.upper_bound, resource);
  if (!lower || !upper) return {};
  const auto* request =
      effective_request(container.current.requests, container.current.limits, resource);
  const std::string prefix = "container " + container.name + ": " + resource + " request ";
  if (!request) return prefix + "is not set";
  if (*request < *lower) {
    return prefix + request->to_string() + " is below lowerBound " + lower->to_string();
  }
  if (*request > *upper) {
    return prefix + request->to_string() + " is above upperBound " + upper->to_string();
  }
  return {};
}

}  // namespace

UpdateDecision decide_update(std::span<const AppliedContainer> containers,
                             std::optional<TimePoint> last_update, Duration min_update_interval,
                             TimePoint now) {
  std::string reason;
  for (const auto& c : containers) {
    if (!c.recommendation) continue;
    // A container whose resources the target would not change (say, a request held at its
    // limit by RequestsOnly) never makes a patch due: the patch would be a no-op, every interval.
    const ContainerResources next =
        c.next ? *c.next
               : apply_recommendation(c.current, c.recommendation->target, c.policy, c.limit_range);
    if (next == c.current) {
      continue;
    }
    for (const char* resource : {kCpu, kMemory}) {
      if (!c.policy.controls(resource)) continue;
      reason = out_of_bounds(c, resource);
      if (!reason.empty()) break;
    }
    if (!reason.empty()) break;
  }
  if (reason.empty()) return {};
  if (last_update && now < *last_update + min_update_interval) {
    return {UpdateVerdict::kDeferred, *last_update + min_update_interval, std::move(reason)};
  }
  return {UpdateVerdict::kDue, now, std::move(reason)};
}

}  // namespace vscaler::recommender

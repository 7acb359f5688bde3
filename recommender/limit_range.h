// A namespace's LimitRanges (v1 LimitRangeList) reduced to the one item that bounds a container's
// resources: with several LimitRanges every one applies, so the tightest wins — the largest min,
// the smallest max and maxLimitRequestRatio, the smallest `type: Pod` max — and the first default
// limit found (LimitRanger applies the defaults of the first LimitRange that has one). VPA merges
// them the same way.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "base/result.h"
#include "recommender/apply.h"

namespace vscaler::recommender {

/// The merged `type: Container` item of a LimitRangeList with the `type: Pod` max, or nullopt
/// when no item constrains cpu or memory. An error names the item whose quantity is malformed.
kube::Result<std::optional<LimitRangeItem>> container_limit_range(const nlohmann::json& list);

/// `range` (a container's minAllowed/maxAllowed) narrowed by the LimitRange's min and max, so
/// that a published recommendation is a request the LimitRanger admits (VPA caps the same way;
/// uncappedTarget keeps the value before both).
AllowedRange within_limit_range(AllowedRange range, const std::optional<LimitRangeItem>& item);

}  // namespace vscaler::recommender

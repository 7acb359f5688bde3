// Time points of the recommender: millisecond wall-clock instants, parsed from and printed as
// RFC 3339 (the API's metav1.Time and PodMetrics timestamps). Milliseconds keep checkpoints exact
// while an instant costs 8 bytes in the per-container state.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vscaler::recommender {

/// Wall-clock duration at millisecond resolution.
using Duration = std::chrono::milliseconds;
/// Wall-clock instant (UTC) at millisecond resolution; the epoch stands for "never".
using TimePoint = std::chrono::sys_time<Duration>;

/// Milliseconds since the Unix epoch, the form instants are stored in.
inline std::int64_t to_millis(TimePoint t) {
  return t.time_since_epoch().count();
}
/// The instant `millis` milliseconds after the Unix epoch.
inline TimePoint from_millis(std::int64_t millis) {
  return TimePoint(Duration(millis));
}

/// Parses RFC 3339 ("2026-11-29T18:00:00Z", "...T18:00:00.25+01:00"); fractions below a
/// millisecond are truncated. The error quotes the input.
kube::Result<TimePoint> parse_rfc3339(std::string_view text);

/// Prints `t` as RFC 3339 in UTC, with milliseconds only when they are not zero.
std::string format_rfc3339(TimePoint t);

}  // namespace vscaler::recommender

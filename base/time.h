// RFC 3339 timestamps in UTC, the one formatter every folder uses: log lines (milliseconds),
// Kubernetes status fields and condition times (seconds, what metav1.Time serialises), and
// certificate validity in logs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vscaler::base {

/// How many fractional digits a timestamp carries.
enum class TimePrecision { kSeconds, kMilliseconds };

/// `time` as RFC 3339 UTC: "2026-11-29T18:00:00Z", or "2026-11-29T18:00:00.123Z" with
/// kMilliseconds. Times before the epoch round down (never a negative fraction).
std::string rfc3339(std::chrono::system_clock::time_point time,
                    TimePrecision precision = TimePrecision::kSeconds);

/// `seconds` since the Unix epoch as RFC 3339 UTC with second precision (a certificate's
/// notBefore/notAfter as OpenSSL gives them).
std::string rfc3339_seconds(std::int64_t seconds);

/// The current time as RFC 3339 UTC with second precision.
std::string rfc3339_now();

/// A wall-clock instant (UTC) at millisecond resolution.
using TimeMillis = std::chrono::sys_time<std::chrono::milliseconds>;

/// Parses RFC 3339 ("2026-11-29T18:00:00Z", "...T18:00:00.25+01:00"): metav1.Time, PodMetrics
/// timestamps, an ExecCredential's expirationTimestamp. Fractions below a millisecond are
/// truncated. The error quotes the input.
Result<TimeMillis> parse_rfc3339(std::string_view text);

/// Parses a duration as Go and Kubernetes write it ("60s", "1m30s", "1.5s", "250ms", "0"): flag
/// values, PodMetrics windows, the API server's ?timeout= on webhook calls. Units h, m, s, ms,
/// us (or µs) and ns; a bare number other than 0 has no unit and is refused. Fractions below a
/// millisecond are dropped. The error quotes the input.
Result<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace vscaler::base

// base/time: the one RFC 3339 formatter (log lines, status times, certificate validity).
#include "base/time.h"

#include <doctest/doctest.h>

#include <chrono>
#include <regex>

using namespace vscaler;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

TEST_CASE("rfc3339 formats UTC with second precision by default") {
  system_clock::time_point t{seconds(1795975200) + milliseconds(987)};
  CHECK(base::rfc3339(t) == "2026-11-29T18:00:00Z");
  CHECK(base::rfc3339_seconds(1795975200) == "2026-11-29T18:00:00Z");
  CHECK(base::rfc3339_seconds(0) == "1970-01-01T00:00:00Z");
}

TEST_CASE("rfc3339 with milliseconds pads the fraction to three digits") {
  system_clock::time_point t{seconds(1795975200) + milliseconds(7)};
  CHECK(base::rfc3339(t, base::TimePrecision::kMilliseconds) == "2026-11-29T18:00:00.007Z");
}

TEST_CASE("rfc3339 rounds a time before the epoch down, never a negative fraction") {
  system_clock::time_point t{milliseconds(-1)};
  CHECK(base::rfc3339(t, base::TimePrecision::kMilliseconds) == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("rfc3339_now has the shape Kubernetes writes for metav1.Time") {
  CHECK(
      std::regex_match(base::rfc3339_now(), std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)")));
}

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

TEST_CASE("durations as Go and Kubernetes write them: PodMetrics windows, flags, ?timeout=") {
  CHECK(*base::parse_duration("30s") == std::chrono::milliseconds(30'000));
  CHECK(*base::parse_duration("1m0s") == std::chrono::milliseconds(60'000));
  CHECK(*base::parse_duration("15.012s") == std::chrono::milliseconds(15'012));
  CHECK(*base::parse_duration("1h2m3s") == std::chrono::milliseconds(3'723'000));
  CHECK(*base::parse_duration("250ms") == std::chrono::milliseconds(250));
  CHECK(*base::parse_duration("0") == std::chrono::milliseconds(0));
  CHECK(*base::parse_duration("2s") == std::chrono::seconds(2));
  for (const char* bad : {"", "s", "10", "10x", "1..5s", ".s", "5d", "99999999h"}) {
    CAPTURE(bad);
    auto parsed = base::parse_duration(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().find(std::string("\"") + bad + "\"") != std::string::npos);
  }
}

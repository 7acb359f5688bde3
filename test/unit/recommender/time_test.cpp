// RFC 3339 and Go duration parsing for PodMetrics timestamps/windows and checkpoints.
#include "recommender/time.h"

#include <doctest/doctest.h>

using namespace vscaler::recommender;

TEST_CASE("RFC 3339 times parse to milliseconds and print back in UTC") {
  auto t = parse_rfc3339("2026-11-29T18:00:00Z");
  REQUIRE(t.ok());
  CHECK(to_millis(*t) == 1'795'975'200'000);
  CHECK(format_rfc3339(*t) == "2026-11-29T18:00:00Z");
  CHECK(format_rfc3339(*parse_rfc3339("2026-11-29T18:00:00.25Z")) == "2026-11-29T18:00:00.250Z");
  CHECK(*parse_rfc3339("2026-11-29T19:30:00+01:30") == *t);
  CHECK(*parse_rfc3339("2026-11-29T16:00:00.999999999-02:00") ==
        *t + std::chrono::milliseconds(999));
  CHECK(format_rfc3339(from_millis(0)) == "1970-01-01T00:00:00Z");
  CHECK(format_rfc3339(*parse_rfc3339("2024-02-29T23:59:59.001Z")) == "2024-02-29T23:59:59.001Z");
}

TEST_CASE("malformed times are errors quoting the input") {
  for (const char* bad : {"", "2026-11-29", "2026-11-29 18:00:00Z", "2026-13-01T00:00:00Z",
                          "2026-02-30T00:00:00Z", "2026-11-29T18:00:00", "2026-11-29T18:00:00.Z",
                          "2026-11-29T18:00:00Zjunk", "2026-11-29T25:00:00Z"}) {
    CAPTURE(bad);
    auto t = parse_rfc3339(bad);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().find(std::string("\"") + bad + "\"") != std::string::npos);
  }
}

// parse_server_version: /version answers as API servers and providers send them.
#include "kube/server_version.h"

#include <doctest/doctest.h>

using nlohmann::json;
using vscaler::kube::parse_server_version;

TEST_CASE("the major and minor of /version, a provider's suffix ignored") {
  auto plain = parse_server_version(
      json::parse(R"({"major": "1", "minor": "36", "gitVersion": "v1.36.3"})"));
  REQUIRE(plain.has_value());
  CHECK(plain->major == 1);
  CHECK(plain->minor == 36);
  CHECK(plain->at_least(1, 33));
  auto eks = parse_server_version(json::parse(R"({"major": "1", "minor": "32+"})"));
  REQUIRE(eks.has_value());
  CHECK(eks->minor == 32);
  CHECK_FALSE(eks->at_least(1, 33));
  CHECK(parse_server_version(json::parse(R"({"major": "2", "minor": "0"})"))->at_least(1, 33));
}

TEST_CASE("an answer that is not a version gives none") {
  CHECK_FALSE(parse_server_version(json::parse(R"({"major": "1"})")).has_value());
  CHECK_FALSE(parse_server_version(json::parse(R"({"major": "one", "minor": "33"})")).has_value());
  CHECK_FALSE(parse_server_version(json::parse(R"({"major": 1, "minor": 33})")).has_value());
  CHECK_FALSE(parse_server_version(json::parse(R"([])")).has_value());
}

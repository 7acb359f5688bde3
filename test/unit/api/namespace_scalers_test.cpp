// The made scalers of namespaces that ask for recommendations: names (cut with a hash, valid DNS
// subdomains), the object, the label, and a person's scaler winning over a made one.
#include "api/namespace_scalers.h"

#include <doctest/doctest.h>

#include "api/scaler.h"

using namespace vscaler;

TEST_CASE("made scaler names: vsc-<kind>-<name>, cut with a hash past 253 characters") {
  CHECK(api::made_scaler_name("Deployment", "web") == "vsc-deployment-web");
  CHECK(api::made_scaler_name("StatefulSet", "db") == "vsc-statefulset-db");
  const std::string long_a(250, 'a');
  std::string long_b = long_a;
  long_b.back() = 'b';
  const std::string a = api::made_scaler_name("DaemonSet", long_a);
  const std::string b = api::made_scaler_name("DaemonSet", long_b);
  CHECK(a.size() <= 253);
  CHECK(a != b);
  CHECK(a == api::made_scaler_name("DaemonSet", long_a));  // stable
  // A cut that would end in '.' or '-' does not: each DNS label ends with a letter or digit.
  const std::string dotted = std::string(230, 'a') + "." + std::string(40, 'b');
  const std::string cut = api::made_scaler_name("Deployment", dotted);
  CHECK(cut.find(".-") == std::string::npos);
  CHECK(cut.find("--") == std::string::npos);

  const auto object = api::made_scaler("shop", "Deployment", "web");
  CHECK(object["metadata"]["name"] == "vsc-deployment-web");
  CHECK(object["spec"]["updateMode"] == "Off");
  CHECK(object["spec"]["targetRef"]["kind"] == "Deployment");
  CHECK(api::is_made_scaler(object));
  CHECK_FALSE(api::is_made_scaler(nlohmann::json{{"metadata", {{"name", "web"}}}}));
  // Parsed, the scaler knows it was made; a person's scaler of the same workload is active.
  auto parsed = api::parse_scaler(object);
  REQUIRE(parsed.ok());
  CHECK(parsed->made_for_namespace);
  auto person = std::make_shared<api::Scaler>(*parsed);
  person->name = "web";
  person->made_for_namespace = false;
  person->creation_timestamp = "2026-12-03T10:00:00Z";
  auto older_made = std::make_shared<api::Scaler>(*parsed);
  older_made->creation_timestamp = "2020-01-01T00:00:00Z";
  CHECK(api::select_active({older_made, person}) == person.get());

  // The label alone is not enough: a person's copy renamed "web", or a made scaler edited to
  // target another workload, is a person's (vscaler never deletes it, and it wins).
  auto copied = object;
  copied["metadata"]["name"] = "web";
  CHECK_FALSE(api::parse_scaler(copied)->made_for_namespace);
  auto retargeted = object;
  retargeted["spec"]["targetRef"]["name"] = "api";
  CHECK_FALSE(api::parse_scaler(retargeted)->made_for_namespace);
}

// vscaler report: rows from the scalers' status (requests beside the recommendation), the four
// formats with totals, and the errors (an unknown format, a kubeconfig that does not work).
#include "cmd/report.h"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "kube/config.h"
#include "test/unit/support/local_http_server.h"

using nlohmann::json;
using vscaler::cmd::render_report;
using vscaler::cmd::report_rows;
using vscaler::cmd::run_report;

namespace {

std::vector<json> cluster() {
  return {json::parse(R"({"metadata": {"name": "web", "namespace": "shop"},
      "spec": {"deploymentName": "web"},
      "status": {"target": {"ref": "Deployment/web"},
        "containers": [{"name": "app", "requests": {"cpu": "500m", "memory": "512Mi"}},
                       {"name": "proxy", "requests": {"cpu": "100m"}}],
        "recommendation": {"containerRecommendations": [
          {"containerName": "app", "target": {"cpu": "352m", "memory": "489Mi"},
           "lowerBound": {"cpu": "300m", "memory": "400Mi"},
           "upperBound": {"cpu": "1", "memory": "1Gi"}}]}}})"),
          json::parse(R"({"metadata": {"name": "db", "namespace": "data"},
      "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
               "updateMode": "Off"},
      "status": {"containers": [{"name": "pg", "requests": {"cpu": "1", "memory": "1Gi"}}],
        "recommendation": {"containerRecommendations": [
          {"containerName": "pg", "target": {"cpu": "1500m", "memory": "768Mi"}}]}}})")};
}

}  // namespace

TEST_CASE("report rows: one per container, requests beside the recommendation, sorted") {
  auto rows = report_rows(cluster());
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].ns == "data");
  CHECK(rows[0].target == "StatefulSet/db");
  CHECK(rows[0].mode == "Off");
  CHECK(rows[0].cpu_target->to_string() == "1500m");
  CHECK(rows[1].scaler == "web");
  CHECK(rows[1].container == "app");
  CHECK(rows[1].mode == "Auto");
  CHECK(rows[1].memory_upper->to_string() == "1Gi");
  CHECK(rows[2].container == "proxy");
  CHECK_FALSE(rows[2].cpu_target);

  // A second scaler of Deployment web that lost to the first (Ready=False, Conflict) keeps a
  // stale status: it is left out, not counted as the workload's containers a second time.
  auto scalers = cluster();
  json loser = scalers[0];
  loser["metadata"]["name"] = "web-too";
  loser["status"]["conditions"] = json::parse(
      R"([{"type": "Ready", "status": "False", "reason": "Conflict", "message": "web is active"}])");
  scalers.push_back(loser);
  rows = report_rows(scalers);
  CHECK(rows.size() == 3);
  for (const auto& row : rows) CHECK(row.scaler != "web-too");
}

TEST_CASE(
    "report rows: a scaler in Off shows what its template requests, not what it would apply") {
  // In Off the status shows the values vscaler would apply; the template's come from the
  // workload (listed by run_report). Other modes' status is what the template carries.
  vscaler::cmd::TemplateRequests templates = {
      {"data/StatefulSet/db", {{"pg", {{"requests", {{"cpu", "2"}, {"memory", "2Gi"}}}}}}},
      {"shop/Deployment/web", {{"app", {{"requests", {{"cpu", "9"}}}}}}}};
  auto rows = report_rows(cluster(), &templates);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].container == "pg");
  CHECK(rows[0].cpu_request->to_string() == "2");
  CHECK(rows[0].memory_request->to_string() == "2Gi");
  CHECK(rows[1].container == "app");  // Auto: the status's values
  CHECK(rows[1].cpu_request->to_string() == "500m");
  // A template container without requests requests nothing.
  templates["data/StatefulSet/db"]["pg"] = json::object();
  rows = report_rows(cluster(), &templates);
  CHECK_FALSE(rows[0].cpu_request);
  // A container with a limit and no request requests its limit (the API server defaults it so).
  templates["data/StatefulSet/db"]["pg"] =
      json::parse(R"({"limits": {"cpu": "3", "memory": "3Gi"}})");
  rows = report_rows(cluster(), &templates);
  REQUIRE(rows[0].cpu_request);
  CHECK(rows[0].cpu_request->to_string() == "3");
  CHECK(rows[0].memory_request->to_string() == "3Gi");
  // A template not listed (a kind the user may not read): unknown, not the status's values,
  // which are what would be applied and would read as "nothing to save".
  templates.erase("data/StatefulSet/db");
  rows = report_rows(cluster(), &templates);
  CHECK(rows[0].container == "pg");
  CHECK_FALSE(rows[0].cpu_request);
  CHECK_FALSE(rows[0].memory_request);
  CHECK(rows[0].cpu_target);
}

TEST_CASE("report formats: a table with totals, JSON, YAML and CSV of the same rows") {
  auto rows = report_rows(cluster());
  std::string table = *render_report(rows, "table");
  CAPTURE(table);
  // Each line's fields, split on runs of spaces.
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    lines.push_back(fields);
  }
  REQUIRE(lines.size() == 5);
  CHECK(lines[0][0] == "NAMESPACE");
  CHECK(lines[2] == std::vector<std::string>{"shop", "web", "Deployment/web", "Auto", "app", "500m",
                                             "352m", "300m..1", "+148m", "512Mi", "489Mi",
                                             "400Mi..1Gi", "+23Mi"});
  CHECK(lines[1] == std::vector<std::string>{"data", "db", "StatefulSet/db", "Off", "pg", "1",
                                             "1.5", "-", "-500m", "1Gi", "768Mi", "-", "+256Mi"});
  // Totals over the containers with both values: 1.5 requested, 1.85 recommended.
  CHECK(lines[4] == std::vector<std::string>{"TOTAL", "3", "containers", "1.5", "1.85", "-352m",
                                             "1.5Gi", "1.23Gi", "+279Mi"});

  json parsed = json::parse(*render_report(rows, "json"));
  REQUIRE(parsed["containers"].size() == 3);
  CHECK(parsed["containers"][1]["requests"]["cpu"] == "500m");
  CHECK(parsed["containers"][1]["recommendation"]["target"]["memory"] == "489Mi");
  CHECK(parsed["containers"][1]["difference"]["memory"] == "+23Mi");
  CHECK(parsed["containers"][2]["recommendation"]["target"]["cpu"].is_null());
  CHECK(parsed["totals"]["difference"]["cpu"] == "-352m");

  YAML::Node yaml = YAML::Load(*render_report(rows, "yaml"));
  CHECK(yaml["containers"].size() == 3);
  CHECK(yaml["containers"][0]["recommendation"]["target"]["cpu"].as<std::string>() == "1500m");
  CHECK(yaml["totals"]["requests"]["cpu"].as<std::string>() == "1.5");

  std::string csv = *render_report(rows, "csv");
  CHECK(csv.find("namespace,scaler,target,mode,container,cpu_request,cpu_target,") == 0);
  // The difference too (DESIGN "Reports"), last, as JSON gives it.
  CHECK(csv.find("\nshop,web,Deployment/"
                 "web,Auto,app,500m,352m,300m,1,512Mi,489Mi,400Mi,1Gi,+148m,+23Mi\n") !=
        std::string::npos);
  CHECK(csv.find("\nshop,web,Deployment/web,Auto,proxy,100m,,,,,,,,,\n") != std::string::npos);
}

TEST_CASE("report: control characters from the cluster never reach the terminal") {
  // A status any writer of it may fill: an OSC 52 clipboard write, a line erase, a C1 CSI.
  auto objects = cluster();
  objects[0]["status"]["containers"][0]["name"] =
      "a\x1b]52;c;aGk=\x07\x1b[2K\xc2\x9b"
      "31m";
  objects[0]["status"]["recommendation"]["containerRecommendations"][0]["containerName"] =
      objects[0]["status"]["containers"][0]["name"];
  auto rows = report_rows(objects);
  for (const char* format : {"table", "csv"}) {
    CAPTURE(format);
    std::string out = *render_report(rows, format);
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find('\x07') == std::string::npos);
    CHECK(out.find("\xc2\x9b") == std::string::npos);
    CHECK(out.find("a?]52;c;aGk=??[2K??31m") != std::string::npos);
  }
  // JSON and YAML escape them (every non-ASCII character too: C1 and DEL are not JSON controls).
  for (const char* format : {"json", "yaml"}) {
    CAPTURE(format);
    std::string out = *render_report(rows, format);
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find("\xc2\x9b") == std::string::npos);
  }
  // Any byte outside printable ASCII: valid UTF-8 carries 0x80..0x9F inside characters ("\xc4\x9b"
  // is "ě"), which a terminal not in UTF-8 mode reads as C1 controls (0x9B: a CSI).
  objects[0]["status"]["containers"][1]["name"] = "\xc4\x9b[2J";
  rows = report_rows(objects);
  for (const char* format : {"table", "csv"}) {
    CAPTURE(format);
    std::string out = *render_report(rows, format);
    CHECK(out.find('\x9b') == std::string::npos);
    CHECK(out.find("??[2J") != std::string::npos);
  }
}

TEST_CASE("report errors name the problem") {
  CHECK(render_report({}, "xml").error() ==
        "--output: \"xml\" is not one of table, json, yaml, csv");
  CHECK(run_report({"--output", "xml"}) == 2);
  CHECK(run_report({"--bogus"}) == 2);
  CHECK(run_report({"--namespace"}) == 2);
  CHECK(run_report({"--kubeconfig", "/nonexistent/kubeconfig"}) == 1);
  // kubectl's short forms with the value attached are flags too: the kubeconfig is what fails.
  for (const char* flag : {"-ojson", "-nshop", "-n=shop", "-lapp=web", "-o=yaml"}) {
    CAPTURE(flag);
    CHECK(run_report({flag, "--kubeconfig", "/nonexistent/kubeconfig"}) == 1);
  }
  CHECK(run_report({"-oxml"}) == 2);
  CHECK(run_report({"-x"}) == 2);
}

TEST_CASE("report: no scalers is no error (exit 0); a missing CRD is named") {
  // A stand-in API server: namespace "shop" has no scalers; "gone" answers as an API server
  // without the CRD does (404 for the resource).
  vscaler::testing::LocalHttpServer api;
  api.server().Get("/apis/scaling.vscaler.dev/v1beta1/namespaces/shop/verticalscalers",
                   [](const httplib::Request&, httplib::Response& res) {
                     res.set_content(R"({"kind":"VerticalScalerList","metadata":{},"items":[]})",
                                     "application/json");
                   });
  api.server().Get("/apis/scaling.vscaler.dev/v1beta1/namespaces/gone/verticalscalers",
                   [](const httplib::Request&, httplib::Response& res) {
                     res.status = 404;
                     res.set_content(
                         R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404,)"
                         R"("message":"the server could not find the requested resource"})",
                         "application/json");
                   });
  api.start();
  const std::string path = "/tmp/vscaler-report-test-kubeconfig-local";
  {
    std::ofstream out(path);
    out << "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \""
        << api.config().server
        << "\"}}]\nusers: [{name: u, user: {token: t}}]\n"
           "contexts: [{name: here, context: {cluster: c, user: u}}]\ncurrent-context: here\n";
  }
  CHECK(run_report({"--kubeconfig", path, "-n", "shop"}) == 0);
  CHECK(run_report({"--kubeconfig", path, "-n", "shop", "-o", "json"}) == 0);
  CHECK(run_report({"--kubeconfig", path, "-n", "gone"}) == 1);
  std::remove(path.c_str());
  // What an empty report says in each format a program reads.
  auto empty = json::parse(*render_report({}, "json"));
  CHECK(empty["containers"] == json::array());
  CHECK(render_report({}, "csv")->find("namespace") == 0);
}

TEST_CASE("report --context is used with the kubeconfig found by default, not only --kubeconfig") {
  // A kubeconfig in $KUBECONFIG with one context: naming another fails, naming it gets as far as
  // the cluster (nothing listens there).
  const std::string path = "/tmp/vscaler-report-test-kubeconfig";
  {
    std::ofstream out(path);
    out << R"(apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: here, context: {cluster: c, user: u, namespace: shop}}]
current-context: here
)";
  }
  const char* saved = std::getenv("KUBECONFIG");
  std::string previous = saved != nullptr ? saved : "";
  setenv("KUBECONFIG", path.c_str(), 1);
  auto missing = vscaler::kube::load_default("", vscaler::kube::kServiceAccountDir, "elsewhere");
  CHECK_FALSE(missing.ok());
  if (!missing.ok()) CHECK(missing.error().find("elsewhere") != std::string::npos);
  auto found = vscaler::kube::load_default("", vscaler::kube::kServiceAccountDir, "here");
  CHECK(found.ok());
  CHECK(run_report({"--context", "elsewhere"}) == 1);
  if (saved != nullptr) {
    setenv("KUBECONFIG", previous.c_str(), 1);
  } else {
    unsetenv("KUBECONFIG");
  }
  std::remove(path.c_str());
}

// The API client against the real local API server: every operation (get, list with selectors
// and pages, metadata-only list, create, update, delete, the four patch types, the status
// subresource) and every error kind it can provoke, TLS verification, bearer tokens and token
// rotation, and connection reuse.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "kube/watch.h"
#include "kube_support.h"

using namespace kube_test;

namespace {

const ResourceType kWidgets{"kubetest.vscaler.dev", "v1", "widgets", true};
const ResourceType kPodDisruptionBudgets{"policy", "v1", "poddisruptionbudgets", true};
const ResourceType kRoles{"rbac.authorization.k8s.io", "v1", "roles", true};
const ResourceType kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings", true};
const ResourceType kValidatingWebhooks{"admissionregistration.k8s.io", "v1",
                                       "validatingwebhookconfigurations", false};

std::string text(const Result<json, ApiError>& result) {
  return result.ok() ? result->dump().substr(0, 300) : result.error().to_string();
}

std::string rv(const json& object) {
  return object["metadata"]["resourceVersion"];
}

// The test CRD (namespaced, status subresource, free-form spec), created once per process.
void ensure_widget_crd(const Client& client) {
  json crd = {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", "widgets.kubetest.vscaler.dev"}}},
      {"spec",
       {{"group", "kubetest.vscaler.dev"},
        {"scope", "Namespaced"},
        {"names", {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}}},
        {"versions",
         json::array(
             {{{"name", "v1"},
               {"served", true},
               {"storage", true},
               {"subresources", {{"status", json::object()}}},
               {"schema",
                {{"openAPIV3Schema",
                  {{"type", "object"},
                   {"properties",
                    {{"spec", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
                     {"status",
                      {{"type", "object"},
                       {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}})}}}};
  auto created = client.create(resources::kCustomResourceDefinitions, "", crd);
  REQUIRE_MESSAGE((created.ok() || is_already_exists(created.error())), text(created));
  REQUIRE(eventually([&] {
    auto got =
        client.get(resources::kCustomResourceDefinitions, "", "widgets.kubetest.vscaler.dev");
    if (!got) return false;
    for (const auto& condition : (*got)["status"].value("conditions", json::array())) {
      if (condition["type"] == "Established" && condition["status"] == "True") return true;
    }
    return false;
  }));
}

json deployment(const std::string& name) {
  return json::parse(R"({
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": ")" +
                     name + R"("},
    "spec": {
      "replicas": 1,
      "selector": {"matchLabels": {"app": "web"}},
      "template": {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [
          {"name": "app", "image": "nginx:1.27",
           "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                         "limits": {"memory": "128Mi"}}},
          {"name": "sidecar", "image": "busybox:1.36",
           "resources": {"requests": {"cpu": "10m"}}}]}}}})");
}

const json& container(const json& deployment, const std::string& name) {
  for (const auto& c : deployment["spec"]["template"]["spec"]["containers"]) {
    if (c["name"] == name) return c;
  }
  FAIL("no container " << name);
  static json none;
  return none;
}

// The managedFields entry of `manager` with `operation`, or null.
json managed_entry(const json& object, const std::string& manager, const std::string& operation) {
  for (const auto& entry : object["metadata"].value("managedFields", json::array())) {
    if (entry["manager"] == manager && entry["operation"] == operation) return entry;
  }
  return nullptr;
}

std::string base64(const std::string& data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned value = 0;
  int bits = -6;
  for (unsigned char c : data) {
    value = (value << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(kAlphabet[(value >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(kAlphabet[((value << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

}  // namespace

TEST_CASE("get, create, update, delete: values and NotFound, AlreadyExists, Conflict, Invalid") {
  Client client = admin_client();
  TestNamespace ns(client);

  auto missing = client.get(resources::kConfigMaps, ns.name, "nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(is_not_found(missing.error()));
  CHECK(missing.error().code == 404);
  CHECK(missing.error().name == "nope");
  CHECK(missing.error().resource == "configmaps");

  auto created = client.create(resources::kConfigMaps, ns.name, config_map("a", {{"k", "1"}}));
  REQUIRE_MESSAGE(created.ok(), text(created));
  CHECK((*created)["metadata"]["namespace"] == ns.name);
  auto again = client.create(resources::kConfigMaps, ns.name, config_map("a"));
  REQUIRE_FALSE(again.ok());
  CHECK(is_already_exists(again.error()));
  CHECK(again.error().code == 409);

  auto got = client.get(resources::kConfigMaps, ns.name, "a");
  REQUIRE(got.ok());
  CHECK((*got)["data"]["k"] == "1");
  auto meta = client.get_metadata(resources::kConfigMaps, ns.name, "a");
  REQUIRE_MESSAGE(meta.ok(), text(meta));
  CHECK((*meta)["kind"] == "PartialObjectMetadata");
  CHECK((*meta)["metadata"]["uid"] == (*got)["metadata"]["uid"]);
  CHECK_FALSE(meta->contains("data"));
  CHECK(is_not_found(client.get_metadata(resources::kConfigMaps, ns.name, "nope").error()));

  json stale = *got;
  json fresh = *got;
  fresh["data"]["k"] = "2";
  auto updated = client.update(resources::kConfigMaps, fresh);
  REQUIRE_MESSAGE(updated.ok(), text(updated));
  CHECK(rv(*updated) != rv(*got));
  stale["data"]["k"] = "stale";
  auto conflict = client.update(resources::kConfigMaps, stale);
  REQUIRE_FALSE(conflict.ok());
  CHECK(is_conflict(conflict.error()));
  CHECK(conflict.error().message.find("the object has been modified") != std::string::npos);

  auto invalid = client.create(resources::kConfigMaps, ns.name, config_map("Not_Valid"));
  REQUIRE_FALSE(invalid.ok());
  CHECK(is_invalid(invalid.error()));
  CHECK(invalid.error().code == 422);
  REQUIRE_FALSE(invalid.error().causes.empty());
  CHECK(invalid.error().causes[0].field == "metadata.name");

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  auto precondition = client.remove(resources::kConfigMaps, ns.name, "a", wrong_uid);
  REQUIRE_FALSE(precondition.ok());
  CHECK(is_conflict(precondition.error()));

  DeleteOptions dry;
  dry.dry_run = true;
  REQUIRE(client.remove(resources::kConfigMaps, ns.name, "a", dry).ok());
  CHECK(client.get(resources::kConfigMaps, ns.name, "a").ok());

  DeleteOptions exact;
  exact.precondition_uid = (*got)["metadata"]["uid"];
  exact.propagation_policy = "Background";
  auto removed = client.remove(resources::kConfigMaps, ns.name, "a", exact);
  REQUIRE_MESSAGE(removed.ok(), text(removed));
  CHECK(is_not_found(client.get(resources::kConfigMaps, ns.name, "a").error()));
  CHECK(is_not_found(client.remove(resources::kConfigMaps, ns.name, "a").error()));

  // Client-side refusals: no namespace for a namespaced type, no name on update.
  CHECK(client.get(resources::kConfigMaps, "", "a").error().kind == ErrorKind::kBadRequest);
  CHECK(client.update(resources::kConfigMaps, config_map("")).error().kind ==
        ErrorKind::kBadRequest);
}

TEST_CASE("dry-run creates nothing; strict field validation is a BadRequest") {
  Client client = admin_client();
  TestNamespace ns(client);
  WriteOptions dry;
  dry.dry_run = true;
  auto created = client.create(resources::kConfigMaps, ns.name, config_map("dry"), dry);
  REQUIRE_MESSAGE(created.ok(), text(created));
  CHECK(is_not_found(client.get(resources::kConfigMaps, ns.name, "dry").error()));

  WriteOptions strict;
  strict.field_validation = "Strict";
  json unknown = config_map("strict");
  unknown["bogus"] = 1;
  auto refused = client.create(resources::kConfigMaps, ns.name, unknown, strict);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == ErrorKind::kBadRequest);
  CHECK(refused.error().message.find("bogus") != std::string::npos);
}

TEST_CASE(
    "list: label and field selectors, pages of `limit`, max_pages, and the list's "
    "resourceVersion") {
  Client client = admin_client();
  TestNamespace ns(client);
  for (int i = 0; i < 12; ++i) {
    json labels = {{"group", i % 2 ? "odd" : "even"}};
    REQUIRE(client
                .create(resources::kConfigMaps, ns.name,
                        config_map("cm-" + std::to_string(i), json::object(), labels))
                .ok());
  }
  ListOptions all;
  all.limit = 5;
  std::vector<ListPage> pages;
  all.on_page = [&](const ListPage& page) { pages.push_back(page); };
  auto listed = client.list(resources::kConfigMaps, ns.name, all);
  REQUIRE_MESSAGE(listed.ok(), listed.error().to_string());
  // 12 ConfigMaps plus kube-root-ca.crt, if a controller made one (none runs here).
  CHECK(listed->items.size() >= 12);
  CHECK(listed->pages == static_cast<int>((listed->items.size() + 4) / 5));
  REQUIRE(pages.size() == static_cast<size_t>(listed->pages));
  CHECK(pages[0].items == 5);
  CHECK_FALSE(pages[0].continue_token.empty());
  CHECK(pages.back().continue_token.empty());
  CHECK_FALSE(listed->resource_version.empty());

  // max_pages: one page of `limit`, no more (the operator's preflight reads one object).
  ListOptions probe;
  probe.limit = 1;
  probe.max_pages = 1;
  int probe_pages = 0;
  probe.on_page = [&](const ListPage&) { ++probe_pages; };
  auto probed = client.list(resources::kConfigMaps, ns.name, probe);
  REQUIRE_MESSAGE(probed.ok(), probed.error().to_string());
  CHECK(probed->items.size() == 1);
  CHECK(probed->pages == 1);
  CHECK(probe_pages == 1);

  ListOptions odd;
  odd.label_selector = "group=odd";
  auto odd_list = client.list(resources::kConfigMaps, ns.name, odd);
  REQUIRE(odd_list.ok());
  CHECK(odd_list->items.size() == 6);
  ListOptions set_based;
  set_based.label_selector = "group in (odd,even),group!=even";
  CHECK(client.list(resources::kConfigMaps, ns.name, set_based)->items.size() == 6);
  ListOptions by_name;
  by_name.field_selector = "metadata.name=cm-3";
  auto one = client.list(resources::kConfigMaps, ns.name, by_name);
  REQUIRE(one.ok());
  REQUIRE(one->items.size() == 1);
  CHECK(one->items[0]["metadata"]["name"] == "cm-3");

  // A projection: every page's items, each with only the paths kept (managedFields dropped).
  ListOptions slim;
  slim.label_selector = "group=odd";
  slim.limit = 4;
  slim.projection = *vscaler::kube::JsonProjection::parse({"/metadata/name", "/metadata/labels"});
  auto projected = client.list(resources::kConfigMaps, ns.name, slim);
  REQUIRE_MESSAGE(projected.ok(), projected.error().to_string());
  REQUIRE(projected->items.size() == 6);
  CHECK(projected->pages == 2);
  for (const auto& item : projected->items) {
    CHECK(item ==
          json{{"metadata", {{"name", item["metadata"]["name"]}, {"labels", {{"group", "odd"}}}}}});
  }

  ListOptions bad;
  bad.label_selector = "a b c";
  auto refused = client.list(resources::kConfigMaps, ns.name, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().kind == ErrorKind::kBadRequest);

  // All namespaces: the empty namespace lists across the cluster.
  ListOptions across;
  across.label_selector = "group=even";
  auto everywhere = client.list(resources::kConfigMaps, "", across);
  REQUIRE(everywhere.ok());
  CHECK(everywhere->items.size() >= 6);
}

TEST_CASE("JSON patch and merge patch; a failed test operation is Invalid") {
  Client client = admin_client();
  TestNamespace ns(client);
  REQUIRE(client.create(resources::kConfigMaps, ns.name, config_map("p", {{"a", "1"}, {"b", "2"}}))
              .ok());
  auto patched = client.patch(resources::kConfigMaps, ns.name, "p", PatchType::kJson,
                              json::array({{{"op", "test"}, {"path", "/data/a"}, {"value", "1"}},
                                           {{"op", "replace"}, {"path", "/data/a"}, {"value", "3"}},
                                           {{"op", "add"}, {"path", "/data/c"}, {"value", "4"}}}));
  REQUIRE_MESSAGE(patched.ok(), text(patched));
  CHECK((*patched)["data"] == json({{"a", "3"}, {"b", "2"}, {"c", "4"}}));

  auto failed_test =
      client.patch(resources::kConfigMaps, ns.name, "p", PatchType::kJson,
                   json::array({{{"op", "test"}, {"path", "/data/a"}, {"value", "not-it"}}}));
  REQUIRE_FALSE(failed_test.ok());
  CHECK_MESSAGE((failed_test.error().kind == ErrorKind::kInvalid ||
                 failed_test.error().kind == ErrorKind::kBadRequest),
                failed_test.error().to_string());

  auto merged = client.patch(resources::kConfigMaps, ns.name, "p", PatchType::kMerge,
                             {{"data", {{"b", nullptr}, {"d", "5"}}}});
  REQUIRE_MESSAGE(merged.ok(), text(merged));
  CHECK((*merged)["data"] == json({{"a", "3"}, {"c", "4"}, {"d", "5"}}));

  auto not_a_patch =
      client.patch(resources::kConfigMaps, ns.name, "p", PatchType::kJson, {{"not", "a list"}});
  REQUIRE_FALSE(not_a_patch.ok());
  CHECK(not_a_patch.error().kind == ErrorKind::kBadRequest);
  CHECK(is_not_found(client
                         .patch(resources::kConfigMaps, ns.name, "absent", PatchType::kMerge,
                                {{"data", {{"x", "1"}}}})
                         .error()));
}

TEST_CASE(
    "strategic merge patch with fieldManager=vscaler sets only the given keys; a repeat "
    "writes nothing") {
  Client client = admin_client();
  TestNamespace ns(client);
  WriteOptions creator;
  creator.field_manager = "test-creator";
  REQUIRE(client.create(resources::kDeployments, ns.name, deployment("web"), creator).ok());

  json patch = json::parse(R"({"spec":{"template":{"spec":{"containers":[
      {"name":"app","resources":{"requests":{"cpu":"250m"},"limits":{"cpu":"500m"}}}]}}}})");
  WriteOptions vscaler;
  vscaler.field_manager = "vscaler";
  auto first = client.patch(resources::kDeployments, ns.name, "web", PatchType::kStrategicMerge,
                            patch, vscaler);
  REQUIRE_MESSAGE(first.ok(), text(first));
  const json& app = container(*first, "app");
  CHECK(app["resources"]["requests"] == json({{"cpu", "250m"}, {"memory", "64Mi"}}));
  CHECK(app["resources"]["limits"] == json({{"cpu", "500m"}, {"memory", "128Mi"}}));
  CHECK(app["image"] == "nginx:1.27");
  CHECK(container(*first, "sidecar")["resources"] == json({{"requests", {{"cpu", "10m"}}}}));
  json entry = managed_entry(*first, "vscaler", "Update");
  REQUIRE_MESSAGE(!entry.is_null(), (*first)["metadata"]["managedFields"].dump());
  std::string fields = entry["fieldsV1"].dump();
  CHECK(fields.find("k:{\\\"name\\\":\\\"app\\\"}") != std::string::npos);
  CHECK(fields.find("f:cpu") != std::string::npos);
  CHECK(fields.find("f:memory") == std::string::npos);  // memory stays test-creator's
  CHECK(fields.find("sidecar") == std::string::npos);

  auto repeat = client.patch(resources::kDeployments, ns.name, "web", PatchType::kStrategicMerge,
                             patch, vscaler);
  REQUIRE(repeat.ok());
  CHECK(rv(*repeat) == rv(*first));
  CHECK((*repeat)["metadata"]["generation"] == (*first)["metadata"]["generation"]);

  // Strategic merge patch is for built-in types only: a custom resource answers 415.
  ensure_widget_crd(client);
  REQUIRE(client
              .create(kWidgets, ns.name,
                      {{"apiVersion", "kubetest.vscaler.dev/v1"},
                       {"kind", "Widget"},
                       {"metadata", {{"name", "w"}}},
                       {"spec", {{"size", 1}}}})
              .ok());
  auto unsupported =
      client.patch(kWidgets, ns.name, "w", PatchType::kStrategicMerge, {{"spec", {{"size", 2}}}});
  REQUIRE_FALSE(unsupported.ok());
  CHECK(unsupported.error().kind == ErrorKind::kUnsupportedMediaType);
  CHECK(unsupported.error().code == 415);
}

TEST_CASE(
    "server-side apply: owns only what it applies, repeats write nothing, conflicts and "
    "force") {
  Client client = admin_client();
  TestNamespace ns(client);
  WriteOptions creator;
  creator.field_manager = "test-creator";
  REQUIRE(client.create(resources::kDeployments, ns.name, deployment("web"), creator).ok());

  json intent = json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
      "metadata":{"name":"web"},
      "spec":{"template":{"spec":{"containers":[
        {"name":"sidecar","resources":{"limits":{"memory":"32Mi"}}}]}}}})");
  WriteOptions apply;
  apply.field_manager = "vscaler";
  auto first =
      client.patch(resources::kDeployments, ns.name, "web", PatchType::kApply, intent, apply);
  REQUIRE_MESSAGE(first.ok(), text(first));
  CHECK(container(*first, "sidecar")["resources"] ==
        json({{"requests", {{"cpu", "10m"}}}, {"limits", {{"memory", "32Mi"}}}}));
  CHECK(container(*first, "app")["resources"]["requests"]["cpu"] == "100m");
  json entry = managed_entry(*first, "vscaler", "Apply");
  REQUIRE_MESSAGE(!entry.is_null(), (*first)["metadata"]["managedFields"].dump());
  std::string fields = entry["fieldsV1"].dump();
  CHECK(fields.find("sidecar") != std::string::npos);
  CHECK(fields.find("\\\"app\\\"") == std::string::npos);
  CHECK(fields.find("f:requests") == std::string::npos);

  auto repeat =
      client.patch(resources::kDeployments, ns.name, "web", PatchType::kApply, intent, apply);
  REQUIRE(repeat.ok());
  CHECK(rv(*repeat) == rv(*first));

  // Another manager applying a different value for the same field conflicts, naming vscaler.
  json rival = intent;
  rival["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "64Mi";
  WriteOptions other;
  other.field_manager = "helm";
  auto conflict =
      client.patch(resources::kDeployments, ns.name, "web", PatchType::kApply, rival, other);
  REQUIRE_FALSE(conflict.ok());
  CHECK(is_conflict(conflict.error()));
  CHECK(conflict.error().message.find("vscaler") != std::string::npos);
  REQUIRE_FALSE(conflict.error().causes.empty());
  other.force = true;
  auto forced =
      client.patch(resources::kDeployments, ns.name, "web", PatchType::kApply, rival, other);
  REQUIRE_MESSAGE(forced.ok(), text(forced));
  CHECK(container(*forced, "sidecar")["resources"]["limits"]["memory"] == "64Mi");

  WriteOptions nameless;
  CHECK(client.patch(resources::kDeployments, ns.name, "web", PatchType::kApply, intent, nameless)
            .error()
            .kind == ErrorKind::kBadRequest);
}

TEST_CASE("status subresource: get, update and patch touch status only") {
  Client client = admin_client();
  TestNamespace ns(client);
  ensure_widget_crd(client);
  auto created = client.create(kWidgets, ns.name,
                               {{"apiVersion", "kubetest.vscaler.dev/v1"},
                                {"kind", "Widget"},
                                {"metadata", {{"name", "w"}}},
                                {"spec", {{"size", 1}}},
                                {"status", {{"ignored", true}}}});
  REQUIRE_MESSAGE(created.ok(), text(created));
  CHECK_FALSE(created->contains("status"));  // status is dropped on create

  json with_status = *created;
  with_status["status"] = {{"observedGeneration", 1}, {"phase", "Ready"}};
  with_status["spec"]["size"] = 99;  // ignored by the status endpoint
  auto updated = client.update_status(kWidgets, with_status);
  REQUIRE_MESSAGE(updated.ok(), text(updated));
  CHECK((*updated)["status"]["phase"] == "Ready");
  CHECK((*updated)["spec"]["size"] == 1);

  auto stale = client.update_status(kWidgets, with_status);  // old resourceVersion
  REQUIRE_FALSE(stale.ok());
  CHECK(is_conflict(stale.error()));

  auto patched = client.patch_status(kWidgets, ns.name, "w", PatchType::kMerge,
                                     {{"status", {{"phase", "Scaled"}}}});
  REQUIRE_MESSAGE(patched.ok(), text(patched));
  auto got = client.get_status(kWidgets, ns.name, "w");
  REQUIRE(got.ok());
  CHECK((*got)["status"]["phase"] == "Scaled");
  CHECK((*got)["status"]["observedGeneration"] == 1);

  json spec_change = *got;
  spec_change["spec"]["size"] = 2;
  spec_change["status"]["phase"] = "ignored";
  auto main_update = client.update(kWidgets, spec_change);
  REQUIRE(main_update.ok());
  CHECK((*main_update)["status"]["phase"] == "Scaled");  // the main resource ignores status
  CHECK((*main_update)["spec"]["size"] == 2);

  WriteOptions apply;
  apply.field_manager = "vscaler";
  auto applied = client.patch(kWidgets, ns.name, "w", PatchType::kApply,
                              {{"apiVersion", "kubetest.vscaler.dev/v1"},
                               {"kind", "Widget"},
                               {"metadata", {{"name", "w"}}},
                               {"status", {{"conditions", json::array({{{"type", "Ready"}}})}}}},
                              apply, "status");
  REQUIRE_MESSAGE(applied.ok(), text(applied));
  CHECK((*applied)["status"]["conditions"][0]["type"] == "Ready");

  // An answer nobody reads: success is null, a failure still its error.
  auto current = client.get_status(kWidgets, ns.name, "w");
  REQUIRE(current.ok());
  const json version = (*current)["metadata"]["resourceVersion"];
  WriteOptions unread;
  unread.parse_answer = false;
  auto quiet = client.patch_status(
      kWidgets, ns.name, "w", PatchType::kMerge,
      {{"metadata", {{"resourceVersion", version}}}, {"status", {{"phase", "Quiet"}}}}, unread);
  REQUIRE_MESSAGE(quiet.ok(), text(quiet));
  CHECK(quiet->is_null());
  auto stale_unread = client.patch_status(
      kWidgets, ns.name, "w", PatchType::kMerge,
      {{"metadata", {{"resourceVersion", version}}}, {"status", {{"phase", "Stale"}}}}, unread);
  REQUIRE_FALSE(stale_unread.ok());
  CHECK(is_conflict(stale_unread.error()));
  current = client.get_status(kWidgets, ns.name, "w");
  REQUIRE(current.ok());
  CHECK((*current)["status"]["phase"] == "Quiet");
}

TEST_CASE("a metadata-only list of 2,000 objects pages through in pages of 500") {
  Client client = admin_client();
  TestNamespace ns(client, "kube-meta");
  constexpr int kObjects = 2000;
  constexpr int kThreads = 4;
  auto before = client.transport().stats();
  auto start = Clock::now();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kObjects; i += kThreads) {
        json cm = config_map("m-" + std::to_string(i), {{"payload", std::string(200, 'x')}},
                             {{"bulk", "yes"}});
        if (!client.create(resources::kConfigMaps, ns.name, cm).ok()) failures.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  double create_seconds = seconds_since(start);
  REQUIRE(failures.load() == 0);
  auto after = client.transport().stats();
  // The pool opens one connection per concurrent caller, then reuses them.
  CHECK(after.connections_opened - before.connections_opened <= kThreads);

  ListOptions options;
  options.label_selector = "bulk=yes";
  options.limit = 500;
  std::vector<size_t> page_sizes;
  options.on_page = [&](const ListPage& page) { page_sizes.push_back(page.items); };
  start = Clock::now();
  auto metadata = client.list_metadata(resources::kConfigMaps, ns.name, options);
  double metadata_seconds = seconds_since(start);
  REQUIRE_MESSAGE(metadata.ok(), metadata.error().to_string());
  CHECK(metadata->items.size() == kObjects);
  CHECK(metadata->pages == 4);
  CHECK(page_sizes == std::vector<size_t>{500, 500, 500, 500});
  CHECK(metadata->items[0]["kind"] == "PartialObjectMetadata");
  CHECK(metadata->items[0]["apiVersion"] == "meta.k8s.io/v1");
  CHECK_FALSE(metadata->items[0].contains("data"));
  CHECK(metadata->items[0]["metadata"].contains("uid"));

  start = Clock::now();
  auto full = client.list(resources::kConfigMaps, ns.name, options);
  double full_seconds = seconds_since(start);
  REQUIRE(full.ok());
  CHECK(full->items.size() == kObjects);
  CHECK(full->items[0]["data"]["payload"].get<std::string>().size() == 200);
  std::fprintf(
      stderr,
      "measure: created %d ConfigMaps with %d threads in %.2f s (%.0f/s, %llu new "
      "connections); metadata list %.3f s, full list %.3f s (4 pages of 500)\n",
      kObjects, kThreads, create_seconds, kObjects / create_seconds,
      static_cast<unsigned long long>(after.connections_opened - before.connections_opened),
      metadata_seconds, full_seconds);
}

TEST_CASE("connection reuse: sequential requests share one connection; latency") {
  Client client = admin_client();
  HttpRequest version;
  version.target = "/version";
  REQUIRE(client.call(version).ok());
  auto before = client.transport().stats();
  std::vector<double> millis;
  for (int i = 0; i < 300; ++i) {
    auto start = Clock::now();
    REQUIRE(client.get(resources::kNamespaces, "", "default").ok());
    millis.push_back(seconds_since(start) * 1000);
  }
  auto after = client.transport().stats();
  CHECK(after.connections_opened == before.connections_opened);
  std::sort(millis.begin(), millis.end());
  CHECK(millis[150] < 20.0);  // Nagle would make this ~40-90 ms
  std::fprintf(stderr, "measure: GET namespace p50 %.3f ms, p99 %.3f ms over 300, 1 connection\n",
               millis[150], millis[297]);
}

TEST_CASE("TLS: a kubeconfig with the wrong CA fails with a clear verification error") {
  ClientConfig admin = admin_config();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / unique_name("kube-tls");
  fs::create_directories(dir);
  std::string kubeconfig_path = (dir / "kubeconfig").string();
  std::ofstream(kubeconfig_path)
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
      << admin.server << "\n    certificate-authority: " VSCALER_TEST_DATA_DIR
      << "/kube/unrelated-ca.crt\nusers:\n- name: u\n  user:\n    client-certificate-data: "
      << base64(admin.client_cert_pem) << "\n    client-key-data: " << base64(admin.client_key_pem)
      << "\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";
  auto wrong = load_kubeconfig(kubeconfig_path);
  fs::remove_all(dir);
  REQUIRE_MESSAGE(wrong.ok(), (wrong.ok() ? "" : wrong.error()));
  auto refused = make_client(*wrong).get(resources::kNamespaces, "", "default");
  REQUIRE_FALSE(refused.ok());
  CHECK(is_tls(refused.error()));
  CHECK(refused.error().code == 0);
  CHECK_MESSAGE(refused.error().message.find("certificate verify failed") != std::string::npos,
                refused.error().message);
  CHECK_MESSAGE(
      refused.error().message.find("unable to get local issuer certificate") != std::string::npos,
      refused.error().message);
  std::fprintf(stderr, "measure: wrong CA -> %s\n", refused.error().to_string().c_str());

  // The server certificate has IP SAN 127.0.0.1 and DNS SAN localhost; other names fail.
  ClientConfig named = admin;
  named.tls_server_name = "localhost";
  CHECK(make_client(named).get(resources::kNamespaces, "", "default").ok());
  named.tls_server_name = "wrong.example";
  auto mismatch = make_client(named).get(resources::kNamespaces, "", "default");
  REQUIRE_FALSE(mismatch.ok());
  CHECK(is_tls(mismatch.error()));
  CHECK_MESSAGE(mismatch.error().message.find("wrong.example") != std::string::npos,
                mismatch.error().message);

  ClientConfig insecure = admin;
  insecure.ca_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  CHECK(make_client(insecure).get(resources::kNamespaces, "", "default").ok());
  // No CA configured means the system trust store, which does not know the test CA.
  ClientConfig system = admin;
  system.ca_pem.clear();
  CHECK(is_tls(make_client(system).get(resources::kNamespaces, "", "default").error()));
}

TEST_CASE(
    "tokens: a bad token is Unauthorized, no RBAC is Forbidden, a rewritten token file is "
    "picked up without restart") {
  Client admin = admin_client();
  TestNamespace ns(admin);
  REQUIRE(admin
              .create(resources::kServiceAccounts, ns.name,
                      {{"apiVersion", "v1"},
                       {"kind", "ServiceAccount"},
                       {"metadata", {{"name", "reader"}}}})
              .ok());
  REQUIRE(admin.create(resources::kConfigMaps, ns.name, config_map("visible")).ok());
  std::string token = kubectl("create token reader -n " + ns.name + " --duration=10m");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  REQUIRE_FALSE(token.empty());

  ClientConfig base = admin_config();
  base.client_cert_pem.clear();
  base.client_key_pem.clear();

  ClientConfig bad = base;
  bad.token = "not-a-valid-token";
  auto unauthorized = make_client(bad).get(resources::kConfigMaps, ns.name, "visible");
  REQUIRE_FALSE(unauthorized.ok());
  CHECK(is_unauthorized(unauthorized.error()));
  CHECK(unauthorized.error().code == 401);

  ClientConfig good = base;
  good.token = token;
  Client reader = make_client(good);
  auto forbidden = reader.get(resources::kConfigMaps, ns.name, "visible");
  REQUIRE_FALSE(forbidden.ok());
  CHECK(is_forbidden(forbidden.error()));
  CHECK(forbidden.error().message.find("system:serviceaccount:" + ns.name + ":reader") !=
        std::string::npos);

  REQUIRE(admin
              .create(kRoles, ns.name,
                      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                       {"kind", "Role"},
                       {"metadata", {{"name", "read-configmaps"}}},
                       {"rules", json::array({{{"apiGroups", json::array({""})},
                                               {"resources", json::array({"configmaps"})},
                                               {"verbs", json::array({"get", "list"})}}})}})
              .ok());
  REQUIRE(admin
              .create(kRoleBindings, ns.name,
                      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                       {"kind", "RoleBinding"},
                       {"metadata", {{"name", "reader"}}},
                       {"roleRef",
                        {{"apiGroup", "rbac.authorization.k8s.io"},
                         {"kind", "Role"},
                         {"name", "read-configmaps"}}},
                       {"subjects", json::array({{{"kind", "ServiceAccount"},
                                                  {"name", "reader"},
                                                  {"namespace", ns.name}}})}})
              .ok());
  CHECK(eventually([&] { return reader.get(resources::kConfigMaps, ns.name, "visible").ok(); }));
  auto still_forbidden = reader.get(resources::kSecrets, ns.name, "any");
  REQUIRE_FALSE(still_forbidden.ok());
  CHECK(is_forbidden(still_forbidden.error()));

  // The same client, its token file rewritten in place: bad, then good, then bad again.
  namespace fs = std::filesystem;
  fs::path file = fs::temp_directory_path() / unique_name("kube-token");
  std::ofstream(file) << "bad-token\n";
  ClientConfig rotating = base;
  rotating.token_file = file.string();
  Client rotated = make_client(rotating);
  CHECK(is_unauthorized(rotated.get(resources::kConfigMaps, ns.name, "visible").error()));
  std::ofstream(file, std::ios::trunc) << token << "\n";
  auto now_good = rotated.get(resources::kConfigMaps, ns.name, "visible");
  CHECK_MESSAGE(now_good.ok(), text(now_good));
  // Atomic replacement (how the kubelet rotates projected tokens: rename over the old file).
  fs::path next = file.string() + ".next";
  std::ofstream(next) << "revoked-token";
  fs::rename(next, file);
  CHECK(is_unauthorized(rotated.get(resources::kConfigMaps, ns.name, "visible").error()));
  CHECK(rotated.transport().stats().token_reloads >= 3);
  fs::remove(file);
}

TEST_CASE("transport failures: connection refused, client-side timeout") {
  ClientConfig config = admin_config();
  ClientConfig closed = config;
  closed.server = "https://127.0.0.1:1";
  auto refused = make_client(closed).get(resources::kNamespaces, "", "default");
  REQUIRE_FALSE(refused.ok());
  CHECK(is_transport(refused.error()));
  CHECK(is_retryable(refused.error()));
  CHECK(refused.error().message.find("127.0.0.1:1") != std::string::npos);

  // A watch request sent as an ordinary request stays open: the read timeout ends it.
  ClientConfig impatient = config;
  impatient.request_timeout = std::chrono::milliseconds(1000);
  HttpRequest request;
  request.target = resources::kConfigMaps.path("default") + "?watch=true&timeoutSeconds=10";
  auto start = Clock::now();
  auto timed_out = make_client(impatient).call(request);
  double waited = seconds_since(start);
  REQUIRE_FALSE(timed_out.ok());
  CHECK_MESSAGE(is_timeout(timed_out.error()), timed_out.error().to_string());
  CHECK(waited >= 0.9);
  CHECK(waited < 5.0);
}

TEST_CASE("error kinds the server sends: MethodNotAllowed, NotAcceptable, RequestEntityTooLarge") {
  Client client = admin_client();
  TestNamespace ns(client);
  HttpRequest put_collection;
  put_collection.method = "PUT";
  put_collection.target = resources::kConfigMaps.path(ns.name);
  put_collection.body = config_map("x").dump();
  auto not_allowed = client.call(put_collection);
  REQUIRE_FALSE(not_allowed.ok());
  CHECK(not_allowed.error().kind == ErrorKind::kMethodNotAllowed);

  ensure_widget_crd(client);
  HttpRequest protobuf;
  protobuf.target = kWidgets.path(ns.name);
  protobuf.accept = "application/vnd.kubernetes.protobuf";
  auto not_acceptable = client.call(protobuf);
  REQUIRE_FALSE(not_acceptable.ok());
  CHECK_MESSAGE(not_acceptable.error().kind == ErrorKind::kNotAcceptable,
                not_acceptable.error().to_string());

  json huge = config_map("huge", {{"blob", std::string(4 * 1024 * 1024, 'x')}});
  auto too_large = client.create(resources::kConfigMaps, ns.name, huge);
  REQUIRE_FALSE(too_large.ok());
  CHECK_MESSAGE(too_large.error().kind == ErrorKind::kRequestEntityTooLarge,
                too_large.error().to_string());
}

TEST_CASE("TooManyRequests: an eviction blocked by a PodDisruptionBudget") {
  Client client = admin_client();
  TestNamespace ns(client);
  // Pods need the namespace's default ServiceAccount, which no controller creates here.
  REQUIRE(client
              .create(resources::kServiceAccounts, ns.name,
                      {{"apiVersion", "v1"},
                       {"kind", "ServiceAccount"},
                       {"metadata", {{"name", "default"}}}})
              .ok());
  auto pod =
      client.create(resources::kPods, ns.name,
                    {{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata", {{"name", "p"}, {"labels", {{"app", "guarded"}}}}},
                     {"spec",
                      {{"automountServiceAccountToken", false},
                       {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}});
  REQUIRE_MESSAGE(pod.ok(), text(pod));
  // Pending pods may always be evicted; a running one is protected by the budget.
  auto running = client.patch_status(resources::kPods, ns.name, "p", PatchType::kMerge,
                                     {{"status", {{"phase", "Running"}}}});
  REQUIRE_MESSAGE(running.ok(), text(running));
  REQUIRE(
      client
          .create(kPodDisruptionBudgets, ns.name,
                  {{"apiVersion", "policy/v1"},
                   {"kind", "PodDisruptionBudget"},
                   {"metadata", {{"name", "guard"}}},
                   {"spec",
                    {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "guarded"}}}}}}}})
          .ok());
  HttpRequest eviction;
  eviction.method = "POST";
  eviction.target = resources::kPods.path(ns.name, "p", "eviction");
  eviction.body = json{{"apiVersion", "policy/v1"},
                       {"kind", "Eviction"},
                       {"metadata", {{"name", "p"}, {"namespace", ns.name}}}}
                      .dump();
  auto throttled = client.call(eviction);
  REQUIRE_FALSE(throttled.ok());
  CHECK_MESSAGE(is_too_many_requests(throttled.error()), throttled.error().to_string());
  CHECK(throttled.error().code == 429);
  CHECK(is_retryable(throttled.error()));
  (void)client.remove(resources::kPods, ns.name, "p",
                      DeleteOptions{.propagation_policy = "",
                                    .grace_period_seconds = 0,
                                    .precondition_uid = "",
                                    .precondition_resource_version = "",
                                    .dry_run = false});
}

TEST_CASE("ServerError: a write refused because a failing admission webhook cannot be called") {
  Client client = admin_client();
  TestNamespace ns(client);
  std::string name = unique_name("kube-it-failing");
  json webhook = {
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "ValidatingWebhookConfiguration"},
      {"metadata", {{"name", name}}},
      {"webhooks",
       json::array(
           {{{"name", "fail.kubetest.vscaler.dev"},
             {"clientConfig", {{"url", "https://127.0.0.1:1/never"}}},
             {"rules", json::array({{{"apiGroups", json::array({""})},
                                     {"apiVersions", json::array({"v1"})},
                                     {"operations", json::array({"CREATE"})},
                                     {"resources", json::array({"configmaps"})}}})},
             {"namespaceSelector", {{"matchLabels", {{"kubernetes.io/metadata.name", ns.name}}}}},
             {"failurePolicy", "Fail"},
             {"sideEffects", "None"},
             {"timeoutSeconds", 2},
             {"admissionReviewVersions", json::array({"v1"})}}})}};
  REQUIRE(client.create(kValidatingWebhooks, "", webhook).ok());
  // The API server picks webhook configurations up asynchronously.
  ApiError last;
  int attempt = 0;
  bool refused = eventually([&] {
    auto created =
        client.create(resources::kConfigMaps, ns.name, config_map("w" + std::to_string(attempt++)));
    if (created.ok()) return false;
    last = created.error();
    return true;
  });
  (void)client.remove(kValidatingWebhooks, "", name);
  REQUIRE(refused);
  CHECK_MESSAGE(is_server_error(last), last.to_string());
  CHECK(last.code == 500);
  CHECK(last.message.find("failed calling webhook") != std::string::npos);
  CHECK(is_retryable(last));
}

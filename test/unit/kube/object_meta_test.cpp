// kube/object_meta: the one accessor for fields of objects from the network; any shape yields the
// empty value, never an exception.
#include "kube/object_meta.h"

#include <doctest/doctest.h>

using nlohmann::json;
using namespace vscaler::kube;

TEST_CASE("metadata fields of a well-formed object") {
  json object = {
      {"metadata", {{"name", "web"}, {"namespace", "shop"}, {"uid", "u1"}, {"generation", 7}}}};
  CHECK(meta_string(object, "uid") == "u1");
  CHECK(meta_generation(object) == 7);
  CHECK(object_key(object) == "shop/web");
  CHECK(string_at(object, {"metadata", "name"}) == "web");
  CHECK(find_path(object, {"metadata", "generation"})->get<int>() == 7);
}

TEST_CASE("a cluster-scoped object is keyed by its name alone") {
  CHECK(object_key(json{{"metadata", {{"name", "n"}}}}) == "n");
}

TEST_CASE("fields of the wrong type, or paths through non-objects, read as empty") {
  for (const json& object :
       {json(nullptr), json(3), json::array(), json{{"metadata", "x"}},
        json{{"metadata", {{"name", 5}, {"namespace", true}, {"generation", "7"}}}},
        json{{"metadata", {{"name", {{"a", 1}}}, {"generation", 1.5}}}}}) {
    CAPTURE(object.dump());
    CHECK(meta_string(object, "name").empty());
    CHECK(meta_generation(object) == 0);
    CHECK(object_key(object).empty());
    CHECK(string_at(object, {"metadata", "name", "deeper"}).empty());
  }
}

TEST_CASE("annotations are added in one operation to an object without any, else key by key") {
  json object = {{"metadata", {{"name", "web"}}}};
  CHECK_FALSE(has_annotation(object, "a/b"));
  CHECK(add_annotations_patch(object, {}).empty());
  json patch = add_annotations_patch(object, {{"a/b", "1"}, {"c", "2"}});
  REQUIRE(patch.size() == 1);
  CHECK(patch[0] == json{{"op", "add"},
                         {"path", "/metadata/annotations"},
                         {"value", {{"a/b", "1"}, {"c", "2"}}}});
  object = object.patch(patch);
  CHECK(has_annotation(object, "a/b"));
  // With annotations present: one "add" per key, "/" and "~" escaped, others kept.
  patch = add_annotations_patch(object, {{"x~y/z", "3"}, {"c", "4"}});
  REQUIRE(patch.size() == 2);
  CHECK(patch[0]["path"] == "/metadata/annotations/x~0y~1z");
  object = object.patch(patch);
  CHECK(object["metadata"]["annotations"] == json{{"a/b", "1"}, {"c", "4"}, {"x~y/z", "3"}});
  // annotations: null counts as none.
  object["metadata"]["annotations"] = nullptr;
  CHECK_FALSE(has_annotation(object, "c"));
  CHECK(add_annotations_patch(object, {{"c", "5"}})[0]["path"] == "/metadata/annotations");
}

TEST_CASE("managedFields: who wrote through a subresource, kept small, any shape tolerated") {
  json pod = {
      {"metadata",
       {{"name", "web-1"},
        {"managedFields", json::array({{{"manager", "kube-controller-manager"},
                                        {"operation", "Update"},
                                        {"fieldsV1", {{"f:spec", json::object()}}}},
                                       {{"manager", "vscaler"},
                                        {"operation", "Update"},
                                        {"subresource", "resize"},
                                        {"fieldsV1", {{"f:spec", json::object()}}}},
                                       {{"manager", "kubelet"}, {"subresource", "status"}}})}}}};
  CHECK(written_through(pod, "resize"));
  CHECK(written_through(pod, "status"));
  CHECK_FALSE(written_through(pod, "eviction"));
  keep_managers_of(pod, "resize");
  CHECK(pod["metadata"]["managedFields"] ==
        json::array({{{"manager", "vscaler"}, {"subresource", "resize"}}}));
  CHECK(written_through(pod, "resize"));
  CHECK_FALSE(written_through(pod, "status"));
  // None through it: the member goes.
  keep_managers_of(pod, "status");
  CHECK_FALSE(pod["metadata"].contains("managedFields"));
  CHECK_FALSE(written_through(pod, "resize"));
  // Shapes from the network: never throws, never true.
  for (json odd : {json{{"metadata", {{"managedFields", "x"}}}},
                   json{{"metadata", {{"managedFields", json::array({1, nullptr, "resize"})}}}},
                   json{{"metadata", {{"managedFields", json::array({{{"subresource", 7}}})}}}},
                   json{{"metadata", 3}}, json::array()}) {
    CHECK_FALSE(written_through(odd, "resize"));
    CHECK_NOTHROW(keep_managers_of(odd, "resize"));
    CHECK_FALSE(written_through(odd, "resize"));
  }
  // A manager that is not a string is kept as "".
  json unnamed = {
      {"metadata",
       {{"managedFields", json::array({{{"manager", 1}, {"subresource", "resize"}}})}}}};
  keep_managers_of(unnamed, "resize");
  CHECK(unnamed["metadata"]["managedFields"][0]["manager"] == "");
}

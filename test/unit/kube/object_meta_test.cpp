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

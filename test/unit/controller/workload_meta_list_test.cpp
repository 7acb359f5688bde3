// parse_metadata_page: a PartialObjectMetadataList page straight into WorkloadMeta.
#include "controller/workload_meta_list.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using vscaler::controller::parse_metadata_page;
using vscaler::controller::WorkloadMeta;

TEST_CASE("metadata page: names, uids and generations; the continue token and version") {
  std::string body = R"({"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",
    "metadata":{"resourceVersion":"42","continue":"tok\"en"},
    "items":[
      {"kind":"PartialObjectMetadata","metadata":{"name":"a","namespace":"ns","uid":"u-a",
        "generation":3,"labels":{"x":"y"},
        "managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:name":{}}}}]}},
      {"metadata":{"generation":7,"uid":"u-b","name":"b\u00e9"}}
    ]})";
  std::vector<WorkloadMeta> out;
  auto page = parse_metadata_page(body, out);
  REQUIRE(page.ok());
  CHECK(page->continue_token == "tok\"en");
  CHECK(page->resource_version == "42");
  CHECK(page->malformed == 0);
  REQUIRE(out.size() == 2);
  CHECK(out[0].name == "a");
  CHECK(out[0].uid == "u-a");
  CHECK(out[0].generation == 3);
  CHECK(out[1].name == "b\xc3\xa9");
  CHECK(out[1].generation == 7);
}

TEST_CASE("metadata page: malformed items are counted and skipped, the rest is kept") {
  std::string body = R"({"metadata":{},"items":[
      {"metadata":{"name":"ok","uid":"u","generation":1}},
      {"metadata":{"name":5}},
      {"metadata":"not an object"},
      "not an object",
      {"metadata":{"uid":"no name"}},
      {"metadata":{"name":"also-ok","generation":"two"}}
    ]})";
  std::vector<WorkloadMeta> out;
  auto page = parse_metadata_page(body, out);
  REQUIRE(page.ok());
  CHECK(page->malformed == 4);
  REQUIRE(out.size() == 2);
  CHECK(out[0].name == "ok");
  CHECK(out[1].name == "also-ok");
  CHECK(out[1].generation == 0);
  CHECK(page->continue_token.empty());
}

TEST_CASE("metadata page: an answer that is no list is an error, never a crash") {
  for (const char* body : {"", "{", "[]", "{\"items\":{}}", "{\"metadata\":{}}", "nul",
                           "{\"items\":[{\"metadata\":{\"name\":\"a\"}}", "{\"items\":[1,]}"}) {
    CAPTURE(body);
    std::vector<WorkloadMeta> out;
    CHECK_FALSE(parse_metadata_page(body, out).ok());
  }
  std::vector<WorkloadMeta> out;
  auto empty = parse_metadata_page(R"({"items":null})", out);
  REQUIRE(empty.ok());
  CHECK(out.empty());
}

// AdmissionReview codec: good reviews (a recorded-shape 22 KB Deployment UPDATE), every malformed
// case with its message, the nesting-depth limit, projections, and the response encoding (uid,
// status, warnings, base64 JSONPatch).
#include "webhook/admission.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "kube/object_meta.h"

using vscaler::webhook::AdmissionResponse;
using vscaler::webhook::base64_encode;
using vscaler::webhook::encode_review;
using vscaler::webhook::json_pointer_escape;
using vscaler::webhook::Operation;
using vscaler::webhook::parse_review;
using vscaler::webhook::ParseOptions;
using vscaler::webhook::Projection;
using vscaler::webhook::validate_json_patch;
using json = nlohmann::json;

namespace {

std::string read_data(const std::string& name) {
  std::ifstream file(std::string(VSCALER_TEST_DATA_DIR) + "/webhook/" + name);
  REQUIRE_MESSAGE(file.good(), name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

json minimal_review() {
  return json::parse(R"({
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {
      "uid": "u-1", "operation": "CREATE",
      "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
      "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
      "namespace": "shop",
      "object": {"metadata": {"generateName": "web-", "namespace": "shop"}}
    }})");
}

// The error message parse_review gives for `body` (fails the test if it parses).
std::string error_of(std::string_view body, const ParseOptions& options = {}) {
  auto parsed = parse_review(body, options);
  REQUIRE_FALSE(parsed.ok());
  return parsed.error();
}

// The patch as the API server reads it.
std::string base64_decode(std::string_view text) {
  auto decoded = vscaler::webhook::base64_decode(text);
  REQUIRE_MESSAGE(decoded.ok(), (decoded.ok() ? "" : decoded.error()));
  return *decoded;
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

}  // namespace

TEST_CASE("codec: a 22 KB Deployment UPDATE review parses into the request fields") {
  auto body = read_data("deployment-update-review.json");
  auto parsed = parse_review(body);
  REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error()));
  const auto& request = *parsed;
  CHECK(request.uid == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(request.kind.group == "apps");
  CHECK(request.kind.version == "v1");
  CHECK(request.kind.kind == "Deployment");
  CHECK(request.resource.resource == "deployments");
  CHECK(request.sub_resource.empty());
  CHECK(request.name == "web");
  CHECK(request.namespace_name == "shop");
  CHECK(request.operation == Operation::kUpdate);
  CHECK_FALSE(request.dry_run);
  // The whole objects, equal to what nlohmann_json makes of the same text.
  auto reference = json::parse(body);
  CHECK(request.object == reference["request"]["object"]);
  CHECK(request.old_object == reference["request"]["oldObject"]);
  CHECK(request.object["metadata"]["generation"] == 7);
}

TEST_CASE("codec: CREATE without oldObject, DELETE with null object, dryRun, subResource") {
  auto review = minimal_review();
  auto parsed = parse_review(review.dump());
  REQUIRE(parsed.ok());
  CHECK(parsed->operation == Operation::kCreate);
  CHECK(parsed->name.empty());
  CHECK(parsed->old_object.is_null());
  CHECK(parsed->object["metadata"]["generateName"] == "web-");

  review["request"]["operation"] = "DELETE";
  review["request"]["name"] = "";
  review["request"]["object"] = nullptr;
  review["request"]["oldObject"] = {{"metadata", {{"name", "web"}, {"uid", "x"}}}};
  review["request"]["dryRun"] = true;
  review["request"]["subResource"] = "status";
  parsed = parse_review(review.dump());
  REQUIRE(parsed.ok());
  CHECK(parsed->operation == Operation::kDelete);
  CHECK(parsed->object.is_null());
  CHECK(parsed->old_object["metadata"]["name"] == "web");
  CHECK(parsed->dry_run);
  CHECK(parsed->sub_resource == "status");

  for (auto [text, operation] :
       {std::pair{"UPDATE", Operation::kUpdate}, std::pair{"CONNECT", Operation::kConnect}}) {
    review["request"]["operation"] = text;
    parsed = parse_review(review.dump());
    REQUIRE(parsed.ok());
    CHECK(parsed->operation == operation);
    CHECK(vscaler::webhook::to_string(operation) == text);
  }
}

TEST_CASE("codec: unknown fields are ignored and null optional fields count as absent") {
  auto review = minimal_review();
  review["response"] = {{"uid", "ignored"}};
  review["request"]["userInfo"] = {{"username", "alice"}};
  review["request"]["options"] = nullptr;
  review["request"]["name"] = nullptr;
  review["request"]["dryRun"] = nullptr;
  auto parsed = parse_review(review.dump());
  REQUIRE(parsed.ok());
  CHECK(parsed->name.empty());
  CHECK_FALSE(parsed->dry_run);
}

TEST_CASE("codec: malformed JSON is refused with a message") {
  CHECK(error_of("") == "the request body is empty");
  CHECK(error_of("   ").find("empty") != std::string::npos);
  CHECK(error_of("{").starts_with("malformed JSON: "));
  CHECK(error_of("{\"apiVersion\":}").starts_with("malformed JSON: "));
  CHECK(error_of("[1,2").starts_with("malformed JSON: "));
  CHECK(error_of("nul").starts_with("malformed JSON: "));
  CHECK(error_of("{} trailing").starts_with("malformed JSON: "));
  CHECK(error_of("{\"a\":\"\xff\xfe\"}").starts_with("malformed JSON: "));
  CHECK(error_of("{\"a\":01}").starts_with("malformed JSON: "));
  // Malformed JSON deep inside an object that nothing reads is still refused: the whole document
  // is validated, not just the fields the codec looks at.
  auto body = minimal_review().dump();
  body.replace(body.find("\"web-\""), 6, "\"web-\" 1");
  CHECK(error_of(body).starts_with("malformed JSON: "));
}

TEST_CASE("codec: the message says what is wrong with a well-formed non-review") {
  CHECK(error_of("[]") == "an AdmissionReview must be a JSON object, not an array");
  CHECK(error_of("\"x\"") == "an AdmissionReview must be a JSON object, not a string");
  CHECK(error_of("{}") == "apiVersion is missing; expected admission.k8s.io/v1");

  auto review = minimal_review();
  review["apiVersion"] = "admission.k8s.io/v1beta1";
  CHECK(error_of(review.dump()) ==
        "apiVersion \"admission.k8s.io/v1beta1\" is not supported; expected admission.k8s.io/v1");
  review["apiVersion"] = 1;
  CHECK(error_of(review.dump()) == "apiVersion must be a string, not a number");
  review["apiVersion"] = "";
  CHECK(error_of(review.dump()).find("is not supported") != std::string::npos);
  // Control characters and quotes from the body never reach the message (it may be logged).
  review["apiVersion"] = "v1\n\"evil\"" + std::string(100, 'a');
  auto message = error_of(review.dump());
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.find("...") != std::string::npos);

  review = minimal_review();
  review["kind"] = "Pod";
  CHECK(error_of(review.dump()) == "kind \"Pod\" is not AdmissionReview");
  review.erase("kind");
  CHECK(error_of(review.dump()) == "kind is missing; expected AdmissionReview");

  review = minimal_review();
  review.erase("request");
  CHECK(error_of(review.dump()) == "the AdmissionReview has no request");
  review["request"] = nullptr;
  CHECK(error_of(review.dump()) == "the AdmissionReview has no request");
  review["request"] = 5;
  CHECK(error_of(review.dump()) == "request must be an object, not a number");
}

TEST_CASE("codec: uid and operation are required; field types are checked") {
  auto review = minimal_review();
  review["request"].erase("uid");
  CHECK(error_of(review.dump()) == "request.uid is missing or empty");
  review["request"]["uid"] = "";
  CHECK(error_of(review.dump()) == "request.uid is missing or empty");
  review["request"]["uid"] = 42;
  CHECK(error_of(review.dump()) == "request.uid must be a string, not a number");

  review = minimal_review();
  review["request"].erase("operation");
  CHECK(error_of(review.dump()) == "request.operation is missing");
  review["request"]["operation"] = "PATCH";
  CHECK(error_of(review.dump()) ==
        "request.operation \"PATCH\" is not one of CREATE, UPDATE, DELETE, CONNECT");
  review["request"]["operation"] = true;
  CHECK(error_of(review.dump()) == "request.operation must be a string, not a boolean");

  review = minimal_review();
  review["request"]["name"] = json::array();
  CHECK(error_of(review.dump()) == "request.name must be a string, not an array");
  review = minimal_review();
  review["request"]["dryRun"] = "yes";
  CHECK(error_of(review.dump()) == "request.dryRun must be a boolean, not a string");
  review = minimal_review();
  review["request"]["kind"] = "Deployment";
  CHECK(error_of(review.dump()) == "request.kind must be an object, not a string");
  review = minimal_review();
  review["request"]["resource"]["group"] = 1;
  CHECK(error_of(review.dump()) == "request.resource.group must be a string, not a number");
}

TEST_CASE("codec: a field the codec interprets may appear only once") {
  std::string body =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a",)"
      R"("operation":"CREATE","uid":"b"}})";
  CHECK(error_of(body) == "request.uid appears more than once");
  body = R"({"apiVersion":"admission.k8s.io/v1","apiVersion":"admission.k8s.io/v1"})";
  CHECK(error_of(body) == "apiVersion appears more than once");
  body =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{},"request":{}})";
  CHECK(error_of(body) == "request appears more than once");
}

TEST_CASE("codec: nesting deeper than the limit is refused before anything recursive runs") {
  ParseOptions options;
  options.max_depth = 5;
  auto review = minimal_review();
  // review(1) > request(2) > object(3) > two arrays (4, 5): exactly at the limit.
  review["request"]["object"] = {{"a", json::parse(nested(2))}};
  CHECK(parse_review(review.dump(), options).ok());
  review["request"]["object"] = {{"a", json::parse(nested(3))}};
  CHECK(error_of(review.dump(), options) == "JSON nesting is deeper than 5 levels");

  // 100k deep, bare and inside a review; refused quickly and without exhausting the stack.
  auto start = std::chrono::steady_clock::now();
  CHECK(error_of(nested(100000)) == "JSON nesting is deeper than 128 levels");
  std::string deep = minimal_review().dump();
  deep.replace(deep.find("{\"metadata\""), 0, "[" + nested(100000) + "],\"x\":");
  CHECK(error_of(deep).find("deeper than 128") != std::string::npos);
  std::string unclosed(100000, '{');
  CHECK_FALSE(parse_review(unclosed).ok());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}

TEST_CASE("codec: a projection keeps only the declared paths, array positions intact") {
  auto projection = Projection::parse(
      {"/metadata/name", "/metadata/namespace", "/metadata/generation",
       "/spec/template/spec/containers/*/name", "/spec/template/spec/containers/*/resources"});
  REQUIRE(projection.ok());
  ParseOptions options;
  options.projection = &*projection;
  auto body = read_data("deployment-update-review.json");
  auto parsed = parse_review(body, options);
  REQUIRE(parsed.ok());
  auto full = json::parse(body)["request"]["object"];
  const auto& object = parsed->object;
  CHECK(object["metadata"] == json{{"name", "web"}, {"namespace", "shop"}, {"generation", 7}});
  CHECK_FALSE(object.contains("status"));
  const auto& containers = object["spec"]["template"]["spec"]["containers"];
  const auto& full_containers = full["spec"]["template"]["spec"]["containers"];
  REQUIRE(containers.size() == full_containers.size());
  for (std::size_t i = 0; i < containers.size(); ++i) {
    CHECK(containers[i] == json{{"name", full_containers[i]["name"]},
                                {"resources", full_containers[i]["resources"]}});
  }
  CHECK(parsed->old_object["metadata"]["name"] == "web");
  CHECK(object.dump().size() < 400);
}

TEST_CASE("codec: projection edge cases: wrong kinds, wildcard members, escapes, prefixes") {
  auto review = minimal_review();
  // "*" matches object members as well as array elements, so containers keeps its scalar.
  review["request"]["object"] = json::parse(R"({
    "metadata": "not an object",
    "spec": {"containers": {"not": "an array"}, "list": [1, 2]},
    "labels": {"a/b": 1, "c~d": 2, "e": 3},
    "all": {"x": {"y": 1, "z": 2}}})");
  auto projection =
      Projection::parse({"/metadata/name", "/spec/containers/*/name", "/spec/list/x",
                         "/labels/a~1b", "/labels/c~0d", "/all/*/y", "/all/x", "/missing/field"});
  REQUIRE(projection.ok());
  ParseOptions options;
  options.projection = &*projection;
  auto parsed = parse_review(review.dump(), options);
  REQUIRE(parsed.ok());
  CHECK(parsed->object == json::parse(R"({
    "metadata": "not an object",
    "spec": {"containers": {"not": "an array"}, "list": []},
    "labels": {"a/b": 1, "c~d": 2},
    "all": {"x": {"y": 1, "z": 2}}})"));

  CHECK_FALSE(Projection::parse({"metadata"}).ok());
  auto everything = Projection::parse({""});
  REQUIRE(everything.ok());
  options.projection = &*everything;
  CHECK(parse_review(review.dump(), options)->object == review["request"]["object"]);
}

TEST_CASE("codec: oldObject read as stored holds what the tree of it holds") {
  // The reference: the whole oldObject as a tree (duplicate keys: the last wins), read by
  // api::stored_containers_of and kube's metadata readers.
  auto stored_projection = Projection::parse({"/metadata/name"});
  REQUIRE(stored_projection.ok());
  stored_projection->old_object_stored();
  auto check = [&](const std::string& old_object_text) {
    CAPTURE(old_object_text);
    std::string review = minimal_review().dump();
    review.insert(review.rfind("}}"), R"(,"oldObject":)" + old_object_text);
    auto whole = parse_review(review);
    REQUIRE(whole.ok());
    ParseOptions options;
    options.projection = &*stored_projection;
    auto parsed = parse_review(review, options);
    REQUIRE(parsed.ok());
    CHECK(parsed->old_object.is_null());
    REQUIRE(parsed->old_stored.has_value());
    const auto& old = *parsed->old_stored;
    CHECK(old.name == vscaler::kube::meta_string(whole->old_object, "name"));
    CHECK(old.namespace_name == vscaler::kube::meta_string(whole->old_object, "namespace"));
    CHECK(old.uid == vscaler::kube::meta_string(whole->old_object, "uid"));
    CHECK(old.generation == vscaler::kube::meta_generation(whole->old_object));
    auto expected = vscaler::api::stored_containers_of(whole->old_object);
    REQUIRE(old.containers.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK(old.containers[i].name == expected[i].name);
      CHECK(old.containers[i].requests == expected[i].requests);
      CHECK(old.containers[i].limits == expected[i].limits);
    }
    // The tree's reading for requests parsed without the projection is the same one.
    auto from_tree = vscaler::webhook::stored_old_object_of(whole->old_object);
    CHECK(from_tree.name == old.name);
    CHECK(from_tree.uid == old.uid);
    CHECK(from_tree.generation == old.generation);
    CHECK(from_tree.containers.size() == old.containers.size());
    return old;
  };
  // A recorded Deployment: its containers and what they store.
  auto recorded = json::parse(read_data("deployment-update-review.json"))["request"]["oldObject"];
  auto deployment = check(recorded.dump());
  CHECK(deployment.generation > 0);
  CHECK_FALSE(deployment.uid.empty());
  REQUIRE_FALSE(deployment.containers.empty());
  // A Pod (its own spec), quantities written as numbers, duplicate keys.
  auto pod = check(R"({"metadata": {"name": "p", "uid": "first", "uid": "last", "generation": 3},
    "spec": {"containers": [{"name": "a", "resources": {
      "requests": {"cpu": "1", "cpu": "2", "memory": 2048}, "limits": {"cpu": 0.5}}}]}})");
  CHECK(pod.uid == "last");
  REQUIRE(pod.containers.size() == 1);
  CHECK(pod.containers[0].requests.at("cpu") == "2");
  CHECK(pod.containers[0].requests.at("memory") == "2048");
  CHECK(pod.containers[0].limits.at("cpu") == "0.5");
  // Shapes a real object never has: read as the tree reads them, nothing thrown.
  auto odd = check(R"({"metadata": {"generation": "7", "namespace": 1},
    "spec": {"template": {"spec": {"containers": [1, {"resources": {}}, {"name": 2},
      {"name": "b", "resources": []}, {"name": "c", "resources": {"requests": "1"}},
      {"name": "d", "resources": {"limits": {"memory": {"x": 1}}}}]}}}})");
  CHECK(odd.generation == 0);
  CHECK(odd.containers.size() == 3);
  // Values that are not quantities are read as the tree dumps them: members sorted, a key given
  // twice keeping its last value.
  auto compound = check(R"({"spec": {"template": {"spec": {"containers": [{"name": "a",
    "resources": {"requests": {"cpu": {"b": 1, "a": 2, "a": [3, "x"]}, "memory": [1, {"d": 1,
    "c": 2}]}}}]}}}})");
  CHECK(compound.containers[0].requests.at("cpu") == R"({"a":[3,"x"],"b":1})");
  CHECK(compound.containers[0].requests.at("memory") == R"([1,{"c":2,"d":1}])");
  check(R"({"metadata": {"generation": 18446744073709551615}, "spec": {"template": 1}})");
  check(R"({"spec": {"template": {"spec": {"containers": {"name": "a"}}}}})");
  check(R"({"metadata": [], "spec": []})");
  // No oldObject, or a null one: nothing stored.
  ParseOptions options;
  options.projection = &*stored_projection;
  CHECK_FALSE(parse_review(minimal_review().dump(), options)->old_stored.has_value());
  auto null_old = minimal_review();
  null_old["request"]["oldObject"] = nullptr;
  CHECK_FALSE(parse_review(null_old.dump(), options)->old_stored.has_value());
}

TEST_CASE("codec: a forged oldObject's huge requests, keys in reverse order, read in linear time") {
  // Each key put in a sorted map out of order moves every key after it: 30,000 keys in reverse
  // order took 1.5 s that way, against a few ms in order. Compared with the same keys in order,
  // so the bound holds under the sanitizers' slowdown too (TSan: ~0.5 s a parse).
  constexpr int kKeys = 20000;
  auto projection = Projection::parse({"/metadata/name"});
  REQUIRE(projection.ok());
  projection->old_object_stored();
  ParseOptions options;
  options.projection = &*projection;
  auto review_of = [](bool reverse) {
    std::string requests;
    for (int i = 0; i < kKeys; ++i) {
      // Zero-padded: the keys' numeric order is their order as text.
      std::string key = std::to_string(reverse ? kKeys - i : i + 1);
      key.insert(0, 6 - key.size(), '0');
      requests += (requests.empty() ? "\"k" : ",\"k") + key + "\": \"1\"";
    }
    std::string review = minimal_review().dump();
    review.insert(review.rfind("}}"),
                  R"(,"oldObject":{"spec":{"template":{"spec":{"containers":[{"name":"a",)"
                  R"("resources":{"requests":{)" +
                      requests + "}}}]}}}}");
    return review;
  };
  // The least of two parses: one stall of the machine decides neither.
  auto parse_time = [&](const std::string& review) {
    auto least = std::chrono::steady_clock::duration::max();
    for (int round = 0; round < 2; ++round) {
      auto started = std::chrono::steady_clock::now();
      auto parsed = parse_review(review, options);
      least = std::min(least, std::chrono::steady_clock::now() - started);
      REQUIRE(parsed.ok());
      REQUIRE(parsed->old_stored.has_value());
      CHECK(parsed->old_stored->containers.at(0).requests.size() == kKeys);
    }
    return least;
  };
  auto in_order = parse_time(review_of(false));
  auto reversed = parse_time(review_of(true));
  CAPTURE(std::chrono::duration_cast<std::chrono::microseconds>(in_order).count());
  CAPTURE(std::chrono::duration_cast<std::chrono::microseconds>(reversed).count());
  CHECK(reversed < 3 * in_order + std::chrono::milliseconds(50));
}

TEST_CASE("codec: reviews above the reused-parser size parse too") {
  auto review = minimal_review();
  review["request"]["object"]["data"] = std::string(2 * 1024 * 1024, 'x');
  auto parsed = parse_review(review.dump());
  REQUIRE(parsed.ok());
  CHECK(parsed->object["data"].get_ref<const std::string&>().size() == 2 * 1024 * 1024);
  // The thread's reused parser still works afterwards.
  CHECK(parse_review(minimal_review().dump()).ok());
}

TEST_CASE("codec: parsing on many threads at once (thread-local parsers)") {
  auto body = read_data("deployment-update-review.json");
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (parse_review(body).ok() && !parse_review("{").ok()) ok.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(ok.load() == 200);
}

TEST_CASE("codec: responses echo the uid, carry status, warnings and a base64 JSONPatch") {
  CHECK(encode_review("u-1", AdmissionResponse::allow()) ==
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
        R"("response":{"uid":"u-1","allowed":true}})");

  auto denied =
      AdmissionResponse::deny(422, "spec.containers[0].requests.cpu: must be >= 0", "Invalid");
  denied.warnings = {"another scaler targets shop/web"};
  CHECK(encode_review("u-2", denied) ==
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-2",)"
        R"("allowed":false,"status":{"code":422,"message":"spec.containers[0].requests.cpu: must )"
        R"(be >= 0","reason":"Invalid"},"warnings":["another scaler targets shop/web"]}})");

  AdmissionResponse patched;
  patched.patch = json::array({{{"op", "add"},
                                {"path", "/spec/template/spec/containers/0/resources"},
                                {"value", {{"requests", {{"cpu", "250m"}}}}}}});
  auto encoded = json::parse(encode_review("u-3", patched));
  CHECK(encoded["response"]["patchType"] == "JSONPatch");
  CHECK(json::parse(base64_decode(encoded["response"]["patch"].get<std::string>())) ==
        patched.patch);

  // Quotes, backslashes and control characters are escaped wherever they appear.
  AdmissionResponse quoted = AdmissionResponse::allow();
  quoted.warnings = {"a \"quoted\"\nline", "back\\slash\t"};
  auto requoted = json::parse(encode_review("u-\"5", quoted));
  CHECK(requoted["response"]["uid"] == "u-\"5");
  CHECK(requoted["response"]["warnings"] == json::array({"a \"quoted\"\nline", "back\\slash\t"}));

  AdmissionResponse bad_utf8 = AdmissionResponse::deny(400, "bad \xff byte");
  CHECK(json::parse(encode_review("u-4", bad_utf8))["response"]["status"]["message"] ==
        "bad \xEF\xBF\xBD byte");
}

TEST_CASE("codec: base64 matches RFC 4648's test vectors") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foob") == "Zm9vYg==");
  CHECK(base64_encode("fooba") == "Zm9vYmE=");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  CHECK(base64_encode(std::string("\xff\xfe\x00", 3)) == "//4A");
  // Decoding: every length round-trips, also across the encoder's internal pieces; bad text is
  // an error that says why.
  for (std::string text : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                           std::string(12 * 1024 * 1024 + 1, '\x7f')}) {
    CHECK(base64_decode(base64_encode(text)) == text);
  }
  CHECK(vscaler::webhook::base64_decode("Zg=").error().find("multiple of 4") != std::string::npos);
  CHECK(vscaler::webhook::base64_decode("Z!==").error() == "invalid base64 text");
  CHECK(vscaler::webhook::base64_decode("Zg==Zg==").error() ==
        "base64 padding before the end of the text");
}

TEST_CASE("codec: JSON patches are checked before they can break a user's write") {
  CHECK(validate_json_patch(json::array()).ok());
  CHECK(validate_json_patch(
            json::parse(
                R"([{"op":"add","path":"/a/b~1c","value":1},{"op":"remove","path":"/x"},)"
                R"({"op":"move","from":"/a","path":"/b"},{"op":"test","path":"","value":null}])"))
            .ok());
  auto error = [](const char* text) {
    auto result = validate_json_patch(json::parse(text));
    REQUIRE_FALSE(result.ok());
    return result.error();
  };
  CHECK(error("{}") == "a JSON patch must be an array of operations");
  CHECK(error("[1]") == "patch operation 0 is not an object");
  CHECK(error(R"([{"path":"/a"}])") == "patch operation 0 has no op");
  CHECK(error(R"([{"op":"merge","path":"/a"}])") ==
        "patch operation 0 has an unknown op \"merge\"");
  CHECK(error(R"([{"op":"add","path":"a","value":1}])") ==
        "patch operation 0 has no valid JSON pointer path");
  CHECK(error(R"([{"op":"remove","path":"/a~2"}])") ==
        "patch operation 0 has no valid JSON pointer path");
  CHECK(error(R"([{"op":"remove","path":"/a"},{"op":"add","path":"/a"}])") ==
        "patch operation 1 has no value");
  CHECK(error(R"([{"op":"copy","path":"/a"}])") ==
        "patch operation 0 has no valid JSON pointer from");
}

TEST_CASE("codec: JSON pointer tokens are escaped") {
  CHECK(json_pointer_escape("app.kubernetes.io/name") == "app.kubernetes.io~1name");
  CHECK(json_pointer_escape("a~b/c") == "a~0b~1c");
}

TEST_CASE(
    "codec: the subtree comparison tells a template change from a change of ignored members "
    "only; options.fieldManager is read") {
  auto projection = Projection::parse({"/metadata/name"});
  REQUIRE(projection.ok());
  projection->compare_subtree({"spec", "template"},
                              {{"spec", "containers", "*", "resources", "requests", "cpu"}});
  ParseOptions options;
  options.projection = &*projection;
  auto same = [&options](const json& before, const json& after) {
    json review = minimal_review();
    review["request"]["operation"] = "UPDATE";
    review["request"]["options"] = {{"fieldManager", "helm"}};
    review["request"]["oldObject"] = before;
    review["request"]["object"] = after;
    auto parsed = parse_review(review.dump(), options);
    REQUIRE(parsed.ok());
    CHECK(parsed->field_manager == "helm");
    REQUIRE(parsed->subtree_unchanged.has_value());
    return *parsed->subtree_unchanged;
  };
  json before = json::parse(R"({"metadata": {"name": "web"}, "spec": {"template": {"spec":
      {"containers": [{"name": "app", "image": "a:1", "resources": {"requests": {"cpu": "1",
      "memory": "1Gi"}}}]}}}})");
  json cpu = before;
  cpu["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2";
  CHECK(same(before, cpu));
  json reordered = json::parse(R"({"spec": {"template": {"spec": {"containers": [{"resources":
      {"requests": {"memory": "1Gi", "cpu": "5"}}, "image": "a:1", "name": "app"}]}}},
      "metadata": {"name": "other"}})");
  CHECK(same(before, reordered));  // member order and parts outside the subtree do not matter
  json memory = before;
  memory["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "2Gi";
  CHECK_FALSE(same(before, memory));
  json image = before;
  image["spec"]["template"]["spec"]["containers"][0]["image"] = "a:2";
  CHECK_FALSE(same(before, image));
  json only_cpu = json::parse(R"({"spec": {"template": {"spec": {"containers": [{"name": "app",
      "resources": {"requests": {"cpu": "1"}}}]}}}})");
  json no_resources = json::parse(R"({"spec": {"template": {"spec": {"containers":
      [{"name": "app"}]}}}})");
  CHECK(same(only_cpu, no_resources));  // emptied by the ignored member: the same as absent
  CHECK(same(no_resources, only_cpu));
  json no_template = json::parse(R"({"spec": {"replicas": 1}})");
  CHECK(same(no_template, no_template));  // absent on both sides
  CHECK_FALSE(same(no_template, before));
  // Without a comparison in the projection, none is made; nor on a CREATE.
  ParseOptions plain;
  auto parsed = parse_review(minimal_review().dump(), plain);
  REQUIRE(parsed.ok());
  CHECK_FALSE(parsed->subtree_unchanged.has_value());
  json create = minimal_review();
  create["request"]["object"] = before;
  parsed = parse_review(create.dump(), options);
  REQUIRE(parsed.ok());
  CHECK_FALSE(parsed->subtree_unchanged.has_value());
}

TEST_CASE("codec: members out of order are compared by name, a huge object of them as changed") {
  auto projection = Projection::parse({"/metadata/name"});
  REQUIRE(projection.ok());
  projection->compare_subtree({"spec", "template"}, {});
  ParseOptions options;
  options.projection = &*projection;
  // Templates of `members` members, oldObject's in the reverse order (written by hand: nlohmann
  // would sort them).
  std::chrono::steady_clock::duration parsing{};  // the last compare's parse alone
  auto compare = [&options, &parsing](std::size_t members) {
    std::string forward;
    std::string backward;
    for (std::size_t i = 0; i < members; ++i) {
      forward += (i == 0 ? "" : ",") + ("\"m" + std::to_string(i) + "\":" + std::to_string(i));
      std::size_t j = members - 1 - i;
      backward += (i == 0 ? "" : ",") + ("\"m" + std::to_string(j) + "\":" + std::to_string(j));
    }
    json review = minimal_review();
    review["request"]["operation"] = "UPDATE";
    review["request"]["object"] = {{"spec", {{"template", "NEW"}}}};
    review["request"]["oldObject"] = {{"spec", {{"template", "OLD"}}}};
    std::string text = review.dump();
    text.replace(text.find("\"NEW\""), 5, "{" + forward + "}");
    text.replace(text.find("\"OLD\""), 5, "{" + backward + "}");
    const auto start = std::chrono::steady_clock::now();
    auto parsed = parse_review(text, options);
    parsing = std::chrono::steady_clock::now() - start;
    REQUIRE(parsed.ok());
    REQUIRE(parsed->subtree_unchanged.has_value());
    return *parsed->subtree_unchanged;
  };
  CHECK(compare(10));  // the same members: equal, whatever their order
  // 40,000 members in reverse order (a forged review, ~1 MB): by name, each member a scan of
  // the other object, it took seconds; counted as different, it is one walk. Only the parse is
  // timed (building the 1 MB text took most of the second under TSan on a loaded machine).
  CHECK_FALSE(compare(40000));
  CHECK(parsing < std::chrono::seconds(1));
}

namespace {

using Patterns = std::vector<std::vector<std::string>>;

// The reference for the comparison: the subtree with its ignored members removed and the objects
// they emptied dropped, built as a new tree (the parser compares without building anything).
json normalized(const json& value, const Patterns& alive, std::size_t depth) {
  if (alive.empty()) return value;
  auto below_of = [&](const std::string* key, bool& ignored) {
    Patterns below;
    for (const auto& pattern : alive) {
      if (pattern[depth] != "*" && (key == nullptr || pattern[depth] != *key)) continue;
      if (pattern.size() == depth + 1) {
        ignored = true;
      } else {
        below.push_back(pattern);
      }
    }
    return below;
  };
  if (value.is_object()) {
    json out = json::object();
    for (const auto& [key, member] : value.items()) {
      bool ignored = false;
      Patterns below = below_of(&key, ignored);
      if (ignored) continue;
      json kept = normalized(member, below, depth + 1);
      if (!below.empty() && member.is_object() && kept.empty()) continue;
      out[key] = kept;
    }
    return out;
  }
  if (value.is_array()) {
    bool ignored = false;
    Patterns below = below_of(nullptr, ignored);
    json out = json::array();
    if (ignored) return out;
    for (const auto& item : value) out.push_back(normalized(item, below, depth + 1));
    return out;
  }
  return value;
}

// `value` as JSON text with every object's members in a random order (nlohmann's own dump sorts
// them, and the parser must not depend on the order).
std::string shuffled_dump(const json& value, std::mt19937& random) {
  if (value.is_object()) {
    std::vector<std::string> keys;
    for (const auto& [key, member] : value.items()) keys.push_back(key);
    std::shuffle(keys.begin(), keys.end(), random);
    std::string out = "{";
    for (const auto& key : keys) {
      if (out.size() > 1) out += ',';
      out += json(key).dump() + ':' + shuffled_dump(value[key], random);
    }
    return out + '}';
  }
  if (value.is_array()) {
    std::string out = "[";
    for (const auto& item : value) {
      if (out.size() > 1) out += ',';
      out += shuffled_dump(item, random);
    }
    return out + ']';
  }
  return value.dump();
}

// A random scalar or small tree, from a vocabulary that makes the patterns' names likely.
json random_value(std::mt19937& random, int depth) {
  static const std::vector<std::string> names = {"resources", "requests", "limits", "cpu",
                                                 "memory",    "image",    "env",    "name"};
  static const std::vector<json> scalars = {"1", "2", 1, 2, true, nullptr, ""};
  int roll = static_cast<int>(random() % 10);
  if (depth > 3 || roll < 4) return scalars[random() % scalars.size()];
  if (roll < 6) {
    json items = json::array();
    for (unsigned i = random() % 3; i > 0; --i) items.push_back(random_value(random, depth + 1));
    return items;
  }
  json object = json::object();
  for (unsigned i = random() % 4; i > 0; --i) {
    object[names[random() % names.size()]] = random_value(random, depth + 1);
  }
  return object;
}

// `value` with one random change somewhere along a random walk from its root: a member set,
// added or removed, or an array element replaced.
void mutate(json& value, std::mt19937& random) {
  static const std::vector<std::string> names = {"resources", "requests", "limits", "cpu",
                                                 "memory",    "image",    "env",    "name"};
  json* at = &value;
  for (;;) {
    bool stop = random() % 3 == 0;
    if (at->is_object() && !at->empty() && !stop) {
      auto it = at->begin();
      std::advance(it, random() % at->size());
      at = &it.value();
    } else if (at->is_array() && !at->empty() && !stop) {
      at = &(*at)[random() % at->size()];
    } else {
      break;
    }
  }
  if (at->is_object()) {
    std::string name = names[random() % names.size()];
    if (at->contains(name) && random() % 2 == 0) {
      at->erase(name);
    } else {
      (*at)[name] = random() % 3 == 0 ? json::object() : random_value(random, 2);
    }
  } else if (at->is_array() && !at->empty()) {
    (*at)[random() % at->size()] = random_value(random, 2);
  } else {
    *at = random_value(random, 2);
  }
}

}  // namespace

TEST_CASE("codec property: the subtree comparison equals comparing the normalized subtrees") {
  Patterns ignored = {{"spec", "containers", "*", "resources", "requests", "cpu"},
                      {"spec", "containers", "*", "resources", "limits", "memory"},
                      {"spec", "tolerations", "*"}};
  auto projection = Projection::parse({"/metadata/name"});
  REQUIRE(projection.ok());
  projection->compare_subtree({"spec", "template"}, ignored);
  ParseOptions options;
  options.projection = &*projection;
  std::mt19937 random(20261204);
  int equal = 0;
  int different = 0;
  for (int round = 0; round < 3000; ++round) {
    json container = {{"name", "app"},
                      {"image", "a:1"},
                      {"resources",
                       {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}},
                        {"limits", {{"cpu", "2"}, {"memory", "2Gi"}}}}}};
    json spec = {{"containers", json::array({container, container})},
                 {"tolerations", json::array({"a"})}};
    spec["containers"][1]["name"] = "sidecar";
    json before = {{"metadata", {{"name", "web"}}}, {"spec", {{"template", {{"spec", spec}}}}}};
    // Resources of only ignored members, empty objects, or none: all the same as absent.
    auto set_emptied_resources = [&random](json& object, std::size_t index) {
      static const std::vector<json> shapes = {
          json::object(), json::parse(R"({"requests": {"cpu": "3"}})"),
          json::parse(R"({"limits": {"memory": "3Gi"}})"),
          json::parse(R"({"requests": {}, "limits": {"memory": "1"}})"), nullptr};
      json& target = object["spec"]["template"]["spec"]["containers"][index];
      const json& shape = shapes[random() % shapes.size()];
      if (shape.is_null()) {
        target.erase("resources");
      } else {
        target["resources"] = shape;
      }
    };
    bool emptied[2] = {random() % 2 == 0, random() % 2 == 0};
    for (std::size_t i = 0; i < 2; ++i) {
      if (emptied[i]) set_emptied_resources(before, i);
    }
    json after = before;
    for (std::size_t i = 0; i < 2; ++i) {
      if (emptied[i] && random() % 2 == 0) set_emptied_resources(after, i);
    }
    for (unsigned i = random() % 3; i > 0; --i) mutate(before, random);
    for (unsigned i = random() % 4; i > 0; --i) mutate(after, random);
    std::string review =
        R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",)"
        R"("operation":"UPDATE","oldObject":)" +
        shuffled_dump(before, random) + R"(,"object":)" + shuffled_dump(after, random) + "}}";
    auto parsed = parse_review(review, options);
    REQUIRE(parsed.ok());
    // The walks from the root only ever change members of it: it stays an object.
    auto template_of = [](const json& object) -> const json* {
      const json* outer = object.contains("spec") ? &object["spec"] : nullptr;
      if (outer == nullptr || !outer->is_object() || !outer->contains("template")) return nullptr;
      return &(*outer)["template"];
    };
    const json* old_template = template_of(before);
    const json* new_template = template_of(after);
    bool expected =
        old_template == nullptr || new_template == nullptr
            ? old_template == new_template
            : normalized(*old_template, ignored, 0) == normalized(*new_template, ignored, 0);
    REQUIRE(parsed->subtree_unchanged.has_value());
    CHECK_MESSAGE(*parsed->subtree_unchanged == expected, review);
    (expected ? equal : different) += 1;
  }
  // Both outcomes are exercised, each many times.
  CHECK(equal > 300);
  CHECK(different > 300);
}

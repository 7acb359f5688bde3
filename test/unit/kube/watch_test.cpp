// The watch-stream framer (events split across arbitrary chunk boundaries, a bound on line
// size), watch event parsing, API error classification and URL building: everything of the
// client that can be checked without a server.
#include "kube/watch.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/errors.h"

using namespace vscaler::kube;
using nlohmann::json;

namespace {

// Feeds `stream` to a fresh framer in the given chunk sizes (cycled) and returns the lines.
std::vector<std::string> frame(std::string_view stream, const std::vector<size_t>& sizes,
                               size_t max_line = 1 << 20) {
  LineFramer framer(max_line);
  std::vector<std::string> lines;
  size_t at = 0;
  size_t i = 0;
  while (at < stream.size()) {
    size_t size = std::min(sizes[i++ % sizes.size()], stream.size() - at);
    auto status = framer.feed(stream.substr(at, size), [&](std::string_view line) {
      lines.emplace_back(line);
      return true;
    });
    REQUIRE(status == LineFramer::Status::kOk);
    at += size;
  }
  CHECK(framer.buffered() == 0);
  return lines;
}

std::string event_line(const char* type, const std::string& name, int rv) {
  json event = {{"type", type},
                {"object",
                 {{"kind", "ConfigMap"},
                  {"metadata", {{"name", name}, {"resourceVersion", std::to_string(rv)}}},
                  {"data", {{"k", std::string(static_cast<size_t>(rv % 50), 'x')}}}}}};
  return event.dump();
}

}  // namespace

TEST_CASE("framer: every split point of a two-event stream yields the same two lines") {
  std::string a = event_line("ADDED", "a", 7);
  std::string b = event_line("MODIFIED", "b", 8);
  std::string stream = a + "\n" + b + "\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    LineFramer framer;
    std::vector<std::string> lines;
    auto collect = [&](std::string_view line) {
      lines.emplace_back(line);
      return true;
    };
    REQUIRE(framer.feed(std::string_view(stream).substr(0, cut), collect) ==
            LineFramer::Status::kOk);
    REQUIRE(framer.feed(std::string_view(stream).substr(cut), collect) == LineFramer::Status::kOk);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == a);
    CHECK(lines[1] == b);
  }
}

TEST_CASE("framer: one byte at a time, and random chunkings of many events") {
  std::string stream;
  std::vector<std::string> expected;
  for (int i = 0; i < 200; ++i) {
    expected.push_back(event_line(i % 3 == 0 ? "ADDED" : "MODIFIED", "o" + std::to_string(i), i));
    stream += expected.back() + "\n";
  }
  CHECK(frame(stream, {1}) == expected);
  CHECK(frame(stream, {4096}) == expected);  // httplib's read size
  CHECK(frame(stream, {stream.size()}) == expected);
  std::mt19937 random(42);
  for (int round = 0; round < 50; ++round) {
    std::vector<size_t> sizes;
    for (int i = 0; i < 17; ++i) sizes.push_back(1 + random() % 700);
    CHECK(frame(stream, sizes) == expected);
  }
}

TEST_CASE("framer: CRLF endings and empty lines") {
  CHECK(frame("a\r\n\r\nb\n\nc\n", {2}) == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("framer: a partial last line is held back until its newline") {
  LineFramer framer;
  std::vector<std::string> lines;
  auto collect = [&](std::string_view line) {
    lines.emplace_back(line);
    return true;
  };
  CHECK(framer.feed("{\"type\":", collect) == LineFramer::Status::kOk);
  CHECK(lines.empty());
  CHECK(framer.buffered() == 8);
  CHECK(framer.feed("1}\n{", collect) == LineFramer::Status::kOk);
  CHECK(lines == std::vector<std::string>{"{\"type\":1}"});
  CHECK(framer.buffered() == 1);
  framer.reset();
  CHECK(framer.buffered() == 0);
}

TEST_CASE("framer: a line above the bound is refused, whole or in pieces") {
  auto ignore = [](std::string_view) { return true; };
  {
    LineFramer framer(10);
    CHECK(framer.feed("0123456789\n", ignore) == LineFramer::Status::kOk);  // exactly the bound
    CHECK(framer.feed("0123456789A\n", ignore) == LineFramer::Status::kTooLong);
  }
  {
    LineFramer framer(10);
    CHECK(framer.feed("012345", ignore) == LineFramer::Status::kOk);
    CHECK(framer.feed("67890", ignore) == LineFramer::Status::kTooLong);  // no newline yet
    CHECK(framer.buffered() == 0);                                        // nothing kept
  }
}

TEST_CASE("framer: a handler returning false stops delivery") {
  LineFramer framer;
  int seen = 0;
  auto status = framer.feed("a\nb\nc\n", [&](std::string_view) { return ++seen < 2; });
  CHECK(status == LineFramer::Status::kStopped);
  CHECK(seen == 2);
}

TEST_CASE("watch events parse; malformed ones are decode errors that do not echo the line") {
  auto added = parse_watch_event(event_line("ADDED", "a", 5));
  REQUIRE(added.ok());
  CHECK(added->type == EventType::kAdded);
  CHECK(added->object["metadata"]["name"] == "a");
  auto bookmark = parse_watch_event(
      R"({"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"12"}}})");
  REQUIRE(bookmark.ok());
  CHECK(bookmark->type == EventType::kBookmark);
  CHECK(parse_watch_event(R"({"type":"DELETED","object":{}})")->type == EventType::kDeleted);
  CHECK(parse_watch_event(R"({"type":"ERROR","object":{"kind":"Status"}})")->type ==
        EventType::kError);

  for (const char* bad :
       {"not json secret-value", "[1,2]", R"({"object":{}})", R"({"type":"ADDED"})",
        R"({"type":"ADDED","object":"x"})", R"({"type":"RENAMED","object":{}})"}) {
    auto parsed = parse_watch_event(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().kind == ErrorKind::kDecode);
    CHECK(parsed.error().message.find("secret-value") == std::string::npos);
  }
  // Not JSON at all is told apart from JSON that is not an object, and says why.
  auto truncated = parse_watch_event(R"({"type":"ADDED","object":{)");
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.error().message.find("not valid JSON") != std::string::npos);
  // Valid JSON simdjson alone would refuse: an integer beyond 64 bits (a float64 of 1e20 as Go
  // writes it, in a field that keeps unknown members) is read as a double.
  auto big = parse_watch_event(
      R"({"type":"MODIFIED","object":{"metadata":{"name":"a"},"spec":{"x":100000000000000000000}}})");
  REQUIRE(big.ok());
  CHECK(big->type == EventType::kModified);
  CHECK(big->object["spec"]["x"].is_number_float());
  CHECK(big->object["spec"]["x"].get<double>() == 1e20);
}

TEST_CASE("one parser serves a watch's events, large and small, each parsed whole") {
  vscaler::kube::ProjectingParser parser;
  std::string big_value(100000, 'x');
  for (int round = 0; round < 3; ++round) {
    json big = {{"type", "MODIFIED"},
                {"object", {{"metadata", {{"name", "big"}}}, {"data", {{"k", big_value}}}}}};
    auto large = parse_watch_event(big.dump(), &parser);
    REQUIRE(large.ok());
    CHECK(large->object == big["object"]);
    auto small =
        parse_watch_event(event_line("ADDED", "s" + std::to_string(round), round), &parser);
    REQUIRE(small.ok());
    CHECK(small->object["metadata"]["name"] == "s" + std::to_string(round));
    CHECK_FALSE(parse_watch_event("{\"type\":", &parser).ok());
  }
}

TEST_CASE("an in-stream ERROR with code 410 is Expired; other codes keep their kind") {
  json expired = {{"kind", "Status"},    {"apiVersion", "v1"},
                  {"status", "Failure"}, {"message", "too old resource version: 5 (100)"},
                  {"reason", "Expired"}, {"code", 410}};
  CHECK(is_expired(error_from_status(expired)));
  expired.erase("reason");  // older servers: code only
  CHECK(is_expired(error_from_status(expired)));
  expired["reason"] = "Gone";
  CHECK(is_expired(error_from_status(expired)));
  json internal = {{"kind", "Status"}, {"code", 500}, {"reason", "InternalError"}};
  CHECK(error_from_status(internal).kind == ErrorKind::kServerError);
  json too_large = {{"kind", "Status"}, {"code", 504}, {"reason", "Timeout"}};
  CHECK(error_from_status(too_large).kind == ErrorKind::kTimeout);
}

TEST_CASE("error_from_response parses the Status object: reason, message, details, causes") {
  std::string body = R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"ConfigMap \"Bad\" is invalid: metadata.name: Invalid value: \"Bad\"",
    "reason":"Invalid","details":{"name":"Bad","kind":"ConfigMap","causes":[{"reason":
    "FieldValueInvalid","message":"Invalid value: \"Bad\"","field":"metadata.name"}]},"code":422})";
  ApiError error = error_from_response(422, body);
  CHECK(error.kind == ErrorKind::kInvalid);
  CHECK(error.code == 422);
  CHECK(error.reason == "Invalid");
  CHECK(error.name == "Bad");
  CHECK(error.resource == "ConfigMap");
  REQUIRE(error.causes.size() == 1);
  CHECK(error.causes[0].field == "metadata.name");
  CHECK(error.causes[0].type == "FieldValueInvalid");
  CHECK(error.to_string().find("Invalid (422)") == 0);
}

TEST_CASE("409 is AlreadyExists or Conflict by reason; codes alone classify too") {
  CHECK(error_from_response(409, R"({"kind":"Status","reason":"AlreadyExists","code":409})").kind ==
        ErrorKind::kAlreadyExists);
  CHECK(error_from_response(409, R"({"kind":"Status","reason":"Conflict","code":409})").kind ==
        ErrorKind::kConflict);
  CHECK(error_from_response(409, "").kind == ErrorKind::kConflict);
  struct Case {
    int code;
    ErrorKind kind;
  };
  for (Case c : {Case{400, ErrorKind::kBadRequest}, Case{401, ErrorKind::kUnauthorized},
                 Case{403, ErrorKind::kForbidden}, Case{404, ErrorKind::kNotFound},
                 Case{405, ErrorKind::kMethodNotAllowed}, Case{406, ErrorKind::kNotAcceptable},
                 Case{410, ErrorKind::kExpired}, Case{413, ErrorKind::kRequestEntityTooLarge},
                 Case{415, ErrorKind::kUnsupportedMediaType}, Case{422, ErrorKind::kInvalid},
                 Case{429, ErrorKind::kTooManyRequests}, Case{500, ErrorKind::kServerError},
                 Case{503, ErrorKind::kServerError}, Case{504, ErrorKind::kTimeout},
                 Case{418, ErrorKind::kUnexpectedStatus}}) {
    CAPTURE(c.code);
    CHECK(error_from_response(c.code, "<html>proxy error</html>").kind == c.kind);
  }
  // A 500 whose reason says the server timed out is a timeout (retryable), not a bug.
  CHECK(error_from_response(500, R"({"kind":"Status","reason":"ServerTimeout","code":500})").kind ==
        ErrorKind::kTimeout);
}

TEST_CASE("Retry-After comes from the header, else from details.retryAfterSeconds") {
  std::string status =
      R"({"kind":"Status","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":3}})";
  ApiError from_details = error_from_response(429, status);
  CHECK(from_details.kind == ErrorKind::kTooManyRequests);
  REQUIRE(from_details.retry_after.has_value());
  CHECK(from_details.retry_after->count() == 3);
  ApiError from_header = error_from_response(429, status, " 7 ");
  CHECK(from_header.retry_after->count() == 7);
  CHECK(error_from_response(429, "", "Wed, 21 Oct 2015 07:28:00 GMT").retry_after == std::nullopt);
  CHECK(error_from_response(429, "", "-1").retry_after == std::nullopt);
  CHECK(is_retryable(from_header));
  CHECK(from_header.to_string().find("retry after 7s") != std::string::npos);
}

TEST_CASE("a Retry-After of hours is believed for a minute: it would stop a watch or a scaler") {
  CHECK(error_from_response(429, "", "3600").retry_after->count() == 60);
  CHECK(error_from_response(429, "", "9223372036854775807").retry_after->count() == 60);
  CHECK(error_from_response(429, "", "99999999999999999999999").retry_after->count() == 60);
  std::string status =
      R"({"kind":"Status","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":86400}})";
  CHECK(error_from_response(429, status).retry_after->count() == 60);
  CHECK(error_from_response(
            429,
            R"({"kind":"Status","code":429,"details":{"retryAfterSeconds":9300000000000000000}})")
            .retry_after->count() == 60);
  CHECK(error_from_response(429, "", "60").retry_after->count() == 60);
  CHECK(error_from_response(429, "", "59").retry_after->count() == 59);
}

TEST_CASE("a non-Status error body is kept short") {
  ApiError error = error_from_response(502, std::string(10000, 'x'));
  CHECK(error.kind == ErrorKind::kServerError);
  CHECK(error.message.size() <= 256);
  CHECK(error_from_response(503, "").message == "HTTP 503");
}

TEST_CASE("retryable kinds: transport, timeout, 429, 5xx; not conflicts or client errors") {
  CHECK(is_retryable(make_error(ErrorKind::kTransport, "x")));
  CHECK(is_retryable(make_error(ErrorKind::kTimeout, "x")));
  CHECK_FALSE(is_retryable(make_error(ErrorKind::kConflict, "x")));
  CHECK_FALSE(is_retryable(make_error(ErrorKind::kInvalid, "x")));
  CHECK_FALSE(is_retryable(make_error(ErrorKind::kTls, "x")));
}

TEST_CASE("resource paths: core and named groups, namespaced and cluster-scoped") {
  CHECK(resources::kConfigMaps.path("ns") == "/api/v1/namespaces/ns/configmaps");
  CHECK(resources::kConfigMaps.path("") == "/api/v1/configmaps");
  CHECK(resources::kDeployments.path("shop", "web", "status") ==
        "/apis/apps/v1/namespaces/shop/deployments/web/status");
  CHECK(resources::kNamespaces.path("ignored", "kube-system") == "/api/v1/namespaces/kube-system");
  CHECK(resources::kVerticalScalers.path("a", "b") ==
        "/apis/scaling.vscaler.dev/v1beta1/namespaces/a/verticalscalers/b");
  CHECK(resources::kDeployments.display() == "deployments.apps");
  CHECK(url_encode("app in (a,b),tier!=x") == "app%20in%20%28a%2Cb%29%2Ctier%21%3Dx");
  CHECK(url_encode("a-b_c.d~e") == "a-b_c.d~e");
  CHECK(content_type(PatchType::kStrategicMerge) == "application/strategic-merge-patch+json");
  CHECK(content_type(PatchType::kApply) == "application/apply-patch+yaml");
}

// AccessReviewer: TokenReview then SubjectAccessReview, what each answer becomes, the cache.
// The API server is faked here (one collaborator); test/e2e/metrics_secure_test.sh asks a real
// one.
#include "kube/access_review.h"

#include <doctest/doctest.h>

#include <thread>
#include <vector>

namespace {

using nlohmann::json;
using vscaler::kube::AccessReviewer;
using vscaler::kube::AccessReviewOptions;
using vscaler::kube::ApiError;
using vscaler::kube::ResourceType;
using vscaler::kube::Result;

/// An API server that knows two tokens: "reader" (may get /metrics) and "nobody" (may not).
struct FakeApiServer {
  std::vector<json> reviews;
  bool down = false;
  json token_answer_override;  // when set, the TokenReview's answer

  Result<json, ApiError> review(const ResourceType& type, const json& object) {
    reviews.push_back(object);
    if (down) {
      ApiError refused;
      refused.message = "connection refused";
      return vscaler::base::fail(refused);
    }
    if (type.resource == "tokenreviews") {
      if (!token_answer_override.is_null()) return token_answer_override;
      std::string token = object["spec"]["token"];
      if (token == "reader" || token == "nobody") {
        return json{{"status",
                     {{"authenticated", true},
                      {"user",
                       {{"username", "system:serviceaccount:monitoring:" + token},
                        {"uid", "u-" + token},
                        {"groups", {"system:serviceaccounts"}}}}}}};
      }
      return json{{"status", {{"authenticated", false}}}};
    }
    CHECK(type.resource == "subjectaccessreviews");
    bool allowed = object["spec"]["user"] == "system:serviceaccount:monitoring:reader" &&
                   object["spec"]["nonResourceAttributes"]["path"] == "/metrics" &&
                   object["spec"]["nonResourceAttributes"]["verb"] == "get";
    return json{{"status", {{"allowed", allowed}}}};
  }
};

AccessReviewer reviewer(FakeApiServer& api, AccessReviewOptions options = {}) {
  return AccessReviewer(
      [&api](const ResourceType& type, const json& object) { return api.review(type, object); },
      options);
}

}  // namespace

TEST_CASE("no token 401, an invalid one 401, a user without the right 403, a reader 200") {
  FakeApiServer api;
  auto access = reviewer(api);
  CHECK(access.check("", "/metrics").status == 401);
  CHECK(access.check("Basic dXNlcjpwYXNz", "/metrics").status == 401);
  CHECK(access.check("Bearer ", "/metrics").status == 401);
  CHECK(api.reviews.empty());  // nothing to ask about
  CHECK(access.check("Bearer forged", "/metrics").status == 401);
  auto nobody = access.check("Bearer nobody", "/metrics");
  CHECK(nobody.status == 403);
  CHECK(nobody.message.find("vscaler-metrics-reader") != std::string::npos);
  CHECK(nobody.message.find("monitoring") == std::string::npos);     // never says who it was
  CHECK(access.check("bearer  reader ", "/metrics").status == 200);  // scheme case-insensitive
  // The SubjectAccessReview carries the TokenReview's user, uid and groups.
  const json& last = api.reviews.back();
  CHECK(last["kind"] == "SubjectAccessReview");
  CHECK(last["spec"]["uid"] == "u-reader");
  CHECK(last["spec"]["groups"] == json{"system:serviceaccounts"});
  CHECK(access.check("Bearer reader", "/other").status == 403);  // per path
}

TEST_CASE("answers are cached by token and path for the TTL; a down API server is 503, uncached") {
  FakeApiServer api;
  AccessReviewOptions options;
  options.cache_ttl = std::chrono::milliseconds(50);
  auto access = reviewer(api, options);
  CHECK(access.check("Bearer reader", "/metrics").status == 200);
  CHECK(access.check("Bearer nobody", "/metrics").status == 403);
  CHECK(access.check("Bearer forged", "/metrics").status == 401);
  std::size_t sent = access.reviews_sent();
  CHECK(sent == 5);  // two per authenticated token, one for the invalid one
  for (int i = 0; i < 10; ++i) {
    CHECK(access.check("Bearer reader", "/metrics").status == 200);
    CHECK(access.check("Bearer nobody", "/metrics").status == 403);
    CHECK(access.check("Bearer forged", "/metrics").status == 401);
  }
  CHECK(access.reviews_sent() == sent);
  api.down = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(access.check("Bearer reader", "/metrics").status == 503);
  CHECK(access.check("Bearer reader", "/metrics").status == 503);  // asked again each time
  api.down = false;
  CHECK(access.check("Bearer reader", "/metrics").status == 200);
}

TEST_CASE("a flood of made-up tokens is bounded by the cache size, and odd answers refuse") {
  FakeApiServer api;
  AccessReviewOptions options;
  options.cache_entries = 16;
  options.reviews_per_second = 0;  // the cache alone here
  auto access = reviewer(api, options);
  for (int i = 0; i < 100; ++i) {
    CHECK(access.check("Bearer made-up-" + std::to_string(i), "/metrics").status == 401);
  }
  CHECK(access.check("Bearer reader", "/metrics").status == 200);
  // Answers of an unexpected shape are refusals, never exceptions.
  for (const char* answer :
       {R"({"status": {"authenticated": "yes", "user": {}}})", R"({"status": []})", R"([])",
        R"({"status": {"authenticated": true, "user": "root"}})"}) {
    CAPTURE(answer);
    FakeApiServer odd;
    odd.token_answer_override = json::parse(answer);
    auto strict = reviewer(odd);
    CHECK(strict.check("Bearer anything", "/metrics").status == 401);
  }
}

TEST_CASE("reviews of new tokens are rate-limited: a flood gets 429, a cached scraper 200") {
  FakeApiServer api;
  AccessReviewOptions options;
  options.reviews_per_second = 1;
  options.review_burst = 5;
  auto access = reviewer(api, options);
  CHECK(access.check("Bearer reader", "/metrics").status == 200);  // the scraper, cached
  const std::size_t before_flood = access.reviews_sent();
  int refused = 0;
  for (int i = 0; i < 100; ++i) {
    refused += access.check("Bearer made-up-" + std::to_string(i), "/metrics").status == 429;
  }
  CHECK(refused >= 95);  // the burst's 4 left, and what a second of refill adds
  CHECK(access.reviews_sent() - before_flood <= 2 * 6);            // a TokenReview (+ no SAR) each
  CHECK(access.check("Bearer reader", "/metrics").status == 200);  // its cached answer, at once
}

TEST_CASE("a token allowed lately is reviewed again past the cache's TTL without the limit") {
  // A scraper every 30 s misses a 10 s cache each time: it must not wait behind a flood.
  FakeApiServer api;
  AccessReviewOptions options;
  options.cache_ttl = std::chrono::milliseconds(20);
  options.reviews_per_second = 0.001;  // one review, then none for the test's length
  options.review_burst = 1;
  auto access = reviewer(api, options);
  CHECK(access.check("Bearer reader", "/metrics").status == 200);
  CHECK(access.check("Bearer made-up", "/metrics").status == 429);  // the bucket is empty
  std::this_thread::sleep_for(std::chrono::milliseconds(40));       // the cached answer expired
  const std::size_t before = access.reviews_sent();
  CHECK(access.check("Bearer reader", "/metrics").status == 200);
  CHECK(access.reviews_sent() > before);  // reviewed again (a revoked token would show), not 429
  CHECK(access.check("Bearer other-made-up", "/metrics").status == 429);
}

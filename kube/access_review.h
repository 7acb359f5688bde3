// AccessReviewer: whether the bearer of a token may GET a non-resource path such as /metrics,
// asked of the API server the way controller-runtime's secure metrics filter does: a TokenReview
// says who the token belongs to, a SubjectAccessReview whether that user may `get` the path. So
// the metrics port gives nothing to a caller RBAC would refuse (DESIGN "Who may talk to
// vscaler"). Answers are cached briefly by a digest of the token (the token itself is never kept
// or logged), so a scrape every 15 s costs the API server two reviews a minute at most.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/rate_limiter.h"
#include "kube/client.h"

namespace vscaler::kube {

namespace resources {
inline const ResourceType kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false};
inline const ResourceType kSubjectAccessReviews{"authorization.k8s.io", "v1",
                                                "subjectaccessreviews", false};
}  // namespace resources

/// The answer for one request, as an HTTP status: 200 allowed, 401 no or an invalid token, 403
/// authenticated but not allowed, 503 the API server could not be asked (not cached).
struct AccessDecision {
  int status = 401;
  /// For the response body: says what is missing, never who the token belongs to.
  std::string message;
};

/// Settings of an AccessReviewer.
struct AccessReviewOptions {
  /// How long an answer (allowed or refused) is reused for the same token and path.
  std::chrono::milliseconds cache_ttl{10'000};
  /// Answers kept at most; when full, expired ones are dropped, then all (a flood of made-up
  /// tokens costs reviews, never memory).
  std::size_t cache_entries = 1024;
  /// Reviews of tokens not in the cache: at most this many a second on average (answers beyond
  /// are 429), so that a flood of made-up tokens costs the API server a bounded rate of
  /// TokenReviews (under vscaler's own priority-and-fairness share). A token allowed within
  /// `known_for` is reviewed again past the cache's TTL without waiting for the limit: a scraper
  /// every 30 s misses the 10 s cache each time, and must not lose to the flood. 0: no limit.
  double reviews_per_second = 20;
  /// See reviews_per_second.
  std::chrono::milliseconds known_for{300'000};
  /// The burst of such reviews (a few scrapers starting together).
  double review_burst = 40;
};

/// Thread-safe; one per process.
class AccessReviewer {
 public:
  /// Asks the API server through `review` (a TokenReview or SubjectAccessReview object in, the
  /// API server's answer out); cmd/ passes a Client's create(). Tests pass a fake.
  using Review = std::function<Result<nlohmann::json, ApiError>(const ResourceType& type,
                                                                const nlohmann::json& object)>;
  AccessReviewer(Review review, AccessReviewOptions options = {});

  /// The decision for a request to `path` carrying `authorization` (the Authorization header's
  /// value, empty when absent).
  AccessDecision check(std::string_view authorization, std::string_view path,
                       std::string_view verb = "get");

  /// Reviews sent to the API server so far (TokenReviews and SubjectAccessReviews).
  std::size_t reviews_sent() const;

 private:
  using Digest = std::array<unsigned char, 32>;
  struct DigestHash {
    std::size_t operator()(const Digest& digest) const;
  };
  struct Cached {
    AccessDecision decision;
    std::chrono::steady_clock::time_point expires;
    /// For an allowed token: until when its next review skips the rate limit (known_for).
    std::chrono::steady_clock::time_point known_until;
  };
  AccessDecision review_now(std::string_view token, std::string_view path, std::string_view verb);

  Review review_;
  AccessReviewOptions options_;
  base::RateLimiter new_tokens_;  ///< reviews of tokens not in the cache
  mutable std::mutex mutex_;
  std::unordered_map<Digest, Cached, DigestHash> cache_;
  std::size_t reviews_sent_ = 0;
};

}  // namespace vscaler::kube

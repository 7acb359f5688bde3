#include "kube/access_review.h"

#include <openssl/evp.h>

#include <cstring>
#include <utility>

#include "base/log.h"

namespace vscaler::kube {
namespace {

using nlohmann::json;

constexpr std::string_view kAccessReviewLogger = "kube.access-review";

/// The token of "Bearer <token>" (the scheme case-insensitive, as RFC 7235 says); empty when the
/// header is not one.
std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size()) return {};
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    char c = authorization[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return {};
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  return token;
}

}  // namespace

std::size_t AccessReviewer::DigestHash::operator()(const Digest& digest) const {
  std::size_t out = 0;
  std::memcpy(&out, digest.data(), sizeof out);  // a SHA-256 prefix is already uniform
  return out;
}

AccessReviewer::AccessReviewer(Review review, AccessReviewOptions options)
    : review_(std::move(review)),
      options_(options),
      new_tokens_(options.reviews_per_second, options.review_burst) {}

std::size_t AccessReviewer::reviews_sent() const {
  std::lock_guard lock(mutex_);
  return reviews_sent_;
}

AccessDecision AccessReviewer::check(std::string_view authorization, std::string_view path,
                                     std::string_view verb) {
  std::string_view token = bearer_token(authorization);
  if (token.empty()) {
    return {401, "a bearer token is required (Authorization: Bearer <token>)"};
  }
  // The cache key: SHA-256 of verb, path and token, so the token is never kept.
  Digest digest{};
  {
    std::string material;
    material.reserve(verb.size() + path.size() + token.size() + 2);
    material.append(verb).append(1, '\0').append(path).append(1, '\0').append(token);
    unsigned int length = 0;
    EVP_Digest(material.data(), material.size(), digest.data(), &length, EVP_sha256(), nullptr);
  }
  auto now = std::chrono::steady_clock::now();
  bool known = false;
  {
    std::lock_guard lock(mutex_);
    auto found = cache_.find(digest);
    if (found != cache_.end() && found->second.expires > now) return found->second.decision;
    known = found != cache_.end() && found->second.known_until > now;
  }
  if (!known && !new_tokens_.try_acquire(now)) {
    return {429, "too many tokens to review at once; retry"};  // not cached: nothing was asked
  }
  AccessDecision decision = review_now(token, path, verb);
  if (decision.status == 503) return decision;  // the API server's trouble: ask again next time
  std::lock_guard lock(mutex_);
  if (cache_.size() >= options_.cache_entries) {
    // Known allowed tokens stay (a flood cannot push the scraper out); the rest go when stale.
    std::erase_if(cache_, [now](const auto& entry) {
      return entry.second.expires <= now && entry.second.known_until <= now;
    });
    if (cache_.size() >= options_.cache_entries) cache_.clear();
  }
  const auto known_until =
      decision.status == 200 ? now + options_.known_for : std::chrono::steady_clock::time_point{};
  cache_[digest] = Cached{decision, now + options_.cache_ttl, known_until};
  return decision;
}

AccessDecision AccessReviewer::review_now(std::string_view token, std::string_view path,
                                          std::string_view verb) {
  json token_review = {{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenReview"},
                       {"spec", {{"token", std::string(token)}}}};
  {
    std::lock_guard lock(mutex_);
    ++reviews_sent_;
  }
  auto who = review_(resources::kTokenReviews, token_review);
  if (!who.ok()) {
    log::warn(kAccessReviewLogger, "TokenReview failed; answering 503",
              {{"error", who.error().to_string()}});
    return {503, "the API server could not review the token; retry"};
  }
  // The answers' fields are read defensively: an unexpected shape is a refusal, not a crash.
  const json* status = who->is_object() ? &(*who)["status"] : nullptr;
  const json* authenticated = status && status->is_object() && status->contains("authenticated")
                                  ? &(*status)["authenticated"]
                                  : nullptr;
  if (authenticated == nullptr || !authenticated->is_boolean() || !authenticated->get<bool>() ||
      !status->contains("user") || !(*status)["user"].is_object()) {
    return {401, "the bearer token is not valid"};
  }
  const json& user = (*status)["user"];
  json spec = {
      {"nonResourceAttributes", {{"path", std::string(path)}, {"verb", std::string(verb)}}}};
  spec["user"] = user.contains("username") && user["username"].is_string() ? user["username"] : "";
  if (user.contains("uid") && user["uid"].is_string()) spec["uid"] = user["uid"];
  if (user.contains("groups") && user["groups"].is_array()) spec["groups"] = user["groups"];
  if (user.contains("extra") && user["extra"].is_object()) spec["extra"] = user["extra"];
  json access_review = {{"apiVersion", "authorization.k8s.io/v1"},
                        {"kind", "SubjectAccessReview"},
                        {"spec", std::move(spec)}};
  {
    std::lock_guard lock(mutex_);
    ++reviews_sent_;
  }
  auto allowed = review_(resources::kSubjectAccessReviews, access_review);
  if (!allowed.ok()) {
    log::warn(kAccessReviewLogger, "SubjectAccessReview failed; answering 503",
              {{"error", allowed.error().to_string()}});
    return {503, "the API server could not review the access; retry"};
  }
  const json* verdict =
      allowed->is_object() && allowed->contains("status") ? &(*allowed)["status"] : nullptr;
  if (verdict != nullptr && verdict->is_object() && verdict->contains("allowed") &&
      (*verdict)["allowed"].is_boolean() && (*verdict)["allowed"].get<bool>()) {
    return {200, ""};
  }
  return {403, "forbidden: the token's user may not " + std::string(verb) + " " +
                   std::string(path) + " (ClusterRole vscaler-metrics-reader grants it)"};
}

}  // namespace vscaler::kube

// status.recommendation and RecommendationProvided from the stored status.
#include "recommender/provided_status.h"

#include <algorithm>
#include <cmath>

#include "recommender/hash.h"
#include "recommender/recommendation.h"

namespace vscaler::recommender {

using nlohmann::json;

namespace {

// Which side of the requests a bound map sits on.
enum class Side { kLower, kUpper };

// Whether two bound maps name the same resources and each value of `next` lies within
// kBoundWriteTolerance of the stored one, or, where `span` is given and both values lie beyond
// its requests on `side` (at or under the lowest, at or over the highest, or a resource nobody
// requests), within kFarBoundWriteFactor of it (`refresh_far`) or anywhere (not).
bool bounds_close(const ResourceMap& stored, const ResourceMap& next, Side side,
                  const RequestSpan* span, bool refresh_far) {
  if (stored.size() != next.size()) return false;
  for (const auto& [resource, value] : next) {
    auto it = stored.find(resource);
    if (it == stored.end()) return false;
    const double was = it->second.to_double();
    const double now = value.to_double();
    if (std::fabs(now - was) <= kBoundWriteTolerance * std::fabs(was)) continue;
    if (span == nullptr) return false;
    const double low = std::min(was, now);
    const double high = std::max(was, now);
    const ResourceMap& requests = side == Side::kLower ? span->lowest : span->highest;
    if (auto request = requests.find(resource); request != requests.end()) {
      const double edge = request->second.to_double();
      if (side == Side::kLower ? high > edge : low < edge) return false;  // a request between
    }
    // Beyond every request (or nobody requests it): no decision rests on the move.
    if (refresh_far && (low <= 0.0 || high > kFarBoundWriteFactor * low)) return false;
  }
  return true;
}

}  // namespace

void widen_request_spans(RequestSpans& spans, const std::vector<PodContainer>& containers) {
  for (const PodContainer& container : containers) {
    RequestSpan& span = spans[container.name];
    auto widen = [&span](const std::string& resource, const kube::Quantity& value) {
      auto [low, new_low] = span.lowest.try_emplace(resource, value);
      if (!new_low && value < low->second) low->second = value;
      auto [high, new_high] = span.highest.try_emplace(resource, value);
      if (!new_high && high->second < value) high->second = value;
    };
    // Every resource the container names, at the request it runs with (effective_request's rule:
    // a limit without a request counts as the request).
    for (const auto& [resource, request] : container.requests) widen(resource, request);
    for (const auto& [resource, limit] : container.limits) {
      if (!container.requests.contains(resource)) widen(resource, limit);
    }
  }
}

bool far_bound_refresh_pass(std::string_view uid, std::uint64_t pass) {
  return (fnv1a(kFnvBasis, uid) + pass) % kFarBoundRefreshPasses == 0;
}

bool same_recommendation(const json& stored, const json& next, const RequestSpans& spans,
                         bool refresh_far_bounds) {
  if (stored == next) return true;
  auto was = parse_recommendation(stored);
  auto now = parse_recommendation(next);
  if (!was.ok() || !now.ok() || was.value().size() != now.value().size()) return false;
  for (std::size_t i = 0; i < now.value().size(); ++i) {
    const ContainerRecommendation& a = was.value()[i];
    const ContainerRecommendation& b = now.value()[i];
    auto found = spans.find(b.container_name);
    const RequestSpan* span = found == spans.end() ? nullptr : &found->second;
    if (a.container_name != b.container_name || a.target != b.target ||
        a.uncapped_target != b.uncapped_target ||
        !bounds_close(a.lower_bound, b.lower_bound, Side::kLower, span, refresh_far_bounds) ||
        !bounds_close(a.upper_bound, b.upper_bound, Side::kUpper, span, refresh_far_bounds)) {
      return false;
    }
  }
  return true;
}

std::optional<json> status_update(const json& stored_status, std::int64_t generation,
                                  const Publication& publication, const std::string& now) {
  const json empty = json::object();
  const json& stored = stored_status.is_object() ? stored_status : empty;
  bool changed = false;
  json update = json::object();
  if (publication.recommendation) {
    auto it = stored.find("recommendation");
    if (it == stored.end() ||
        !same_recommendation(*it, *publication.recommendation, publication.request_spans,
                             publication.refresh_far_bounds)) {
      changed = true;
    }
    update["recommendation"] = *publication.recommendation;
  }
  const bool status_true = publication.reason == ProvidedReason::kRecommended;
  json wanted = {{"type", kRecommendationProvided},
                 {"status", status_true ? "True" : "False"},
                 {"reason", to_string(publication.reason)},
                 {"message", publication.message},
                 {"lastTransitionTime", now},
                 {"observedGeneration", generation}};
  json conditions = json::array();
  bool found = false;
  if (auto it = stored.find("conditions"); it != stored.end() && it->is_array()) {
    for (const json& existing : *it) {
      if (!existing.is_object() || existing.value("type", "") != kRecommendationProvided) {
        conditions.push_back(existing);
        continue;
      }
      if (found) {  // a duplicate of ours: dropped
        changed = true;
        continue;
      }
      found = true;
      json next = wanted;
      if (existing.value("status", "") == next["status"] &&
          existing.contains("lastTransitionTime")) {
        next["lastTransitionTime"] = existing["lastTransitionTime"];
      }
      if (next != existing) changed = true;
      conditions.push_back(std::move(next));
    }
  }
  if (!found) {
    changed = true;
    conditions.push_back(std::move(wanted));
  }
  if (!changed) return std::nullopt;
  update["conditions"] = std::move(conditions);
  return update;
}

}  // namespace vscaler::recommender

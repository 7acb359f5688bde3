// QuotaCache: ResourceQuota headroom per namespace, for the pod admission hook.
#include "controller/quota_cache.h"

#include <algorithm>

#include "kube/object_meta.h"
#include "recommender/desired.h"

namespace vscaler::controller {

namespace {

using kube::Quantity;
using recommender::PodTotals;
using recommender::ResourceMap;

/// Keeps the smaller of `into[resource]` and `value`.
void keep_least(ResourceMap& into, const std::string& resource, const Quantity& value) {
  auto [it, inserted] = into.emplace(resource, value);
  if (!inserted && value < it->second) it->second = value;
}

bool same(const ResourceMap& a, const ResourceMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [key, value] : a) {
    auto it = b.find(key);
    if (it == b.end() || it->second.nanos() != value.nanos()) return false;
  }
  return true;
}

}  // namespace

bool quota_headroom(const nlohmann::json& quota, PodTotals& out) {
  const nlohmann::json* hard = kube::find_path(quota, {"status", "hard"});
  if (hard == nullptr || !hard->is_object()) return true;  // not yet counted: nothing to cap by
  const nlohmann::json* used = kube::find_path(quota, {"status", "used"});
  struct Key {
    const char* name;
    bool limits;
    const char* resource;
  };
  static constexpr Key kKeys[] = {{"cpu", false, "cpu"},       {"requests.cpu", false, "cpu"},
                                  {"memory", false, "memory"}, {"requests.memory", false, "memory"},
                                  {"limits.cpu", true, "cpu"}, {"limits.memory", true, "memory"}};
  for (const Key& key : kKeys) {
    auto h = hard->find(key.name);
    if (h == hard->end()) continue;
    if (!h->is_string()) return false;
    auto hard_value = Quantity::parse(h->get_ref<const std::string&>());
    if (!hard_value.ok()) return false;
    kube::Int128 spent = 0;
    if (used != nullptr && used->is_object()) {
      auto u = used->find(key.name);
      if (u != used->end()) {
        if (!u->is_string()) return false;
        auto used_value = Quantity::parse(u->get_ref<const std::string&>());
        if (!used_value.ok()) return false;
        spent = used_value->nanos();
      }
    }
    keep_least(key.limits ? out.limits : out.requests, key.resource,
               Quantity::from_nanos(std::max<kube::Int128>(0, hard_value->nanos() - spent),
                                    hard_value->format()));
  }
  return true;
}

std::optional<PodTotals> QuotaCache::headroom(std::string_view ns) const {
  std::lock_guard lock(mutex_);
  auto it = headroom_.find(ns);
  if (it == headroom_.end()) return std::nullopt;
  auto spent = reserved_.find(ns);
  if (spent == reserved_.end()) return it->second;
  // What was reserved is spent as a pod's growth from nothing would be.
  return recommender::spend(it->second, PodTotals{}, spent->second);
}

void QuotaCache::reserve(std::string_view ns, const PodTotals& totals) {
  std::lock_guard lock(mutex_);
  auto bounded = headroom_.find(ns);
  if (bounded == headroom_.end()) return;  // no quota: nothing to keep count of
  PodTotals& spent = reserved_[std::string(ns)];
  for (bool limits : {false, true}) {
    const ResourceMap& room = limits ? bounded->second.limits : bounded->second.requests;
    ResourceMap& into = limits ? spent.limits : spent.requests;
    for (const auto& [resource, value] : limits ? totals.limits : totals.requests) {
      // Only what a quota bounds is counted, and never past its headroom: beyond it nothing is
      // left either way, and the sum of a review's values (any client may send one: DESIGN "Who
      // may talk to vscaler") near the quantities' limit must not overflow.
      auto cap = room.find(resource);
      if (cap == room.end()) continue;
      const kube::Int128 limit = cap->second.nanos();
      const kube::Int128 add = std::clamp<kube::Int128>(value.nanos(), 0, limit);
      auto [it, inserted] = into.emplace(resource, Quantity::from_nanos(add, value.format()));
      if (!inserted) {
        const kube::Int128 held = it->second.nanos();
        it->second =
            Quantity::from_nanos(held >= limit - add ? limit : held + add, it->second.format());
      }
    }
  }
}

void QuotaCache::reserve_spent(std::string_view ns, const PodTotals& before,
                               const PodTotals& after) {
  PodTotals spent;
  for (bool limits : {false, true}) {
    const ResourceMap& now = limits ? after.limits : after.requests;
    for (const auto& [resource, was] : limits ? before.limits : before.requests) {
      auto left = now.find(resource);
      if (left == now.end() || left->second.nanos() >= was.nanos()) continue;
      (limits ? spent.limits : spent.requests)
          .emplace(resource, Quantity::from_nanos(was.nanos() - left->second.nanos()));
    }
  }
  if (!spent.requests.empty() || !spent.limits.empty()) reserve(ns, spent);
}

int QuotaCache::rebuild(const std::vector<std::shared_ptr<const nlohmann::json>>& quotas,
                        std::vector<std::string>* changed) {
  Map next;
  std::map<std::string, bool, std::less<>> unreadable;
  for (const auto& quota : quotas) {
    const std::string ns = kube::meta_string(*quota, "namespace");
    if (ns.empty()) continue;
    PodTotals headroom;
    if (!quota_headroom(*quota, headroom)) {
      unreadable[ns] = true;
      continue;
    }
    if (headroom.requests.empty() && headroom.limits.empty()) continue;
    PodTotals& into = next[ns];
    for (const auto& [resource, value] : headroom.requests)
      keep_least(into.requests, resource, value);
    for (const auto& [resource, value] : headroom.limits) keep_least(into.limits, resource, value);
  }
  std::lock_guard lock(mutex_);
  if (changed != nullptr) {
    for (const auto& [ns, totals] : next) {
      auto old = headroom_.find(ns);
      if (old == headroom_.end() || !same(old->second.requests, totals.requests) ||
          !same(old->second.limits, totals.limits)) {
        changed->push_back(ns);
      }
    }
    for (const auto& [ns, totals] : headroom_) {
      if (next.find(ns) == next.end()) changed->push_back(ns);
    }
  }
  headroom_ = std::move(next);
  reserved_.clear();
  return static_cast<int>(unreadable.size());
}

}  // namespace vscaler::controller

// InPlaceStep: list, decide (pod_resize), send, count transitions, pick the re-check delay.
#include "controller/in_place_step.h"

#include <algorithm>

#include "base/log.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"
#include "recommender/desired.h"
#include "recommender/selector.h"

namespace vscaler::controller {
namespace {

using nlohmann::json;

constexpr std::string_view kInPlaceLogger = "in-place";

/// The metric result a pod entering `state` counts as; nullptr: none.
const char* entered(PodResizeState state) {
  switch (state) {
    case PodResizeState::kDeferred:
      return "deferred";
    case PodResizeState::kInfeasible:
      return "infeasible";
    case PodResizeState::kError:
      return "error";
    default:
      return nullptr;
  }
}

/// The restarts of the containers of the pod with `uid` among `pods`, summed (0: not found).
std::int64_t restarts_of(const std::vector<json>& pods, const std::string& uid) {
  for (const json& pod : pods) {
    if (kube::meta_string(pod, "uid") != uid) continue;
    std::int64_t sum = 0;
    const json* statuses = kube::find_path(pod, {"status", "containerStatuses"});
    if (statuses == nullptr || !statuses->is_array()) return 0;
    for (const json& status : *statuses) {
      auto count = status.find("restartCount");
      if (count != status.end() && count->is_number_integer()) sum += count->get<std::int64_t>();
    }
    return sum;
  }
  return 0;
}

/// How many pods `workload` asks for: spec.replicas (Deployment, StatefulSet; 1 when unset), a
/// DaemonSet's status.desiredNumberScheduled.
std::size_t wanted_pods(const json& workload) {
  const json* spec = kube::find_path(workload, {"spec"});
  if (spec == nullptr || !spec->is_object()) return 0;
  const json* count = kube::find_path(workload, {"spec", "replicas"});
  if (count == nullptr) {
    if (kube::string_at(workload, {"kind"}) == "DaemonSet") {
      count = kube::find_path(workload, {"status", "desiredNumberScheduled"});
    } else {
      return 1;
    }
  }
  if (count == nullptr || !count->is_number_integer()) return 0;
  const auto value = count->get<std::int64_t>();
  return value > 0 ? static_cast<std::size_t>(value) : 0;
}

}  // namespace

InPlaceStep::Refusal InPlaceStep::refusal_of(const kube::ApiError& error, const json& patch,
                                             recommender::TimePoint now) {
  Refusal refusal;
  refusal.patch = patch;
  refusal.at = now;
  refusal.message = "the API server refused the resize: " + error.to_string();
  // The node's room (the API server's PodResizeValidator: cause NodeCapacity, "node didn't
  // have enough allocatable resources"), or a feature it lacks (pod-level resources): a
  // DaemonSet's pod, recreated on the same node, would meet the same refusal.
  const auto& causes = error.causes;
  const std::string& message = refusal.message;
  refusal.node_capacity =
      std::any_of(causes.begin(), causes.end(),
                  [](const kube::StatusCause& cause) { return cause.type == "NodeCapacity"; }) ||
      message.find("NodeCapacity") != std::string::npos ||
      message.find("enough allocatable resources") != std::string::npos ||
      message.find("not available on node") != std::string::npos;
  // ResourceQuota admission: "exceeded quota"; LimitRanger: "maximum ... usage per Container".
  refusal.resource_quota = message.find("exceeded quota") != std::string::npos;
  refusal.quota = refusal.resource_quota ||
                  message.find("usage per Container") != std::string::npos ||
                  message.find("usage per Pod") != std::string::npos;
  return refusal;
}

void InPlaceStep::report_refusal(const Refusal& refusal, PodResize& pod, InPlacePlan& plan) {
  pod.state = PodResizeState::kInfeasible;
  pod.message = refusal.message;
  pod.refused = true;
  pod.node_capacity = refusal.node_capacity;
  pod.quota = refusal.quota;
  --plan.in_progress;
  ++plan.pending;
}

kube::Result<std::vector<json>, kube::ApiError> list_target_pods(ReconcileApi& api,
                                                                 const api::Scaler& scaler,
                                                                 const json& workload) {
  const json* selector = kube::find_path(workload, {"spec", "selector"});
  auto query = selector ? recommender::label_selector_query(*selector)
                        : kube::Result<std::string>(kube::fail(std::string("no spec.selector")));
  if (!query.ok()) {
    kube::ApiError error;
    error.message = scaler.target.kind + " " + scaler.target.name + ": " + query.error();
    return kube::fail(std::move(error));
  }
  auto listed = api.list_pods(scaler.ns, *query);
  if (!listed.ok()) return kube::fail(std::move(listed).error());
  // The selector's pods that are this workload's (another workload's pods may match it).
  std::vector<json> pods;
  for (json& pod : (*listed)["items"]) {
    kube::PodWorkload owner = kube::workload_of_pod(pod);
    if (owner.kind == scaler.target.kind && owner.name == scaler.target.name) {
      pods.push_back(std::move(pod));
    }
  }
  return pods;
}

kube::Result<InPlaceResult, kube::ApiError> InPlaceStep::run(
    const api::Scaler& scaler, const json& workload,
    const std::vector<recommender::ContainerRecommendation>& recommendations,
    const recommender::LimitRangeItem* limit_range,
    const std::optional<recommender::PodTotals>& quota_headroom, bool may_write,
    recommender::TimePoint now) {
  auto pods = list_target_pods(api_, scaler, workload);
  if (!pods.ok()) return kube::fail(std::move(pods).error());
  return run_listed(scaler, workload, *pods, recommendations, limit_range, quota_headroom,
                    may_write, now);
}

InPlaceResult InPlaceStep::run_listed(
    const api::Scaler& scaler, const json& workload, const std::vector<json>& pods,
    const std::vector<recommender::ContainerRecommendation>& recommendations,
    const recommender::LimitRangeItem* limit_range,
    const std::optional<recommender::PodTotals>& quota_headroom, bool may_write,
    recommender::TimePoint now) {
  InPlaceResult result;
  std::map<std::string, recommender::TimePoint> resized_at;
  std::map<std::string, std::int64_t> sent;
  std::map<std::string, Refusal> refused;
  std::map<std::string, FailedCall> failed_calls;
  {
    std::lock_guard lock(mutex_);
    if (auto found = memory_.find(scaler.key()); found != memory_.end()) {
      resized_at = found->second.resized_at;
      sent = found->second.sent;
      refused = found->second.refused;
      failed_calls = found->second.failed_calls;
    }
  }
  // The API server refused this very patch a moment ago: it would refuse it again. Sent again
  // when the wanted values change, or kRefusedResizeRetry later (the node's room and the quota's
  // change as other pods come and go); a quota's or LimitRange's refusal also as soon as the
  // namespace's headroom or LimitRange read here changes.
  const std::optional<recommender::LimitRangeItem> namespace_limits =
      limit_range != nullptr ? std::optional(*limit_range) : std::nullopt;
  auto refused_recently = [&](const PodResize& pod) {
    auto last = refused.find(pod.uid);
    if (last == refused.end() || last->second.patch != pod.patch ||
        now >= last->second.at + kRefusedResizeRetry) {
      return false;
    }
    const Refusal& refusal = last->second;
    if (!refusal.quota) return true;
    if (refusal.limit_range != namespace_limits) return false;
    // A ResourceQuota refused it while this process knew of no quota there (its list lags the
    // API server's by up to a period): what it knew then says nothing of what changed since, so
    // the patch goes again at each re-check, as before any hold, until a refusal finds a quota
    // known.
    if (refusal.resource_quota && !refusal.quota_headroom) return false;
    return !recommender::grew(refusal.quota_headroom, quota_headroom);
  };
  // Its last call failed a moment ago (an overloaded API server, say): the same patch is still
  // due, counted in flight, and sent again once the wait is over, not at every re-check before.
  // Other values (a new fixed value, a quick OOM) go at once.
  auto failed_recently = [&](const PodResize& pod) {
    auto failed = failed_calls.find(pod.uid);
    return failed != failed_calls.end() && failed->second.patch == pod.patch &&
           now < failed->second.retry_at;
  };
  InPlaceRules rules = rules_;
  rules.now = now;
  // Applied before the quota is shared: a pod held back leaves its share to the pods after it.
  rules.resized_at = &resized_at;
  rules.waits = [&](const PodResize& pod) { return refused_recently(pod) || failed_recently(pod); };
  result.plan = plan_in_place(scaler, pods, recommendations, limit_range, rules, quota_headroom);
  // Pods the workload asks for that are not listed yet (created a moment ago, or about to be):
  // waited for as starting ones.
  if (std::size_t wanted = wanted_pods(workload);
      wanted > result.plan.total() + result.plan.starting) {
    result.plan.starting = wanted - result.plan.total();
  }
  for (PodResize& pod : result.plan.pods) {
    if (pod.state != PodResizeState::kDue) continue;
    if (!may_write) continue;
    if (still_leading_ && !still_leading_()) {
      may_write = false;  // the lease went while this step ran: nothing more is sent
      continue;
    }
    if (refused_recently(pod)) {
      const Refusal& last = refused.at(pod.uid);
      report_refusal(last, pod, result.plan);
      pod.message += std::string(last.quota ? "; sent again when the values, the namespace's quota "
                                              "headroom or its LimitRange change, or at "
                                            : "; sent again when the values change, or at ") +
                     recommender::format_rfc3339(last.at + kRefusedResizeRetry);
      continue;
    }
    refused.erase(pod.uid);
    if (failed_recently(pod)) {
      pod.message = failed_calls.at(pod.uid).message;
      continue;
    }
    failed_calls.erase(pod.uid);
    auto resized = api_.resize_pod(scaler.ns, pod.name, pod.patch);
    if (resized.ok()) {
      ++result.requested;
      metrics_.on_pod_resize("requested");
      log::info(kInPlaceLogger, "resizing a pod in place",
                {{"scaler", scaler.key()}, {"pod", pod.name}, {"why", pod.message}});
      pod.state = PodResizeState::kInProgress;
      if (pod.recommended_due) resized_at[pod.uid] = now;
      sent[pod.uid] = restarts_of(pods, pod.uid);
      continue;
    }
    const kube::ApiError& error = resized.error();
    const ResizeFailure failure = classify_resize_failure(error, pod.name);
    if (failure == ResizeFailure::kGone) {
      // Deleted since it was listed: its replacement is sized at admission.
      pod.message = "the pod is gone";
      continue;
    }
    if (failure == ResizeFailure::kRetry) {
      // Not a refusal: an API server overloaded (429, 5xx), restarting, or too slow, or the pod
      // changed meanwhile. The pod stays due (counted in flight) and is sent again at the first
      // re-check after kCallFailedRecheck (or the answer's Retry-After); never a reason to evict
      // it.
      const recommender::TimePoint retry_at = now + failed_call_wait(error);
      pod.message = "the resize call failed, sent again at " +
                    recommender::format_rfc3339(retry_at) + ": " + error.to_string();
      failed_calls[pod.uid] = FailedCall{retry_at, pod.message, pod.patch};
      log::warn(kInPlaceLogger, "a pod resize call failed",
                {{"scaler", scaler.key()}, {"pod", pod.name}, {"error", error.to_string()}});
      continue;
    }
    // 403 (NodeCapacity, a feature the node lacks, the quota, the LimitRange), 422 (a QoS class
    // change, a node without resize), or what no retry mends (an API server without
    // pods/resize; 400, 415): reported on the scaler.
    Refusal refusal = refusal_of(error, pod.patch, now);
    report_refusal(refusal, pod, result.plan);
    log::warn(kInPlaceLogger, "a pod resize was refused",
              {{"scaler", scaler.key()}, {"pod", pod.name}, {"error", pod.message}});
    // A quota's or LimitRange's refusal is held back only while the namespace stays as it was:
    // its objects change without the pod (a quota raised or deleted, pods gone), and each
    // re-check plans within the headroom it reads.
    if (refusal.quota) {
      refusal.quota_headroom = quota_headroom;
      refusal.limit_range = namespace_limits;
    }
    refused[pod.uid] = std::move(refusal);
  }

  // In progress counts too: a resize in progress for over an hour is a reason to recreate.
  if (scaler.update_mode == api::UpdateMode::kInPlaceOrRecreate && may_write &&
      (result.plan.pending > 0 || result.plan.in_progress > 0)) {
    maybe_evict(scaler, pods, now, result);
  }

  std::lock_guard lock(mutex_);
  auto [slot, fresh] = memory_.try_emplace(scaler.key());
  Memory& memory = slot->second;
  if (fresh) {
    // Counted by an earlier process (or replica) and kept in status: carried on, not reset.
    const json status = scaler.status();
    for (auto [field, count] :
         {std::pair{"evicted", &memory.evicted}, {"restarted", &memory.restarted}}) {
      const json* value = kube::find_path(status, {"pods", field});
      if (value != nullptr && value->is_number_integer() && value->get<std::int64_t>() > 0) {
        *count = static_cast<std::size_t>(value->get<std::int64_t>());
      }
    }
  }
  memory.evicted += result.evicted;
  result.evicted = memory.evicted;
  std::map<std::string, PodResizeState> states;
  for (const PodResize& pod : result.plan.pods) {
    auto before = memory.pods.find(pod.uid);
    if (auto was = sent.find(pod.uid);
        pod.state == PodResizeState::kAtTarget && was != sent.end()) {
      metrics_.on_pod_resize("completed");
      if (std::int64_t now_restarts = restarts_of(pods, pod.uid); now_restarts > was->second) {
        memory.restarted += static_cast<std::size_t>(now_restarts - was->second);
        log::info(kInPlaceLogger, "the kubelet restarted containers for a resize (resizePolicy)",
                  {{"scaler", scaler.key()},
                   {"pod", pod.name},
                   {"restarts", std::to_string(now_restarts - was->second)}});
      }
      sent.erase(was);
    }
    // Counted by the leader, the replica that acts on it: not once per replica.
    if (const char* result_name = entered(pod.state);
        result_name != nullptr && may_write &&
        (before == memory.pods.end() || before->second != pod.state)) {
      metrics_.on_pod_resize(result_name);
    }
    states.emplace(pod.uid, pod.state);
  }
  memory.pods = std::move(states);
  // Only pods still listed are remembered.
  std::erase_if(resized_at, [&](const auto& item) { return !memory.pods.contains(item.first); });
  memory.resized_at = std::move(resized_at);
  std::erase_if(sent, [&](const auto& item) { return !memory.pods.contains(item.first); });
  memory.sent = std::move(sent);
  std::erase_if(refused, [&](const auto& item) { return !memory.pods.contains(item.first); });
  memory.refused = std::move(refused);
  std::erase_if(failed_calls, [&](const auto& item) { return !memory.pods.contains(item.first); });
  memory.failed_calls = std::move(failed_calls);
  result.restarted = memory.restarted;
  // Re-checked while any pod is not done: in flight, or waiting on its node (a Deferred resize
  // the kubelet may still take up, an Infeasible one the scaler's next value may fix) — from 1 s,
  // doubling, to 30 s. Once every pod carries the values, nothing polls.
  if (result.plan.in_progress == 0 && result.plan.pending > 0 &&
      result.plan.pending == result.plan.held && result.plan.starting == 0) {
    // Only held back by the rate limit: look again when the first of them may go.
    auto first = recommender::TimePoint::max();
    for (const PodResize& pod : result.plan.pods) {
      if (pod.state == PodResizeState::kHeld && pod.since) {
        first = std::min(first, *pod.since + rules.min_update_interval);
      }
    }
    result.recheck_after = std::max<std::chrono::milliseconds>(
        std::chrono::seconds(1),
        std::chrono::duration_cast<std::chrono::milliseconds>(first - now));
    memory.rounds = 0;
  } else if (result.plan.in_progress > 0 || result.plan.pending > 0 || result.plan.starting > 0) {
    result.recheck_after = std::min<std::chrono::milliseconds>(
        std::chrono::seconds(30), std::chrono::seconds(1 << std::min(memory.rounds, 5)));
    ++memory.rounds;
    // A failed call asked for a wait (kCallFailedRecheck, or a Retry-After): looking sooner would
    // only list the pods again on an API server that is struggling.
    for (const PodResize& pod : result.plan.pods) {
      auto failed = memory.failed_calls.find(pod.uid);
      if (pod.state != PodResizeState::kDue || failed == memory.failed_calls.end()) continue;
      result.recheck_after =
          std::max(result.recheck_after,
                   std::chrono::ceil<std::chrono::milliseconds>(failed->second.retry_at - now));
    }
  } else {
    memory.rounds = 0;
  }
  return result;
}

void InPlaceStep::maybe_evict(const api::Scaler& scaler, const std::vector<json>& pods,
                              recommender::TimePoint now, InPlaceResult& result) {
  // One pod of a workload at a time, and never below 2 live pods (VPA's --min-replicas): a
  // workload with a pod starting, terminating or not running waits for it. `starting` also counts
  // the pods its controller has yet to create (an evicted pod's replacement, between the two)
  // and those the boost step holds while they start, neither of which is in `pods`.
  if (result.plan.starting > 0) return;
  // Pods that have finished (Failed: evicted by the kubelet under node pressure, say; or
  // Succeeded) are not the workload's any more: its controller replaced them, and they stay
  // listed until the pod garbage collector removes them, which may be never.
  std::size_t live = 0;
  std::size_t current = 0;
  for (const json& pod : pods) {
    const std::string phase = kube::string_at(pod, {"status", "phase"});
    const bool deleting = !kube::string_at(pod, {"metadata", "deletionTimestamp"}).empty();
    // A pod being deleted counts until it is gone, whatever its phase (the kubelet gives a
    // terminating pod a terminal phase before the object goes).
    if ((phase == "Failed" || phase == "Succeeded") && !deleting) continue;
    ++current;
    if (!deleting && phase == "Running") ++live;
  }
  if (live != current || live < 2) return;
  for (PodResize& pod : result.plan.pods) {
    if (!evictable(pod, scaler.target.kind, now)) continue;
    if (still_leading_ && !still_leading_()) return;
    auto evicted = api_.evict_pod(scaler.ns, pod.name, pod.uid);
    if (evicted.ok()) {
      metrics_.on_pod_eviction("evicted");
      ++result.evicted;
      std::string message = "evicted pod " + pod.name + " (resize " +
                            std::string(to_string(pod.state)) +
                            (pod.message.empty() ? "" : ": " + pod.message) +
                            "); its replacement gets the values at creation";
      api_.record_event(scaler, false, "Evicted", message);
      log::info(kInPlaceLogger, "evicted a pod that could not be resized",
                {{"scaler", scaler.key()},
                 {"pod", pod.name},
                 {"state", std::string(to_string(pod.state))}});
    } else if (kube::is_too_many_requests(evicted.error())) {
      metrics_.on_pod_eviction("blocked");  // a PodDisruptionBudget: tried again later
      pod.message += (pod.message.empty() ? "" : "; ") +
                     std::string("eviction blocked by a PodDisruptionBudget, retried");
    } else if (kube::is_conflict(evicted.error())) {
      // The uid precondition: the pod by that name is a newer one, created since the list (and
      // sized at its admission). The next pass sees it. (Such a race is rare: the list is
      // milliseconds old; a GET before each eviction would only narrow it.)
      log::info(kInPlaceLogger, "not evicted: the pod was replaced since it was listed",
                {{"scaler", scaler.key()}, {"pod", pod.name}});
    } else {
      log::warn(
          kInPlaceLogger, "an eviction failed",
          {{"scaler", scaler.key()}, {"pod", pod.name}, {"error", evicted.error().to_string()}});
    }
    return;  // one at a time
  }
}

void InPlaceStep::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  memory_.erase(key);
}

}  // namespace vscaler::controller

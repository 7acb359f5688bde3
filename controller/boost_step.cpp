// BoostStep: per boosted pod, Ready + durationSeconds -> pods/resize back to the recorded base.
#include "controller/boost_step.h"

#include <algorithm>

#include "base/log.h"
#include "controller/pod_resize.h"
#include "kube/object_meta.h"

namespace vscaler::controller {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr std::string_view kBoostLogger = "startup-boost";

/// When the pod's Ready condition turned True; nullopt while it is not Ready.
std::optional<recommender::TimePoint> ready_since(const json& pod) {
  const json* conditions = kube::find_path(pod, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return std::nullopt;
  for (const json& condition : *conditions) {
    if (!condition.is_object() || kube::string_at(condition, {"type"}) != "Ready") continue;
    if (kube::string_at(condition, {"status"}) != "True") return std::nullopt;
    auto parsed = recommender::parse_rfc3339(kube::string_at(condition, {"lastTransitionTime"}));
    if (!parsed.ok()) return std::nullopt;
    return *parsed;
  }
  return std::nullopt;
}

/// The cpu of container `name` in the pod's list at `section`.`list`; nullopt when the list has
/// no such container, or when it has no resources and `reported` (a status the kubelet did not
/// write); without `reported`, no resources means none set.
std::optional<api::CpuValues> cpu_of(const json& pod, const char* section, const char* list,
                                     const std::string& name, bool reported) {
  const json* containers = kube::find_path(pod, {section, list});
  if (containers == nullptr || !containers->is_array()) return std::nullopt;
  for (const json& container : *containers) {
    if (kube::string_at(container, {"name"}) != name) continue;
    const json* resources = kube::find_path(container, {"resources"});
    if (resources == nullptr && reported) return std::nullopt;
    return api::cpu_values_of(resources ? *resources : json::object());
  }
  return std::nullopt;
}

std::optional<api::CpuValues> spec_cpu(const json& pod, const std::string& name) {
  return cpu_of(pod, "spec", "containers", name, false);
}

std::optional<api::CpuValues> applied_cpu(const json& pod, const std::string& name) {
  return cpu_of(pod, "status", "containerStatuses", name, true);
}

bool is_stuck(BoostState state) {
  return state == BoostState::kDeferred || state == BoostState::kInfeasible ||
         state == BoostState::kError || state == BoostState::kRefused;
}

/// The metric result of a pod entering `state`; nullptr: none.
const char* entered(BoostState state) {
  switch (state) {
    case BoostState::kInfeasible:
    case BoostState::kRefused:
      return "infeasible";
    case BoostState::kError:
      return "error";
    default:
      return nullptr;
  }
}

}  // namespace

metrics::CounterFamily& startup_boost_counter(metrics::Registry& registry) {
  auto& family = registry.counter(
      "vscaler_startup_boosts_total",
      "Startup boosts, by result (boosted, skipped, ended, infeasible, error)", {"result"});
  for (const char* result : {"boosted", "skipped", "ended", "infeasible", "error"}) {
    family.with({result});
  }
  return family;
}

std::string_view to_string(BoostState state) {
  switch (state) {
    case BoostState::kStarting:
      return "Starting";
    case BoostState::kHolding:
      return "Holding";
    case BoostState::kDue:
      return "Due";
    case BoostState::kEnding:
      return "Ending";
    case BoostState::kDeferred:
      return "Deferred";
    case BoostState::kInfeasible:
      return "Infeasible";
    case BoostState::kError:
      return "Error";
    case BoostState::kRefused:
      return "Refused";
    case BoostState::kEnded:
      return "Ended";
  }
  return "Ended";
}

std::vector<PodBoost> plan_unboost(const std::vector<json>& pods, recommender::TimePoint now) {
  std::vector<PodBoost> out;
  for (const json& pod : pods) {
    if (!kube::string_at(pod, {"metadata", "deletionTimestamp"}).empty()) continue;
    // Finished (Failed, Succeeded): nothing runs to resize, whatever its spec says.
    const std::string phase = kube::string_at(pod, {"status", "phase"});
    if (phase == "Failed" || phase == "Succeeded") continue;
    auto record = api::boost_record_of(pod);
    if (!record) continue;
    // Admitted boosted; a resize since (the boost's own resize back, the in-place step's, a
    // person's) is recorded in managedFields as a write through pods/resize. A spec at the
    // boosted values after one was resized there: not a boost, whoever runs this step and
    // whatever it remembers. (Not metadata.generation: any change of the spec raises it, a
    // scheduling gate removed, an ephemeral container added, and the pod kept its boost.)
    const bool resized_since = kube::written_through(pod, "resize");
    PodBoost decision;
    decision.name = kube::meta_string(pod, "name");
    decision.uid = kube::meta_string(pod, "uid");
    std::vector<api::BoostedContainer> boosted;  // still carrying the boosted values
    std::vector<std::string> at_base;            // back at their base
    bool base_applied = true;                    // and the kubelet applied it to all of them
    bool elsewhere = false;                      // resized since to something else
    for (const auto& container : record->containers) {
      auto now_cpu = spec_cpu(pod, container.name);
      if (!now_cpu) continue;
      if (*now_cpu == container.boosted && !resized_since) {
        boosted.push_back(container);
      } else if (*now_cpu == container.base) {
        at_base.push_back(container.name);
        base_applied = base_applied && applied_cpu(pod, container.name) == container.base;
      } else {
        elsewhere = true;
      }
    }
    if (!boosted.empty()) {
      auto ready = ready_since(pod);
      if (kube::string_at(pod, {"status", "phase"}) != "Running" || !ready) {
        decision.state = BoostState::kStarting;
        decision.message = "boosted until it is Ready";
      } else if (auto due = *ready + std::chrono::seconds(record->duration_seconds); now < due) {
        decision.state = BoostState::kHolding;
        decision.due_at = due;
        decision.message = "Ready; boosted until " + recommender::format_rfc3339(due);
      } else {
        decision.state = BoostState::kDue;
        decision.patch = api::unboost_patch(boosted);
        decision.message = "Ready for " + std::to_string(record->duration_seconds) + " s";
      }
    } else if (!at_base.empty() && !elsewhere && base_applied) {
      // Put back, and the kubelet runs the base CPU: the boost is over, whatever else is in
      // flight (a later resize of its memory is the in-place step's, not a boost ending).
      decision.state = BoostState::kEnded;
    } else if (!at_base.empty() && !elsewhere) {
      // Put back: the kubelet's progress on that resize.
      ResizeProgress progress = resize_progress(pod, at_base);
      switch (progress.state) {
        case PodResizeState::kInProgress:
          decision.state = BoostState::kEnding;
          break;
        case PodResizeState::kDeferred:
          decision.state = BoostState::kDeferred;
          break;
        case PodResizeState::kInfeasible:
          decision.state = BoostState::kInfeasible;
          break;
        case PodResizeState::kError:
          decision.state = BoostState::kError;
          break;
        default:
          decision.state = BoostState::kEnded;
      }
      decision.message = progress.message;
    }
    out.push_back(std::move(decision));
  }
  return out;
}

json BoostResult::status() const {
  json out = {{"boosted", boosted}, {"ended", ended}, {"stuck", stuck}};
  std::string message;
  int shown = 0;
  for (const PodBoost& pod : pods) {
    if (!stuck || !is_stuck(pod.state) || shown == 3) continue;
    message += (shown++ == 0 ? "" : "; ") + pod.name + ": the resize back to its base is " +
               std::string(to_string(pod.state)) +
               (pod.message.empty() ? "" : " (" + pod.message + ")");
  }
  if (!message.empty()) {
    out["message"] = message + "; it keeps its boosted CPU meanwhile, retried, never evicted";
  } else if (boosted > 0) {
    out["message"] = std::to_string(boosted) + " pod(s) boosted while they start";
  }
  return out;
}

void BoostStep::admitted(const std::string& key, recommender::TimePoint now) {
  std::lock_guard lock(mutex_);
  memory_[key].admitted = now;
}

bool BoostStep::watching(const api::Scaler& scaler) const {
  {
    std::lock_guard lock(mutex_);
    auto found = memory_.find(scaler.key());
    if (found != memory_.end()) {
      for (const auto& [uid, state] : found->second.pods) {
        if (state != BoostState::kEnded) return true;
      }
      if (found->second.admitted) return true;
    }
  }
  return scaler.status_counts_boosted_pods();
}

BoostResult BoostStep::run(const api::Scaler& scaler, const std::vector<json>& pods, bool may_write,
                           recommender::TimePoint now) {
  BoostResult result;
  result.pods = plan_unboost(pods, now);
  const std::string key = scaler.key();
  // The step works on a copy of the scaler's memory, without the lock: its resizes and Events
  // are API calls, and the pod hook's admitted() takes the same lock on the admission path
  // (timeoutSeconds: 2). Workers run different keys, so only admitted() writes this key's
  // memory meanwhile: its field is merged back below.
  Memory memory;
  {
    std::lock_guard lock(mutex_);
    if (auto found = memory_.find(key); found != memory_.end()) memory = found->second;
  }
  if (!memory.status_loaded) {
    // Counted by an earlier process (or replica) and kept in status: carried on, not reset
    // (also when admitted() made this key's memory first).
    memory.status_loaded = true;
    const json status = scaler.status();
    const json* ended = kube::find_path(status, {"startupBoost", "ended"});
    if (ended != nullptr && ended->is_number_integer() && ended->get<int64_t>() > 0) {
      memory.ended = static_cast<std::size_t>(ended->get<int64_t>());
    }
  }
  // A boost ends once: a pod seen ended is the in-place step's from then on, even when a later
  // resize gives it the CPU the boost once did (its annotation stays on the pod).
  for (PodBoost& pod : result.pods) {
    auto before = memory.pods.find(pod.uid);
    if (before == memory.pods.end() || before->second != BoostState::kEnded) continue;
    pod.state = BoostState::kEnded;
    pod.message.clear();
    pod.patch = nullptr;
    pod.due_at.reset();
  }
  std::map<std::string, BoostState> states;
  for (PodBoost& pod : result.pods) {
    if (pod.state == BoostState::kDue) {
      if (auto refused = memory.refused.find(pod.uid);
          refused != memory.refused.end() && now < refused->second + kRefusedResizeRetry) {
        pod.state = BoostState::kRefused;
        pod.message = memory.refusals[pod.uid];
      } else if (auto failed = memory.failed_calls.find(pod.uid);
                 failed != memory.failed_calls.end() && now < failed->second.first) {
        // Its last call failed: still due, sent again once the wait is over.
        pod.message = failed->second.second;
        pod.call_retry =
            std::max(std::chrono::seconds(1),
                     std::chrono::ceil<std::chrono::seconds>(failed->second.first - now));
      } else if (may_write && still_leading_ && !still_leading_()) {
        may_write = false;  // the lease went while this step ran: nothing more is sent
      } else if (may_write) {
        auto resized = api_.resize_pod(scaler.ns, pod.name, pod.patch);
        if (resized.ok()) {
          ++result.requested;
          memory.sent.insert(pod.uid);
          memory.refused.erase(pod.uid);
          memory.refusals.erase(pod.uid);
          memory.failed_calls.erase(pod.uid);
          pod.state = BoostState::kEnding;
          log::info(kBoostLogger, "ending a startup boost in place",
                    {{"scaler", key}, {"pod", pod.name}, {"why", pod.message}});
        } else {
          const kube::ApiError& error = resized.error();
          switch (classify_resize_failure(error, pod.name)) {
            case ResizeFailure::kGone:
              pod.message = "the pod is gone";  // deleted since it was listed
              break;
            case ResizeFailure::kRetry:
              // Not a refusal: an API server overloaded (429, 5xx), restarting, or too slow, or
              // the pod changed meanwhile. The pod stays due and is sent again after
              // kCallFailedRecheck (or the Retry-After), not held back kRefusedResizeRetry as a
              // refusal is.
              pod.message = "the resize call failed, sent again shortly: " + error.to_string();
              pod.call_retry = failed_call_wait(error);
              memory.failed_calls[pod.uid] = {now + pod.call_retry, pod.message};
              log::warn(kBoostLogger, "a resize back from a startup boost failed",
                        {{"scaler", key}, {"pod", pod.name}, {"error", error.to_string()}});
              break;
            case ResizeFailure::kRefused:
              // 403 (the node's room, a quota, a LimitRange), 422, or anything else a retry will
              // not change (400, 415, an API server without pods/resize): the same patch is held
              // back and reported.
              pod.state = BoostState::kRefused;
              pod.message = "the API server refused it: " + error.to_string();
              memory.refused[pod.uid] = now;
              memory.refusals[pod.uid] = pod.message;
              log::warn(kBoostLogger, "the resize back from a startup boost was refused",
                        {{"scaler", key}, {"pod", pod.name}, {"error", pod.message}});
              break;
          }
        }
      }
    }
    auto before = memory.pods.find(pod.uid);
    const bool changed = before == memory.pods.end() || before->second != pod.state;
    if (pod.state == BoostState::kEnded && memory.sent.erase(pod.uid) > 0) {
      ++memory.ended;
      metrics_.on_startup_boost("ended");
    }
    // Counted and reported by the leader, the replica that acts on it: not once per replica.
    if (const char* name = entered(pod.state); name != nullptr && changed && may_write) {
      metrics_.on_startup_boost(name);
      api_.record_event(scaler, true, "StartupBoostStuck",
                        "pod " + pod.name + ": the resize back to its base is " +
                            std::string(to_string(pod.state)) +
                            (pod.message.empty() ? "" : " (" + pod.message + ")") +
                            "; it keeps its boosted CPU meanwhile, never evicted");
    }
    if (pod.state != BoostState::kEnded) {
      ++result.boosted;
      result.boosted_uids.insert(pod.uid);
      if (is_stuck(pod.state)) ++result.stuck;
    }
    states.emplace(pod.uid, pod.state);
  }
  memory.pods = std::move(states);
  std::erase_if(memory.sent, [&](const std::string& uid) { return !memory.pods.contains(uid); });
  std::erase_if(memory.refused,
                [&](const auto& item) { return !memory.pods.contains(item.first); });
  std::erase_if(memory.refusals,
                [&](const auto& item) { return !memory.pods.contains(item.first); });
  std::erase_if(memory.failed_calls,
                [&](const auto& item) { return !memory.pods.contains(item.first); });
  result.ended = memory.ended;

  // When to look again: the first boost due; soon while a pod starts or a resize back is in
  // flight; slowly while one waits on its node or was refused.
  milliseconds next = milliseconds::max();
  auto at_most = [&next](milliseconds delay) { next = std::min(next, delay); };
  bool starting = false;
  for (const PodBoost& pod : result.pods) {
    switch (pod.state) {
      case BoostState::kStarting:
        starting = true;
        break;
      case BoostState::kHolding:
        at_most(std::max(milliseconds(100),
                         std::chrono::duration_cast<milliseconds>(*pod.due_at - now)));
        break;
      case BoostState::kDue:  // not the leader (the leader sends it), or its call failed
        at_most(pod.call_retry.count() > 0 ? milliseconds(pod.call_retry) : milliseconds(1000));
        break;
      case BoostState::kEnding:
        at_most(std::chrono::seconds(1));
        break;
      case BoostState::kDeferred:
        at_most(std::chrono::seconds(10));
        break;
      case BoostState::kInfeasible:
      case BoostState::kError:
      case BoostState::kRefused:
        at_most(std::chrono::seconds(60));
        break;
      case BoostState::kEnded:
        break;
    }
  }
  std::lock_guard lock(mutex_);
  Memory& stored = memory_[key];
  if (stored.admitted && (!memory.admitted || *memory.admitted < *stored.admitted)) {
    memory.admitted = stored.admitted;  // admitted() ran while the step did
  }
  // A pod admitted boosted a moment ago may not be listed yet (admission runs before it is
  // stored): looked for every second for 30 s.
  if (memory.admitted && now - *memory.admitted < std::chrono::seconds(30)) {
    at_most(std::chrono::seconds(1));
  } else {
    memory.admitted.reset();
  }
  if (starting) {
    // Not Ready yet: from 1 s, doubling, to 8 s (readiness is not watched).
    at_most(std::chrono::seconds(1 << std::min(memory.rounds, 3)));
    ++memory.rounds;
  } else {
    memory.rounds = 0;
  }
  result.recheck_after = next == milliseconds::max() ? milliseconds(0) : next;
  if (result.boosted == 0 && !memory.admitted && memory.ended == 0) {
    memory_.erase(key);
  } else {
    stored = std::move(memory);
  }
  return result;
}

void BoostStep::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  memory_.erase(key);
}

}  // namespace vscaler::controller

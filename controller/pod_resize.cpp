// plan_in_place: per running pod, the shared plan on its own spec, then its resize progress.
#include "controller/pod_resize.h"

#include <algorithm>
#include <cmath>

#include "api/resources.h"
#include "kube/object_meta.h"
#include "recommender/desired.h"
#include "recommender/update_rule.h"

namespace vscaler::controller {
namespace {

using nlohmann::json;

/// The kubelet's resize conditions of a pod, and whether it has seen the pod's last spec.
struct ResizeConditions {
  const json* pending = nullptr;      ///< PodResizePending
  const json* in_progress = nullptr;  ///< PodResizeInProgress
  std::string in_progress_reason;     ///< its reason ("Error" when the runtime failed it)
  /// metadata.generation ahead of status.observedGeneration: the kubelet has not looked yet.
  bool unseen = false;
};

ResizeConditions resize_conditions(const json& pod) {
  ResizeConditions out;
  const int64_t generation = kube::meta_generation(pod);
  const json* observed = kube::find_path(pod, {"status", "observedGeneration"});
  out.unseen = generation > 0 && observed != nullptr && observed->is_number_integer() &&
               observed->get<int64_t>() < generation;
  const json* conditions = kube::find_path(pod, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return out;
  for (const json& condition : *conditions) {
    if (!condition.is_object() || kube::string_at(condition, {"status"}) != "True") continue;
    const std::string type = kube::string_at(condition, {"type"});
    if (type == "PodResizePending") out.pending = &condition;
    if (type == "PodResizeInProgress") out.in_progress = &condition;
  }
  if (out.in_progress != nullptr) {
    out.in_progress_reason = kube::string_at(*out.in_progress, {"reason"});
  }
  return out;
}

/// A condition's lastTransitionTime; nullopt when absent or unreadable.
std::optional<recommender::TimePoint> transition_time(const json& condition) {
  auto parsed = recommender::parse_rfc3339(kube::string_at(condition, {"lastTransitionTime"}));
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

/// "12 h", "90 min" or "30 s": a rule's threshold as a person reads it.
std::string duration_words(std::chrono::milliseconds d) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (seconds % 3600 == 0) return std::to_string(seconds / 3600) + " h";
  if (seconds % 60 == 0) return std::to_string(seconds / 60) + " min";
  return std::to_string(seconds) + " s";
}

/// The newest of the containers' last terminations that were an OOM kill within rules.quick_oom
/// of their start (VPA's quick-OOM rule): why ("container app was OOM-killed 120 s after it
/// started"), and when.
struct QuickOom {
  std::string reason;
  recommender::TimePoint at;
};

std::optional<QuickOom> quick_oom_of(const json& pod, const InPlaceRules& rules) {
  const json* statuses = kube::find_path(pod, {"status", "containerStatuses"});
  if (statuses == nullptr || !statuses->is_array()) return std::nullopt;
  std::optional<QuickOom> latest;  // of several containers', the newest decides
  for (const json& status : *statuses) {
    const json* terminated = kube::find_path(status, {"lastState", "terminated"});
    if (terminated == nullptr || kube::string_at(*terminated, {"reason"}) != "OOMKilled") continue;
    auto started = recommender::parse_rfc3339(kube::string_at(*terminated, {"startedAt"}));
    auto finished = recommender::parse_rfc3339(kube::string_at(*terminated, {"finishedAt"}));
    if (!started.ok() || !finished.ok() || *finished - *started >= rules.quick_oom) continue;
    if (latest && latest->at >= *finished) continue;
    latest = QuickOom{
        "container " + kube::string_at(status, {"name"}) + " was OOM-killed " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(*finished - *started).count()) +
            " s after it started",
        *finished};
  }
  return latest;
}

/// VPA's rule for long-lived pods: running longer than rules.long_lived, and for some resource
/// the pod's controlled requests summed are more than rules.long_lived_diff away from the
/// targets summed (relative to the requests). The reason, or "" when it does not apply.
std::string long_lived_reason(const json& pod,
                              const std::vector<recommender::AppliedContainer>& applied,
                              const InPlaceRules& rules) {
  auto started = recommender::parse_rfc3339(kube::string_at(pod, {"status", "startTime"}));
  if (!started.ok() || rules.now - *started < rules.long_lived) return {};
  for (const char* resource : {recommender::kCpu, recommender::kMemory}) {
    double requested = 0;
    double target = 0;
    for (const auto& container : applied) {
      if (container.recommendation == nullptr || !container.policy.controls(resource)) continue;
      const auto* request = recommender::find(container.current.requests, resource);
      const auto* wanted =
          container.next ? recommender::find(container.next->requests, resource) : nullptr;
      if (request == nullptr || wanted == nullptr) continue;
      requested += request->to_double();
      target += wanted->to_double();
    }
    if (requested > 0 && std::abs(target - requested) / requested > rules.long_lived_diff) {
      return "the pod has run over " + duration_words(rules.long_lived) + " with its " + resource +
             " requests more than " +
             std::to_string(static_cast<int>(rules.long_lived_diff * 100)) + " % from the target";
    }
  }
  return {};
}

/// True when some named container's cpu/memory in the pod's status (what the kubelet applied)
/// differs from its spec (what was asked): a resize not carried out yet.
bool status_behind_spec(const json& pod, const std::vector<std::string>& names) {
  const json* statuses = kube::find_path(pod, {"status", "containerStatuses"});
  const json* specs = kube::find_path(pod, {"spec", "containers"});
  if (statuses == nullptr || !statuses->is_array() || specs == nullptr || !specs->is_array()) {
    return false;
  }
  for (const std::string& name : names) {
    const json* applied = nullptr;
    for (const json& status : *statuses) {
      if (kube::string_at(status, {"name"}) == name)
        applied = kube::find_path(status, {"resources"});
    }
    // Not reported (a node without in-place resize: the API server refuses a resize of such a
    // pod, and that refusal is what gets reported, not a wait that never ends).
    if (applied == nullptr) continue;
    const json* asked = nullptr;
    for (const json& spec : *specs) {
      if (kube::string_at(spec, {"name"}) == name) asked = kube::find_path(spec, {"resources"});
    }
    // cpu/memory requests and limits compared by value (recommender::resources_of parses them).
    if (recommender::resources_of(asked ? *asked : json::object()) !=
        recommender::resources_of(*applied)) {
      return true;
    }
  }
  return false;
}

/// The names of the containers a plan matches.
std::vector<std::string> names_of(const api::ResourcePlan& plan) {
  std::vector<std::string> names;
  for (const auto& container : plan.containers) names.push_back(container.name);
  return names;
}

/// The resize patch: the keys the plan sets, of each changed container.
json resize_patch(const api::ResourcePlan& plan) {
  json containers = json::array();
  for (const auto& container : plan.containers) {
    if (container.changed) {
      containers.push_back(
          {{"name", container.name}, {"resources", api::resources_json(container.declared)}});
    }
  }
  json spec = {{"containers", std::move(containers)}};
  // Pod-level resources raised in the same resize (beta in 1.36, only on a node that declares
  // InPlacePodLevelResourcesVerticalScaling: the API server refuses it elsewhere, 403).
  if (plan.pod_resources_changed) spec["resources"] = plan.pod_resources;
  return {{"spec", std::move(spec)}};
}

/// "requests.cpu=100m, ..." of the plan's changed containers: why fixed values make a resize due.
std::string differing(const api::ResourcePlan& plan) {
  std::string out;
  for (const auto& container : plan.containers) {
    for (const auto& overridden : container.overridden) {
      out += (out.empty() ? "" : ", ") + container.name + " " + overridden;
    }
  }
  return out.empty() ? "the declared resources are not set" : "it carries " + out;
}

}  // namespace

std::string_view to_string(PodResizeState state) {
  switch (state) {
    case PodResizeState::kAtTarget:
      return "AtTarget";
    case PodResizeState::kDue:
      return "Due";
    case PodResizeState::kInProgress:
      return "InProgress";
    case PodResizeState::kDeferred:
      return "Deferred";
    case PodResizeState::kInfeasible:
      return "Infeasible";
    case PodResizeState::kError:
      return "Error";
    case PodResizeState::kInvalid:
      return "Invalid";
    case PodResizeState::kHeld:
      return "Held";
  }
  return "AtTarget";
}

ResizeProgress resize_progress(const json& pod, const std::vector<std::string>& containers) {
  ResizeProgress out;
  ResizeConditions conditions = resize_conditions(pod);
  const bool unseen = conditions.unseen;
  const std::string& in_progress_reason = conditions.in_progress_reason;
  if (conditions.pending != nullptr && !unseen) {
    out.since = transition_time(*conditions.pending);
    out.state = kube::string_at(*conditions.pending, {"reason"}) == "Infeasible"
                    ? PodResizeState::kInfeasible
                    : PodResizeState::kDeferred;
    out.message = kube::string_at(*conditions.pending, {"message"});
  } else if (conditions.in_progress != nullptr && in_progress_reason == "Error" && !unseen) {
    out.since = transition_time(*conditions.in_progress);
    out.state = PodResizeState::kError;
    out.message = kube::string_at(*conditions.in_progress, {"message"});
  } else if (unseen || conditions.in_progress != nullptr || status_behind_spec(pod, containers)) {
    out.state = PodResizeState::kInProgress;
    if (conditions.in_progress != nullptr) out.since = transition_time(*conditions.in_progress);
  }
  return out;
}

bool evictable(const PodResize& pod, std::string_view kind, recommender::TimePoint now) {
  const bool daemon = kind == "DaemonSet";
  auto lasted = [&](std::chrono::minutes at_least) {
    return pod.since && now - *pod.since >= at_least;
  };
  switch (pod.state) {
    case PodResizeState::kInfeasible:
      if (pod.quota) return false;
      // A refusal by the API server is reported as Infeasible; NodeCapacity is the node's room,
      // which a DaemonSet pod, recreated on the same node, would not find either.
      return !(daemon && pod.node_capacity);
    case PodResizeState::kError:
      return true;
    case PodResizeState::kDeferred:
      return !daemon && lasted(std::chrono::minutes(5));
    case PodResizeState::kInProgress:
      return !daemon && lasted(std::chrono::minutes(60));
    default:
      return false;
  }
}

namespace {

/// When `pod`, due for a recommendation, was last resized for one, if that was less than
/// rules.min_update_interval ago (VPA's per-pod rate limit) and no quick OOM came after it.
std::optional<recommender::TimePoint> last_resized_within(const PodResize& pod,
                                                          const InPlaceRules& rules) {
  if (!pod.recommended_due || rules.resized_at == nullptr) return std::nullopt;
  auto last = rules.resized_at->find(pod.uid);
  if (last == rules.resized_at->end() || rules.now >= last->second + rules.min_update_interval) {
    return std::nullopt;
  }
  if (pod.quick_oom_at && *pod.quick_oom_at > last->second) return std::nullopt;
  return last->second;
}

/// Whether `plan` asks any container of `pod` for more than its spec holds (the attempt the
/// kubelet failed: a resize writes the spec), or for a key the spec lacks.
bool asks_more_than_spec(const api::ResourcePlan& plan, const json& pod) {
  const json& containers = api::pod_containers_of(pod);
  for (const auto& container : plan.containers) {
    if (!container.changed || container.index >= containers.size()) continue;
    const json* attempt = kube::find_path(containers[container.index], {"resources"});
    for (const auto& [section, values] : container.merged.items()) {
      if (!values.is_object()) continue;
      for (const auto& [resource, value] : values.items()) {
        const json* tried = attempt != nullptr
                                ? kube::find_path(*attempt, {section.c_str(), resource.c_str()})
                                : nullptr;
        if (tried == nullptr || !tried->is_string() || !value.is_string()) return true;
        auto wanted = kube::Quantity::parse(value.get_ref<const std::string&>());
        auto asked = kube::Quantity::parse(tried->get_ref<const std::string&>());
        if (!wanted.ok() || !asked.ok() || *asked < *wanted) return true;
      }
    }
  }
  return false;
}

/// Why `plan` cannot be written to `pod` in place because it changes the pod's QoS class ("the
/// resize would make the pod Burstable, and it is BestEffort: ..."); empty when it keeps it.
std::string qos_change(const json& pod, const api::ResourcePlan& plan) {
  // The API server compares the class the pod has (status.qosClass, set at its creation) with
  // the one it would have.
  std::string now = kube::string_at(pod, {"status", "qosClass"});
  if (now.empty()) now = api::qos_class_after(pod, api::ResourcePlan{});
  const std::string after = api::qos_class_after(pod, plan);
  if (now == after) return "";
  return "the resize would make the pod " + after + ", and it is " + now +
         ": the API server refuses a resize that changes a pod's QoS class; pods created from now "
         "on get the values at admission";
}

/// What a pod's growth from `before` to `after` asks for beyond the headroom `quota_left`
/// ("limits.cpu 1m above the 0 left"); empty when it fits.
std::string quota_overrun(const recommender::PodTotals& after, const recommender::PodTotals& before,
                          const recommender::PodTotals& quota_left) {
  return recommender::exceeds(recommender::minus_bounded(after, before), quota_left);
}

}  // namespace

InPlacePlan plan_in_place(const api::Scaler& scaler, const std::vector<json>& pods,
                          const std::vector<recommender::ContainerRecommendation>& recommendations,
                          const recommender::LimitRangeItem* limit_range, const InPlaceRules& rules,
                          const std::optional<recommender::PodTotals>& quota_headroom) {
  InPlacePlan out;
  out.quota_left = quota_headroom;
  for (const json& pod : pods) {
    const bool deleting = !kube::string_at(pod, {"metadata", "deletionTimestamp"}).empty();
    const std::string phase = kube::string_at(pod, {"status", "phase"});
    if (deleting || phase != "Running") {
      if (!deleting && (phase.empty() || phase == "Pending")) ++out.starting;
      continue;
    }
    PodResize decision;
    decision.name = kube::meta_string(pod, "name");
    decision.uid = kube::meta_string(pod, "uid");
    // Recommended containers: only a pod out of the bounds is resized, to the target applied to
    // its own requests (as a template would be); fixed values: whenever they differ.
    // Under a ResourceQuota the pod may grow by what is left of its headroom.
    const recommender::PodTotals before = recommender::pod_totals_of(pod);
    std::optional<recommender::PodTotals> budget;
    if (out.quota_left) {
      // The pod may grow by what is left; its containers by that less what the sidecars take.
      budget = recommender::minus_bounded(recommender::bounded_sum(before, *out.quota_left),
                                          recommender::shared_with_containers(pod));
    }
    auto recommended =
        recommender::recommended_containers(scaler, pod, recommendations, limit_range);
    // Whether the pod is due is the recommendation's question; the quota only caps the answer.
    auto bounds = recommender::decide_update(recommended.applied, std::nullopt, {}, {});
    if (budget) {
      auto capped =
          recommender::recommended_containers(scaler, pod, recommendations, limit_range, &*budget);
      recommended.desired = std::move(capped.desired);
      recommended.budget_capped = capped.budget_capped;
    }
    std::string recommended_reason;
    std::optional<recommender::TimePoint> quick_oom_at;
    if (bounds.verdict == recommender::UpdateVerdict::kDue) {
      recommended_reason = bounds.reason;
    } else if (!recommended.applied.empty()) {
      // A quick OOM stays in the container's lastState for the pod's life: one no newer than the
      // pod's last resize for a recommendation was answered by it, and makes the pod due no more
      // (else every small change of the target would resize it again, out of the bounds rule).
      auto oom = quick_oom_of(pod, rules);
      if (oom && rules.resized_at != nullptr) {
        auto last = rules.resized_at->find(decision.uid);
        if (last != rules.resized_at->end() && oom->at <= last->second) oom.reset();
      }
      if (oom) {
        recommended_reason = oom->reason;
        quick_oom_at = oom->at;
      } else {
        recommended_reason = long_lived_reason(pod, recommended.applied, rules);
      }
    }
    const bool recommendation_due = !recommended_reason.empty();
    api::ResourcePlan plan =
        api::plan_resources(scaler, pod, recommendation_due ? &recommended.desired : nullptr);

    ResizeConditions conditions = resize_conditions(pod);
    const bool unseen = conditions.unseen;
    const std::string& in_progress_reason = conditions.in_progress_reason;
    if (!plan.invalid.empty()) {
      decision.state = PodResizeState::kInvalid;
      decision.message = plan.invalid;
    } else if (unseen || (conditions.in_progress != nullptr && in_progress_reason != "Error") ||
               (conditions.pending == nullptr && conditions.in_progress == nullptr &&
                status_behind_spec(pod, names_of(plan)))) {
      decision.state = PodResizeState::kInProgress;  // the kubelet has work to do: wait for it
      if (conditions.in_progress != nullptr)
        decision.since = transition_time(*conditions.in_progress);
    } else if (recommendation_due && recommended.budget_capped && !plan.changed()) {
      // The recommendation wants more than the quota leaves: nothing to send, nothing evicted.
      decision.state = PodResizeState::kInfeasible;
      decision.quota = true;
      decision.message =
          recommended_reason + "; the namespace's ResourceQuota leaves no room to grow the pod";
    } else if (plan.changed() && scaler.update_mode == api::UpdateMode::kInPlace &&
               ((conditions.pending != nullptr &&
                 kube::string_at(*conditions.pending, {"reason"}) == "Infeasible") ||
                (conditions.in_progress != nullptr && in_progress_reason == "Error")) &&
               asks_more_than_spec(plan, pod)) {
      // InPlace never evicts: a resize the kubelet could not do is asked again only for less
      // than that attempt (VPA's rule), which more would fail as surely.
      const json& failed =
          conditions.pending != nullptr ? *conditions.pending : *conditions.in_progress;
      decision.since = transition_time(failed);
      decision.state =
          conditions.pending != nullptr ? PodResizeState::kInfeasible : PodResizeState::kError;
      decision.message = kube::string_at(failed, {"message"}) +
                         "; asked again when the values wanted are below this attempt (InPlace)";
    } else if (plan.changed()) {
      // The pod's totals once resized, computed once if the quota needs them.
      std::optional<recommender::PodTotals> totals_after;
      auto after = [&]() -> const recommender::PodTotals& {
        if (!totals_after) totals_after = recommender::pod_totals_after(pod, plan);
        return *totals_after;
      };
      decision.state = PodResizeState::kDue;
      decision.patch = resize_patch(plan);
      decision.message = recommendation_due ? recommended_reason : differing(plan);
      decision.recommended_due = recommendation_due;
      decision.quick_oom_at = quick_oom_at;
      if (recommended.budget_capped) {
        decision.message += "; capped to the namespace's ResourceQuota headroom";
      }
      if (auto last = last_resized_within(decision, rules)) {
        // Held before it spends any headroom: the pods after it may use it meanwhile.
        decision.state = PodResizeState::kHeld;
        decision.since = *last;
        decision.message += "; resized at " + recommender::format_rfc3339(*last) + ", again at " +
                            recommender::format_rfc3339(*last + rules.min_update_interval) +
                            " (--min-update-interval)";
      } else if (std::string qos = qos_change(pod, plan); !qos.empty()) {
        // Sent, it would only be refused (422); a new pod may have any class. Nothing is sent,
        // so nothing of the headroom is spent.
        decision.state = PodResizeState::kInfeasible;
        decision.patch = nullptr;
        decision.message += "; " + qos;
      } else if (std::string over =
                     out.quota_left ? quota_overrun(after(), before, *out.quota_left) : "";
                 recommendation_due && !over.empty()) {
        // Capped to the headroom, and still over it once the pod-level values are kept valid
        // (raised, or a cpu limit kept 1m above its request): the API server would refuse it.
        decision.state = PodResizeState::kInfeasible;
        decision.quota = true;
        decision.message =
            recommended_reason + "; the namespace's ResourceQuota has room for less: " + over;
      } else if (out.quota_left && !(rules.waits && rules.waits(decision))) {
        out.quota_left = recommender::spend(*out.quota_left, before, after());
      }
    } else if (conditions.pending != nullptr) {
      decision.since = transition_time(*conditions.pending);
      // Asked for what is still wanted, and the kubelet cannot now (Deferred) or ever
      // (Infeasible): the same values are not asked for again.
      const std::string reason = kube::string_at(*conditions.pending, {"reason"});
      decision.state =
          reason == "Infeasible" ? PodResizeState::kInfeasible : PodResizeState::kDeferred;
      decision.message = kube::string_at(*conditions.pending, {"message"});
    } else if (conditions.in_progress != nullptr) {
      decision.since = transition_time(*conditions.in_progress);
      decision.state = PodResizeState::kError;
      decision.message = kube::string_at(*conditions.in_progress, {"message"});
    }
    switch (decision.state) {
      case PodResizeState::kAtTarget:
        ++out.at_target;
        break;
      case PodResizeState::kDue:
      case PodResizeState::kInProgress:
        ++out.in_progress;
        break;
      case PodResizeState::kHeld:
        ++out.pending;
        ++out.held;
        break;
      default:
        ++out.pending;
    }
    out.pods.push_back(std::move(decision));
  }
  return out;
}

std::chrono::seconds failed_call_wait(const kube::ApiError& error) {
  return std::clamp(error.retry_after.value_or(kCallFailedRecheck), kCallFailedRecheck,
                    kCallFailedMaxWait);
}

ResizeFailure classify_resize_failure(const kube::ApiError& error, std::string_view pod) {
  switch (error.kind) {
    case kube::ErrorKind::kNotFound:
      return !error.name.empty() && error.name == pod ? ResizeFailure::kGone
                                                      : ResizeFailure::kRefused;
    case kube::ErrorKind::kForbidden:
    case kube::ErrorKind::kInvalid:
    case kube::ErrorKind::kBadRequest:
    case kube::ErrorKind::kMethodNotAllowed:
    case kube::ErrorKind::kUnsupportedMediaType:
      return ResizeFailure::kRefused;
    default:
      return ResizeFailure::kRetry;
  }
}

}  // namespace vscaler::controller

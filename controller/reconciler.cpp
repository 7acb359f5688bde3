#include "controller/reconciler.h"

#include <algorithm>
#include <optional>

#include "api/resources.h"
#include "base/log.h"
#include "base/time.h"
#include "controller/blind_restore.h"
#include "controller/recommendation_step.h"
#include "controller/status.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"

namespace vscaler::controller {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr std::string_view kReconcilerLogger = "reconciler";

ReconcileOutcome retry(const kube::ApiError& error, std::string_view what) {
  ReconcileOutcome outcome;
  outcome.kind = ReconcileOutcome::Kind::kRetry;
  outcome.error = std::string(what) + ": " + error.to_string();
  if (error.retry_after)
    outcome.delay = std::chrono::duration_cast<milliseconds>(*error.retry_after);
  return outcome;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// ContainerNotFound's message: the containers the scaler names that `workload`'s template lacks.
std::string containers_not_found(const api::ResourcePlan& plan, const std::string& workload) {
  return "container(s) " + join(plan.missing) + " not found in " + workload +
         "; the others are applied";
}

/// "StatefulSet db": the target as messages name it.
std::string describe(const api::TargetRef& target) {
  return target.kind + " " + target.name;
}

/// What an Applied status adds for a workload that replaces pods only when they are deleted.
constexpr std::string_view kOnDeleteNote =
    "; its updateStrategy is OnDelete: the values are in the pod template, and running pods "
    "pick them up when they are deleted";

/// Member `member` ("reason", "message") of condition `type` in a stored status, "" when absent.
std::string stored_condition(const json& status, std::string_view type, const char* member) {
  if (!status.is_object() || !status.contains("conditions")) return {};
  for (const json& condition : status["conditions"]) {
    if (condition.is_object() && condition.value("type", "") == type) {
      return condition.value(member, "");
    }
  }
  return {};
}

/// The reason of condition `type` in a stored status, "" when absent.
std::string stored_reason(const json& status, std::string_view type) {
  return stored_condition(status, type, "reason");
}

/// True when some container the plan matches has fixed values (not a recommendation).
bool has_fixed_entry(const api::Scaler& scaler, const api::ResourcePlan& plan) {
  for (const auto& container : plan.containers) {
    const api::ContainerResources* entry = scaler.entry_for(container.name);
    if (entry != nullptr && entry->fixed()) return true;
  }
  return false;
}

/// status.pods, the Scaled condition and its message for an in-place step (`scaled` stays
/// False unless every running pod carries the values).
void describe_in_place(const InPlaceResult& step, const std::string& workload, bool evicts,
                       bool daemon_set, Condition& scaled, StatusReport& report) {
  const InPlacePlan& plan = step.plan;
  report.pods =
      json{{"total", plan.total()},   {"atTarget", plan.at_target}, {"resizing", plan.in_progress},
           {"pending", plan.pending}, {"evicted", step.evicted},    {"restarted", step.restarted}};
  const std::string counts = std::to_string(plan.at_target) + " of " +
                             std::to_string(plan.total()) + " running pods of " + workload +
                             " carry the values";
  if (plan.pending > 0 && plan.pending == plan.held && plan.in_progress == 0) {
    // The mode working as asked (Ready stays True): the rate limit holds a recommendation back.
    const PodResize* first = nullptr;
    for (const PodResize& pod : plan.pods) {
      if (pod.state == PodResizeState::kHeld && first == nullptr) first = &pod;
    }
    scaled.reason = reason::kDeferred;
    scaled.message = counts + "; " + std::to_string(plan.held) +
                     " wait for --min-update-interval (" + first->name + ": " + first->message +
                     ")";
  } else if (plan.pending > 0) {
    // Up to three of the pods `shown_if` picks, with their state and why.
    auto name_pods = [&plan](auto shown_if) {
      std::string named;
      int shown = 0;
      for (const PodResize& pod : plan.pods) {
        if (!shown_if(pod) || shown == 3) continue;
        named += (shown++ == 0 ? "" : "; ") + pod.name + " " + std::string(to_string(pod.state)) +
                 (pod.message.empty() ? "" : ": " + pod.message);
      }
      return named;
    };
    std::size_t invalid = 0;
    for (const PodResize& pod : plan.pods) invalid += pod.state == PodResizeState::kInvalid;
    if (invalid > 0) {
      // The values themselves cannot be applied to those pods (as InvalidResources says of a
      // template): nothing is sent to them.
      scaled.reason = reason::kInvalidResources;
      scaled.message =
          counts + "; " + std::to_string(invalid) + " cannot take them (" +
          name_pods([](const PodResize& pod) { return pod.state == PodResizeState::kInvalid; }) +
          "); nothing was written to them";
      return;
    }
    const std::string named = name_pods([](const PodResize& pod) {
      return pod.state != PodResizeState::kAtTarget && pod.state != PodResizeState::kDue &&
             pod.state != PodResizeState::kInProgress && pod.state != PodResizeState::kHeld;
    });
    bool quota = false;
    for (const PodResize& pod : plan.pods) quota = quota || pod.quota;
    // A DaemonSet's pod refused for its node's room comes back on the same node: never evicted.
    bool node_bound = daemon_set;
    for (const PodResize& pod : plan.pods) {
      if (pod.state != PodResizeState::kAtTarget && pod.state != PodResizeState::kDue &&
          pod.state != PodResizeState::kInProgress && pod.state != PodResizeState::kHeld) {
        node_bound = node_bound && pod.node_capacity;
      }
    }
    scaled.reason = quota ? reason::kQuotaExceeded : reason::kResizeInfeasible;
    scaled.message =
        counts + "; " + std::to_string(plan.pending - plan.held) + " cannot be resized now (" +
        named + "); " +
        (quota        ? "retried; a quota refusal is never answered with an eviction"
         : node_bound ? "retried, never evicted: a DaemonSet's pod would come back on the "
                        "same node, which has no room for it"
         : evicts     ? "evicted one at a time to be recreated with them"
                      : "retried, never evicted (InPlace)");
  } else if (plan.in_progress > 0) {
    scaled.reason = reason::kResizing;
    scaled.message = counts + "; " + std::to_string(plan.in_progress) + " being resized in place";
  } else {
    scaled.status = true;
    scaled.reason = reason::kApplied;
    scaled.message = plan.total() == 0
                         ? "no running pod of " + workload + "; new pods get the values at creation"
                         : "all " + std::to_string(plan.total()) + " running pods of " + workload +
                               " carry the values (resized in place; new pods get them at "
                               "creation)";
  }
}

}  // namespace

json merge_patch_between(const json& from, const json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  json patch = json::object();
  for (const auto& [key, value] : from.items()) {
    if (!to.contains(key)) patch[key] = nullptr;
  }
  for (const auto& [key, value] : to.items()) {
    auto old = from.find(key);
    if (old == from.end()) {
      patch[key] = value;
    } else if (*old != value) {
      patch[key] = merge_patch_between(*old, value);
    }
  }
  return patch;
}

Reconciler::Reconciler(ReconcileApi& api, const ScalerStore& store, VerifiedState& verified,
                       Expectations& expectations, ReconcilerMetrics& metrics,
                       ReconcilerOptions options)
    : api_(api),
      store_(store),
      verified_(verified),
      expectations_(expectations),
      metrics_(metrics),
      options_(options),
      in_place_(api, metrics, options.min_update_interval, options.in_place_rules,
                options.still_leading),
      boost_(api, metrics, options.still_leading) {}

void Reconciler::boost_admitted(const std::string& key) {
  boost_.admitted(key, wall_now());
}

ReconcileOutcome Reconciler::reconcile(const WorkItem& item) {
  std::shared_ptr<const api::Scaler> scaler = store_.get(item.key);
  if (!scaler) {
    // Scaler gone (or unusable): forget it. The workload is left exactly as it is.
    verified_.forget(item.key);
    expectations_.forget(item.key);
    in_place_.forget(item.key);
    boost_.forget(item.key);
    {
      std::lock_guard lock(mutex_);
      mutated_.erase(item.key);
      // An invalid spec keeps them: once mended, its next status write carries them.
      if (!store_.invalid(item.key)) unwritten_times_.erase(item.key);
    }
    if (auto invalid = store_.invalid(item.key)) return report_invalid(*invalid);
    return {};
  }

  // One scaler per workload: a person's before a made one, then the oldest, is active; the
  // others report Conflict and write nothing.
  const api::Scaler* active = nullptr;
  auto rivals = store_.targeting(scaler->ns, scaler->target);
  active = api::select_active(rivals);
  if (active != nullptr && active->key() != scaler->key()) {
    verified_.forget(scaler->key());
    expectations_.forget(scaler->key());  // the loser writes nothing: nothing to see
    StatusReport report;
    report.target = scaler->target;
    // What the stored status says of this target, if it is about this target at all.
    const json stored = scaler->status();
    bool same_target = kube::string_at(stored, {"target", "ref"}) == scaler->target.ref();
    report.target_found =
        same_target && stored_reason(stored, condition::kTargetFound) == reason::kFound;
    if (same_target) report.target_uid = kube::string_at(stored, {"target", "uid"});
    std::string message = "VerticalScaler " + active->name + " already manages " +
                          describe(scaler->target) + "; this scaler changes nothing";
    report.conditions.push_back({condition::kReady, false, reason::kConflict, message});
    if (stored_reason(stored, condition::kReady) != reason::kConflict) {
      api_.record_event(*scaler, true, reason::kConflict, message);
    }
    auto written = write_status(*scaler, report);
    if (!written.ok()) return retry(written.error(), "write status");
    return {};
  }
  return reconcile_active(*scaler, item);
}

ReconcileOutcome Reconciler::report_invalid(const InvalidScaler& invalid) {
  json stored = invalid.status.is_object() ? invalid.status : json::object();
  std::string message = "the spec cannot be used: " + invalid.error +
                        "; nothing is applied until it is fixed (the validating webhook "
                        "refuses such a spec: it was admitted while it was not there)";
  json next = build_invalid_status(stored, invalid.generation, message, base::rfc3339_now());
  if (next == stored) return {};
  json patch = {{"metadata", {{"resourceVersion", invalid.resource_version}}},
                {"status", merge_patch_between(stored, next)}};
  auto written = api_.patch_scaler_status(invalid.ns, invalid.name, patch);
  // A 409: the informer brings the newer object, and with it another reconcile.
  if (!written.ok() && !kube::is_conflict(written.error())) {
    return retry(written.error(), "write status");
  }
  return {};
}

void Reconciler::note_hpa_conflict(const api::Scaler& scaler, StatusReport& report) {
  if (options_.hpas == nullptr) return;
  const json stored = scaler.status();
  std::string before = stored_reason(stored, condition::kHorizontalPodAutoscalerConflict);
  auto warnings = scaler.update_mode == api::UpdateMode::kOff
                      ? std::vector<std::string>{}  // it changes nothing: nothing to fight over
                      : options_.hpas->warnings(scaler.ns, scaler.target.kind, scaler.target.name);
  if (warnings.empty()) {
    if (!before.empty()) {
      report.conditions.push_back(
          {condition::kHorizontalPodAutoscalerConflict, false, reason::kNoConflict,
           "no HorizontalPodAutoscaler scales " + describe(scaler.target) + " on cpu or memory"});
    }
    return;
  }
  std::string message = warnings.front();
  for (std::size_t i = 1; i < warnings.size(); ++i) message += "; " + warnings[i];
  report.conditions.push_back(
      {condition::kHorizontalPodAutoscalerConflict, true, reason::kScalesOnCpuOrMemory, message});
  if (before != reason::kScalesOnCpuOrMemory) {
    api_.record_event(scaler, true, reason::kScalesOnCpuOrMemory, message);
  }
}

ReconcileOutcome Reconciler::reconcile_active(const api::Scaler& scaler, const WorkItem& item) {
  StatusReport report;
  report.target = scaler.target;
  const std::string key = scaler.key();
  const std::string workload = describe(scaler.target);

  // A hinted UPDATE of a scaler whose patch needs no read: the PATCH is the read (its answer is
  // what is stored), one request instead of a GET and then a PATCH (controller/blind_restore.h).
  // Refused or failed, the reconcile reads as usual.
  std::optional<ApiResult> read;
  bool restored_now = false;
  if (auto blind = blind_patch_for(scaler)) {
    auto patched = api_.patch_workload(scaler.ns, scaler.target, blind->patch);
    if (patched.ok()) {
      restored_now = blind_restore_wrote(blind->hinted_generation, kube::meta_generation(*patched));
      read.emplace(std::move(patched));
    } else {
      log::debug(kReconcilerLogger, "the restore without a read was refused; reading the workload",
                 {{"scaler", key}, {"error", patched.error().to_string()}});
    }
  }
  if (!read) read.emplace(api_.get_workload(scaler.ns, scaler.target));
  ApiResult& deployment = *read;
  bool missing = !deployment.ok() && kube::is_not_found(deployment.error());
  // DESIGN: a workload that vanished may answer 403 (its namespace's RoleBinding went with it,
  // under namespaced RBAC) where it would answer 404. Said as missing, and, since a 403 may as
  // well be RBAC that does not cover the workload (a hint will not come when it is fixed), read
  // again with backoff.
  const bool forbidden = !deployment.ok() && kube::is_forbidden(deployment.error());
  if (!deployment.ok() && !missing && !forbidden) {
    return retry(deployment.error(), "get " + workload);
  }
  bool deleting =
      deployment.ok() && !kube::string_at(*deployment, {"metadata", "deletionTimestamp"}).empty();

  if (missing || forbidden || deleting) {
    // Its creation (or re-creation) will hint; the resync is the safety net.
    verified_.set(key, Verified{});
    report.target_found = false;
    std::string message = forbidden ? workload + " cannot be read in namespace " + scaler.ns +
                                          " (" + deployment.error().to_string() +
                                          "): it is gone, or vscaler's RBAC does not cover it"
                          : deleting ? workload + " is being deleted"
                                     : workload + " does not exist in namespace " + scaler.ns;
    report.conditions.push_back({condition::kTargetFound, false, reason::kNotFound, message});
    report.conditions.push_back(
        {condition::kReady, false, reason::kPending, "waiting for " + workload});
    // Said once per target and cause, by the replica whose status write said it (a
    // misspelt name shows in `kubectl describe` and events); not of the scalers vscaler makes for
    // an opted-in namespace, whose workload's deletion deletes them next.
    const bool news =
        stored_reason(scaler.status(), condition::kTargetFound) != reason::kNotFound ||
        stored_condition(scaler.status(), condition::kTargetFound, "message") != message;
    bool wrote = false;
    auto written = write_status(scaler, report, &wrote);
    if (!written.ok()) return retry(written.error(), "write status");
    if (news && wrote && !scaler.made_for_namespace) {
      api_.record_event(scaler, true, reason::kNotFound, message);
    }
    if (forbidden) return retry(deployment.error(), "get " + workload);
    // A hinted CREATE may not be stored yet: the expectations say whether to keep looking.
    Observed observed;
    observed.exists = !missing;
    observed.deleting = deleting;
    return maybe_recheck(key, observed, {});
  }

  const json& stored = *deployment;
  const std::string uid = kube::string_at(stored, {"metadata", "uid"});
  int64_t generation = kube::meta_generation(stored);
  // What was stored before this reconcile wrote anything: the write a hint announced is in it
  // or still to come.
  Observed observed{true, false, uid, generation};

  report.target_found = true;
  report.target_uid = uid;
  report.conditions.push_back(
      {condition::kTargetFound, true, reason::kFound, workload + " exists"});
  note_hpa_conflict(scaler, report);

  if (!options_.recommender_enabled) {
    report.conditions.push_back({condition::kRecommendationProvided, false,
                                 reason::kRecommenderDisabled,
                                 "the recommender is off (--recommender-interval 0)"});
  }
  const recommender::TimePoint now = wall_now();
  auto limit_range = options_.limit_ranges ? options_.limit_ranges->of(scaler.ns) : nullptr;
  std::string applied_since;  // a patch whose status write failed: the clock counts from it
  if (auto kept = unwritten_times_of(scaler)) applied_since = kept->recommendation_applied_at;
  RecommendationStep recommendation = plan_recommendation(
      scaler, stored, options_.min_update_interval, now, limit_range.get(), applied_since);
  if (!recommendation.error.empty()) {
    log::warn(kReconcilerLogger, "ignoring an unreadable status.recommendation",
              {{"scaler", key}, {"error", recommendation.error}});
  }
  const bool patches = scaler.update_mode == api::UpdateMode::kAuto ||
                       scaler.update_mode == api::UpdateMode::kReconcile;
  // A recommendation-driven patch: due by the bounds rule and the rate limit, and a leader step.
  const bool due = patches && !restored_now &&
                   recommendation.decision.verdict == recommender::UpdateVerdict::kDue;
  const bool recommendation_due = due && (!options_.leader_step || options_.leader_step());
  // Due, but this replica does not lead: what it writes is not the recommendation, and its status
  // must not say the workload carries what the scaler asks for.
  const bool due_on_leader = due && !recommendation_due;
  const api::DesiredResources* desired =
      recommendation_due ? &recommendation.containers.desired : nullptr;
  // What the scaler asks for in full (fixed values and every recommendation applied), and what
  // this reconcile may write (fixed values, recommendations only when due).
  api::ResourcePlan wanted =
      api::plan_resources(scaler, stored, &recommendation.containers.desired);
  api::ResourcePlan plan = api::plan_resources(scaler, stored, desired);
  ReconcileOutcome outcome;
  Condition scaled{condition::kScaled, false, "", ""};
  bool applied = false;

  if (!api::in_place(scaler.update_mode)) in_place_.forget(key);  // it left those modes, if ever
  // The target's pods, listed once for the steps that look at them: the in-place modes' and the
  // startup boost's (in every mode). A boosted pod is the boost step's until its boost ends.
  const bool in_place_step = api::in_place(scaler.update_mode) && options_.resize_supported;
  const bool boost_step = options_.resize_supported && (scaler.boosts() || boost_.watching(scaler));
  // Resizes are leader steps (asked once: each ask is counted).
  const bool may_write_pods =
      (in_place_step || boost_step) && (!options_.leader_step || options_.leader_step());
  std::vector<json> pods;
  if (in_place_step || boost_step) {
    auto listed = list_target_pods(api_, scaler, stored);
    if (!listed.ok()) return retry(listed.error(), "list the pods of " + workload);
    pods = std::move(*listed);
  }
  if (boost_step) {
    BoostResult boosts = boost_.run(scaler, pods, may_write_pods, now);
    if (scaler.boosts() || boosts.boosted > 0 || boosts.ended > 0) {
      report.startup_boost = boosts.status();
    }
    std::erase_if(pods, [&](const json& pod) {
      return boosts.boosted_uids.contains(kube::meta_string(pod, "uid"));
    });
    outcome.requeue_after = boosts.recheck_after;
  }
  if (scaler.update_mode == api::UpdateMode::kOff) {
    scaled.reason = reason::kUpdateModeOff;
    scaled.message = wanted.changed() ? "updateMode is Off: the declared resources are not applied"
                                      : "updateMode is Off; the " + scaler.target.kind +
                                            " already carries the declared resources";
    report.containers = api::status_containers(wanted);
  } else if (in_place_step) {
    // The template keeps what it has (values ride on writes that change it anyway); running pods
    // are resized, new ones sized at admission (webhook/pod_handler).
    report.containers = api::status_containers_now(plan, stored);
    auto headroom = options_.quotas ? options_.quotas->headroom(scaler.ns) : std::nullopt;
    auto step = in_place_.run_listed(scaler, stored, pods, recommendation.recommendations,
                                     limit_range.get(), headroom, may_write_pods, now);
    if (headroom && step.requested > 0 && step.plan.quota_left) {
      options_.quotas->reserve_spent(scaler.ns, *headroom, *step.plan.quota_left);
    }
    describe_in_place(step, workload, scaler.update_mode == api::UpdateMode::kInPlaceOrRecreate,
                      scaler.target.kind == "DaemonSet", scaled, report);
    if (step.recheck_after.count() > 0 &&
        (outcome.requeue_after.count() == 0 || step.recheck_after < outcome.requeue_after)) {
      outcome.requeue_after = step.recheck_after;
    }
    if (scaled.status && !has_fixed_entry(scaler, plan) &&
        recommendation.containers.desired.empty() && !recommendation.containers.awaiting.empty()) {
      // Nothing to carry yet: the pods are not "at" a value nobody has decided.
      scaled.status = false;
      scaled.reason = reason::kAwaitingRecommendation;
      scaled.message = "waiting for a recommendation for container(s) " +
                       join(recommendation.containers.awaiting) + "; nothing to apply yet";
    } else if (scaled.status && !plan.invalid.empty()) {
      // The pods carry the values, but the template could not take them: a new pod sized from
      // it would be refused them at admission.
      scaled.status = false;
      scaled.reason = reason::kInvalidResources;
      scaled.message = plan.invalid + "; new pods cannot be given the values";
    } else if (scaled.status && !plan.missing.empty()) {
      // Every pod carries the others' values; the named one is not there to carry any.
      scaled.status = false;
      scaled.reason = reason::kContainerNotFound;
      scaled.message = containers_not_found(plan, workload);
    }
  } else if (scaler.update_mode == api::UpdateMode::kInitial || api::in_place(scaler.update_mode)) {
    // Never a rollout of its own: the values ride on the next write that changes the template.
    // (An in-place mode lands here only on an API server without pods/resize.)
    report.containers = api::status_containers_now(plan, stored);
    if (api::in_place(scaler.update_mode)) {
      scaled.reason = reason::kResizeUnsupported;
      scaled.message =
          "the API server is older than Kubernetes 1.33 and cannot resize running "
          "pods (pods/resize): the values apply as in Initial, at the next template "
          "change and to new pods";
      if (!wanted.changed()) {
        scaled.message += "; the " + scaler.target.kind + " already carries them";
      }
    } else if (wanted.changed()) {
      scaled.reason = reason::kDeferred;
      scaled.message = "updateMode is Initial: this change applies at the next template change";
    } else {
      applied = true;
    }
  } else if (!plan.invalid.empty() && !restored_now) {
    scaled.reason = reason::kInvalidResources;
    scaled.message = plan.invalid + "; nothing was written";
    report.containers = api::status_containers_now(plan, stored);
  } else if (plan.changed() || restored_now) {
    bool known_mutation = false;
    {
      std::lock_guard lock(mutex_);
      auto record = mutated_.find(key);
      known_mutation = !restored_now && record != mutated_.end() &&
                       record->second.scaler_generation == scaler.generation &&
                       record->second.deployment_uid == uid &&
                       record->second.deployment_generation == generation;
    }
    if (known_mutation) {
      // Already written once and rewritten by another webhook: never loop on it.
      scaled.reason = reason::kMutatedByAdmission;
      scaled.message =
          "another admission webhook changes the resources vscaler sets; not retried "
          "until the scaler or the " +
          scaler.target.kind + " template changes";
      report.containers = api::status_containers_now(plan, stored);
    } else {
      // The blind restore wrote already: what it answered is this patch's answer.
      auto patched = restored_now ? ApiResult(stored)
                                  : api_.patch_workload(scaler.ns, scaler.target,
                                                        api::strategic_merge_patch(scaler, plan));
      if (!patched.ok()) {
        if (kube::is_not_found(patched.error())) {
          // Deleted between the read and the write: report it on the next pass.
          return retry(patched.error(), "patch " + workload);
        }
        StatusReport failed = report;
        failed.conditions.push_back(
            {condition::kScaled, false, reason::kPatchFailed,
             "patching " + workload + " failed: " + patched.error().to_string()});
        failed.conditions.push_back({condition::kReady, false, reason::kPatchFailed,
                                     "the declared resources are not applied yet"});
        (void)write_status(scaler, failed);
        return retry(patched.error(), "patch " + workload);
      }
      generation = kube::meta_generation(*patched);
      api::ResourcePlan after = api::plan_resources(scaler, *patched, desired);
      if (after.changed()) {
        std::lock_guard lock(mutex_);
        mutated_[key] = MutationRecord{scaler.generation, uid, generation};
        scaled.reason = reason::kMutatedByAdmission;
        scaled.message =
            "the " + scaler.target.kind +
            " was written but another admission webhook changed the declared resources; not "
            "retried until the scaler or the " +
            scaler.target.kind + " template changes";
        report.containers = api::status_containers_now(after, *patched);
        api_.record_event(scaler, true, reason::kMutatedByAdmission, scaled.message);
      } else {
        applied = true;
        outcome.patched = true;
        report.scaled_now = true;
        report.containers = api::status_containers_now(after, *patched);
        if (item.priority == Priority::kLow) metrics_.on_resync_correction();
        std::string what = "the declared resources";
        if (recommendation_due) {
          // The rate-limit clock: the next recommendation-driven patch waits from here.
          report.recommendation_applied_now = true;
          metrics_.on_recommendation_applied();
          what = "the recommendation (" + recommendation.decision.reason + ")";
        }
        std::string event = "set " + what + " on " + workload;
        if (plan.pod_resources_changed) {
          event += ", raising its pod-level resources in the same write (" +
                   plan.pod_resources_note + ")";
        }
        if (kube::updates_only_on_delete(stored)) event += kOnDeleteNote;
        api_.record_event(scaler, false, "Scaled", event);
        log::info(kReconcilerLogger, "patched workload",
                  {{"scaler", key},
                   {"workload", scaler.target.ref()},
                   {"generation", std::to_string(generation)},
                   {"recommendation", recommendation_due ? "true" : "false"}});
      }
    }
  } else {
    applied = true;
    report.containers = api::status_containers_now(plan, stored);
  }

  if (applied) {
    std::lock_guard lock(mutex_);
    mutated_.erase(key);
  }
  const bool has_fixed = has_fixed_entry(scaler, plan);
  if (applied && !plan.missing.empty()) {
    scaled.reason = reason::kContainerNotFound;
    scaled.message = containers_not_found(plan, workload);
    if (kube::updates_only_on_delete(stored)) scaled.message += kOnDeleteNote;
  } else if (applied && due_on_leader) {
    // Ready stays True; the leader's own reconcile (its recommender enqueues every scaler whose
    // recommendation it publishes) applies it and says so.
    scaled.reason = reason::kDeferred;
    scaled.message = "the recommendation (" + recommendation.decision.reason +
                     ") is due; the leading replica applies it";
  } else if (applied && patches &&
             recommendation.decision.verdict == recommender::UpdateVerdict::kDeferred) {
    // The mode working as asked: Ready stays True; the key comes back when the deferral lifts.
    scaled.reason = reason::kDeferred;
    scaled.message = "the recommendation (" + recommendation.decision.reason + ") applies at " +
                     recommender::format_rfc3339(recommendation.decision.not_before) +
                     ", --min-update-interval after the last recommendation-driven change";
    outcome.requeue_after = std::max(
        std::chrono::milliseconds(1'000),
        std::chrono::duration_cast<milliseconds>(recommendation.decision.not_before - now));
  } else if (applied && !has_fixed && recommendation.containers.desired.empty() &&
             !recommendation.containers.awaiting.empty()) {
    scaled.reason = reason::kAwaitingRecommendation;
    scaled.message = "waiting for a recommendation for container(s) " +
                     join(recommendation.containers.awaiting) + "; nothing to apply yet";
  } else if (applied) {
    scaled.status = true;
    scaled.reason = reason::kApplied;
    scaled.message = workload + " carries the declared resources";
    if (kube::updates_only_on_delete(stored)) scaled.message += kOnDeleteNote;
  }
  report.conditions.push_back(scaled);
  const bool deferred = scaled.reason == reason::kDeferred || scaled.reason == reason::kResizing;
  // Without pods/resize an in-place mode works as Initial, as designed: Ready, with a warning.
  if (scaled.status || deferred || scaled.reason == reason::kResizeUnsupported ||
      (scaler.update_mode == api::UpdateMode::kOff && !wanted.changed())) {
    report.conditions.push_back({condition::kReady, true, reason::kUpToDate, scaled.message});
  } else if (scaled.reason == reason::kAwaitingRecommendation) {
    report.conditions.push_back({condition::kReady, false, reason::kPending, scaled.message});
  } else {
    report.conditions.push_back({condition::kReady, false, scaled.reason, scaled.message});
  }
  // A follower sees the pods but not the leader's memory of them (resizes held back by the rate
  // limit or refused, failed calls, evictions, boosts seen to end): its report could contradict
  // the leader's, and the two would overwrite each other's status at every re-check. The leader
  // reports these scalers (its resync and re-checks visit them); a follower neither writes nor
  // polls.
  if ((in_place_step || boost_step) && !may_write_pods) {
    verified_.set(key, Verified{true, uid, generation});
    outcome.requeue_after = std::chrono::milliseconds(0);
    return maybe_recheck(key, observed, outcome);
  }
  if (!scaled.status && stored_reason(scaler.status(), condition::kScaled) != scaled.reason &&
      scaled.reason != reason::kMutatedByAdmission) {
    const bool warning = scaled.reason != reason::kUpdateModeOff && !deferred &&
                         scaled.reason != reason::kAwaitingRecommendation;
    api_.record_event(scaler, warning, scaled.reason, scaled.message);
  }

  verified_.set(key, Verified{true, uid, generation});
  auto written = write_status(scaler, report);
  if (!written.ok()) {
    ReconcileOutcome failed = retry(written.error(), "write status");
    failed.patched = outcome.patched;
    return failed;
  }
  return maybe_recheck(key, observed, outcome);
}

std::optional<Reconciler::UnwrittenTimes> Reconciler::unwritten_times_of(
    const api::Scaler& scaler) {
  std::lock_guard lock(mutex_);
  auto kept = unwritten_times_.find(scaler.key());
  if (kept == unwritten_times_.end()) return std::nullopt;
  if (kept->second.uid != scaler.uid || kept->second.target != scaler.target.ref()) {
    unwritten_times_.erase(kept);  // another scaler by that name, or another workload since
    return std::nullopt;
  }
  return kept->second;
}

std::optional<Reconciler::BlindPatch> Reconciler::blind_patch_for(const api::Scaler& scaler) {
  if (!options_.blind_restore) return std::nullopt;
  const std::string key = scaler.key();
  auto expected = expectations_.pending(key);
  if (!expected || !blind_restore_applies(*expected)) return std::nullopt;
  // The write is judged by generations alone when the hinted write's old object is the one last
  // seen carrying this spec's declared resources: then only a write stored after it can need a
  // restore.
  auto seen = verified_.get(key);
  if (!seen || !seen->found || seen->generation != expected->min_generation_exclusive) {
    return std::nullopt;
  }
  const json status = scaler.status();  // unpacked once, only past the cheap checks
  const auto observed = status.find("observedGeneration");
  if (stored_reason(status, condition::kScaled) != reason::kApplied || observed == status.end() ||
      *observed != scaler.generation) {
    return std::nullopt;
  }
  {
    std::lock_guard lock(mutex_);
    if (mutated_.count(key) > 0) return std::nullopt;  // the read decides whether to write again
  }
  auto patch = blind_restore_patch(scaler);
  if (!patch) return std::nullopt;
  return BlindPatch{std::move(*patch), expected->min_generation_exclusive};
}

ReconcileOutcome Reconciler::maybe_recheck(const std::string& key, const Observed& observed,
                                           ReconcileOutcome outcome) {
  if (auto delay = expectations_.check(key, observed)) {
    outcome.kind = ReconcileOutcome::Kind::kRecheck;
    outcome.delay = *delay;
  }
  return outcome;
}

kube::Result<kube::Unit, kube::ApiError> Reconciler::write_status(const api::Scaler& scaler,
                                                                  const StatusReport& report,
                                                                  bool* wrote) {
  const std::string key = scaler.key();
  // A patch whose status write failed before: its times ride on this write.
  std::optional<StatusReport> with_times;
  if (auto unwritten = unwritten_times_of(scaler)) {
    with_times.emplace(report);
    with_times->scaled_at = unwritten->scaled_at;
    with_times->recommendation_applied_at = unwritten->recommendation_applied_at;
  }
  const StatusReport& effective = with_times ? *with_times : report;
  const bool carries_times = with_times || report.scaled_now || report.recommendation_applied_now;
  json stored_status = scaler.status();
  std::string resource_version = scaler.resource_version;
  int64_t generation = scaler.generation;
  for (int attempt = 0;; ++attempt) {
    const std::string now = base::rfc3339_now();
    json next = build_status(stored_status, generation, effective, now);
    const bool unchanged = next == stored_status;  // compared once: a status is a deep tree
    auto written = unchanged ? ApiResult(json::object())
                             : api_.patch_scaler_status(
                                   scaler.ns, scaler.name,
                                   {{"metadata", {{"resourceVersion", resource_version}}},
                                    {"status", merge_patch_between(stored_status, next)}});
    if (written.ok()) {
      if (wrote != nullptr && !unchanged) *wrote = true;
      if (carries_times) {
        std::lock_guard lock(mutex_);
        unwritten_times_.erase(key);
      }
      return kube::Unit{};
    }
    // The workload was written but its status will say the time before: kept for the next write.
    auto failed = [&](const kube::ApiError& error) -> kube::Result<kube::Unit, kube::ApiError> {
      if (report.scaled_now || report.recommendation_applied_now) {
        std::lock_guard lock(mutex_);
        UnwrittenTimes& times = unwritten_times_[key];
        if (times.uid != scaler.uid || times.target != scaler.target.ref()) {
          times = UnwrittenTimes{scaler.uid, scaler.target.ref(), "", ""};
        }
        if (report.scaled_now) times.scaled_at = now;
        if (report.recommendation_applied_now) times.recommendation_applied_at = now;
      }
      return kube::fail(error);
    };
    if (!kube::is_conflict(written.error()) || attempt >= options_.status_conflict_retries) {
      return failed(written.error());
    }
    // Someone else wrote the scaler meanwhile: re-read it. Another status write (the
    // recommender's) leaves the spec this report was computed from: rebuild on what is stored
    // now. A new spec does not: the report says nothing of it, and writing it under the new
    // generation would claim in observedGeneration a spec that was not applied. Then the write
    // fails as the conflict it is and the reconcile runs again from the new spec.
    auto fresh = api_.get_scaler(scaler.ns, scaler.name);
    if (!fresh.ok()) return failed(fresh.error());
    // Nor one of another scaler by that name (deleted and created again: generation 1 again).
    if (kube::meta_generation(*fresh) != generation ||
        kube::meta_string(*fresh, "uid") != scaler.uid) {
      return failed(written.error());
    }
    stored_status = fresh->contains("status") ? (*fresh)["status"] : json::object();
    resource_version = kube::string_at(*fresh, {"metadata", "resourceVersion"});
  }
}

}  // namespace vscaler::controller

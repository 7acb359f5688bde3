// InPlaceStep: list, decide (pod_resize), send, count transitions, pick the re-check delay.
#include "controller/in_place_step.h"

#include <algorithm>

#include "base/log.h"
#include "kube/object_meta.h"
#include "kube/workloads.h"
#include "recommender/selector.h"

namespace vscaler::controller {
namespace {

using nlohmann::json;

constexpr std::string_view kLogger = "in-place";

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

}  // namespace

kube::Result<InPlaceResult, kube::ApiError> InPlaceStep::run(
    const api::Scaler& scaler, const json& workload,
    const std::vector<recommender::ContainerRecommendation>& recommendations,
    const recommender::LimitRangeItem* limit_range, bool may_write) {
  const json* selector = kube::find_path(workload, {"spec", "selector"});
  auto query = selector ? recommender::label_selector_query(*selector)
                        : kube::Result<std::string>(kube::fail(std::string("no spec.selector")));
  if (!query.ok()) {
    kube::ApiError error;
    error.message = scaler.target.kind + " " + scaler.target.name + ": " + query.error();
    return kube::fail(std::move(error));
  }
  auto listed = api_.list_pods(scaler.ns, *query);
  if (!listed.ok()) return kube::fail(std::move(listed).error());
  // The selector's pods that are this workload's (another workload's pods may match it).
  std::vector<json> pods;
  for (json& pod : (*listed)["items"]) {
    kube::PodWorkload owner = kube::workload_of_pod(pod);
    if (owner.kind == scaler.target.kind && owner.name == scaler.target.name) {
      pods.push_back(std::move(pod));
    }
  }
  InPlaceResult result;
  result.plan = plan_in_place(scaler, pods, recommendations, limit_range);
  for (PodResize& pod : result.plan.pods) {
    if (pod.state != PodResizeState::kDue || !may_write) continue;
    auto resized = api_.resize_pod(scaler.ns, pod.name, pod.patch);
    if (resized.ok()) {
      ++result.requested;
      metrics_.on_pod_resize("requested");
      log::info(kLogger, "resizing a pod in place",
                {{"scaler", scaler.key()}, {"pod", pod.name}, {"why", pod.message}});
      pod.state = PodResizeState::kInProgress;
      continue;
    }
    // 403 (NodeCapacity, a feature the node lacks), 422 (a QoS class change, a node without
    // resize), 409: reported on the scaler, tried again at the next re-check.
    pod.state = PodResizeState::kInfeasible;
    pod.message = "the API server refused the resize: " + resized.error().to_string();
    --result.plan.in_progress;
    ++result.plan.pending;
    log::warn(kLogger, "a pod resize was refused",
              {{"scaler", scaler.key()}, {"pod", pod.name}, {"error", pod.message}});
  }

  std::lock_guard lock(mutex_);
  Memory& memory = memory_[scaler.key()];
  std::map<std::string, PodResizeState> now;
  for (const PodResize& pod : result.plan.pods) {
    auto before = memory.pods.find(pod.uid);
    const bool was_in_flight =
        before != memory.pods.end() && before->second == PodResizeState::kInProgress;
    if (pod.state == PodResizeState::kAtTarget && was_in_flight) {
      metrics_.on_pod_resize("completed");
    }
    if (const char* result_name = entered(pod.state);
        result_name != nullptr && (before == memory.pods.end() || before->second != pod.state)) {
      metrics_.on_pod_resize(result_name);
    }
    now.emplace(pod.uid, pod.state);
  }
  memory.pods = std::move(now);
  // Re-checked while any pod is not done: in flight, or waiting on its node (a Deferred resize
  // the kubelet may still take up, an Infeasible one the scaler's next value may fix) — from 1 s,
  // doubling, to 30 s. Once every pod carries the values, nothing polls.
  if (result.plan.in_progress > 0 || result.plan.pending > 0) {
    result.recheck_after = std::min<std::chrono::milliseconds>(
        std::chrono::seconds(30), std::chrono::seconds(1 << std::min(memory.rounds, 5)));
    ++memory.rounds;
  } else {
    memory.rounds = 0;
  }
  return result;
}

void InPlaceStep::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  memory_.erase(key);
}

}  // namespace vscaler::controller

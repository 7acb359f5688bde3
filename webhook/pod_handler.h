// The pod admission hook (DESIGN.md "In-place resize", new pods): a pod created for a workload
// whose active scaler is in an in-place mode (InPlaceOrRecreate, InPlace) gets the scaler's
// values in its CREATE, so a scale-up, a rollout or a rescheduled pod starts sized without a
// rollout of the template. The scaler is found from the pod alone (kube::workload_of_pod) and the
// in-memory index: no API call. The values are the workload hook's (fixed values, the
// recommendation's target under the LimitRange), computed by the same api::plan_resources on the
// pod's own spec; the patch is add-only and checked (requests <= limits, pod-level resources)
// before it is sent; recommended values are capped so the pod's cpu/memory sums stay within the
// namespace's ResourceQuota headroom (controller/quota_cache.h; never below what the pod asked for
// itself). In every mode, a scaler with a startup boost (DESIGN.md "Startup boost") gets the
// boosted containers' CPU raised on top of those values (api/startup_boost.h), their base recorded
// in a pod annotation; the reconciler takes the boost back once the pod is Ready. Every pod it
// sizes is marked (kAdmittedAnnotation), so a second call for it counts no quota twice. It never
// denies: anything it cannot use is answered "allowed, no patch".
#pragma once

#include "controller/hint_sink.h"
#include "controller/limit_range_cache.h"
#include "controller/quota_cache.h"
#include "controller/scaler_store.h"
#include "metrics/registry.h"
#include "webhook/admission.h"

namespace vscaler::webhook {

/// The annotation on every pod whose values the hook decided, in the in-place modes or with a
/// startup boost, as VPA's admission controller marks the pods it patches (vpaUpdates). Its value
/// says by which scaler and what the pod was counted for against the namespace's quota:
/// {"scaler":"web","requests":{"cpu":"700m"},"limits":{"cpu":"1"}}. The API server calls the hook
/// again for the same pod when a later webhook (a sidecar injector) changed it
/// (reinvocationPolicy IfNeeded), with a new request uid and the pod still unnamed: that call
/// counts only what the pod grew by since.
inline constexpr std::string_view kAdmittedAnnotation = "scaling.vscaler.dev/admitted";

/// POST /mutate-pods.
class PodHandler {
 public:
  /// `results` is vscaler_pod_admission_total{result} (patched, unchanged, no_scaler).
  /// `limit_ranges` (may be null: none) caps recommended values as the namespace's LimitRanger
  /// will; `quotas` (may be null: none) caps them to the ResourceQuota headroom and counts the
  /// pods admitted against it; `hints` (may be null) is told of a scaler whose new pod was
  /// admitted without all its values, so the reconciler resizes it once it runs, and of a pod
  /// admitted boosted, so it ends the boost. `boosts` (may be null) is
  /// vscaler_startup_boosts_total{result} (boosted, skipped); `resize_supported` false (an API
  /// server without pods/resize, below 1.33): no pod is boosted (it could never be taken back),
  /// and the in-place modes' values apply as in Initial (DESIGN): pods are what the template says.
  PodHandler(const controller::ScalerStore& store, metrics::CounterFamily& results,
             const controller::LimitRangeCache* limit_ranges = nullptr,
             controller::QuotaCache* quotas = nullptr, controller::HintSink* hints = nullptr,
             metrics::CounterFamily* boosts = nullptr, bool resize_supported = true);

  /// The parts of the pod the handler reads: metadata (name, namespace, labels, owner
  /// references, annotations: a boosted pod's record, the marker), each container's name and
  /// resources (patch paths keep array positions), the pod-level resources and the init containers'
  /// (sidecars count in the pod-level check).
  static const Projection& projection();

  /// Answers one review. Always allowed.
  AdmissionResponse handle(const AdmissionRequest& request);

 private:
  const controller::ScalerStore& store_;
  metrics::Counter& patched_;
  metrics::Counter& unchanged_;
  metrics::Counter& no_scaler_;
  const controller::LimitRangeCache* limit_ranges_;
  controller::QuotaCache* quotas_;
  controller::HintSink* hints_;
  metrics::CounterFamily* boosts_;
  bool resize_supported_;
};

}  // namespace vscaler::webhook

// The workload admission hook, vscaler's fast path (DESIGN.md event flow item 2). For every
// CREATE, UPDATE and DELETE of a Deployment, StatefulSet or DaemonSet (the kind comes from the
// review's resource, kube/workloads) it finds the active scaler in the in-memory index
// (namespace/kind/name, no API call), enqueues it with a persistence hint, and in Auto and
// Initial mode returns a JSONPatch that sets the scaler's values in the same write: fixed values,
// and the recommendation's target for recommended containers. Initial applies only to writes
// that change the template outside the controlled keys; in both modes a write that only resets
// controlled keys (a Helm upgrade) gets back what oldObject carried, so it stays a no-op.
// vscaler's own writes (field manager "vscaler") are skipped. It never denies a write. One
// handler serves both paths.
#pragma once

#include "controller/hint_sink.h"
#include "controller/limit_range_cache.h"
#include "controller/scaler_store.h"
#include "metrics/registry.h"
#include "webhook/admission.h"

namespace vscaler::webhook {

/// POST /mutate-deployments and POST /mutate-workloads (any supported kind on either).
class DeploymentHandler {
 public:
  /// `hints` receives each matched scaler's key and expectation; `enqueued` counts them
  /// (vscaler_webhook_enqueued_total).
  /// `recommendation_applied` (may be null) counts admissions that applied a recommendation
  /// (vscaler_recommendation_applied_total{trigger="admission"}). `limit_ranges` (may be null:
  /// none) caps the recommended requests and limits as the namespace's LimitRanger will.
  DeploymentHandler(const controller::ScalerStore& store, controller::HintSink& hints,
                    metrics::Counter& enqueued, metrics::Counter* recommendation_applied = nullptr,
                    const controller::LimitRangeCache* limit_ranges = nullptr);

  /// The parts of object the handler reads: its name and namespace, the containers' names and
  /// resources (patch paths keep array positions), the pod-level resources and the sidecars' (init
  /// containers' restartPolicy and resources); oldObject read as stored
  /// (Projection::old_object_stored: its metadata and containers' requests and limits, no tree);
  /// and a comparison of the pod templates without the containers' cpu/memory requests and
  /// limits (to tell a template change from a reset).
  static const Projection& projection();

  /// Answers one review. Always allowed. A request parsed without projection() gets the same
  /// answer, at the cost of reading its trees.
  AdmissionResponse handle(const AdmissionRequest& request);

 private:
  const controller::ScalerStore& store_;
  controller::HintSink& hints_;
  metrics::Counter& enqueued_;
  metrics::Counter* recommendation_applied_;
  const controller::LimitRangeCache* limit_ranges_;
};

}  // namespace vscaler::webhook

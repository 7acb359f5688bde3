// The workload admission hook, vscaler's fast path (DESIGN.md event flow item 2). For every
// CREATE, UPDATE and DELETE of a Deployment, StatefulSet or DaemonSet (the kind comes from the
// review's resource, kube/workloads) it finds the active scaler in the in-memory index
// (namespace/kind/name, no API call), enqueues it with a persistence hint, and in Auto mode
// returns a JSONPatch that sets the declared resources in the same write. It never denies a
// write. One handler serves both paths.
#pragma once

#include "controller/hint_sink.h"
#include "controller/scaler_store.h"
#include "metrics/registry.h"
#include "webhook/admission.h"

namespace vscaler::webhook {

/// POST /mutate-deployments and POST /mutate-workloads (any supported kind on either).
class DeploymentHandler {
 public:
  /// `hints` receives each matched scaler's key and expectation; `enqueued` counts them
  /// (vscaler_webhook_enqueued_total).
  DeploymentHandler(const controller::ScalerStore& store, controller::HintSink& hints,
                    metrics::Counter& enqueued);

  /// The parts of object/oldObject the handler reads: metadata and the containers' names and
  /// resources (patch paths keep array positions).
  static const Projection& projection();

  /// Answers one review. Always allowed.
  AdmissionResponse handle(const AdmissionRequest& request);

 private:
  const controller::ScalerStore& store_;
  controller::HintSink& hints_;
  metrics::Counter& enqueued_;
};

}  // namespace vscaler::webhook

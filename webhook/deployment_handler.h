// The Deployment admission hook, vscaler's fast path (DESIGN.md event flow item 2). For every
// Deployment CREATE, UPDATE and DELETE it finds the active scaler in the in-memory index (no API
// call), enqueues it with a persistence hint, and in Auto mode returns a JSONPatch that sets the
// declared resources in the same write. It never denies a write.
#pragma once

#include "controller/hint_sink.h"
#include "controller/scaler_store.h"
#include "metrics/registry.h"
#include "webhook/admission.h"

namespace vscaler::webhook {

/// POST /mutate-deployments.
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

// The VerticalScaler validating hook: denies what the CRD schema and CEL cannot say (every error
// naming its field) and warns, never denies, about the cluster's state: the target workload does
// not exist yet, another scaler already targets it, the declared values conflict with the
// workload's own limits, or a HorizontalPodAutoscaler scales it on cpu or memory.
#pragma once

#include <chrono>

#include "controller/reconcile_api.h"
#include "controller/scaler_store.h"
#include "webhook/admission.h"

namespace vscaler::webhook {

/// How long the hook's live GET may take for a review due at `deadline` (the API server's
/// ?timeout=; {} when unknown, then 2 s): what is left, less a margin for the answer, at most 2 s.
/// Zero or less: no time to look.
std::chrono::milliseconds lookup_budget(
    std::chrono::steady_clock::time_point deadline,
    std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

/// POST /validate-verticalscalers.
class ScalerHandler {
 public:
  /// `api` reads the target workload for the warnings (this hook is off the hot path).
  ScalerHandler(const controller::ScalerStore& store, controller::ReconcileApi& api);

  /// Answers one CREATE or UPDATE review of a VerticalScaler.
  AdmissionResponse handle(const AdmissionRequest& request);

 private:
  const controller::ScalerStore& store_;
  controller::ReconcileApi& api_;
};

}  // namespace vscaler::webhook

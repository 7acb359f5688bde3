// The VerticalScaler validating hook: denies what the CRD schema and CEL cannot say (every error
// naming its field) and warns, never denies, from what vscaler holds in memory: another scaler
// already targets the workload. It reads nothing from the API: anyone in the cluster can send it
// a review, and a forged one naming another namespace must learn nothing that RBAC would refuse
// (DESIGN.md "Who may talk to vscaler"). What needs a read (the target does not exist yet, the
// declared values conflict with its limits, a container is missing, an HPA scales it on cpu or
// memory) the reconciler says in status conditions and Events, which RBAC guards.
#pragma once

#include "controller/scaler_store.h"
#include "webhook/admission.h"

namespace vscaler::webhook {

/// POST /validate-verticalscalers.
class ScalerHandler {
 public:
  /// `store` is the in-memory index of scalers (for the "already targets" warning).
  explicit ScalerHandler(const controller::ScalerStore& store);

  /// Answers one CREATE or UPDATE review of a VerticalScaler.
  AdmissionResponse handle(const AdmissionRequest& request);

 private:
  const controller::ScalerStore& store_;
};

}  // namespace vscaler::webhook

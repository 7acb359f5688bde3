// The restoring write of a hinted UPDATE sent without reading the workload first (issue 17). A
// Reconcile-mode scaler of fixed values only, each for a named container, says everything its
// strategic merge patch holds: the values do not depend on what is stored. Sent when the hinted
// write is usually stored, that PATCH answers with the stored object, so it is the read and the
// write in one request: a no-op (the values hold, or the write is not stored yet) changes nothing
// and answers with what is stored; a write the API server refuses (a named container the workload
// lacks, requests above limits) stores nothing and the reconciler reads as usual.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/scaler.h"
#include "controller/hint_sink.h"

namespace vscaler::controller {

/// The strategic merge patch that sets every fixed value `scaler` declares, built without the
/// workload; nullopt when that cannot be said without reading it: a mode other than Reconcile,
/// no spec.containers, a "*" entry (which containers it covers is in the workload), or an entry
/// scaled from usage (its values depend on the workload's current ones).
std::optional<nlohmann::json> blind_restore_patch(const api::Scaler& scaler);

/// Whether `expected` is a hinted UPDATE's alone ("generation > G", no deletion or creation
/// waited for): what a blind restore may stand in for the read of.
bool blind_restore_applies(const Expectation& expected);

/// Whether a blind restore's answer shows it wrote, given the hinted UPDATE's old generation
/// `hinted_generation` (G) and the generation `answered` the PATCH returned, when the object at G
/// was seen carrying the declared values (the reconciler checks): the hinted write makes G+1, a
/// write of the restore one more. G+1 (stored, and the restore a no-op: the write left the
/// values alone) or G (not stored yet) is no write. A third writer within the same milliseconds
/// (a scale) would count too: a rare, harmless over-report (an Event, lastScaleTime).
bool blind_restore_wrote(int64_t hinted_generation, int64_t answered);

}  // namespace vscaler::controller

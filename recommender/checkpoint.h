// Checkpoint codec: a scaler's per-container histories to and from the JSON of a
// VerticalScalerCheckpoint (scaling.vscaler.dev/v1beta1). The spec holds, per container:
//   {name, cpu: {referenceTimestamp, totalWeight, buckets: {"<index>": weight}}, memory: {...},
//    firstSampleStart, lastSampleStart, totalSamplesCount,
//    memoryWindow: {end, peak, oomPeak, lastSampleStart}}
// Weights are written as the doubles of the stored floats, so a restore is exact: the restored
// recommendation equals the original. Decoding never throws; the error names the field.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "recommender/aggregate_options.h"
#include "recommender/container_aggregates.h"

namespace vscaler::recommender {

/// The checkpoint's API group/version and kind.
inline constexpr const char* kCheckpointApiVersion = "scaling.vscaler.dev/v1beta1";
/// See kCheckpointApiVersion.
inline constexpr const char* kCheckpointKind = "VerticalScalerCheckpoint";
/// The spec's format version; a checkpoint of another version is refused, not misread.
inline constexpr int kCheckpointVersion = 1;

/// The checkpoint's spec: {version, containers: [...]}, containers sorted by name. Given `open`
/// (and the `options` the aggregates were folded with), each aggregate's memory as its
/// checkpoint_memory: without the peaks of live pods' intervals still open, as VPA's checkpoint
/// writer.
nlohmann::json encode_checkpoint(const ContainerAggregates& aggregates,
                                 const AggregateOptions* options = nullptr,
                                 const OpenIntervals* open = nullptr);

/// Parses a checkpoint spec. The error names the field ("spec.containers[1].cpu.buckets.\"x\":
/// bucket index must be an integer").
kube::Result<ContainerAggregates> decode_checkpoint(const nlohmann::json& spec,
                                                    const AggregateOptions& options);

/// The annotation (value "true") of a checkpoint whose scaler had no history from the history
/// source when it started (Prometheus down, or an answer refused): the next leader start asks
/// again.
inline constexpr const char* kHistoryWantedAnnotation = "scaling.vscaler.dev/history-wanted";

/// The whole object for a scaler (named like it, an ownerReference to it so that it is
/// garbage-collected with it; blockOwnerDeletion unset), with kHistoryWantedAnnotation when
/// `history_wanted`.
/// `options` and `open`: see encode_checkpoint.
nlohmann::json checkpoint_object(std::string_view namespace_, std::string_view scaler_name,
                                 std::string_view scaler_uid, const ContainerAggregates& aggregates,
                                 bool history_wanted = false,
                                 const AggregateOptions* options = nullptr,
                                 const OpenIntervals* open = nullptr);

/// Whether a checkpoint object carries kHistoryWantedAnnotation "true".
bool checkpoint_wants_history(const nlohmann::json& object);

/// Parses a checkpoint object read from the API: an error when its ownerReference is not the
/// scaler `scaler_uid` (a leftover of an earlier scaler of the same name) or its spec is invalid.
kube::Result<ContainerAggregates> decode_checkpoint_object(const nlohmann::json& object,
                                                           std::string_view scaler_uid,
                                                           const AggregateOptions& options);

}  // namespace vscaler::recommender

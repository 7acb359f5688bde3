// ScalerHistory: everything the recommender keeps for one scaler between passes — its
// per-container aggregates, the OOM kills already counted, and whether a full pass (samples from
// every owned pod) has happened — with the pass, the recommendations, the RecommendationProvided
// reason and the checkpoint as methods. Owned by the leader's pass loop; not thread-safe.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "recommender/checkpoint.h"
#include "recommender/history_source.h"
#include "recommender/oom_dedup.h"
#include "recommender/pass.h"
#include "recommender/recommendation.h"

namespace vscaler::recommender {

/// The RecommendationProvided condition's reason after a pass (DESIGN.md "Reasons").
enum class ProvidedReason {
  kRecommended,          ///< status True
  kNoPodsMatched,        ///< no pod of the target
  kNoMetrics,            ///< pods, but no PodMetrics for any of them
  kInsufficientHistory,  ///< no full pass yet (some pod without metrics) or no sample yet
};

/// "Recommended", "NoPodsMatched", "NoMetrics" or "InsufficientHistory".
const char* to_string(ProvidedReason reason);

/// What ScalerHistory::keep_beyond kept of the history it replaced.
struct KeptBeyond {
  std::size_t memory_tails = 0;  ///< containers whose memory peaks above this history's stayed
  std::size_t containers = 0;    ///< containers only the replaced history held, kept whole
};

/// One scaler's recommender state (see the file comment).
class ScalerHistory {
 public:
  /// An empty history; OOM kills are remembered up to `oom_capacity`.
  explicit ScalerHistory(std::size_t oom_capacity = 256) : oom_dedup_(oom_capacity) {}

  /// Resumes from a VerticalScalerCheckpoint object owned by `scaler_uid`; the error (log it,
  /// start empty) names what is wrong. A restored history counts as having had a full pass.
  static kube::Result<ScalerHistory> restore(const nlohmann::json& checkpoint_object,
                                             std::string_view scaler_uid,
                                             const AggregateOptions& options);

  /// Folds one pass (see fold_pass) and updates the reason and the containers sharing the
  /// per-pod minimums. Given the pass's time `now`, then drops the aggregates VPA's garbage
  /// collector drops (model/cluster.go): one without samples whose container is in no owned
  /// pod's spec.containers, and one that expired (ContainerAggregate::expired: no sample for
  /// options.history_length(), 8 days), restored from a checkpoint or not, so that a removed or
  /// renamed container stops being recommended, checkpointed and sharing the minimums. Without
  /// `now` nothing is dropped.
  PassStats fold(const std::vector<PodUsage>& metrics, const std::vector<PodInfo>& owned,
                 const AggregateOptions& options,
                 const std::function<bool(std::string_view)>& recommended = {},
                 std::optional<TimePoint> now = std::nullopt);

  /// Folds a history source's points in (fold_history, each CPU point counting as
  /// `samples_per_point` samples); with points, the history counts as having had a full pass, as a
  /// restored checkpoint does; until the first pass with live metrics, it is recommended from even
  /// while the metrics API has none of the pods yet (NoMetrics otherwise).
  HistoryStats seed(const UsageHistory& history, const AggregateOptions& options,
                    double samples_per_point,
                    const std::function<bool(std::string_view)>& recommended = {});

  /// Keeps what `replaced` (a checkpoint this history, seeded from Prometheus, takes the place
  /// of) knows and this one cannot: for a container both hold, the memory peaks above every one
  /// this history holds (the OOM kills it counted raise peaks Prometheus never saw); a container
  /// only `replaced` holds, whole.
  KeptBeyond keep_beyond(const ScalerHistory& replaced, const AggregateOptions& options);

  /// Counts the folds and seeds that changed the aggregates (samples or OOM kills added): a
  /// checkpoint written at one revision need not be written again until it moves.
  std::uint64_t revision() const { return revision_; }

  /// The reason after the last fold (kInsufficientHistory before any).
  ProvidedReason reason() const { return reason_; }

  /// Recommendations of the containers with samples, sorted by name; `range(container)` gives
  /// each one's minAllowed/maxAllowed. The per-pod minimums are shared as VPA shares them
  /// (routines/vpa.go, logic/recommender.go), among the containers counted at the last fold with
  /// pods: those `recommended` (VPA: mode not Off) that are in an owned pod's spec.containers or
  /// have an aggregate, samples or not.
  std::vector<ContainerRecommendation> recommendations(
      const AggregateOptions& aggregate_options, const RecommendationOptions& options,
      const std::function<AllowedRange(const std::string&)>& range = {}) const;

  /// The checkpoint object to write (named like the scaler, owned by it). Given the `options`
  /// it was folded with, without the memory peaks of the intervals still open, at the last fold
  /// with a time, of the pods owned then (encode_checkpoint): a restored history opens them
  /// anew. (Before any such fold, a history seeded from Prometheus only: nothing left out.)
  nlohmann::json checkpoint(std::string_view namespace_, std::string_view scaler_name,
                            std::string_view scaler_uid,
                            const AggregateOptions* options = nullptr) const {
    return checkpoint_object(namespace_, scaler_name, scaler_uid, aggregates_, history_wanted_,
                             options, open_at_fold_ ? &*open_at_fold_ : nullptr);
  }

  /// The history source had no history for it when it started (Prometheus down, an answer
  /// refused): its checkpoint says so, and the next leader start asks again. Setting it counts as
  /// a change (revision), so that the checkpoint is written with it.
  void set_history_wanted(bool wanted) {
    if (wanted != history_wanted_) ++revision_;
    history_wanted_ = wanted;
  }
  /// See set_history_wanted; restored from the checkpoint.
  bool history_wanted() const { return history_wanted_; }

  /// The per-container aggregates.
  const ContainerAggregates& aggregates() const { return aggregates_; }
  /// The containers the per-pod minimums are shared among, counted at the last fold with pods
  /// (see recommendations; at least 1).
  int containers_sharing_minimums() const { return containers_sharing_minimums_; }
  /// Bytes held by the aggregates (names and map nodes included), for the memory budget.
  std::size_t memory_bytes() const;

 private:
  /// Whether any aggregate holds usage (an OOM kill alone is none).
  bool has_samples() const;
  /// The garbage collection of fold (see there); returns the aggregates dropped.
  std::size_t drop_stale(const std::vector<PodInfo>& owned, const AggregateOptions& options,
                         TimePoint now);

  ContainerAggregates aggregates_;
  OomDedup oom_dedup_;
  std::uint64_t revision_ = 0;
  bool full_pass_seen_ = false;
  /// Seeded from a history source, and no pass has had live metrics since.
  bool seeded_before_metrics_ = false;
  bool history_wanted_ = false;  ///< see set_history_wanted
  /// The last fold given a time: that time and its owned pods (checkpoint).
  std::optional<OpenIntervals> open_at_fold_;
  int containers_sharing_minimums_ = 1;
  ProvidedReason reason_ = ProvidedReason::kInsufficientHistory;
};

}  // namespace vscaler::recommender

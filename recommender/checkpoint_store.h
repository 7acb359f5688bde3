// CheckpointStore: VerticalScalerCheckpoint objects (scaling.vscaler.dev/v1beta1,
// verticalscalercheckpoints, namespaced, named like their scaler, an ownerReference to it with
// neither controller nor blockOwnerDeletion set) read into a ScalerHistory and written from one.
// A write updates with the resourceVersion last read or written (a Conflict re-reads once), or
// creates when there is none. A stored checkpoint that does not parse, or whose owner is another
// scaler's uid (a leftover of an earlier scaler of the same name), is logged and ignored.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.h"
#include "kube/client.h"
#include "kube/errors.h"
#include "recommender/aggregate_options.h"
#include "recommender/scaler_history.h"

namespace vscaler::recommender {

/// scaling.vscaler.dev/v1beta1 verticalscalercheckpoints.
inline const kube::ResourceType kVerticalScalerCheckpoints{"scaling.vscaler.dev", "v1beta1",
                                                           "verticalscalercheckpoints", true};

/// A scaler, as its checkpoint names and owns it.
struct ScalerId {
  std::string namespace_;  ///< the scaler's namespace (the checkpoint's)
  std::string name;        ///< the scaler's name (the checkpoint's)
  std::string uid;         ///< the scaler's uid (the checkpoint's ownerReference)
};

/// What load() found.
struct LoadedCheckpoint {
  bool found = false;                    ///< a checkpoint of that name exists
  std::optional<ScalerHistory> history;  ///< restored from it; nullopt when absent or ignored
  std::string ignored;                   ///< why a found checkpoint was ignored ("" otherwise)
};

/// What load_namespace() found: the checkpoints of the scalers asked for, by scaler name (a
/// scaler not in it has none).
struct LoadedCheckpoints {
  std::map<std::string, LoadedCheckpoint> by_name;
  int requests = 0;  ///< list pages read (of the attempt that succeeded)
};

/// How save() wrote the checkpoint.
enum class SaveOutcome {
  kCreated,  ///< POST: there was none
  kUpdated,  ///< PUT with the resourceVersion read
};

/// Reads and writes checkpoints (see the file comment). Thread-safe.
class CheckpointStore {
 public:
  /// A store over `client` (get/list/create/update on verticalscalercheckpoints).
  explicit CheckpointStore(kube::Client client);

  /// Reads the checkpoint of `scaler` and restores a history from it with `options`. An API
  /// failure other than NotFound is the error; an unusable checkpoint is not (see `ignored`).
  kube::Result<LoadedCheckpoint, kube::ApiError> load(const ScalerId& scaler,
                                                      const AggregateOptions& options);

  /// load() for every scaler of `ns` named in `uids_by_name` (name -> uid) with one paged list of
  /// the namespace's checkpoints instead of a GET each: after a start or a change of leader, a
  /// namespace of 10,000 scalers costs 20 requests, not 10,000. Items are restored as their page
  /// arrives; those of other scalers are dropped unread.
  kube::Result<LoadedCheckpoints, kube::ApiError> load_namespace(
      const std::string& ns, const std::map<std::string, std::string>& uids_by_name,
      const AggregateOptions& options);

  /// Writes `history` as the checkpoint of `scaler`, with `field_manager` ("vscaler"). A write
  /// refused for a stale version (Conflict, NotFound, AlreadyExists: another writer, likely a
  /// new leader, or a deletion) is tried once more after a re-read, if `may_write_again` (empty:
  /// always) still says so: a leader that lost its lease during the first write must not
  /// overwrite the new leader's checkpoint with older histories.
  /// `options`: what the history was folded with (ScalerHistory::checkpoint; null: the
  /// histograms as they are).
  kube::Result<SaveOutcome, kube::ApiError> save(const ScalerId& scaler,
                                                 const ScalerHistory& history,
                                                 const std::string& field_manager = "vscaler",
                                                 const std::function<bool()>& may_write_again = {},
                                                 const AggregateOptions* options = nullptr);

  /// Forgets the resourceVersion kept for `scaler` (call when the scaler is gone).
  void forget(const ScalerId& scaler);

 private:
  // Restores `object`, the stored checkpoint of `scaler` (found).
  LoadedCheckpoint restore(const ScalerId& scaler, const nlohmann::json& object,
                           const AggregateOptions& options);
  std::optional<std::string> known_version(const std::string& key);
  void remember(const std::string& key, const nlohmann::json& object);

  kube::Client client_;
  std::mutex mutex_;
  // Hash of "namespace/name" -> resourceVersion (see slot_of in the .cpp): a string key per
  // checkpoint cost ~60 bytes more, at 10,000 scalers 0.6 MiB.
  std::unordered_map<std::uint64_t, std::string> versions_;
};

}  // namespace vscaler::recommender

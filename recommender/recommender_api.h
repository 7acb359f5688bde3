// RecommenderApi: every API call the recommender loop makes (one scaler's inputs, the scaler's
// status, its checkpoint), behind one interface so that the loop's decisions can be unit-tested
// with one fake; KubeRecommenderApi implements it with MetricsSource, CheckpointStore and the
// kube client.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/result.h"
#include "kube/client.h"
#include "kube/errors.h"
#include "recommender/checkpoint_store.h"
#include "recommender/metrics_source.h"
#include "recommender/resources.h"

namespace vscaler::recommender {

/// The loop's API calls. Called from the loop's thread, except get_scaler and
/// patch_scaler_status, which the status writers call from their threads while the pass goes on
/// (LoopOptions::status_writers): those two must be thread-safe.
class RecommenderApi {
 public:
  virtual ~RecommenderApi() = default;
  /// A pass begins: its reads in `shared_namespaces` list each namespace once (PassReads).
  virtual void begin_pass(std::set<std::string> shared_namespaces) { (void)shared_namespaces; }
  /// The pass ended: what it read is dropped.
  virtual void end_pass() {}
  /// The largest allocatable cpu and memory over the cluster's nodes (LargestNode), read once
  /// per pass. The default knows no nodes: no node cap.
  virtual kube::Result<ResourceMap, kube::ApiError> largest_node() { return ResourceMap{}; }
  /// One pass's inputs for `target` (MetricsSource::read).
  virtual kube::Result<ScalerInputs, SourceError> read_inputs(const TargetWorkload& target) = 0;
  /// GET the VerticalScaler ns/name (fresh, before a status write).
  virtual kube::Result<nlohmann::json, kube::ApiError> get_scaler(const std::string& ns,
                                                                  const std::string& name) = 0;
  /// PATCH the scaler's /status with a JSON merge patch carrying metadata.resourceVersion as a
  /// precondition (a stale one answers 409 Conflict). Success or the error only: the object
  /// written is not read (the result may be null).
  virtual kube::Result<nlohmann::json, kube::ApiError> patch_scaler_status(
      const std::string& ns, const std::string& name, const nlohmann::json& merge_patch) = 0;
  /// CheckpointStore::load.
  virtual kube::Result<LoadedCheckpoint, kube::ApiError> load_checkpoint(
      const ScalerId& scaler, const AggregateOptions& options) = 0;
  /// CheckpointStore::load_namespace. The default loads each with load_checkpoint (fakes).
  virtual kube::Result<LoadedCheckpoints, kube::ApiError> load_checkpoints(
      const std::string& ns, const std::map<std::string, std::string>& uids_by_name,
      const AggregateOptions& options);
  /// CheckpointStore::save (`may_write_again`, `options`: see there).
  virtual kube::Result<SaveOutcome, kube::ApiError> save_checkpoint(
      const ScalerId& scaler, const ScalerHistory& history,
      const std::function<bool()>& may_write_again, const AggregateOptions& options) = 0;
  /// CheckpointStore::forget (the scaler is gone).
  virtual void forget_checkpoint(const ScalerId& scaler) = 0;
};

/// The real calls, through one kube client.
class KubeRecommenderApi final : public RecommenderApi {
 public:
  /// Nodes per page of largest_node's list: a node with its images is 10-30 KB, so a page of
  /// 100 is a few MB however many nodes the cluster has.
  static constexpr std::int64_t kNodePageLimit = 100;

  /// Calls through `client` with field manager "vscaler".
  explicit KubeRecommenderApi(kube::Client client, MetricsSourceOptions source_options = {},
                              std::int64_t node_page_limit = kNodePageLimit);

  void begin_pass(std::set<std::string> shared_namespaces) override;
  void end_pass() override;
  kube::Result<ResourceMap, kube::ApiError> largest_node() override;
  kube::Result<ScalerInputs, SourceError> read_inputs(const TargetWorkload& target) override;
  kube::Result<nlohmann::json, kube::ApiError> get_scaler(const std::string& ns,
                                                          const std::string& name) override;
  kube::Result<nlohmann::json, kube::ApiError> patch_scaler_status(
      const std::string& ns, const std::string& name, const nlohmann::json& merge_patch) override;
  kube::Result<LoadedCheckpoint, kube::ApiError> load_checkpoint(
      const ScalerId& scaler, const AggregateOptions& options) override;
  kube::Result<LoadedCheckpoints, kube::ApiError> load_checkpoints(
      const std::string& ns, const std::map<std::string, std::string>& uids_by_name,
      const AggregateOptions& options) override;
  kube::Result<SaveOutcome, kube::ApiError> save_checkpoint(
      const ScalerId& scaler, const ScalerHistory& history,
      const std::function<bool()>& may_write_again, const AggregateOptions& options) override;
  void forget_checkpoint(const ScalerId& scaler) override;

 private:
  kube::Client client_;
  std::int64_t node_page_limit_;
  MetricsSource source_;
  PassReads pass_;  ///< the current pass's namespace-wide lists
  CheckpointStore checkpoints_;
};

}  // namespace vscaler::recommender

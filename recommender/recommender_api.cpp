// The recommender loop's API calls on the kube client.
#include "recommender/recommender_api.h"

#include <utility>

#include "recommender/cluster_caps.h"

namespace vscaler::recommender {

KubeRecommenderApi::KubeRecommenderApi(kube::Client client, MetricsSourceOptions source_options,
                                       std::int64_t node_page_limit)
    : client_(client),
      node_page_limit_(node_page_limit),
      source_(client, std::move(source_options)),
      checkpoints_(client) {}

void KubeRecommenderApi::begin_pass(std::set<std::string> shared_namespaces) {
  pass_ = PassReads(std::move(shared_namespaces));
}

void KubeRecommenderApi::end_pass() {
  pass_ = PassReads();
}

kube::Result<ResourceMap, kube::ApiError> KubeRecommenderApi::largest_node() {
  LargestNode largest;
  kube::ListOptions options;
  // A consistent list (served from the watch cache too, after one read of etcd's revision), not
  // resourceVersion=0: with that the API server ignores `limit` and answers every node at once.
  // Each node is reduced as its page arrives, so 5,000 nodes are never held at once. A list
  // restarted after an expired token sees nodes twice: a maximum does not mind.
  options.limit = node_page_limit_;
  options.on_item = [&largest](nlohmann::json& node, int) { largest.add(node); };
  auto listed = client_.list(kube::resources::kNodes, "", options);
  if (!listed.ok()) return kube::fail(listed.error());
  return largest.allocatable();
}

kube::Result<ScalerInputs, SourceError> KubeRecommenderApi::read_inputs(
    const TargetWorkload& target) {
  return source_.read(target, &pass_);
}

kube::Result<nlohmann::json, kube::ApiError> KubeRecommenderApi::get_scaler(
    const std::string& ns, const std::string& name) {
  return client_.get(kube::resources::kVerticalScalers, ns, name);
}

kube::Result<nlohmann::json, kube::ApiError> KubeRecommenderApi::patch_scaler_status(
    const std::string& ns, const std::string& name, const nlohmann::json& merge_patch) {
  kube::WriteOptions options;
  options.field_manager = "vscaler";
  options.parse_answer = false;  // the loop reads success only; the informer brings the object
  return client_.patch_status(kube::resources::kVerticalScalers, ns, name, kube::PatchType::kMerge,
                              merge_patch, options);
}

kube::Result<LoadedCheckpoints, kube::ApiError> RecommenderApi::load_checkpoints(
    const std::string& ns, const std::map<std::string, std::string>& uids_by_name,
    const AggregateOptions& options) {
  LoadedCheckpoints loaded;
  for (const auto& [name, uid] : uids_by_name) {
    auto one = load_checkpoint({ns, name, uid}, options);
    ++loaded.requests;
    if (!one.ok()) return kube::fail(one.error());
    if (one->found) loaded.by_name.emplace(name, std::move(one).value());
  }
  return loaded;
}

kube::Result<LoadedCheckpoints, kube::ApiError> KubeRecommenderApi::load_checkpoints(
    const std::string& ns, const std::map<std::string, std::string>& uids_by_name,
    const AggregateOptions& options) {
  return checkpoints_.load_namespace(ns, uids_by_name, options);
}

kube::Result<LoadedCheckpoint, kube::ApiError> KubeRecommenderApi::load_checkpoint(
    const ScalerId& scaler, const AggregateOptions& options) {
  return checkpoints_.load(scaler, options);
}

kube::Result<SaveOutcome, kube::ApiError> KubeRecommenderApi::save_checkpoint(
    const ScalerId& scaler, const ScalerHistory& history,
    const std::function<bool()>& may_write_again, const AggregateOptions& options) {
  return checkpoints_.save(scaler, history, "vscaler", may_write_again, &options);
}

void KubeRecommenderApi::forget_checkpoint(const ScalerId& scaler) {
  checkpoints_.forget(scaler);
}

}  // namespace vscaler::recommender

// Checkpoint reads and writes through the kube client.
#include "recommender/checkpoint_store.h"

#include <utility>

#include "base/log.h"
#include "recommender/hash.h"
#include "recommender/json_fields.h"

namespace vscaler::recommender {
namespace {

constexpr std::string_view kCheckpointsLogger = "recommender.checkpoints";

std::string key_of(const ScalerId& scaler) {
  return scaler.namespace_ + "/" + scaler.name;
}

// The versions_ key: FNV-1a of "namespace/name". Two names that collided would share a slot: a
// version of the other checkpoint is then sent, answered 409, and re-read (save()'s second
// round), so a collision costs a request, never a wrong write.
std::uint64_t slot_of(std::string_view key) {
  return fnv1a(kFnvBasis, key);
}

std::string resource_version_of(const nlohmann::json& object) {
  const auto* metadata = child(object, "metadata");
  return metadata ? std::string(string_field(*metadata, "resourceVersion")) : std::string();
}

}  // namespace

CheckpointStore::CheckpointStore(kube::Client client) : client_(std::move(client)) {}

std::optional<std::string> CheckpointStore::known_version(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = versions_.find(slot_of(key));
  if (it == versions_.end()) return std::nullopt;
  return it->second;
}

void CheckpointStore::remember(const std::string& key, const nlohmann::json& object) {
  std::string version = resource_version_of(object);
  std::lock_guard lock(mutex_);
  if (version.empty()) {
    versions_.erase(slot_of(key));
  } else {
    versions_[slot_of(key)] = std::move(version);
  }
}

void CheckpointStore::forget(const ScalerId& scaler) {
  std::lock_guard lock(mutex_);
  versions_.erase(slot_of(key_of(scaler)));
}

kube::Result<LoadedCheckpoint, kube::ApiError> CheckpointStore::load(
    const ScalerId& scaler, const AggregateOptions& options) {
  LoadedCheckpoint loaded;
  auto object = client_.get(kVerticalScalerCheckpoints, scaler.namespace_, scaler.name);
  if (!object.ok()) {
    if (kube::is_not_found(object.error())) {
      forget(scaler);
      return loaded;
    }
    return kube::fail(object.error());
  }
  return restore(scaler, *object, options);
}

LoadedCheckpoint CheckpointStore::restore(const ScalerId& scaler, const nlohmann::json& object,
                                          const AggregateOptions& options) {
  LoadedCheckpoint loaded;
  loaded.found = true;
  remember(key_of(scaler), object);
  auto history = ScalerHistory::restore(object, scaler.uid, options);
  if (!history.ok()) {
    loaded.ignored = history.error();
    log::warn(kCheckpointsLogger, "checkpoint ignored; the scaler's history starts empty",
              {{"namespace", scaler.namespace_},
               {"name", scaler.name},
               {"scaler_uid", scaler.uid},
               {"reason", loaded.ignored}});
    return loaded;
  }
  loaded.history = std::move(history).value();
  return loaded;
}

kube::Result<LoadedCheckpoints, kube::ApiError> CheckpointStore::load_namespace(
    const std::string& ns, const std::map<std::string, std::string>& uids_by_name,
    const AggregateOptions& options) {
  LoadedCheckpoints loaded;
  kube::ListOptions list_options;
  // After a restart (an expired continue token) items come again: the later copy replaces.
  list_options.on_item = [&](nlohmann::json& item, int /*restart*/) {
    const auto* metadata = child(item, "metadata");
    if (metadata == nullptr) return;
    const std::string name(string_field(*metadata, "name"));
    auto wanted = uids_by_name.find(name);
    if (wanted == uids_by_name.end()) return;
    loaded.by_name.insert_or_assign(name, restore({ns, name, wanted->second}, item, options));
  };
  auto listed = client_.list(kVerticalScalerCheckpoints, ns, list_options);
  if (!listed.ok()) return kube::fail(listed.error());
  loaded.requests = listed->pages;
  for (const auto& [name, uid] : uids_by_name) {
    if (!loaded.by_name.count(name)) forget({ns, name, uid});
  }
  return loaded;
}

kube::Result<SaveOutcome, kube::ApiError> CheckpointStore::save(
    const ScalerId& scaler, const ScalerHistory& history, const std::string& field_manager,
    const std::function<bool()>& may_write_again, const AggregateOptions* options) {
  const std::string key = key_of(scaler);
  nlohmann::json object = history.checkpoint(scaler.namespace_, scaler.name, scaler.uid, options);
  kube::WriteOptions write_options;
  write_options.field_manager = field_manager;
  std::optional<std::string> version = known_version(key);
  // Two rounds at most: the version kept may be stale (another leader wrote, the object was
  // deleted); a Conflict or NotFound then re-reads once.
  for (int round = 0; round < 2; ++round) {
    if (round == 1 && may_write_again && !may_write_again()) {
      forget(scaler);
      return kube::fail(kube::make_error(kube::ErrorKind::kConflict,
                                         "checkpoint " + key +
                                             " was written by another writer; not leading any "
                                             "more, so it is left as it is"));
    }
    if (!version) {
      auto stored = client_.get(kVerticalScalerCheckpoints, scaler.namespace_, scaler.name);
      if (stored.ok()) {
        version = resource_version_of(*stored);
      } else if (!kube::is_not_found(stored.error())) {
        return kube::fail(stored.error());
      }
    }
    if (!version) {
      auto created =
          client_.create(kVerticalScalerCheckpoints, scaler.namespace_, object, write_options);
      if (created.ok()) {
        remember(key, *created);
        return SaveOutcome::kCreated;
      }
      if (!kube::is_already_exists(created.error()) || round == 1) {
        return kube::fail(created.error());
      }
      continue;  // someone created it meanwhile: read its version and update
    }
    object["metadata"]["resourceVersion"] = *version;
    auto updated = client_.update(kVerticalScalerCheckpoints, object, write_options);
    if (updated.ok()) {
      remember(key, *updated);
      return SaveOutcome::kUpdated;
    }
    const bool stale = kube::is_conflict(updated.error()) || kube::is_not_found(updated.error());
    if (!stale || round == 1) {
      forget(scaler);
      return kube::fail(updated.error());
    }
    version.reset();
    object["metadata"].erase("resourceVersion");
  }
  return kube::fail(kube::make_error(kube::ErrorKind::kConflict,
                                     "checkpoint " + key + " kept changing while it was written"));
}

}  // namespace vscaler::recommender

// Namespaces that ask for recommendations (DESIGN.md, Goldilocks-style): the leader lists the
// namespaces labelled vscaler.dev/recommend=true and their workloads' metadata each resync,
// creates a VerticalScaler in mode "Off" (api/namespace_scalers.h) for every workload no scaler
// targets, and deletes its own when the workload goes, the label goes, or a person's scaler
// targets the same workload. What to do is decided by plan_opt_in, a pure function of what was
// read; NamespaceOptIn reads, plans and writes. Scalers a person wrote are never written: only
// made ones (by their label) are created or deleted, each delete preconditioned on its uid.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/scaler.h"
#include "controller/resync.h"
#include "controller/scaler_store.h"
#include "kube/errors.h"

namespace vscaler::controller {

/// One labelled namespace as read this pass.
struct OptInNamespace {
  std::string name;
  /// Every workload read, as (kind, name).
  std::vector<std::pair<std::string, std::string>> workloads;
  /// False when a workload list failed: absent workloads then prove nothing (nothing deleted).
  bool complete = true;
};

/// A made scaler to delete, and why (for the log).
struct OptInDelete {
  std::string ns;
  std::string name;
  std::string uid;
  std::string reason;
};

/// What one pass must write.
struct OptInPlan {
  /// Made scalers to create: (namespace, kind, workload).
  struct Create {
    std::string ns;
    std::string kind;
    std::string workload;
  };
  std::vector<Create> creates;
  std::vector<OptInDelete> deletes;
  /// Workloads left without a made scaler because another scaler holds the name theirs would
  /// have (a person's scaler named vsc-<kind>-<name> that targets something else): the name is
  /// DESIGN's, so the person must rename theirs; the pass says so (once per holder).
  struct NameHeld {
    std::string ns;
    std::string kind;
    std::string workload;
    std::string name;           ///< the made name, held
    std::string holder_uid;     ///< the uid of the scaler holding it
    std::string holder_target;  ///< what that scaler targets, "Kind/name"
  };
  std::vector<NameHeld> names_held;
};

/// Decides the pass: `labelled` are the namespaces asking (all of them, when `labels_complete`;
/// else the namespace list failed and no made scaler is deleted for its label); `scalers` every
/// scaler the operator knows. Made scalers are those with made_for_namespace.
OptInPlan plan_opt_in(const std::vector<OptInNamespace>& labelled, bool labels_complete,
                      const std::vector<std::shared_ptr<const api::Scaler>>& scalers);

/// The opt-in's own calls (the workload lists are the resync's, ResyncApi); KubeOptInApi
/// implements them on the API server.
/// A namespace labelled vscaler.dev/recommend=true.
struct LabelledNamespace {
  std::string name;
  /// Being deleted: it refuses new objects, and its scalers go with it.
  bool terminating = false;
};

class OptInApi {
 public:
  virtual ~OptInApi() = default;
  /// The namespaces labelled vscaler.dev/recommend=true.
  virtual kube::Result<std::vector<LabelledNamespace>, kube::ApiError> labelled_namespaces() = 0;
  /// Creates `object` (a made scaler). AlreadyExists is an error the caller ignores.
  virtual kube::Result<kube::Unit, kube::ApiError> create_scaler(const nlohmann::json& object) = 0;
  /// Deletes the scaler ns/name if its uid is still `uid`.
  virtual kube::Result<kube::Unit, kube::ApiError> delete_scaler(const std::string& ns,
                                                                 const std::string& name,
                                                                 const std::string& uid) = 0;
};

/// What one pass did.
struct OptInStats {
  std::size_t namespaces = 0;  ///< labelled namespaces read
  std::size_t created = 0;
  std::size_t deleted = 0;
  std::size_t names_held = 0;    ///< workloads whose made name another scaler holds
  std::size_t failed = 0;        ///< reads or writes that failed (retried next pass)
  bool lost_leadership = false;  ///< the pass stopped: this replica no longer leads
};

/// Reads, plans and writes one pass at a time (the manager's resync thread, leader only).
class NamespaceOptIn {
 public:
  /// `lists` reads the labelled namespaces' workloads (the resync's metadata lists), `api` the
  /// rest; both must outlive this. `still_leading` is asked right before each create and delete
  /// (empty: always true): a pass's reads may be long stale by its last write, and a replica
  /// that lost its lease meanwhile must not delete what a new leader's reads keep.
  NamespaceOptIn(ResyncApi& lists, OptInApi& api, const ScalerStore& store,
                 std::function<bool()> still_leading = {})
      : lists_(lists), api_(api), store_(store), still_leading_(std::move(still_leading)) {}
  /// One pass. Failures are logged and counted; the next pass tries again.
  OptInStats run_once();

 private:
  bool may_write(OptInStats& stats) const;
  /// Warns of each held name once per holder (the pass runs every resync); with
  /// `forget_others`, those no longer held may be warned of again if they come back.
  void report_names_held(const std::vector<OptInPlan::NameHeld>& held, bool forget_others);

  ResyncApi& lists_;
  OptInApi& api_;
  const ScalerStore& store_;
  std::function<bool()> still_leading_;
  /// The held names warned of, as "ns/name uid": pruned to those still held each pass.
  std::set<std::string> warned_;
};

}  // namespace vscaler::controller

// Leadership: the process's side of leader election (DESIGN.md "High availability"). Without
// --leader-elect the process is the only replica and always leads; with it, a LeaderElector on
// the Lease "vscaler" decides, on a client of its own (short timeouts, its own connections, so
// renewals never queue behind the workers' requests). Exports
// leader_election_master_status{name="vscaler"} (1 leading, 0 not), as controller-runtime does.
#pragma once

#include <functional>
#include <memory>
#include <mutex>

#include "base/result.h"
#include "cmd/options.h"
#include "kube/config.h"
#include "kube/leader_election.h"
#include "kube/leader_gate.h"
#include "metrics/registry.h"

namespace vscaler::cmd {

/// Owns the elector (or the always-leading gate) for main().
class Leadership {
 public:
  /// Builds it from the flags; fails on an unusable configuration (the error says why).
  static kube::Result<std::unique_ptr<Leadership>> create(const Options& options,
                                                          const kube::ClientConfig& config,
                                                          metrics::Registry& registry);
  ~Leadership();
  Leadership(const Leadership&) = delete;
  Leadership& operator=(const Leadership&) = delete;

  /// What leader steps consult (controller::ManagerOptions::leader_gate).
  const kube::LeaderGate& gate() const;
  /// Starts the election (nothing without --leader-elect). `on_started_leading` is called, on
  /// the elector's thread, each time this replica becomes leader.
  void start(std::function<void()> on_started_leading = {});
  /// Stops leading and releases the Lease so another replica takes over at once. Call after the
  /// leader work has stopped. Idempotent.
  void stop();

 private:
  Leadership() = default;

  kube::AlwaysLeader always_;
  std::mutex hook_mutex_;
  std::function<void()> on_started_leading_;  ///< set by start(), called by the elector
  std::unique_ptr<kube::ClientLeaseApi> api_;
  std::unique_ptr<kube::LeaderElector> elector_;
};

}  // namespace vscaler::cmd

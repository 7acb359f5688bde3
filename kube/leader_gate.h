// LeaderGate: what a leader step (a resync pass, a recommender pass, a checkpoint write, a
// recommendation-driven patch) consults before it starts. Every replica serves webhooks and
// reconciles hints; only the one this gate admits runs the steps that must not run twice at once.
#pragma once

namespace vscaler::kube {

/// Asked before each leader step; implemented by LeaderElector (kube/leader_election.h).
class LeaderGate {
 public:
  virtual ~LeaderGate() = default;
  /// True only while this replica may start a leader step now. With leader election: the
  /// Lease is held and its last successful renew, on the monotonic clock, is younger than the
  /// renew deadline (the fencing check: a replica frozen past its lease and resumed is refused
  /// before its elector thread has even noticed). Cheap and thread-safe.
  virtual bool is_leading_now() const = 0;
};

/// The gate of a process run without --leader-elect: it is the only replica, so always leader.
class AlwaysLeader final : public LeaderGate {
 public:
  bool is_leading_now() const override { return true; }
};

}  // namespace vscaler::kube

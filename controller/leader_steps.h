// LeaderSteps: the one place every leader step (the resync pass today; the recommender pass,
// checkpoint writes and recommendation-driven patches when they land) asks before it starts.
// It consults the LeaderGate (the fencing check of kube/leader_election.h), counts the answers in
// vscaler_leader_steps_total{step,result} and logs when a step's answer flips, so a replica
// frozen past its lease and resumed shows in metrics and logs that it started nothing.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "kube/leader_gate.h"
#include "metrics/registry.h"

namespace vscaler::controller {

/// Gate plus bookkeeping for leader steps; thread-safe.
class LeaderSteps {
 public:
  /// `gate` must outlive this object.
  LeaderSteps(const kube::LeaderGate& gate, metrics::Registry& registry);

  /// Call first in every leader step. True: start it ("started" is counted); false: this
  /// replica is not leading now, skip the step ("skipped" is counted). `step` names the kind of
  /// step ("resync", "recommender", "checkpoint", ...): a small fixed set, it becomes a label.
  /// A started step also sets vscaler_leader_step_last_started_timestamp_seconds{step}: an
  /// operator alerts on a leader whose resync stopped, and a test tells a step started before a
  /// freeze from one started after it, which a counter cannot.
  bool begin(std::string_view step);
  /// Whether this replica leads at this moment (the gate's fencing check), without counting:
  /// asked before every write of a step (thousands per pass), where begin() is asked once.
  bool leading_now() const { return gate_.is_leading_now(); }

 private:
  const kube::LeaderGate& gate_;
  metrics::CounterFamily& steps_;
  metrics::GaugeFamily& last_started_;  ///< wall-clock seconds of each step's last start
  std::mutex mutex_;
  std::map<std::string, bool, std::less<>> last_answer_;  ///< per step, for the flip logs
};

}  // namespace vscaler::controller

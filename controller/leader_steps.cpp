#include "controller/leader_steps.h"

#include <chrono>

#include "base/log.h"

namespace vscaler::controller {

LeaderSteps::LeaderSteps(const kube::LeaderGate& gate, metrics::Registry& registry)
    : gate_(gate),
      steps_(registry.counter("vscaler_leader_steps_total",
                              "Leader steps (resync passes, ...) started or skipped because this "
                              "replica was not leading at that moment",
                              {"step", "result"})),
      last_started_(registry.gauge("vscaler_leader_step_last_started_timestamp_seconds",
                                   "Unix time at which this replica last started each leader step",
                                   {"step"})) {}

bool LeaderSteps::begin(std::string_view step) {
  bool leading = gate_.is_leading_now();
  steps_.with({step, leading ? "started" : "skipped"}).inc();
  if (leading) {
    auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
    last_started_.with({step}).set(std::chrono::duration<double>(since_epoch).count());
  }
  bool flipped = false;
  {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = last_answer_.try_emplace(std::string(step), leading);
    flipped = !inserted && it->second != leading;
    it->second = leading;
  }
  // Only the flips: a follower asks every period and has nothing new to say each time.
  if (flipped) {
    log::info("leader-steps", leading ? "leader steps resume" : "leader step skipped: not leading",
              {{"step", std::string(step)}});
  }
  return leading;
}

}  // namespace vscaler::controller

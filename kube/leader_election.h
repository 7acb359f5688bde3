// LeaderElector: leader election on a coordination.k8s.io/v1 Lease with client-go's semantics
// (k8s.io/client-go/tools/leaderelection): acquire a Lease that is free or expired, renew it every
// retry period, give up leadership when renewing has failed for the renew deadline, release it on
// stop by clearing holderIdentity. Expiry is judged on the local monotonic clock from the moment
// this replica last saw the lease record change, never by comparing the holder's clock with ours.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "base/result.h"
#include "kube/client.h"
#include "kube/errors.h"
#include "kube/leader_gate.h"

namespace vscaler::kube {

/// The Lease reads and writes the elector makes; implemented on Client, faked in unit tests.
class LeaseApi {
 public:
  virtual ~LeaseApi() = default;
  /// GET the Lease; NotFound when it does not exist.
  virtual Result<nlohmann::json, ApiError> get(const std::string& ns, const std::string& name) = 0;
  /// POST a new Lease; AlreadyExists when another replica created it first.
  virtual Result<nlohmann::json, ApiError> create(const nlohmann::json& lease) = 0;
  /// PUT the Lease with its metadata.resourceVersion as precondition; Conflict when it changed.
  virtual Result<nlohmann::json, ApiError> update(const nlohmann::json& lease) = 0;
};

/// LeaseApi on a real API server.
class ClientLeaseApi final : public LeaseApi {
 public:
  /// Uses `client` (give it short timeouts: an attempt must end well within the renew deadline).
  explicit ClientLeaseApi(Client client) : client_(std::move(client)) {}
  Result<nlohmann::json, ApiError> get(const std::string& ns, const std::string& name) override;
  Result<nlohmann::json, ApiError> create(const nlohmann::json& lease) override;
  Result<nlohmann::json, ApiError> update(const nlohmann::json& lease) override;

 private:
  Client client_;
};

/// The clocks the elector reads: monotonic for every judgement, wall only for the times written
/// into the Lease (for people and other tools). Faked in unit tests.
class ElectionClock {
 public:
  virtual ~ElectionClock() = default;
  /// Monotonic time: keeps running through SIGSTOP, never steps with NTP.
  virtual std::chrono::steady_clock::time_point now() const = 0;
  /// Wall-clock time, only for acquireTime and renewTime in the Lease.
  virtual std::chrono::system_clock::time_point wall() const = 0;
};

/// The process's real clocks.
const ElectionClock& system_election_clock();

/// What to elect on and how fast. The defaults are client-go's (and DESIGN.md's).
struct LeaderElectionConfig {
  std::string lease_namespace = "vscaler-system";
  std::string lease_name = "vscaler";
  /// Who we are in holderIdentity; unique per process (see make_identity()).
  std::string identity;
  /// How long others wait, after they last saw the record change, before taking the Lease.
  std::chrono::milliseconds lease_duration{15'000};
  /// How long the leader keeps trying to renew before it gives up leading; also the fencing
  /// window of is_leading_now(). Must be shorter than lease_duration.
  std::chrono::milliseconds renew_deadline{10'000};
  /// Time between attempts (jittered by up to 1.2x for followers, as client-go does).
  std::chrono::milliseconds retry_period{2'000};
  /// Clear holderIdentity on stop() so another replica takes over at once.
  bool release_on_stop = true;
};

/// Checks the durations (positive, retry < renew deadline < lease duration, whole seconds of
/// lease duration >= 1) and the names; the error names the problem.
Result<Unit> validate(const LeaderElectionConfig& config);

/// "<hostname>_<8 random hex digits>": unique even when a container restarts in the same pod
/// (the old process's lease is then not mistaken for our own).
std::string make_identity();

/// The namespace to hold the Lease in when none is given: $POD_NAMESPACE (the downward API),
/// else the service account's namespace file under `service_account_dir`, else vscaler-system.
std::string default_lease_namespace(
    const std::string& service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

/// Told when leadership starts and stops; called on the elector's thread (or stop()'s caller),
/// so they must not block for long.
struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  /// Every change of the holder this replica observes (including itself), for logs.
  std::function<void(const std::string& holder)> on_new_leader;
};

/// Runs the election on its own thread (start()/stop()), or step by step through tick() in
/// tests. is_leading_now() may be called from any thread.
class LeaderElector final : public LeaderGate {
 public:
  LeaderElector(LeaseApi& api, LeaderElectionConfig config, LeaderCallbacks callbacks = {},
                const ElectionClock& clock = system_election_clock());
  ~LeaderElector() override;
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  /// Starts the election thread. Call once.
  void start();
  /// Stops the thread; if leading, stops leading (callback) and, with release_on_stop, clears
  /// the holder so the next replica leads at once. Idempotent.
  void stop();

  /// The fencing check (see LeaderGate): leading, and the last successful renew is younger than
  /// the renew deadline on the monotonic clock.
  bool is_leading_now() const override;
  /// Whether the elector considers itself leader (between the two callbacks), fenced or not.
  bool is_leader() const { return leading_.load(std::memory_order_acquire); }
  /// Our holderIdentity.
  const std::string& identity() const { return config_.identity; }
  /// What the elector was built with.
  const LeaderElectionConfig& config() const { return config_; }

  /// One step of the election loop: as follower, one attempt to acquire; as leader, one attempt
  /// to renew, giving up leadership when the renew deadline has passed since the last success
  /// or another holder is seen. Returns how long to wait before the next step.
  std::chrono::milliseconds tick();
  /// Clears holderIdentity (precondition: the resourceVersion we last wrote or read). Returns
  /// false when the Lease is not ours any more or the write failed. Used by stop().
  bool release();

 private:
  /// One GET and, when allowed, one create or update. True when we hold the Lease now.
  bool try_acquire_or_renew();
  /// Remembers `lease` as the last observed record; resets the observed time when it changed.
  void observe(const nlohmann::json& lease);
  void start_leading();
  void stop_leading(const char* why);
  std::chrono::milliseconds follower_wait();
  std::int64_t now_ns() const;

  LeaseApi& api_;
  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  const ElectionClock& clock_;

  // Only the election thread (or tests calling tick()) touch these.
  std::optional<nlohmann::json> observed_;  ///< the last Lease read or written
  std::string observed_record_;             ///< its spec, serialised, to detect changes
  std::chrono::steady_clock::time_point observed_time_{};
  std::string observed_holder_;
  std::mt19937_64 random_;

  // Read by is_leading_now() from any thread.
  std::atomic<bool> leading_{false};
  std::atomic<std::int64_t> last_renew_ns_{0};  ///< monotonic time of the last successful write

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace vscaler::kube

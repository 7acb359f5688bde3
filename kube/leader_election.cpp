#include "kube/leader_election.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "base/log.h"

namespace vscaler::kube {
namespace {
using nlohmann::json;
using std::chrono::milliseconds;
constexpr std::string_view kLeaderLogger = "leader-election";
/// client-go's wait.JitterFactor for the acquire loop: followers wait retry * [1, 2.2).
constexpr double kJitterFactor = 1.2;

class SystemClock final : public ElectionClock {
 public:
  std::chrono::steady_clock::time_point now() const override {
    return std::chrono::steady_clock::now();
  }
  std::chrono::system_clock::time_point wall() const override {
    return std::chrono::system_clock::now();
  }
};

/// metav1.MicroTime as the API server writes it: "2026-12-01T08:27:36.123456Z".
std::string micro_time(std::chrono::system_clock::time_point time) {
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &utc);
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%s.%06lldZ", date,
                static_cast<long long>(micros % 1'000'000));
  return buffer;
}

/// Whole seconds written as leaseDurationSeconds (rounded up: never shorter than configured).
std::int64_t lease_seconds(milliseconds duration) {
  return (duration.count() + 999) / 1000;
}

std::string holder_of(const json& lease) {
  auto spec = lease.find("spec");
  if (spec == lease.end() || !spec->is_object()) return {};
  auto holder = spec->find("holderIdentity");
  return holder != spec->end() && holder->is_string() ? holder->get<std::string>() : std::string{};
}

json spec_of(const json& lease) {
  auto spec = lease.find("spec");
  return spec != lease.end() && spec->is_object() ? *spec : json::object();
}

std::int64_t int_field(const json& object, const char* name, std::int64_t fallback) {
  auto field = object.find(name);
  return field != object.end() && field->is_number_integer() ? field->get<std::int64_t>()
                                                             : fallback;
}
}  // namespace

Result<json, ApiError> ClientLeaseApi::get(const std::string& ns, const std::string& name) {
  return client_.get(resources::kLeases, ns, name);
}

Result<json, ApiError> ClientLeaseApi::create(const json& lease) {
  WriteOptions options;
  options.field_manager = "vscaler";
  return client_.create(resources::kLeases, lease["metadata"].value("namespace", ""), lease,
                        options);
}

Result<json, ApiError> ClientLeaseApi::update(const json& lease) {
  WriteOptions options;
  options.field_manager = "vscaler";
  return client_.update(resources::kLeases, lease, options);
}

const ElectionClock& system_election_clock() {
  static const SystemClock clock;
  return clock;
}

Result<Unit> validate(const LeaderElectionConfig& config) {
  if (config.lease_namespace.empty()) return fail("leader election: the Lease namespace is empty");
  if (config.lease_name.empty()) return fail("leader election: the Lease name is empty");
  if (config.identity.empty()) return fail("leader election: the identity is empty");
  if (config.retry_period <= milliseconds(0)) {
    return fail("leader election: the retry period must be positive");
  }
  if (config.lease_duration < milliseconds(1000)) {
    return fail("leader election: the lease duration must be at least 1s (whole seconds)");
  }
  if (config.lease_duration <= config.renew_deadline) {
    return fail("leader election: the lease duration (" +
                std::to_string(config.lease_duration.count()) +
                "ms) must be longer than the renew deadline (" +
                std::to_string(config.renew_deadline.count()) + "ms)");
  }
  if (static_cast<double>(config.renew_deadline.count()) <=
      kJitterFactor * static_cast<double>(config.retry_period.count())) {
    return fail("leader election: the renew deadline (" +
                std::to_string(config.renew_deadline.count()) +
                "ms) must be longer than 1.2 x the retry period (" +
                std::to_string(config.retry_period.count()) + "ms)");
  }
  return Unit{};
}

std::string make_identity() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "vscaler");
  }
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(random()));
  return std::string(host) + "_" + suffix;
}

std::string default_lease_namespace(const std::string& service_account_dir) {
  if (const char* pod_namespace = std::getenv("POD_NAMESPACE");
      pod_namespace != nullptr && *pod_namespace != '\0') {
    return pod_namespace;
  }
  std::ifstream file(service_account_dir + "/namespace");
  std::string ns;
  if (file && std::getline(file, ns)) {
    while (!ns.empty() && std::isspace(static_cast<unsigned char>(ns.back()))) ns.pop_back();
    if (!ns.empty()) return ns;
  }
  return "vscaler-system";
}

LeaderElector::LeaderElector(LeaseApi& api, LeaderElectionConfig config, LeaderCallbacks callbacks,
                             const ElectionClock& clock)
    : api_(api),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      random_(std::random_device{}()) {}

LeaderElector::~LeaderElector() {
  stop();
}

void LeaderElector::start() {
  std::lock_guard lock(mutex_);
  if (started_) return;
  started_ = true;
  log::info(kLeaderLogger, "taking part in leader election",
            {{"lease", config_.lease_namespace + "/" + config_.lease_name},
             {"identity", config_.identity}});
  thread_ = std::thread([this] {
    std::unique_lock guard(mutex_);
    while (!stopping_) {
      guard.unlock();
      milliseconds wait = tick();
      guard.lock();
      wake_.wait_for(guard, wait, [this] { return stopping_; });
    }
  });
}

void LeaderElector::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!leading_.load(std::memory_order_acquire)) return;
  // Leader work stops before the Lease is given away, so no two replicas act at once.
  stop_leading("stopping");
  if (config_.release_on_stop && release()) {
    log::info(kLeaderLogger, "released the lease", {{"identity", config_.identity}});
  }
}

std::int64_t LeaderElector::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.now().time_since_epoch())
      .count();
}

bool LeaderElector::is_leading_now() const {
  if (!leading_.load(std::memory_order_acquire)) return false;
  auto age = now_ns() - last_renew_ns_.load(std::memory_order_acquire);
  return age < std::chrono::duration_cast<std::chrono::nanoseconds>(config_.renew_deadline).count();
}

milliseconds LeaderElector::follower_wait() {
  std::uniform_real_distribution<double> jitter(0.0, kJitterFactor);
  auto retry = static_cast<double>(config_.retry_period.count());
  return milliseconds(static_cast<std::int64_t>(retry + retry * jitter(random_)));
}

milliseconds LeaderElector::tick() {
  auto renew_deadline_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(config_.renew_deadline).count();
  if (!leading_.load(std::memory_order_acquire)) {
    if (!try_acquire_or_renew()) return follower_wait();
    start_leading();
    return config_.retry_period;
  }
  // A leader whose last renew is older than the deadline (its renewals failed, or the process was
  // frozen) has lost: others may hold the Lease by now. It must acquire afresh, as a follower.
  if (now_ns() - last_renew_ns_.load(std::memory_order_acquire) >= renew_deadline_ns) {
    stop_leading("the renew deadline passed since the last successful renew");
    return follower_wait();
  }
  if (try_acquire_or_renew()) return config_.retry_period;
  if (!observed_holder_.empty() && observed_holder_ != config_.identity) {
    stop_leading("another replica holds the lease");
    return follower_wait();
  }
  if (now_ns() - last_renew_ns_.load(std::memory_order_acquire) >= renew_deadline_ns) {
    stop_leading("renewing failed until the renew deadline");
    return follower_wait();
  }
  return config_.retry_period;
}

void LeaderElector::observe(const json& lease) {
  std::string record = spec_of(lease).dump();
  if (!observed_ || record != observed_record_) {
    observed_record_ = std::move(record);
    observed_time_ = clock_.now();
  }
  std::string holder = holder_of(lease);
  if (holder != observed_holder_) {
    observed_holder_ = holder;
    if (!holder.empty()) {
      log::info(kLeaderLogger, "new leader observed", {{"holder", holder}});
      if (callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
    }
  }
  observed_ = lease;
}

bool LeaderElector::try_acquire_or_renew() {
  // The fencing window starts before the request: others start counting only once they see the
  // write, which is later, so this errs on the safe side.
  std::int64_t attempt_ns = now_ns();
  std::string wall = micro_time(clock_.wall());
  auto mark_renewed = [&](const json& stored) {
    observe(stored);
    last_renew_ns_.store(attempt_ns, std::memory_order_release);
  };

  auto current = api_.get(config_.lease_namespace, config_.lease_name);
  if (!current.ok()) {
    if (!is_not_found(current.error())) {
      log::warn(kLeaderLogger, "cannot read the lease", {{"error", current.error().to_string()}});
      return false;
    }
    json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", lease_seconds(config_.lease_duration)},
          {"acquireTime", wall},
          {"renewTime", wall},
          {"leaseTransitions", 0}}}};
    auto created = api_.create(lease);
    if (created.ok()) {
      mark_renewed(*created);
      return true;
    }
    if (is_already_exists(created.error())) {
      // Another replica created it between our GET and POST: learn who, and wait our turn.
      if (auto again = api_.get(config_.lease_namespace, config_.lease_name); again.ok()) {
        observe(*again);
      }
    } else {
      log::warn(kLeaderLogger, "cannot create the lease", {{"error", created.error().to_string()}});
    }
    return false;
  }

  observe(*current);
  json spec = spec_of(*current);
  std::string holder = holder_of(*current);
  auto observed_duration = std::chrono::seconds(int_field(spec, "leaseDurationSeconds", 0));
  bool mine = holder == config_.identity;
  if (!holder.empty() && !mine && clock_.now() < observed_time_ + observed_duration) {
    return false;  // held by another replica, and not expired as far as we have watched it
  }

  json lease = *current;
  json& next = lease["spec"];
  if (!next.is_object()) next = json::object();
  if (!mine) {
    next["acquireTime"] = wall;
    next["leaseTransitions"] = int_field(spec, "leaseTransitions", 0) + 1;
  }
  next["holderIdentity"] = config_.identity;
  next["leaseDurationSeconds"] = lease_seconds(config_.lease_duration);
  next["renewTime"] = wall;
  auto updated = api_.update(lease);
  if (!updated.ok()) {
    // A Conflict means another replica wrote the Lease since our GET: it won this round.
    if (is_conflict(updated.error())) {
      log::debug(kLeaderLogger, "lost a race for the lease",
                 {{"error", updated.error().to_string()}});
    } else {
      log::warn(kLeaderLogger, mine ? "cannot renew the lease" : "cannot acquire the lease",
                {{"error", updated.error().to_string()}});
    }
    return false;
  }
  mark_renewed(*updated);
  return true;
}

bool LeaderElector::release() {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!observed_ || observed_holder_ != config_.identity) return false;
    std::string wall = micro_time(clock_.wall());
    json lease = *observed_;
    json& spec = lease["spec"];
    if (!spec.is_object()) spec = json::object();
    // client-go's release: no holder, a 1 s duration, times of now; the transitions are kept.
    spec["holderIdentity"] = "";
    spec["leaseDurationSeconds"] = 1;
    spec["acquireTime"] = wall;
    spec["renewTime"] = wall;
    auto updated = api_.update(lease);
    if (updated.ok()) {
      observe(*updated);
      return true;
    }
    if (!is_conflict(updated.error())) {
      log::warn(kLeaderLogger, "cannot release the lease",
                {{"error", updated.error().to_string()}});
      return false;
    }
    // Changed since we last wrote it: release only if it is still ours.
    auto current = api_.get(config_.lease_namespace, config_.lease_name);
    if (!current.ok()) {
      log::warn(kLeaderLogger, "cannot re-read the lease to release it",
                {{"error", current.error().to_string()}});
      return false;
    }
    observe(*current);
  }
  return false;
}

void LeaderElector::start_leading() {
  leading_.store(true, std::memory_order_release);
  log::info(kLeaderLogger, "became the leader",
            {{"lease", config_.lease_namespace + "/" + config_.lease_name},
             {"identity", config_.identity}});
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();
}

void LeaderElector::stop_leading(const char* why) {
  leading_.store(false, std::memory_order_release);
  log::info(kLeaderLogger, "stopped leading", {{"identity", config_.identity}, {"reason", why}});
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

}  // namespace vscaler::kube

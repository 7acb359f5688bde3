// LeaderElector's state machine against a fake Lease API (resourceVersion preconditions, 409s,
// injected failures) and a fake clock: acquire, renew, expiry judged on the monotonic clock from
// the last observed change, losing after the renew deadline, the fencing check, release and
// races; plus the thread, LeaderSteps and the helpers.
#include "kube/leader_election.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "controller/leader_steps.h"
#include "metrics/registry.h"

namespace {

using namespace vscaler::kube;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

/// A clock the test moves by hand.
class FakeClock final : public ElectionClock {
 public:
  std::chrono::steady_clock::time_point now() const override { return now_; }
  std::chrono::system_clock::time_point wall() const override { return wall_; }
  void advance(milliseconds by) {
    now_ += by;
    wall_ += by;
  }
  /// Moves only the wall clock (a skewed or stepped clock must change nothing).
  void skew_wall(milliseconds by) { wall_ += by; }

 private:
  std::chrono::steady_clock::time_point now_{seconds(1000)};
  std::chrono::system_clock::time_point wall_{seconds(1'800'000'000)};
};

/// One Lease as the API server keeps it: create fails when it exists, update needs the current
/// resourceVersion. Failures can be injected; thread-safe for the threaded test.
class FakeLeaseApi final : public LeaseApi {
 public:
  Result<json, ApiError> get(const std::string&, const std::string&) override {
    std::lock_guard lock(mutex_);
    ++gets;
    if (failing) return fail(make_error(ErrorKind::kServerError, "injected"));
    if (!stored) return fail(make_error(ErrorKind::kNotFound, "leases \"vscaler\" not found"));
    return *stored;
  }
  Result<json, ApiError> create(const json& lease) override {
    std::lock_guard lock(mutex_);
    if (failing) return fail(make_error(ErrorKind::kServerError, "injected"));
    run_hook();
    if (stored) return fail(make_error(ErrorKind::kAlreadyExists, "already exists"));
    stored = lease;
    (*stored)["metadata"]["resourceVersion"] = std::to_string(++version_);
    return *stored;
  }
  Result<json, ApiError> update(const json& lease) override {
    std::lock_guard lock(mutex_);
    ++updates;
    if (failing) return fail(make_error(ErrorKind::kServerError, "injected"));
    run_hook();
    if (!stored) return fail(make_error(ErrorKind::kNotFound, "not found"));
    if (lease["metadata"].value("resourceVersion", "") !=
        (*stored)["metadata"].value("resourceVersion", "")) {
      return fail(make_error(ErrorKind::kConflict, "the object has been modified"));
    }
    stored = lease;
    (*stored)["metadata"]["resourceVersion"] = std::to_string(++version_);
    return *stored;
  }

  /// A write by someone else (another elector, a person): a new record and resourceVersion.
  void overwrite_holder(const std::string& holder, const std::string& renew_time) {
    std::lock_guard lock(mutex_);
    (*stored)["spec"]["holderIdentity"] = holder;
    (*stored)["spec"]["renewTime"] = renew_time;
    (*stored)["metadata"]["resourceVersion"] = std::to_string(++version_);
  }
  /// Creates the Lease as another process would have.
  void put(const json& spec) {
    std::lock_guard lock(mutex_);
    stored = json{{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", "vscaler"}, {"namespace", "vscaler-system"}}},
                  {"spec", spec}};
    (*stored)["metadata"]["resourceVersion"] = std::to_string(++version_);
  }
  std::string holder() {
    std::lock_guard lock(mutex_);
    return stored ? (*stored)["spec"].value("holderIdentity", "") : "";
  }
  json spec() {
    std::lock_guard lock(mutex_);
    return (*stored)["spec"];
  }

  std::optional<json> stored;
  bool failing = false;
  int gets = 0;
  int updates = 0;
  /// Runs once, inside the next write, before it is judged (with the lock held: touch `stored`
  /// directly): what another replica wrote in between.
  std::function<void()> before_next_write;

 private:
  void run_hook() {
    auto hook = std::move(before_next_write);
    before_next_write = nullptr;
    if (hook) hook();
  }
  std::mutex mutex_;
  int version_ = 0;
};

LeaderElectionConfig config_for(const std::string& identity) {
  LeaderElectionConfig config;
  config.identity = identity;
  return config;  // client-go's defaults: 15 s, 10 s, 2 s
}

/// An elector and what its callbacks saw.
struct Replica {
  int started = 0;
  int stopped = 0;
  std::unique_ptr<LeaderElector> elector;
  Replica(FakeLeaseApi& api, FakeClock& clock, const std::string& identity,
          LeaderElectionConfig config = {}) {
    if (config.identity.empty()) config = config_for(identity);
    LeaderCallbacks callbacks;
    callbacks.on_started_leading = [this] { ++started; };
    callbacks.on_stopped_leading = [this] { ++stopped; };
    elector = std::make_unique<LeaderElector>(api, config, callbacks, clock);
  }
  LeaderElector* operator->() { return elector.get(); }
};

TEST_CASE("a missing Lease is created and the creator leads") {
  FakeLeaseApi api;
  FakeClock clock;
  Replica a(api, clock, "a");
  CHECK_FALSE(a->is_leading_now());
  CHECK(a->tick() == seconds(2));  // a leader renews every retry period
  CHECK(a->is_leader());
  CHECK(a->is_leading_now());
  CHECK(a.started == 1);
  json spec = api.spec();
  CHECK(spec["holderIdentity"] == "a");
  CHECK(spec["leaseDurationSeconds"] == 15);
  CHECK(spec["leaseTransitions"] == 0);
  CHECK(spec["renewTime"].get<std::string>().size() == 27);  // 2027-01-15T08:00:00.000000Z
  CHECK(spec["acquireTime"] == spec["renewTime"]);
}

TEST_CASE("the leader renews; a follower waits a full lease duration after the last change") {
  FakeLeaseApi api;
  FakeClock clock;
  Replica a(api, clock, "a");
  Replica b(api, clock, "b");
  (void)a->tick();
  milliseconds wait = b->tick();
  CHECK_FALSE(b->is_leader());
  // Followers retry with client-go's jitter: retry * [1, 2.2).
  CHECK(wait >= seconds(2));
  CHECK(wait < milliseconds(4400));
  // While a renews, b never takes over, however long it watches.
  for (int i = 0; i < 20; ++i) {
    clock.advance(seconds(2));
    (void)a->tick();
    (void)b->tick();
    CHECK_FALSE(b->is_leader());
  }
  CHECK(a.stopped == 0);
  std::string renewed = api.spec()["renewTime"];
  std::string acquired = api.spec()["acquireTime"];
  CHECK(renewed != acquired);  // renewals move renewTime, keep acquireTime
  // a dies. b saw the record change on its last tick: it waits 15 s from then, not less.
  clock.advance(seconds(14));
  (void)b->tick();
  CHECK_FALSE(b->is_leader());
  clock.advance(milliseconds(999));
  (void)b->tick();
  CHECK_FALSE(b->is_leader());
  clock.advance(milliseconds(1));
  (void)b->tick();
  CHECK(b->is_leader());
  CHECK(b.started == 1);
  CHECK(api.spec()["holderIdentity"] == "b");
  CHECK(api.spec()["leaseTransitions"] == 1);
  CHECK(api.spec()["acquireTime"] != acquired);
}

TEST_CASE("expiry is judged on the local monotonic clock, never from the holder's renewTime") {
  FakeLeaseApi api;
  FakeClock clock;
  // Another process holds it with a renewTime from long ago (its clock is far behind ours).
  api.put({{"holderIdentity", "other"},
           {"leaseDurationSeconds", 15},
           {"renewTime", "2001-01-01T00:00:00.000000Z"},
           {"acquireTime", "2001-01-01T00:00:00.000000Z"},
           {"leaseTransitions", 3}});
  Replica b(api, clock, "b");
  (void)b->tick();
  CHECK_FALSE(b->is_leader());  // first sight starts the clock
  clock.skew_wall(std::chrono::hours(24));
  clock.advance(seconds(10));
  api.overwrite_holder("other", "2001-01-01T00:00:10.000000Z");  // renewed: a change
  (void)b->tick();
  clock.advance(seconds(14));
  (void)b->tick();
  CHECK_FALSE(b->is_leader());
  clock.advance(seconds(1));
  (void)b->tick();
  CHECK(b->is_leader());
  CHECK(api.spec()["leaseTransitions"] == 4);
}

TEST_CASE("renewal failures keep the leader until the renew deadline, then it stops leading") {
  FakeLeaseApi api;
  FakeClock clock;
  Replica a(api, clock, "a");
  (void)a->tick();
  api.failing = true;
  for (int elapsed = 2; elapsed < 10; elapsed += 2) {
    clock.advance(seconds(2));
    CHECK(a->tick() == seconds(2));  // keeps retrying at the retry period
    CHECK(a->is_leader());
    CHECK(a->is_leading_now());
  }
  clock.advance(milliseconds(1999));  // 9.999 s since the last renew
  CHECK(a->is_leading_now());
  clock.advance(milliseconds(1));  // 10 s: fenced at once, before the elector notices
  CHECK_FALSE(a->is_leading_now());
  CHECK(a->is_leader());
  (void)a->tick();
  CHECK_FALSE(a->is_leader());
  CHECK(a.stopped == 1);
  // The API comes back and nobody else took the Lease: a acquires it again, as a new term.
  api.failing = false;
  clock.advance(seconds(2));
  (void)a->tick();
  CHECK(a->is_leader());
  CHECK(a.started == 2);
}

TEST_CASE("a replica frozen past its lease starts no leader step and becomes a follower") {
  FakeLeaseApi api;
  FakeClock clock;
  Replica a(api, clock, "a");
  Replica b(api, clock, "b");
  (void)a->tick();
  (void)b->tick();
  // a is frozen (SIGSTOP) for 20 s; b takes over meanwhile.
  for (int i = 0; i < 10; ++i) {
    clock.advance(seconds(2));
    (void)b->tick();
  }
  CHECK(b->is_leader());
  // a resumes: before its elector runs, the fencing check already refuses leader steps.
  CHECK(a->is_leader());
  CHECK_FALSE(a->is_leading_now());
  int updates = api.updates;
  (void)a->tick();  // notices the deadline passed: stops leading without writing
  CHECK(api.updates == updates);
  CHECK_FALSE(a->is_leader());
  CHECK(a.stopped == 1);
  (void)a->tick();  // as a follower, sees b's fresh lease
  CHECK_FALSE(a->is_leader());
  CHECK(api.holder() == "b");
  CHECK(b->is_leading_now());
}

TEST_CASE("a leader that sees another holder stops leading at once") {
  FakeLeaseApi api;
  FakeClock clock;
  Replica a(api, clock, "a");
  (void)a->tick();
  api.overwrite_holder("intruder", "2027-01-01T00:00:00.000000Z");
  clock.advance(seconds(2));
  (void)a->tick();
  CHECK_FALSE(a->is_leader());
  CHECK_FALSE(a->is_leading_now());
  CHECK(a.stopped == 1);
  CHECK(api.holder() == "intruder");
}

TEST_CASE("stop releases the Lease and another replica takes it at its next attempt") {
  FakeLeaseApi api;
  FakeClock clock;
  Replica a(api, clock, "a");
  Replica b(api, clock, "b");
  (void)a->tick();
  (void)b->tick();
  a->stop();
  CHECK(a.stopped == 1);
  CHECK_FALSE(a->is_leading_now());
  CHECK(api.holder().empty());
  CHECK(api.spec()["leaseDurationSeconds"] == 1);
  CHECK(api.spec()["leaseTransitions"] == 0);
  clock.advance(seconds(2));
  (void)b->tick();
  CHECK(b->is_leader());
  CHECK(api.spec()["leaseTransitions"] == 1);
  // A follower's stop writes nothing.
  Replica c(api, clock, "c");
  (void)c->tick();
  int updates = api.updates;
  c->stop();
  CHECK(api.updates == updates);
  CHECK(api.holder() == "b");
}

TEST_CASE("release does not clear a Lease someone else holds now") {
  FakeLeaseApi api;
  FakeClock clock;
  Replica a(api, clock, "a");
  (void)a->tick();
  api.overwrite_holder("b", "2027-01-01T00:00:00.000000Z");
  CHECK_FALSE(a->release());  // 409 on the stale copy, then the re-read shows b
  CHECK(api.holder() == "b");
}

TEST_CASE("a lost race (409 on update) leaves the loser a follower") {
  FakeLeaseApi api;
  FakeClock clock;
  api.put({{"holderIdentity", ""}, {"leaseDurationSeconds", 1}, {"leaseTransitions", 2}});
  Replica b(api, clock, "b");
  // Between b's GET and its PUT, another replica takes the free Lease.
  api.before_next_write = [&api] {
    (*api.stored)["spec"]["holderIdentity"] = "winner";
    (*api.stored)["metadata"]["resourceVersion"] = "999";
  };
  (void)b->tick();
  CHECK_FALSE(b->is_leader());
  CHECK(b.started == 0);
  CHECK(api.holder() == "winner");
}

TEST_CASE("a lost create race (AlreadyExists) re-reads the Lease and waits") {
  FakeLeaseApi api;
  FakeClock clock;
  Replica b(api, clock, "b");
  api.before_next_write = [&api] {
    api.stored = json{{"metadata", {{"name", "vscaler"}, {"resourceVersion", "7"}}},
                      {"spec", {{"holderIdentity", "first"}, {"leaseDurationSeconds", 15}}}};
  };
  int gets = api.gets;
  (void)b->tick();
  CHECK_FALSE(b->is_leader());
  CHECK(api.gets == gets + 2);  // the GET that found nothing, and the re-read
  CHECK(api.holder() == "first");
  clock.advance(seconds(14));
  (void)b->tick();
  CHECK_FALSE(b->is_leader());  // 15 s from when it first saw "first", not from the create
}

TEST_CASE("the election thread acquires, renews and releases on stop") {
  FakeLeaseApi api;
  LeaderElectionConfig config = config_for("threaded");
  // Fast retries, and a deadline no scheduler hiccup of a loaded (sanitizer) machine reaches.
  config.lease_duration = seconds(10);
  config.renew_deadline = seconds(5);
  config.retry_period = milliseconds(20);
  std::mutex mutex;
  std::condition_variable changed;
  int started = 0;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] {
    std::lock_guard lock(mutex);
    ++started;
    changed.notify_all();
  };
  LeaderElector elector(api, config, callbacks);
  elector.start();
  {
    std::unique_lock lock(mutex);
    REQUIRE(changed.wait_for(lock, seconds(10), [&] { return started == 1; }));
  }
  CHECK(elector.is_leading_now());
  CHECK(api.holder() == "threaded");
  elector.stop();
  CHECK_FALSE(elector.is_leading_now());
  CHECK(api.holder().empty());
}

TEST_CASE("configurations that cannot work are refused with the reason") {
  LeaderElectionConfig config = config_for("x");
  CHECK(validate(config).ok());
  config.renew_deadline = seconds(15);
  CHECK(validate(config).error().find("must be longer than the renew deadline") !=
        std::string::npos);
  config = config_for("x");
  config.retry_period = seconds(9);
  CHECK(validate(config).error().find("1.2 x the retry period") != std::string::npos);
  config = config_for("");
  CHECK(validate(config).error() == "leader election: the identity is empty");
  config = config_for("x");
  config.lease_namespace.clear();
  CHECK(validate(config).error() == "leader election: the Lease namespace is empty");
}

TEST_CASE("identity and default namespace") {
  std::string identity = make_identity();
  auto underscore = identity.rfind('_');
  REQUIRE(underscore != std::string::npos);
  CHECK(identity.size() - underscore - 1 == 8);
  CHECK(make_identity() != identity);

  auto dir = std::filesystem::temp_directory_path() / ("vscaler-sa-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::unsetenv("POD_NAMESPACE");
  CHECK(default_lease_namespace(dir.string()) == "vscaler-system");
  std::ofstream(dir / "namespace") << "ops\n";
  CHECK(default_lease_namespace(dir.string()) == "ops");
  ::setenv("POD_NAMESPACE", "from-downward-api", 1);
  CHECK(default_lease_namespace(dir.string()) == "from-downward-api");
  ::unsetenv("POD_NAMESPACE");
  std::filesystem::remove_all(dir);
}

/// A gate the test flips.
class FlagGate final : public LeaderGate {
 public:
  bool is_leading_now() const override { return leading; }
  bool leading = false;
};

TEST_CASE("LeaderSteps admits steps only while the gate says so, and counts both answers") {
  vscaler::metrics::Registry registry;
  FlagGate gate;
  vscaler::controller::LeaderSteps steps(gate, registry);
  CHECK_FALSE(steps.begin("resync"));
  gate.leading = true;
  CHECK(steps.begin("resync"));
  CHECK(steps.begin("resync"));
  gate.leading = false;
  CHECK_FALSE(steps.begin("resync"));
  std::string text = registry.render();
  CHECK(text.find("vscaler_leader_steps_total{step=\"resync\",result=\"started\"} 2") !=
        std::string::npos);
  CHECK(text.find("vscaler_leader_steps_total{step=\"resync\",result=\"skipped\"} 2") !=
        std::string::npos);
}

TEST_CASE("LeaderSteps stamps the wall-clock time of each step's last start, not of its skips") {
  vscaler::metrics::Registry registry;
  FlagGate gate;
  vscaler::controller::LeaderSteps steps(gate, registry);
  const std::string series = "vscaler_leader_step_last_started_timestamp_seconds{step=\"resync\"} ";
  steps.begin("resync");
  CHECK(registry.render().find(series) == std::string::npos);  // skipped: no stamp
  auto before = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch());
  gate.leading = true;
  steps.begin("resync");
  auto after = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch());
  std::string text = registry.render();
  auto at = text.find(series);
  REQUIRE(at != std::string::npos);
  double stamped = std::stod(text.substr(at + series.size()));
  CHECK(stamped >= before.count() - 1e-3);
  CHECK(stamped <= after.count() + 1e-3);
}

}  // namespace

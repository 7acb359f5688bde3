// LeaderElector against the real API server: two (then three) electors on one Lease. Exactly one
// leads; stopping the leader releases the Lease and another leads within 5 s; a leader whose
// renewals are held up past the renew deadline (as if frozen) is fenced, another takes over, and
// when its calls go through again it becomes a follower.
#include <condition_variable>
#include <mutex>

#include "kube/leader_election.h"
#include "kube_support.h"

namespace {

using namespace kube_test;
using std::chrono::milliseconds;
using std::chrono::seconds;

/// The real Lease API, whose calls can be held up (pause()) until resume(): a replica whose
/// elector thread is stuck, the way SIGSTOP or a hung connection leaves it.
class PausableLeaseApi final : public LeaseApi {
 public:
  explicit PausableLeaseApi(Client client) : real_(std::move(client)) {}
  Result<json, ApiError> get(const std::string& ns, const std::string& name) override {
    wait_while_paused();
    return real_.get(ns, name);
  }
  Result<json, ApiError> create(const json& lease) override {
    wait_while_paused();
    return real_.create(lease);
  }
  Result<json, ApiError> update(const json& lease) override {
    wait_while_paused();
    return real_.update(lease);
  }
  void pause() {
    std::lock_guard lock(mutex_);
    paused_ = true;
  }
  void resume() {
    {
      std::lock_guard lock(mutex_);
      paused_ = false;
    }
    resumed_.notify_all();
  }

 private:
  void wait_while_paused() {
    std::unique_lock lock(mutex_);
    resumed_.wait(lock, [this] { return !paused_; });
  }
  ClientLeaseApi real_;
  std::mutex mutex_;
  std::condition_variable resumed_;
  bool paused_ = false;
};

/// One elector with its own API wrapper, on the shared Lease.
struct Candidate {
  PausableLeaseApi api;
  LeaderElector elector;
  Candidate(const Client& client, const std::string& ns, const std::string& lease,
            const std::string& identity)
      : api(client), elector(api, config(ns, lease, identity)) {}
  static LeaderElectionConfig config(const std::string& ns, const std::string& lease,
                                     const std::string& identity) {
    LeaderElectionConfig config;
    config.lease_namespace = ns;
    config.lease_name = lease;
    config.identity = identity;
    // client-go's 15/10/2 s scaled down, so the test takes seconds.
    config.lease_duration = seconds(3);
    config.renew_deadline = seconds(2);
    config.retry_period = milliseconds(200);
    return config;
  }
};

std::string holder(const Client& client, const std::string& ns, const std::string& lease) {
  auto got = client.get(resources::kLeases, ns, lease);
  REQUIRE_MESSAGE(got.ok(), (got.ok() ? "" : got.error().to_string()));
  return (*got)["spec"].value("holderIdentity", "");
}

TEST_CASE("two electors: one leads, release hands over, a stuck leader is fenced and steps down") {
  Client client = admin_client();
  TestNamespace ns(client, "leader-it");
  std::string lease = "vscaler";
  auto a = std::make_unique<Candidate>(client, ns.name, lease, "replica-a");
  auto b = std::make_unique<Candidate>(client, ns.name, lease, "replica-b");
  a->elector.start();
  b->elector.start();
  auto leaders = [&] {
    int count = 0;
    for (auto* c : {a.get(), b.get()}) {
      if (c && c->elector.is_leading_now()) ++count;
    }
    return count;
  };
  REQUIRE(eventually([&] { return leaders() == 1; }, seconds(10)));
  // Stays exactly one for a few renewals (sampled every 50 ms for 2 s).
  bool never_two = !eventually([&] { return leaders() != 1; }, seconds(2));
  CHECK(never_two);
  Candidate* leader = a->elector.is_leading_now() ? a.get() : b.get();
  std::unique_ptr<Candidate>& follower = leader == a.get() ? b : a;
  CHECK(holder(client, ns.name, lease) == leader->elector.identity());
  MESSAGE("first leader: " << leader->elector.identity());

  // Stop the leader: it releases, the follower leads at its next attempt.
  auto stopped_at = Clock::now();
  leader->elector.stop();
  CHECK_FALSE(leader->elector.is_leading_now());
  CHECK(holder(client, ns.name, lease) != leader->elector.identity());
  REQUIRE(eventually([&] { return follower->elector.is_leading_now(); }, seconds(5)));
  double handover = seconds_since(stopped_at);
  MESSAGE("takeover after release: " << handover << " s");
  CHECK(handover < 5.0);
  CHECK(holder(client, ns.name, lease) == follower->elector.identity());

  // A third replica joins as follower; then the leader's calls hang.
  std::unique_ptr<Candidate>& slot = leader == a.get() ? a : b;
  slot = std::make_unique<Candidate>(client, ns.name, lease, "replica-c");
  Candidate* third = slot.get();
  Candidate* stuck = follower.get();
  third->elector.start();
  bool third_waits = !eventually([&] { return third->elector.is_leading_now(); }, seconds(1));
  CHECK(third_waits);
  auto paused_at = Clock::now();
  stuck->api.pause();
  REQUIRE(eventually([&] { return !stuck->elector.is_leading_now(); }, seconds(5)));
  double fenced = seconds_since(paused_at);
  MESSAGE("fenced after " << fenced << " s without a renew");
  CHECK(fenced < 3.0);  // the 2 s renew deadline, plus slack for a loaded machine's polling
  CHECK(stuck->elector.is_leader());  // its thread is stuck: only the fencing check knows
  REQUIRE(eventually([&] { return third->elector.is_leading_now(); }, seconds(10)));
  double takeover = seconds_since(paused_at);
  MESSAGE("takeover from a stuck leader: " << takeover << " s");
  CHECK(takeover >= 2.0);  // not before the lease could have expired from its last renew
  CHECK(takeover < 8.0);
  CHECK_FALSE(stuck->elector.is_leading_now());

  // Its calls go through again: it sees the new holder and becomes a follower.
  stuck->api.resume();
  REQUIRE(eventually([&] { return !stuck->elector.is_leader(); }, seconds(5)));
  bool one_leader = !eventually(
      [&] { return stuck->elector.is_leading_now() || !third->elector.is_leading_now(); },
      seconds(2));
  CHECK(one_leader);
  CHECK(holder(client, ns.name, lease) == third->elector.identity());

  a.reset();
  b.reset();
  (void)client.remove(resources::kLeases, ns.name, lease);
}

}  // namespace

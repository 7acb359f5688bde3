// Resyncer::run with a leader gate: a pass starts only when the gate admits it, and wake() starts
// the next one at once instead of a period later (a replica that just became leader).
#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "controller/resync.h"

namespace {

using namespace vscaler::controller;
using namespace std::chrono_literals;

/// No Deployments anywhere; the store is empty, so a pass makes no call at all.
class NoDeployments final : public ResyncApi {
 public:
  vscaler::kube::Result<std::vector<WorkloadMeta>, vscaler::kube::ApiError> list_workloads(
      const std::string&, const std::string&, int&) override {
    return std::vector<WorkloadMeta>{};
  }
  vscaler::kube::Result<WorkloadMeta, vscaler::kube::ApiError> get_workload(
      const std::string&, const std::string&, const std::string&) override {
    return vscaler::kube::fail(vscaler::kube::make_error(vscaler::kube::ErrorKind::kNotFound, ""));
  }
};

TEST_CASE("the resync asks the gate before each pass, and wake() starts the next pass now") {
  NoDeployments api;
  ScalerStore store;
  VerifiedState verified;
  WorkQueue queue;
  ResyncMetrics metrics;
  Resyncer resyncer(api, store, verified, queue, metrics);
  std::mutex mutex;
  std::condition_variable asked;
  int questions = 0;
  auto may_start = [&] {
    std::lock_guard lock(mutex);
    ++questions;
    asked.notify_all();
    return false;  // a follower: no pass ever starts
  };
  // A period far longer than the test: only wake() can make the loop ask.
  std::thread loop([&] { resyncer.run(std::chrono::hours(1), may_start); });
  for (int expected = 1; expected <= 3; ++expected) {
    resyncer.wake();
    std::unique_lock lock(mutex);
    REQUIRE(asked.wait_for(lock, 10s, [&] { return questions >= expected; }));
  }
  resyncer.stop();
  loop.join();
  std::lock_guard lock(mutex);
  CHECK(questions == 3);  // one question per wake, none from the (hour-long) period
}

}  // namespace

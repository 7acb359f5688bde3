// WorkQueue: one test case per rule of DESIGN.md event flow item 5 (client-go semantics, two
// priorities, backoff, delayed adds, shutdown, metrics). Timing tests use delays far
// apart (tens of ms against seconds) so that a loaded machine or a sanitizer cannot flip them.
#include "controller/work_queue.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using vscaler::controller::Priority;
using vscaler::controller::QueueMetrics;
using vscaler::controller::WorkItem;
using vscaler::controller::WorkQueue;
using vscaler::controller::WorkQueueOptions;

namespace {

// Takes the next key, failing the test instead of blocking forever.
WorkItem take(WorkQueue& queue) {
  auto item = queue.get_for(5s);
  REQUIRE(item.has_value());
  return *item;
}

// Counts every hook call, for the metrics test.
struct CountingMetrics : QueueMetrics {
  std::mutex mutex;
  int adds = 0;
  int retries = 0;
  size_t last_depth = 0;
  std::vector<double> latencies;
  std::vector<double> durations;
  void on_add(Priority) override {
    std::lock_guard lock(mutex);
    ++adds;
  }
  void on_depth(size_t depth) override {
    std::lock_guard lock(mutex);
    last_depth = depth;
  }
  void on_retry() override {
    std::lock_guard lock(mutex);
    ++retries;
  }
  void on_queue_latency(double seconds) override {
    std::lock_guard lock(mutex);
    latencies.push_back(seconds);
  }
  void on_work_duration(double seconds) override {
    std::lock_guard lock(mutex);
    durations.push_back(seconds);
  }
};

}  // namespace

TEST_CASE("an added key is handed out with its priority and add time") {
  WorkQueue queue;
  auto before = WorkQueue::Clock::now();
  queue.add("shop/web", Priority::kLow);
  CHECK(queue.len() == 1);
  WorkItem item = take(queue);
  CHECK(item.key == "shop/web");
  CHECK(item.priority == Priority::kLow);
  CHECK(item.added >= before);
  CHECK(queue.len() == 0);
  queue.done("shop/web");
}

TEST_CASE("keys of one priority are handed out first in, first out") {
  WorkQueue queue;
  for (const char* key : {"a/1", "a/2", "a/3"}) queue.add(key);
  for (const char* key : {"a/1", "a/2", "a/3"}) {
    CHECK(take(queue).key == key);
    queue.done(key);
  }
}

TEST_CASE("a waiting key added again is queued once") {
  WorkQueue queue;
  queue.add("a/1");
  queue.add("a/2");
  queue.add("a/1");
  queue.add("a/1", Priority::kLow);
  CHECK(queue.len() == 2);
  CHECK(take(queue).key == "a/1");  // keeps its place: deduplication is not a re-add
  CHECK(take(queue).key == "a/2");
  CHECK(queue.len() == 0);
}

TEST_CASE("a high priority key is handed out before every waiting low priority key") {
  WorkQueue queue;
  for (int i = 0; i < 100; ++i) queue.add("resync/" + std::to_string(i), Priority::kLow);
  queue.add("hint/web", Priority::kHigh);
  WorkItem item = take(queue);
  CHECK(item.key == "hint/web");
  CHECK(item.priority == Priority::kHigh);
  CHECK(take(queue).key == "resync/0");
}

TEST_CASE("a low priority add does not demote a waiting high priority key") {
  WorkQueue queue;
  queue.add("a/1", Priority::kLow);
  queue.add("a/2", Priority::kHigh);
  queue.add("a/2", Priority::kLow);
  WorkItem item = take(queue);
  CHECK(item.key == "a/2");
  CHECK(item.priority == Priority::kHigh);
}

TEST_CASE("a waiting low priority key added at high priority is promoted") {
  WorkQueue queue;
  queue.add("a/1", Priority::kLow);
  queue.add("a/2", Priority::kLow);
  queue.add("a/3", Priority::kHigh);
  queue.add("a/2", Priority::kHigh);  // joins the back of the high keys
  CHECK(queue.len() == 3);
  CHECK(take(queue).key == "a/3");
  WorkItem promoted = take(queue);
  CHECK(promoted.key == "a/2");
  CHECK(promoted.priority == Priority::kHigh);
  CHECK(take(queue).key == "a/1");
  CHECK(queue.len() == 0);
}

TEST_CASE("a key being processed is never handed to a second worker") {
  WorkQueue queue;
  queue.add("a/1");
  WorkItem item = take(queue);
  queue.add("a/1");
  queue.add("a/2");
  CHECK(queue.len() == 1);
  // Another worker gets the other key, then nothing: a/1 is in process.
  std::optional<WorkItem> other;
  std::thread worker([&] {
    other = queue.get_for(5s);
    if (other) queue.done(other->key);
    CHECK_FALSE(queue.get_for(50ms).has_value());
  });
  worker.join();
  REQUIRE(other.has_value());
  CHECK(other->key == "a/2");
  queue.done("a/1");
  CHECK(take(queue).key == "a/1");
}

TEST_CASE("a key added while processing is requeued once after done") {
  WorkQueue queue;
  queue.add("a/1");
  take(queue);
  for (int i = 0; i < 5; ++i) queue.add("a/1");
  CHECK(queue.len() == 0);
  queue.done("a/1");
  CHECK(queue.len() == 1);
  CHECK(take(queue).key == "a/1");
  queue.done("a/1");
  CHECK(queue.len() == 0);
  CHECK_FALSE(queue.get_for(20ms).has_value());
}

TEST_CASE("a key requeued after done carries the highest priority of its adds") {
  WorkQueue queue;
  queue.add("a/1", Priority::kHigh);
  take(queue);
  queue.add("a/1", Priority::kLow);
  queue.add("a/1", Priority::kHigh);
  queue.add("a/1", Priority::kLow);
  queue.done("a/1");
  WorkItem again = take(queue);
  CHECK(again.priority == Priority::kHigh);
}

TEST_CASE("done for a key that is not in process changes nothing") {
  WorkQueue queue;
  queue.done("a/1");
  queue.add("a/1");
  queue.done("a/1");  // waiting, not handed out: must stay waiting
  CHECK(queue.len() == 1);
  CHECK(take(queue).key == "a/1");
}

TEST_CASE("get_for gives up after its timeout when nothing is ready") {
  WorkQueue queue;
  auto start = WorkQueue::Clock::now();
  CHECK_FALSE(queue.get_for(30ms).has_value());
  CHECK(WorkQueue::Clock::now() - start >= 30ms);
  CHECK_FALSE(queue.shutting_down());
}

TEST_CASE("a delayed add becomes ready only after its delay") {
  WorkQueue queue;
  auto start = WorkQueue::Clock::now();
  queue.add_after("a/1", 300ms, Priority::kHigh);
  CHECK(queue.len() == 0);
  CHECK_FALSE(queue.get_for(50ms).has_value());
  WorkItem item = take(queue);
  CHECK(WorkQueue::Clock::now() - start >= 300ms);
  CHECK(item.key == "a/1");
  CHECK(item.added >= start + 300ms);  // time in queue counts from the end of the delay
}

TEST_CASE("a delayed add with no delay is an add") {
  WorkQueue queue;
  queue.add_after("a/1", 0ms);
  queue.add_after("a/2", -5ms);
  CHECK(queue.len() == 2);
}

TEST_CASE("a blocked getter wakes for a delayed key") {
  WorkQueue queue;
  std::optional<WorkItem> item;
  std::thread worker([&] { item = queue.get(); });
  std::this_thread::sleep_for(20ms);  // let the worker block with no timer pending
  queue.add_after("a/1", 30ms);
  worker.join();
  REQUIRE(item.has_value());
  CHECK(item->key == "a/1");
}

TEST_CASE("an earlier delayed add of a key replaces its later pending one") {
  WorkQueue queue;
  queue.add_after("a/1", 10s, Priority::kLow);
  queue.add_after("a/1", 20ms, Priority::kHigh);
  WorkItem item = take(queue);
  CHECK(item.key == "a/1");
  CHECK(item.priority == Priority::kHigh);
  queue.done("a/1");
  CHECK_FALSE(queue.get_for(50ms).has_value());  // the superseded timer adds nothing later
}

TEST_CASE("a later delayed add of a key merges into its earlier pending one") {
  WorkQueue queue;
  queue.add_after("a/1", 20ms, Priority::kLow);
  queue.add_after("a/1", 10s, Priority::kHigh);
  WorkItem item = take(queue);  // at the earlier time, with both hints
  CHECK(item.priority == Priority::kHigh);
}

TEST_CASE("a delayed add of a waiting key adds it again when the delay ends") {
  // client-go semantics: the delayed add is an add at a later time, independent of the now.
  WorkQueue queue;
  queue.add("a/1");
  queue.add_after("a/1", 20ms);
  take(queue);
  queue.done("a/1");
  CHECK(take(queue).key == "a/1");
}

TEST_CASE("rate-limited adds back off exponentially from the base delay") {
  WorkQueueOptions options;
  options.base_delay = 5ms;
  WorkQueue queue(options);
  CHECK(queue.next_backoff("a/1") == 5ms);
  queue.add_rate_limited("a/1");
  CHECK(queue.next_backoff("a/1") == 10ms);
  queue.add_rate_limited("a/1");
  CHECK(queue.next_backoff("a/1") == 20ms);
  queue.add_rate_limited("a/1");
  CHECK(queue.next_backoff("a/1") == 40ms);
  CHECK(queue.num_requeues("a/1") == 3);
  CHECK(take(queue).key == "a/1");  // once, at the earliest of the pending delays
  queue.done("a/1");
}

TEST_CASE("a rate-limited add waits at least its backoff") {
  WorkQueueOptions options;
  options.base_delay = 400ms;
  WorkQueue queue(options);
  auto start = WorkQueue::Clock::now();
  queue.add_rate_limited("a/1");
  CHECK_FALSE(queue.get_for(50ms).has_value());
  take(queue);
  CHECK(WorkQueue::Clock::now() - start >= 400ms);
}

TEST_CASE("a rate-limited add waits at least the delay the caller asks for") {
  WorkQueue queue;
  auto start = WorkQueue::Clock::now();
  queue.add_rate_limited("a/1", Priority::kHigh, 300ms);  // e.g. a 429's Retry-After
  take(queue);
  CHECK(WorkQueue::Clock::now() - start >= 300ms);
}

TEST_CASE("a key added while its attempt failed with a Retry-After waits for it, priority kept") {
  WorkQueue queue;
  queue.add("a/1", Priority::kHigh);
  take(queue);
  queue.add("a/1", Priority::kHigh);  // say a webhook hint during the attempt
  auto start = WorkQueue::Clock::now();
  queue.add_rate_limited("a/1", Priority::kLow, 300ms);  // the attempt got a 429
  queue.done("a/1");
  CHECK(queue.len() == 0);  // not requeued at done(): the server asked for a pause
  CHECK_FALSE(queue.get_for(100ms).has_value());
  WorkItem again = take(queue);
  CHECK(WorkQueue::Clock::now() - start >= 300ms);
  CHECK(again.priority == Priority::kHigh);
  queue.done("a/1");
  CHECK_FALSE(queue.get_for(20ms).has_value());  // once
}

TEST_CASE("adds during a Retry-After pause wait for it; forget ends the pause") {
  WorkQueue queue;
  queue.add("a/1");
  take(queue);
  auto start = WorkQueue::Clock::now();
  queue.add_rate_limited("a/1", Priority::kLow, 300ms);
  queue.done("a/1");
  queue.add("a/1", Priority::kHigh);  // say a scaler change meanwhile
  queue.add_after("a/1", 10ms);
  CHECK(queue.len() == 0);
  CHECK_FALSE(queue.get_for(100ms).has_value());
  WorkItem again = take(queue);
  CHECK(WorkQueue::Clock::now() - start >= 300ms);
  CHECK(again.priority == Priority::kHigh);
  queue.forget("a/1");
  queue.done("a/1");
  queue.add("a/1");
  CHECK(queue.len() == 1);  // the pause is over once an attempt succeeded
}

TEST_CASE("without a Retry-After, a key added while processing still comes back at done") {
  WorkQueueOptions options;
  options.base_delay = 10s;
  WorkQueue queue(options);
  queue.add("a/1");
  take(queue);
  queue.add("a/1");
  queue.add_rate_limited("a/1");
  queue.done("a/1");
  CHECK(queue.len() == 1);
}

TEST_CASE("the backoff is capped at the maximum delay") {
  WorkQueueOptions options;
  options.base_delay = 1ms;
  options.max_delay = 8ms;
  WorkQueue queue(options);
  for (int i = 0; i < 100; ++i) queue.add_rate_limited("a/1");
  CHECK(queue.next_backoff("a/1") == 8ms);
  CHECK(queue.num_requeues("a/1") == 100);
  WorkQueue defaults;
  for (int i = 0; i < 40; ++i) defaults.add_rate_limited("a/1");
  CHECK(defaults.next_backoff("a/1") == std::chrono::seconds(1000));
}

TEST_CASE("forget resets the backoff") {
  WorkQueue queue;
  queue.add_rate_limited("a/1");
  queue.add_rate_limited("a/1");
  CHECK(queue.num_requeues("a/1") == 2);
  queue.forget("a/1");
  CHECK(queue.num_requeues("a/1") == 0);
  CHECK(queue.next_backoff("a/1") == 5ms);
  CHECK(queue.num_requeues("never/seen") == 0);
}

TEST_CASE("shutdown wakes blocked getters with nothing") {
  WorkQueue queue;
  std::atomic<int> woke{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) {
    workers.emplace_back([&] {
      if (!queue.get()) ++woke;
    });
  }
  std::this_thread::sleep_for(20ms);
  queue.shutdown();
  for (auto& worker : workers) worker.join();
  CHECK(woke == 3);
  CHECK(queue.shutting_down());
}

TEST_CASE("shutdown drops waiting and delayed keys and stops intake") {
  WorkQueue queue;
  queue.add("a/1");
  queue.add("a/2", Priority::kLow);
  queue.add_after("a/3", 10ms);
  CHECK(queue.shutdown() == 3);
  CHECK(queue.len() == 0);
  queue.add("a/4");
  queue.add_after("a/5", 1ms);
  queue.add_rate_limited("a/6");
  CHECK(queue.len() == 0);
  CHECK_FALSE(queue.get().has_value());
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(queue.get().has_value());
}

TEST_CASE("in-flight work finishes after shutdown and is not requeued") {
  WorkQueue queue;
  queue.add("a/1");
  take(queue);
  queue.add("a/1");  // would be requeued at done, but the queue stops first
  queue.shutdown();
  queue.done("a/1");  // a worker finishing after shutdown is fine
  CHECK(queue.len() == 0);
  CHECK_FALSE(queue.get().has_value());
}

TEST_CASE("shutdown_and_drain hands out the waiting keys, then nothing") {
  WorkQueue queue;
  queue.add("a/1");
  queue.add("a/2", Priority::kLow);
  queue.add_after("a/3", 10ms);  // delayed keys are future adds: intake has stopped
  queue.shutdown_and_drain();
  queue.add("a/4");
  CHECK(take(queue).key == "a/1");
  queue.done("a/1");
  CHECK(take(queue).key == "a/2");
  queue.done("a/2");
  CHECK_FALSE(queue.get().has_value());
}

TEST_CASE("shutdown_and_drain waits for a key added during processing") {
  WorkQueue queue;
  queue.add("a/1");
  take(queue);
  queue.add("a/1");
  queue.shutdown_and_drain();
  std::optional<WorkItem> requeued;
  std::thread worker([&] { requeued = queue.get(); });  // blocks: a/1 will come back
  std::this_thread::sleep_for(20ms);
  queue.done("a/1");
  worker.join();
  REQUIRE(requeued.has_value());
  CHECK(requeued->key == "a/1");
  queue.done("a/1");
  CHECK_FALSE(queue.get().has_value());
}

TEST_CASE("metrics hooks see adds, depth, retries, time in queue and work duration") {
  auto metrics = std::make_shared<CountingMetrics>();
  WorkQueueOptions options;
  options.metrics = metrics;
  options.base_delay = 1ms;
  WorkQueue queue(options);
  queue.add("a/1");
  queue.add("a/1");  // deduplicated: not an add
  queue.add("a/2");
  CHECK(metrics->adds == 2);
  CHECK(metrics->last_depth == 2);
  take(queue);
  CHECK(metrics->last_depth == 1);
  std::this_thread::sleep_for(5ms);
  queue.done("a/1");
  REQUIRE(metrics->durations.size() == 1);
  CHECK(metrics->durations[0] >= 0.005);
  REQUIRE(metrics->latencies.size() == 1);
  CHECK(metrics->latencies[0] >= 0.0);
  queue.add_rate_limited("a/3");
  queue.add_after("a/4", 1ms);
  CHECK(metrics->retries == 2);
}

TEST_CASE("keys stay findable through table growth, shrinking and deletions in any order") {
  // The queue's own hash table (open addressing, backward-shift deletion) under a resync-sized
  // burst: every key must keep its state whatever order the others leave in.
  WorkQueue queue;
  constexpr int kKeys = 20'000;
  auto key = [](int i) { return "burst-namespace/scaler-" + std::to_string(i); };
  for (int i = 0; i < kKeys; ++i) queue.add(key(i), Priority::kLow);
  for (int i = 0; i < kKeys; i += 3) queue.add_rate_limited(key(i), Priority::kLow, 1h);
  CHECK(queue.len() == kKeys);
  std::vector<std::string> taken;
  for (int i = 0; i < kKeys; ++i) {
    WorkItem item = take(queue);
    CHECK(item.key == key(i));
    taken.push_back(item.key);
  }
  // Finish in a scattered order (a fixed permutation: i * 7919 mod kKeys).
  for (int i = 0; i < kKeys; ++i) queue.done(taken[(static_cast<int64_t>(i) * 7919) % kKeys]);
  for (int i = 0; i < kKeys; ++i) {
    INFO(i);
    REQUIRE(queue.num_requeues(key(i)) == (i % 3 == 0 ? 1u : 0u));
  }
  for (int i = 0; i < kKeys; i += 3) queue.forget(key(i));  // the timers still hold these keys
  CHECK(queue.len() == 0);
  queue.add("after/burst");
  CHECK(take(queue).key == "after/burst");
  CHECK(queue.shutdown() == static_cast<size_t>((kKeys + 2) / 3));  // the 1 h timers
}

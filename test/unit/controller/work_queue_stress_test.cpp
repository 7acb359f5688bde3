// WorkQueue under load: 8 threads each adding (plain, delayed, rate-limited, at both priorities,
// of keys from a small shared set) and processing them, 1,000,000 operations in total. Checks
// the two invariants that matter to a controller:
//   - a key is never processed by two workers at once;
//   - no add is lost: every key added after its last processing start is processed again.
// (What a hinted write must make visible is not the queue's business: controller/expectations.)
// The run is cut into 50 epochs; after each, the threads stop adding, drain the queue and check
// every key, so a lost add cannot hide behind a later add of the same key.
// It is also the queue's ThreadSanitizer test (test/run.sh runs every unit test under TSan). The
// full 1,000,000 operations take 1-3 s in the release build and 4-8 s under TSan on 2 busy cores,
// so no sanitizer build scales them down.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "controller/work_queue.h"

using namespace std::chrono_literals;
using vscaler::controller::Priority;
using vscaler::controller::WorkItem;
using vscaler::controller::WorkQueue;
using vscaler::controller::WorkQueueOptions;

namespace {

constexpr int64_t kOperations = 1'000'000;
constexpr int kThreads = 8;
// Epochs: the first 15 add one key per round (2 operations a round), the other 35 add two (3 a
// round); the rounds per thread and epoch make 300,000 + 700,000 operations.
constexpr int kEpochs = 50;
constexpr int kSparseEpochs = 15;
constexpr int kSparseRounds = 300'000 / (kSparseEpochs * kThreads * 2);
constexpr int kDenseRounds = 700'000 / ((kEpochs - kSparseEpochs) * kThreads * 3) + 1;
constexpr int kKeys = 64;  // few keys, so adds often hit waiting and in-process keys

// What the test knows about one key. Atomics, so that the bookkeeping itself is race-free and any
// TSan report points at the queue.
struct KeyState {
  std::string name;
  std::atomic<int> in_flight{0};        // workers processing it now (must stay <= 1)
  std::atomic<int64_t> version{0};      // bumped before every add
  std::atomic<int64_t> seen{0};         // highest version read at a processing start
  std::atomic<int64_t> processings{0};  // times it was processed
};

// xorshift64: a fast per-thread generator (std::mt19937 costs more than the queue itself).
struct Random {
  uint64_t state;
  uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

void store_max(std::atomic<int64_t>& target, int64_t value) {
  int64_t current = target.load();
  while (current < value && !target.compare_exchange_weak(current, value)) {
  }
}

struct Stress {
  WorkQueue queue;
  std::array<KeyState, kKeys> keys;
  std::atomic<int64_t> operations{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> lost_adds{0};  // keys found not processed after their last add, at a checkpoint
  std::atomic<int> not_empty{0};  // checkpoints where the drained queue still had keys
  std::atomic<int> timeouts{0};

  static WorkQueueOptions options() {
    WorkQueueOptions options;
    options.base_delay = 1us;  // keep rate-limited keys cycling fast
    options.max_delay = 50us;
    return options;
  }

  Stress() : queue(options()) {
    for (int i = 0; i < kKeys; ++i) keys[i].name = "stress/key-" + std::to_string(i);
  }

  KeyState& state_of(const std::string& name) {
    return keys[std::stoul(name.substr(name.rfind('-') + 1))];
  }

  // One add of a random kind; its version is bumped before the add so that a processing that
  // starts after the add is guaranteed to read it.
  void add_one(Random& random) {
    KeyState& key = keys[random.below(kKeys)];
    key.version.fetch_add(1);
    Priority priority = random.below(4) == 0 ? Priority::kLow : Priority::kHigh;
    uint64_t kind = random.below(100);
    if (kind < 85) {
      queue.add(key.name, priority);
    } else if (kind < 93) {
      queue.add_after(key.name, std::chrono::microseconds(random.below(50)), priority);
    } else if (kind < 98) {
      queue.add_rate_limited(key.name, priority);
    } else {
      queue.forget(key.name);  // a success resets the backoff; the add keeps the promise
      queue.add(key.name, priority);
    }
  }

  void process(const WorkItem& item, Random& random) {
    KeyState& key = state_of(item.key);
    if (key.in_flight.fetch_add(1) != 0) ++overlaps;
    int64_t version = key.version.load();
    store_max(key.seen, version);
    ++key.processings;
    if (random.below(8) == 0) std::this_thread::yield();  // widen the in-process window
    key.in_flight.fetch_sub(1);
    queue.done(item.key);
  }

  // One round adds, then processes one key. Sparse epochs add one key per round: with
  // deduplication the queue runs dry and workers block and wake all the time (the wake-up paths).
  // Dense epochs add two, so every key waits or is in process and adds mostly merge into waiting
  // and in-process keys (the dedup and requeue paths), without futex sleeps that make the test
  // slow. Adding before taking keeps the threads from all blocking on an empty queue. get_for
  // times out when another thread took the key this one merged its add into (common when the
  // queue runs dry), so the timeout is short.
  void round(int adds, Random& random) {
    for (int i = 0; i < adds; ++i) add_one(random);
    if (auto item = queue.get_for(2ms)) {
      process(*item, random);
    } else {
      ++timeouts;
    }
    operations += adds + 1;
  }

  // Checks every key once the queue is drained (called by one thread while the others wait).
  void checkpoint() {
    if (queue.len() != 0) ++not_empty;
    for (KeyState& key : keys) {
      if (key.seen.load() != key.version.load()) ++lost_adds;  // processed after its last add
    }
  }

  void run(int thread, std::barrier<>& sync) {
    Random random{0x9e3779b97f4a7c15ULL * (thread + 1)};
    for (int epoch = 0; epoch < kEpochs; ++epoch) {
      bool sparse = epoch < kSparseEpochs;
      for (int r = 0, n = sparse ? kSparseRounds : kDenseRounds; r < n; ++r) {
        round(sparse ? 1 : 2, random);
      }
      sync.arrive_and_wait();  // nobody adds any more
      // Drain: delays are below 0.1 ms, so 5 ms without a key means none is left; a thread whose
      // done() requeues a key takes it again itself if the others have left.
      while (auto item = queue.get_for(5ms)) process(*item, random);
      sync.arrive_and_wait();
      if (thread == 0) checkpoint();
      sync.arrive_and_wait();
    }
  }
};

}  // namespace

TEST_CASE("under 8 threads no key is processed twice at once and no add is lost") {
  auto stress = std::make_unique<Stress>();
  auto start = std::chrono::steady_clock::now();
  std::barrier sync(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&stress, &sync, t] { stress->run(t, sync); });
  }
  for (auto& thread : threads) thread.join();
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE(stress->operations.load() << " operations in " << elapsed << " s ("
                                    << stress->timeouts.load() << " gets timed out)");

  CHECK(stress->operations.load() >= kOperations);
  CHECK(stress->overlaps == 0);
  CHECK(stress->lost_adds == 0);
  CHECK(stress->not_empty == 0);
  int64_t processings = 0;
  for (KeyState& key : stress->keys) processings += key.processings.load();
  CHECK(processings > kOperations / 4);
  CHECK(stress->queue.shutdown() == 0);
}

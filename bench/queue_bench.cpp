// queue_bench: the work queue and the scaler index on their hot paths, the same workloads as the
// client-go peer (bench/peer-workqueue). Prints one row per line: id<TAB>label<TAB>value, which
// bench/sections/queue.sh joins with the peer's rows.
//   queue_1t / queue_4t: items per second through add+get+done; each thread adds a batch of 100
//     of its own keys, then takes 100 items (any thread's), 2,000,000 items in total. Every item
//     has its own key (see thread_keys).
//   index_hit / index_miss: ns per lookup among 100,000 scalers, of a targeted Deployment and of
//     one no scaler targets (most Deployment writes in a cluster).
//   index_rw: ns per lookup for each of 2 readers while a writer moves scalers (informer updates).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "controller/scaler_index.h"
#include "controller/work_queue.h"

namespace {

using vscaler::controller::ScalerIndex;
using vscaler::controller::WorkQueue;
using Clock = std::chrono::steady_clock;

constexpr int kQueueItems = 2'000'000;
constexpr int kBatch = 100;
constexpr int kScalers = 100'000;
constexpr int kNamespaces = 1000;
constexpr int kLookups = 2'000'000;
constexpr int kConcurrentLookups = 1'000'000;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void row(const char* id, const char* label, double value) {
  std::printf("%s\t%s\t%.0f\n", id, label, value);
  std::fflush(stdout);
}

// n distinct keys for one thread. A key re-added while a preempted worker still holds it would be
// deduplicated, and the threads would then wait for items that never come.
std::vector<std::string> thread_keys(int thread, int n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  char buffer[64];
  for (int i = 0; i < n; ++i) {
    std::snprintf(buffer, sizeof buffer, "bench-ns-%d/scaler-%07d", thread, i);
    keys.emplace_back(buffer);
  }
  return keys;
}

// Items per second through add+get+done with `threads` threads.
double queue_workload(int threads) {
  WorkQueue queue;
  int per_thread = kQueueItems / threads;
  std::vector<std::vector<std::string>> keys;
  for (int t = 0; t < threads; ++t) keys.push_back(thread_keys(t, per_thread));
  std::atomic<int64_t> processed{0};
  auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&queue, &processed, own = &keys[t]] {
      int64_t local = 0;
      for (size_t n = 0; n < own->size(); n += kBatch) {
        size_t end = std::min(n + kBatch, own->size());
        for (size_t i = n; i < end; ++i) queue.add((*own)[i]);
        for (size_t i = n; i < end; ++i) {
          auto item = queue.get();
          if (!item) std::abort();  // shut down early: cannot happen
          queue.done(item->key);
          ++local;
        }
      }
      processed += local;
    });
  }
  for (auto& worker : workers) worker.join();
  double elapsed = seconds_since(start);
  queue.shutdown();
  if (processed != int64_t{threads} * per_thread) std::abort();
  return static_cast<double>(processed) / elapsed;
}

std::string ns_name(int i) {
  return "namespace-" + std::to_string(i % kNamespaces);
}
std::string dep_name(int i) {
  return "deployment-" + std::to_string(i);
}

void fill(ScalerIndex& index) {
  for (int i = 0; i < kScalers; ++i) {
    index.upsert(ns_name(i) + "/scaler-" + std::to_string(i), ns_name(i), "Deployment",
                 dep_name(i));
  }
}

// 65536 (namespace, deployment) pairs in a scattered order (the peer's generator and seed):
// targeted Deployments when `hit`, else names in the same namespaces that no scaler targets.
struct Probes {
  std::vector<std::string> ns;
  std::vector<std::string> dep;
  explicit Probes(bool hit) : ns(1 << 16), dep(1 << 16) {
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < ns.size(); ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      int j = static_cast<int>(x % kScalers);
      ns[i] = ns_name(j);
      dep[i] = hit ? dep_name(j) : "unmanaged-" + std::to_string(j);
    }
  }
};

// Mean ns per lookup; `check` verifies every probe found exactly what it should.
double lookup_ns(const ScalerIndex& index, bool hit, int n, bool check) {
  Probes probes(hit);
  size_t found = 0;
  auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    size_t p = static_cast<size_t>(i) & 0xffff;
    found += index.lookup(probes.ns[p], "Deployment", probes.dep[p], [](std::string_view) {});
  }
  double elapsed = seconds_since(start);
  if (check && (hit ? found != static_cast<size_t>(n) : found != 0)) std::abort();
  return elapsed * 1e9 / n;
}

// Two readers look up while a writer moves scalers between Deployments; mean ns per lookup.
double concurrent_lookup_ns(ScalerIndex& index) {
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      int j = i % kScalers;
      std::string target = (i / kScalers) % 2 == 0 ? "moved-" + std::to_string(j) : dep_name(j);
      index.upsert(ns_name(j) + "/scaler-" + std::to_string(j), ns_name(j), "Deployment", target);
    }
  });
  double results[2];
  std::thread readers[2];
  for (int r = 0; r < 2; ++r) {
    readers[r] =
        std::thread([&, r] { results[r] = lookup_ns(index, true, kConcurrentLookups, false); });
  }
  for (auto& reader : readers) reader.join();
  stop = true;
  writer.join();
  return (results[0] + results[1]) / 2;
}

}  // namespace

int main() {
  queue_workload(1);  // warm up the allocator and the scheduler
  row("queue_1t", "queue add+get+done, 1 thread (ops/s)", queue_workload(1));
  row("queue_4t", "queue add+get+done, 4 threads (ops/s; goal >= client-go)", queue_workload(4));
  ScalerIndex index;
  fill(index);
  lookup_ns(index, true, kLookups / 10, true);
  row("index_hit", "index lookup, 100k scalers, hit (ns/op)",
      lookup_ns(index, true, kLookups, true));
  row("index_miss", "index lookup, 100k scalers, miss (ns/op)",
      lookup_ns(index, false, kLookups, true));
  row("index_rw", "index lookup, 100k scalers, 2 readers + 1 writer (ns/op)",
      concurrent_lookup_ns(index));
  return 0;
}

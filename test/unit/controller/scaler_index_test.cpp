// ScalerIndex: namespace/kind/name -> scaler keys, maintained on scaler add, update and delete,
// read allocation-free while the informer writes.
#include "controller/scaler_index.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

using vscaler::controller::ScalerIndex;
using vscaler::controller::ScalerTarget;

// Counts this thread's heap allocations, to prove the hot-path lookup makes none. Replacing the
// global operator new is allowed once per program; this test file is its own executable.
namespace {
thread_local size_t g_allocations = 0;
}  // namespace

void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

TEST_CASE("a scaler is found under the deployment it targets") {
  ScalerIndex index;
  CHECK_FALSE(index.upsert("shop/web-scaler", "shop", "Deployment", "web").has_value());
  CHECK(index.lookup("shop", "Deployment", "web") == std::vector<std::string>{"shop/web-scaler"});
  CHECK(index.target_of("shop/web-scaler") == ScalerTarget{"shop", "Deployment", "web"});
  CHECK(index.size() == 1);
}

TEST_CASE("a deployment no scaler targets has no scalers") {
  ScalerIndex index;
  index.upsert("shop/a", "shop", "Deployment", "web");
  CHECK(index.lookup("shop", "Deployment", "api").empty());
  CHECK(index.lookup("other", "Deployment", "web").empty());  // same name, another namespace
  CHECK(index.lookup("", "Deployment", "").empty());
}

TEST_CASE("the namespace/name boundary is part of the key") {
  ScalerIndex index;
  index.upsert("a/s", "a", "Deployment", "bc");
  CHECK(index.lookup("ab", "Deployment", "c").empty());
  CHECK(index.lookup("a", "Deployment", "bc").size() == 1);
}

TEST_CASE("a Deployment and a StatefulSet of the same name are two targets") {
  ScalerIndex index;
  index.upsert("shop/web-deploy", "shop", "Deployment", "web");
  index.upsert("shop/web-sts", "shop", "StatefulSet", "web");
  CHECK(index.lookup("shop", "Deployment", "web") == std::vector<std::string>{"shop/web-deploy"});
  CHECK(index.lookup("shop", "StatefulSet", "web") == std::vector<std::string>{"shop/web-sts"});
  CHECK(index.lookup("shop", "DaemonSet", "web").empty());
  CHECK(index.target_of("shop/web-sts") == ScalerTarget{"shop", "StatefulSet", "web"});
  // The kind/name boundary is part of the key too.
  index.upsert("shop/odd", "shop", "Daemon", "Set/x");
  CHECK(index.lookup("shop", "DaemonSet", "/x").empty());
  CHECK(index.lookup("shop", "Daemon", "Set/x").size() == 1);
}

TEST_CASE("a retarget across kinds moves the scaler and returns the old target") {
  ScalerIndex index;
  index.upsert("shop/s", "shop", "Deployment", "db");
  auto old = index.upsert("shop/s", "shop", "StatefulSet", "db");
  REQUIRE(old.has_value());
  CHECK(*old == ScalerTarget{"shop", "Deployment", "db"});
  CHECK(index.lookup("shop", "Deployment", "db").empty());
  CHECK(index.lookup("shop", "StatefulSet", "db") == std::vector<std::string>{"shop/s"});
  CHECK(index.size() == 1);
}

TEST_CASE("every scaler targeting one deployment is found, in key order") {
  ScalerIndex index;
  index.upsert("shop/zeta", "shop", "Deployment", "web");
  index.upsert("shop/alpha", "shop", "Deployment", "web");
  index.upsert("shop/mid", "shop", "Deployment", "web");
  std::vector<std::string> seen;
  size_t n = index.lookup("shop", "Deployment", "web",
                          [&](std::string_view key) { seen.emplace_back(key); });
  CHECK(n == 3);
  CHECK(seen == std::vector<std::string>{"shop/alpha", "shop/mid", "shop/zeta"});
}

TEST_CASE("an upsert with an unchanged target changes nothing and returns no old target") {
  ScalerIndex index;
  index.upsert("shop/s", "shop", "Deployment", "web");
  CHECK_FALSE(index.upsert("shop/s", "shop", "Deployment", "web").has_value());
  CHECK(index.lookup("shop", "Deployment", "web").size() == 1);
  CHECK(index.size() == 1);
}

TEST_CASE("a changed deploymentName moves the scaler and returns the old target") {
  ScalerIndex index;
  index.upsert("shop/s", "shop", "Deployment", "web");
  index.upsert("shop/other", "shop", "Deployment", "web");
  auto old = index.upsert("shop/s", "shop", "Deployment", "api");
  REQUIRE(old.has_value());
  CHECK(*old == ScalerTarget{"shop", "Deployment", "web"});
  CHECK(index.lookup("shop", "Deployment", "web") == std::vector<std::string>{"shop/other"});
  CHECK(index.lookup("shop", "Deployment", "api") == std::vector<std::string>{"shop/s"});
  CHECK(index.size() == 2);
}

TEST_CASE("removing a scaler forgets it and returns its target") {
  ScalerIndex index;
  index.upsert("shop/s", "shop", "Deployment", "web");
  auto old = index.remove("shop/s");
  REQUIRE(old.has_value());
  CHECK(*old == ScalerTarget{"shop", "Deployment", "web"});
  CHECK(index.lookup("shop", "Deployment", "web").empty());
  CHECK_FALSE(index.target_of("shop/s").has_value());
  CHECK(index.size() == 0);
  CHECK_FALSE(index.remove("shop/s").has_value());  // removing twice is harmless
}

TEST_CASE("size counts scalers, not deployments") {
  ScalerIndex index;
  for (int i = 0; i < 1000; ++i) {
    index.upsert("ns/s" + std::to_string(i), "ns", "Deployment", "d" + std::to_string(i % 10));
  }
  CHECK(index.size() == 1000);
  CHECK(index.lookup("ns", "Deployment", "d3").size() == 100);
  for (int i = 0; i < 500; ++i) index.remove("ns/s" + std::to_string(i));
  CHECK(index.size() == 500);
}

TEST_CASE("a lookup allocates nothing, hit or miss") {
  ScalerIndex index;
  for (int i = 0; i < 1000; ++i) {
    index.upsert("ns/scaler-with-a-long-name-" + std::to_string(i), "namespace-long-enough",
                 "Deployment", "deployment-with-a-long-name-" + std::to_string(i));
  }
  std::string ns = "namespace-long-enough";
  std::string hit = "deployment-with-a-long-name-123";
  std::string miss = "deployment-with-a-long-name-x";
  size_t found = 0;
  size_t before = g_allocations;
  index.lookup(ns, "Deployment", hit, [&](std::string_view key) { found += key.size(); });
  index.lookup(ns, "Deployment", miss, [&](std::string_view key) { found += key.size(); });
  CHECK(g_allocations == before);
  CHECK(found > 0);
}

TEST_CASE("lookups are safe and consistent while the informer updates the index") {
  // Every scaler moves once from "blue" to "green" while other scalers come and go. A reader that
  // looks up blue, then green, must find each moving scaler at least once: the index inserts
  // under the new target before erasing from the old. TSan checks the locking.
  ScalerIndex index;
  constexpr int kScalers = 256;
  for (int i = 0; i < kScalers; ++i)
    index.upsert("ns/s" + std::to_string(i), "ns", "Deployment", "blue");
  std::atomic<bool> stop{false};
  std::atomic<int> missing{0};
  std::atomic<int> rounds{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      std::vector<char> seen(kScalers);
      auto mark = [&](std::string_view key) { seen[std::stoul(std::string(key.substr(4)))] = 1; };
      while (!stop.load()) {
        std::fill(seen.begin(), seen.end(), 0);
        index.lookup("ns", "Deployment", "blue", mark);
        index.lookup("ns", "Deployment", "green", mark);
        for (char s : seen) missing += s ? 0 : 1;
        ++rounds;
      }
    });
  }
  for (int i = 0; i < kScalers; ++i) {
    index.upsert("ns/s" + std::to_string(i), "ns", "Deployment", "green");
    // Churn elsewhere, so the shards' maps grow and shrink under the readers.
    for (int j = 0; j < 20; ++j) {
      std::string key = "churn/c" + std::to_string(i * 20 + j);
      index.upsert(key, "churn", "Deployment", "d" + std::to_string(j));
      if (j % 2 == 0) index.remove(key);
    }
    if (i % 16 == 0) std::this_thread::yield();
  }
  while (rounds.load() < 10) std::this_thread::yield();
  stop = true;
  for (auto& reader : readers) reader.join();
  CHECK(missing == 0);
  CHECK(index.lookup("ns", "Deployment", "green").size() == kScalers);
  CHECK(index.lookup("ns", "Deployment", "blue").empty());
  CHECK(index.size() == kScalers + kScalers * 10);
}

TEST_CASE("the kind/name boundary is part of the key") {
  ScalerIndex index;
  index.upsert("a/s", "a", "Deployment", "x");
  CHECK(index.lookup("a", "Deploymen", "tx").empty());
  CHECK(index.lookup("a", "Deploymentx", "").empty());
  CHECK(index.lookup("a", "Deployment", "x").size() == 1);
}

TEST_CASE("the conflict losers stay in key order as the first and the last scalers leave") {
  ScalerIndex index;
  for (const char* key : {"shop/c", "shop/a", "shop/d", "shop/b"}) {
    index.upsert(key, "shop", "Deployment", "web");
  }
  index.remove("shop/a");
  index.remove("shop/d");
  CHECK(index.lookup("shop", "Deployment", "web") == std::vector<std::string>{"shop/b", "shop/c"});
  index.upsert("shop/a", "shop", "Deployment", "web");
  CHECK(index.lookup("shop", "Deployment", "web") ==
        std::vector<std::string>{"shop/a", "shop/b", "shop/c"});
  CHECK(index.target_of("shop/b") == ScalerTarget{"shop", "Deployment", "web"});
}

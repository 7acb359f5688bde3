// UnclaimedCreates: a CREATE admitted before its scaler reached the index is remembered for the
// ttl, taken once, and the store never grows past its capacity.
#include "controller/unclaimed_creates.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using vscaler::controller::UnclaimedCreates;
using namespace std::chrono_literals;

TEST_CASE("a recorded CREATE is taken once, by its exact key") {
  UnclaimedCreates unclaimed;
  auto now = UnclaimedCreates::Clock::now();
  unclaimed.record(UnclaimedCreates::key("shop", "Deployment", "web"), now);
  CHECK_FALSE(unclaimed.take(UnclaimedCreates::key("shop", "StatefulSet", "web"), now));
  CHECK_FALSE(unclaimed.take(UnclaimedCreates::key("other", "Deployment", "web"), now));
  CHECK(unclaimed.take("shop/Deployment/web", now + 1s));
  CHECK_FALSE(unclaimed.take("shop/Deployment/web", now + 1s));
  CHECK(unclaimed.size() == 0);
}

TEST_CASE("a record older than the ttl is gone") {
  UnclaimedCreates unclaimed(10s);
  auto now = UnclaimedCreates::Clock::now();
  unclaimed.record("shop/Deployment/web", now);
  unclaimed.record("shop/Deployment/api", now + 5s);
  CHECK_FALSE(unclaimed.take("shop/Deployment/web", now + 10s));
  CHECK(unclaimed.take("shop/Deployment/api", now + 10s));
}

TEST_CASE("at capacity the oldest record goes first; the size stays bounded") {
  UnclaimedCreates unclaimed(30s, 3);
  auto now = UnclaimedCreates::Clock::now();
  for (int i = 0; i < 100; ++i) unclaimed.record("ns/Deployment/d" + std::to_string(i), now);
  CHECK(unclaimed.size() == 3);
  CHECK_FALSE(unclaimed.take("ns/Deployment/d96", now));
  CHECK(unclaimed.take("ns/Deployment/d97", now));
  CHECK(unclaimed.take("ns/Deployment/d99", now));
  // A key recorded again keeps only its newest time.
  unclaimed.record("ns/Deployment/x", now);
  unclaimed.record("ns/Deployment/x", now + 20s);
  CHECK(unclaimed.take("ns/Deployment/x", now + 40s));
}

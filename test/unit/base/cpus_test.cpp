// base/cpus: the CPUs the event loops are sized by.
#include "base/cpus.h"

#include <doctest/doctest.h>

#include <thread>

using namespace vscaler;

TEST_CASE("a cgroup's cpu.max in whole CPUs, rounded up; none for max or malformed text") {
  CHECK(base::cpus_of_quota("100000 100000") == 1);
  CHECK(base::cpus_of_quota("150000 100000") == 2);
  CHECK(base::cpus_of_quota("50000 100000") == 1);
  CHECK(base::cpus_of_quota("400000 100000") == 4);
  CHECK(base::cpus_of_quota("-1 100000") == std::nullopt);  // cgroup v1's "no quota"
  CHECK(base::cpus_of_quota("max 100000") == std::nullopt);
  CHECK(base::cpus_of_quota("max") == std::nullopt);
  CHECK(base::cpus_of_quota("") == std::nullopt);
  CHECK(base::cpus_of_quota("100000 0") == std::nullopt);
  CHECK(base::cpus_of_quota("1e5 100000") == std::nullopt);
}

TEST_CASE("usable_cpus is at least one and never more than the node's") {
  const std::size_t cpus = base::usable_cpus();
  CHECK(cpus >= 1);
  if (std::thread::hardware_concurrency() > 0) CHECK(cpus <= std::thread::hardware_concurrency());
}

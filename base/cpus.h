// How many CPUs this process may keep busy at once, for sizing thread pools and event loops.
// std::thread::hardware_concurrency() counts the node's CPUs: 64 on a 64-core node whatever the
// pod's CPU limit, where 64 event loops under a 1-CPU quota only take turns being throttled.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace vscaler::base {

/// The CPUs of the affinity mask (sched_getaffinity), capped by the cgroup's CPU quota rounded up
/// (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us / cpu.cfs_period_us); at least 1.
std::size_t usable_cpus();

/// The quota of a cgroup v2 cpu.max ("150000 100000") in whole CPUs, rounded up (2); nullopt for
/// no quota ("max 100000") or text that is not "QUOTA PERIOD".
std::optional<std::size_t> cpus_of_quota(std::string_view cpu_max);

}  // namespace vscaler::base

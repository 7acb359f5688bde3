// Resource maps of the recommender (cpu / memory -> Quantity) and the conversions between
// quantities and the doubles the histograms hold: CPU in cores, memory in bytes, rounded up on the
// way back (a recommendation never lands below what it measured) to a step people can read:
// --round-cpu-millicores and --round-memory-bytes, "489Mi" rather than "511772988".
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kube/quantity.h"

namespace vscaler::recommender {

/// "cpu" and "memory", the only resources vscaler recommends.
inline constexpr const char* kCpu = "cpu";
/// See kCpu.
inline constexpr const char* kMemory = "memory";

/// A container's requests, limits or one recommendation bound: resource name -> quantity.
using ResourceMap = std::map<std::string, kube::Quantity>;

/// A quantity's value in its base unit (cores for cpu, bytes for memory).
inline double base_units(const kube::Quantity& q) {
  return q.to_double();
}

/// CPU `q` in cores, rounded up (away from zero) to whole millicores: VPA reads usage through
/// Quantity.MilliValue(), so a steady 110.2m is the sample 111m and lands in a higher histogram
/// bucket than the exact value would.
double whole_millicores(const kube::Quantity& q);
/// Memory `q` in bytes, rounded up (away from zero) to whole bytes, as Quantity.Value() reads
/// usage and the memory request of an OOM-killed container for VPA.
double whole_bytes(const kube::Quantity& q);

/// How published values are rounded (VPA's --round-cpu-millicores, --round-memory-bytes).
struct Rounding {
  std::int64_t cpu_millicores = 1;          ///< CPU rounds up to a multiple of this many millicores
  std::int64_t memory_bytes = 1024 * 1024;  ///< memory rounds up to a multiple of this (1Mi)
};

/// `cores` rounded up to a multiple of `step_millicores` ("345m"; 1.5 cores print "1500m").
kube::Quantity cpu_quantity(double cores, std::int64_t step_millicores = 1);
/// `bytes` rounded up to a multiple of `step_bytes`; printed in binary units ("489Mi") when the
/// step is a multiple of 1Ki, else in bytes.
kube::Quantity memory_quantity(double bytes, std::int64_t step_bytes = 1);

/// The value of `resource` in `map`, or nullptr.
inline const kube::Quantity* find(const ResourceMap& map, const std::string& resource) {
  auto it = map.find(resource);
  return it == map.end() ? nullptr : &it->second;
}

/// The request a container runs with for `resource`: its request, else its limit (the API server
/// defaults a missing request to the limit), else nullptr. Every reader of "the current request"
/// goes through this one rule: the update bounds, the scaling of limits, the OOM kill's memory and
/// the spans of requests a status publishes.
inline const kube::Quantity* effective_request(const ResourceMap& requests,
                                               const ResourceMap& limits,
                                               const std::string& resource) {
  const kube::Quantity* request = find(requests, resource);
  return request != nullptr ? request : find(limits, resource);
}

}  // namespace vscaler::recommender

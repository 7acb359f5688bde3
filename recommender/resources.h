// Resource maps of the recommender (cpu / memory -> Quantity) and the conversions between
// quantities and the doubles the histograms hold: CPU in cores, memory in bytes, rounded up to
// whole millicores / bytes on the way back (a recommendation never lands below what it measured).
#pragma once

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

/// `cores` rounded up to a whole millicore ("345m").
kube::Quantity cpu_quantity(double cores);
/// `bytes` rounded up to a whole byte.
kube::Quantity memory_quantity(double bytes);
/// cpu_quantity or memory_quantity by resource name.
kube::Quantity resource_quantity(const std::string& resource, double value);

/// The value of `resource` in `map`, or nullptr.
inline const kube::Quantity* find(const ResourceMap& map, const std::string& resource) {
  auto it = map.find(resource);
  return it == map.end() ? nullptr : &it->second;
}

}  // namespace vscaler::recommender

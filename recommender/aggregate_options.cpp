// Validation of the recommender's time constants (bad flags are named, never silently fixed).
#include "recommender/aggregate_options.h"

namespace vscaler::recommender {

kube::Result<kube::Unit> AggregateOptions::validate() const {
  if (cpu_half_life.count() <= 0) return kube::fail("cpu histogram decay half-life must be > 0");
  if (memory_half_life.count() <= 0) {
    return kube::fail("memory histogram decay half-life must be > 0");
  }
  if (memory_aggregation_interval.count() <= 0) {
    return kube::fail("memory aggregation interval must be > 0");
  }
  if (memory_aggregation_interval_count < 1) {
    return kube::fail("memory aggregation interval count must be >= 1");
  }
  if (!(cpu_sample_weight > 0)) return kube::fail("cpu sample weight must be > 0");
  if (!(oom_bump_ratio >= 1)) return kube::fail("oom bump ratio must be >= 1");
  if (!(oom_min_bump_bytes >= 0)) return kube::fail("oom min bump must be >= 0 bytes");
  if (pod_clock_horizon.count() <= 0) return kube::fail("pod clock horizon must be > 0");
  return kube::Unit{};
}

}  // namespace vscaler::recommender

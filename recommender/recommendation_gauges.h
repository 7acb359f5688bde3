// RecommendationGauges: the vscaler_recommendation{namespace,verticalscaler,container,resource,
// bound} gauges (DESIGN.md "Recommendations"), stored as one compact row per recommended
// container instead of one generic metrics::Gauge child per series. A generic child costs ~290
// bytes (a vector of five label strings, a node, a heap-allocated gauge): 8 series per container
// made ~44 MiB at 20,000 containers. Here a scaler's rows share its namespace and name, and a row
// holds its 8 values inline (~110 bytes per container). Rendered exactly as a metrics::GaugeFamily
// with the same children would be: series sorted by their label values, a series only where the
// recommendation has that value. Thread-safe: the recommender sets rows, /metrics renders them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/registry.h"
#include "recommender/recommendation.h"

namespace vscaler::recommender {

/// The vscaler_recommendation family (see the file comment); register it with
/// metrics::Registry::custom<RecommendationGauges>().
class RecommendationGauges final : public metrics::FamilyBase {
 public:
  /// The family's name, help and labels are fixed (DESIGN.md).
  RecommendationGauges();

  /// Replaces the rows of the scaler `ns`/`name` with one per recommendation (cpu in cores,
  /// memory in bytes, each of target, lowerBound, upperBound, uncappedTarget that it holds);
  /// an empty `recs` removes the scaler's series.
  void set(std::string_view ns, std::string_view name,
           const std::vector<ContainerRecommendation>& recs);
  /// Removes every series of the scaler `ns`/`name`.
  void remove(std::string_view ns, std::string_view name) { set(ns, name, {}); }
  /// Series currently exported (for tests).
  std::size_t series() const;

  void render(std::string& out) const override;

 private:
  // 2 resources x 4 bounds; a column is resource * 4 + bound (bound in kBoundNames order).
  static constexpr std::size_t kColumns = 8;
  struct Row {
    std::string container;
    std::array<double, kColumns> values{};
    std::uint8_t present = 0;  // bit c: column c has a series
    friend bool operator==(const Row&, const Row&) = default;
  };
  struct ScalerName {
    std::string ns;
    std::string name;
  };
  // Orders scalers as the series' label values sort: namespace first, then name.
  struct Less {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::string_view(a.ns) < std::string_view(b.ns) ||
             (std::string_view(a.ns) == std::string_view(b.ns) &&
              std::string_view(a.name) < std::string_view(b.name));
    }
  };
  struct NameView {
    std::string_view ns;
    std::string_view name;
  };

  mutable std::shared_mutex mutex_;
  std::map<ScalerName, std::vector<Row>, Less> scalers_;  // rows sorted by container
};

}  // namespace vscaler::recommender

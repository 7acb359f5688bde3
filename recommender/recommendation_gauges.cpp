// The recommendation gauges as rows per container.
#include "recommender/recommendation_gauges.h"

#include <algorithm>
#include <bit>
#include <mutex>
#include <utility>

namespace vscaler::recommender {
namespace {

constexpr std::array<const char*, 4> kBoundNames = {"target", "lowerBound", "upperBound",
                                                    "uncappedTarget"};
constexpr std::array<const char*, 2> kResourceNames = {kCpu, kMemory};

const ResourceMap& bound_of(const ContainerRecommendation& rec, std::size_t bound) {
  switch (bound) {
    case 0:
      return rec.target;
    case 1:
      return rec.lower_bound;
    case 2:
      return rec.upper_bound;
    default:
      return rec.uncapped_target;
  }
}

// The columns in the order their (resource, bound) label values sort, as a generic family
// renders them.
std::array<std::size_t, 8> render_order() {
  std::array<std::size_t, 8> order{};
  for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
  auto labels = [](std::size_t c) {
    return std::pair{std::string_view(kResourceNames[c / 4]), std::string_view(kBoundNames[c % 4])};
  };
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return labels(a) < labels(b); });
  return order;
}

}  // namespace

RecommendationGauges::RecommendationGauges()
    : FamilyBase("vscaler_recommendation",
                 "The recommender's current recommendation (cpu in cores, memory in bytes)",
                 {"namespace", "verticalscaler", "container", "resource", "bound"},
                 metrics::Type::kGauge) {}

void RecommendationGauges::set(std::string_view ns, std::string_view name,
                               const std::vector<ContainerRecommendation>& recs) {
  std::vector<Row> rows;
  rows.reserve(recs.size());
  for (const auto& rec : recs) {
    Row row;
    row.container = rec.container_name;
    for (std::size_t c = 0; c < kColumns; ++c) {
      const auto* value = find(bound_of(rec, c % 4), kResourceNames[c / 4]);
      if (!value) continue;
      row.values[c] = base_units(*value);
      row.present |= static_cast<std::uint8_t>(1u << c);
    }
    if (row.present == 0) continue;  // no series: as if the container had none
    // A container named twice keeps its last values (a generic child is set twice).
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const Row& r) { return r.container == row.container; });
    if (it == rows.end()) {
      rows.push_back(std::move(row));
    } else {
      for (std::size_t c = 0; c < kColumns; ++c) {
        if (row.present & (1u << c)) it->values[c] = row.values[c];
      }
      it->present |= row.present;
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.container < b.container; });
  rows.shrink_to_fit();
  std::unique_lock lock(mutex_);
  auto it = scalers_.find(NameView{ns, name});
  if (rows.empty()) {
    if (it != scalers_.end()) scalers_.erase(it);
    return;
  }
  if (it == scalers_.end()) {
    scalers_.emplace(ScalerName{std::string(ns), std::string(name)}, std::move(rows));
  } else if (it->second != rows) {  // unchanged (most passes): the rows stay where they are
    it->second = std::move(rows);
  }
}

std::size_t RecommendationGauges::series() const {
  std::shared_lock lock(mutex_);
  std::size_t total = 0;
  for (const auto& [scaler, rows] : scalers_) {
    for (const auto& row : rows) total += static_cast<std::size_t>(std::popcount(row.present));
  }
  return total;
}

void RecommendationGauges::render(std::string& out) const {
  static const std::array<std::size_t, 8> order = render_order();
  std::shared_lock lock(mutex_);
  if (scalers_.empty()) return;
  write_header(out);
  for (const auto& [scaler, rows] : scalers_) {
    for (const auto& row : rows) {
      for (std::size_t c : order) {
        if (!(row.present & (1u << c))) continue;
        const std::array<std::string_view, 5> values = {scaler.ns, scaler.name, row.container,
                                                        kResourceNames[c / 4], kBoundNames[c % 4]};
        write_sample(out, values, row.values[c]);
      }
    }
  }
}

}  // namespace vscaler::recommender

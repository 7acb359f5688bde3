// The dashboard's two renderings of a Model: a self-contained HTML page (inline CSS and SVG
// charts, no script, no external asset: it works in an air-gapped cluster; every name and
// message escaped) and its JSON twin.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "dashboard/model.h"

namespace vscaler::dashboard {

/// The page. `only_namespace` non-empty: that namespace's section alone (the cluster totals
/// stay); `now` (Unix seconds) is the right edge of the charts, `window` seconds wide.
std::string render_html(const Model& model, const std::string& only_namespace, std::int64_t now,
                        std::int64_t window);

/// The same content as JSON (quantities as canonical strings, totals also in millicores and
/// bytes).
nlohmann::json render_json(const Model& model, const std::string& only_namespace);

/// Appends the chart of `points` (as render_chart) to `out`; nothing when there are none.
void append_chart(std::string& out, const std::vector<HistoryPoint>& points, std::int64_t now,
                  std::int64_t window);

/// The inline SVG chart of `points` (cpu and memory targets, each scaled to its own maximum)
/// between now - window and now; "" when there are no points.
std::string render_chart(const std::vector<HistoryPoint>& points, std::int64_t now,
                         std::int64_t window);

}  // namespace vscaler::dashboard

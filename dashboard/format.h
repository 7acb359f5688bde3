// Text for the dashboard: HTML escaping, and CPU and memory amounts as people read them
// ("250m", "1.5", "512Mi", "1.25Gi"), signed for the savings figures.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kube/quantity.h"

namespace vscaler::dashboard {

/// `text` with & < > " ' replaced by entities: safe in HTML text and in quoted attributes.
std::string html_escape(std::string_view text);
/// Appends html_escape(text) to `out` (a text without special characters is appended as it is).
void append_escaped(std::string& out, std::string_view text);
/// A CPU amount of `nanos` nanocores: "250m", "1", "1.5" (cores), rounded to millicores.
std::string format_cpu(kube::Int128 nanos);
/// A memory amount of `nanos` nanobytes: "512Mi", "1.25Gi", "900Ki", "100" (bytes).
std::string format_memory(kube::Int128 nanos);
/// As format_cpu / format_memory with a sign: "+250m", "-1.5Gi", "0".
std::string format_signed_cpu(kube::Int128 nanos);
std::string format_signed_memory(kube::Int128 nanos);
/// A quantity as stored (canonical text), or "" when absent.
std::string format_quantity(const std::optional<kube::Quantity>& quantity);

}  // namespace vscaler::dashboard

// The made scalers of namespaces that ask for recommendations: names, objects, the label.
#include "api/namespace_scalers.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace vscaler::api {
namespace {

constexpr std::size_t kMaxName = 253;

/// FNV-1a, 64 bits: stable across versions and machines (a name must not change on upgrade).
std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace

std::string made_scaler_name(std::string_view kind, std::string_view workload) {
  std::string name = "vsc-";
  for (char c : kind) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  name += "-";
  name += workload;
  if (name.size() <= kMaxName) return name;
  char suffix[12];
  std::snprintf(suffix, sizeof suffix, "%010llx",
                static_cast<unsigned long long>(fnv1a(name) & 0xffffffffffULL));
  name.resize(kMaxName - 11);
  // A subdomain's labels end with a letter or digit: no "web.-" or "web--".
  while (!name.empty() && (name.back() == '.' || name.back() == '-')) name.pop_back();
  return name + "-" + suffix;
}

nlohmann::json made_scaler(std::string_view ns, std::string_view kind, std::string_view workload) {
  return {{"apiVersion", "scaling.vscaler.dev/v1beta1"},
          {"kind", "VerticalScaler"},
          {"metadata",
           {{"name", made_scaler_name(kind, workload)},
            {"namespace", ns},
            {"labels", {{kManagedByLabel, kManagedByNamespace}}}}},
          {"spec",
           {{"targetRef", {{"apiVersion", "apps/v1"}, {"kind", kind}, {"name", workload}}},
            {"updateMode", "Off"}}}};
}

bool is_made_scaler(const nlohmann::json& object) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return false;
  auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return false;
  auto value = labels->find(kManagedByLabel);
  return value != labels->end() && value->is_string() &&
         value->get_ref<const std::string&>() == kManagedByNamespace;
}

}  // namespace vscaler::api

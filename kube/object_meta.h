// Reading fields of Kubernetes objects held as JSON, the one place that does it. Objects come from
// the network (watch events, admission reviews, GET answers), so every accessor tolerates any
// shape: a missing field, a field of the wrong type or a non-object along the path yields the
// empty value, never an exception (nlohmann's value() throws type_error on a wrong type).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vscaler::kube {

/// The member at `path` ({"metadata", "uid"}), or nullptr when some step is absent or not an
/// object.
const nlohmann::json* find_path(const nlohmann::json& object,
                                std::initializer_list<const char*> path);

/// The string at `path`, "" when absent or not a string.
std::string string_at(const nlohmann::json& object, std::initializer_list<const char*> path);

/// metadata.<field> when it is a string, else "".
std::string meta_string(const nlohmann::json& object, const char* field);

/// metadata.generation when it is an integer, else 0.
int64_t meta_generation(const nlohmann::json& object);

/// The store and work-queue key of an object: "namespace/name", or "name" when it has no
/// namespace (cluster-scoped); "" when it has no name.
std::string object_key(const nlohmann::json& object);

/// Whether metadata.annotations holds `key` (whatever its value).
bool has_annotation(const nlohmann::json& object, std::string_view key);

/// Whether metadata.managedFields records a write through `subresource` ("resize", "status"):
/// the API server keeps one entry per manager and subresource that owns fields.
bool written_through(const nlohmann::json& object, std::string_view subresource);

/// Drops metadata.managedFields but for the entries of writes through `subresource`, each cut
/// to its manager and subresource (what written_through reads): a few bytes where the whole is
/// often half of a listed object.
void keep_managers_of(nlohmann::json& object, std::string_view subresource);

/// RFC 6902 operations that set `annotations` (key, value) on `object`: one "add" of
/// /metadata/annotations when it has none (an "add" under a missing member fails), else one
/// "add" per key, which replaces a value already there. An empty array for none.
nlohmann::json add_annotations_patch(
    const nlohmann::json& object,
    const std::vector<std::pair<std::string_view, std::string>>& annotations);

}  // namespace vscaler::kube

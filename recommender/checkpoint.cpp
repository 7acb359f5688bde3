// Checkpoint JSON <-> aggregates. Every access on input is checked before it is made, so a
// malformed document yields an error value rather than a nlohmann exception.
#include "recommender/checkpoint.h"

#include <charconv>
#include <cmath>

namespace vscaler::recommender {
namespace {

using nlohmann::json;
using Error = kube::Failure<std::string>;

// The memoryWindow an older version requires: epoch end (no window open), no peaks.
json empty_memory_window() {
  return {{"end", format_rfc3339(TimePoint{})},
          {"peak", 0},
          {"oomPeak", 0},
          {"lastSampleStart", format_rfc3339(TimePoint{})}};
}

nlohmann::json encode_histogram(const DecayingHistogram& h) {
  json buckets = json::object();
  for (const auto& b : h.buckets()) buckets[std::to_string(b.index)] = double(b.weight);
  return {{"referenceTimestamp", format_rfc3339(h.reference())},
          {"totalWeight", h.total_weight()},
          {"buckets", std::move(buckets)}};
}

// The string member `key` of `object`, or "" when absent or not a string (never throws).
std::string_view string_at(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

Error field_error(const std::string& path, const std::string& why) {
  return kube::fail(path + ": " + why);
}

// The member `key` of `object` (at `path`), or an error when it is missing.
kube::Result<const json*> member(const json& object, const std::string& path, const char* key) {
  if (!object.is_object()) return field_error(path, "must be an object");
  auto it = object.find(key);
  if (it == object.end()) return field_error(path + "." + key, "is required");
  return &*it;
}

kube::Result<double> number(const json& object, const std::string& path, const char* key) {
  auto m = member(object, path, key);
  if (!m.ok()) return kube::fail(m.error());
  if (!(*m)->is_number()) return field_error(path + "." + key, "must be a number");
  double value = (*m)->get<double>();
  if (!std::isfinite(value) || value < 0) {
    return field_error(path + "." + key, "must be finite and >= 0");
  }
  return value;
}

kube::Result<TimePoint> time(const json& object, const std::string& path, const char* key) {
  auto m = member(object, path, key);
  if (!m.ok()) return kube::fail(m.error());
  if (!(*m)->is_string()) return field_error(path + "." + key, "must be an RFC 3339 string");
  auto t = parse_rfc3339((*m)->get_ref<const std::string&>());
  if (!t.ok()) return field_error(path + "." + key, t.error());
  return *t;
}

kube::Result<DecayingHistogram> decode_histogram(const json& object, const std::string& path,
                                                 const HistogramConfig& config) {
  auto reference = time(object, path, "referenceTimestamp");
  if (!reference.ok()) return kube::fail(reference.error());
  auto total = number(object, path, "totalWeight");
  if (!total.ok()) return kube::fail(total.error());
  auto buckets = member(object, path, "buckets");
  if (!buckets.ok()) return kube::fail(buckets.error());
  const std::string bucket_path = path + ".buckets";
  if (!(*buckets)->is_object()) return field_error(bucket_path, "must be an object");
  std::vector<HistogramBucket> parsed;
  for (const auto& [key, value] : (*buckets)->items()) {
    const std::string at = bucket_path + ".\"" + key + "\"";
    unsigned index = 0;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
    if (ec != std::errc() || end != key.data() + key.size() || index > 0xffff) {
      return field_error(at, "bucket index must be an integer");
    }
    if (!value.is_number()) return field_error(at, "bucket weight must be a number");
    parsed.push_back({static_cast<std::uint16_t>(index), static_cast<float>(value.get<double>())});
  }
  auto h = DecayingHistogram::restore(config, *reference, *total, std::move(parsed));
  if (!h.ok()) return field_error(path, h.error());
  return std::move(h).value();
}

kube::Result<std::pair<std::string, AggregateState>> decode_container(
    const json& c, const std::string& path, const AggregateOptions& options) {
  auto name = member(c, path, "name");
  if (!name.ok()) return kube::fail(name.error());
  if (!(*name)->is_string() || (*name)->get_ref<const std::string&>().empty()) {
    return field_error(path + ".name", "must be a non-empty string");
  }
  AggregateState s;
  auto cpu = member(c, path, "cpu");
  if (!cpu.ok()) return kube::fail(cpu.error());
  auto cpu_h = decode_histogram(**cpu, path + ".cpu", options.cpu_config());
  if (!cpu_h.ok()) return kube::fail(cpu_h.error());
  s.cpu = std::move(cpu_h).value();
  auto memory = member(c, path, "memory");
  if (!memory.ok()) return kube::fail(memory.error());
  auto memory_h = decode_histogram(**memory, path + ".memory", options.memory_config());
  if (!memory_h.ok()) return kube::fail(memory_h.error());
  s.memory = std::move(memory_h).value();
  auto first = time(c, path, "firstSampleStart");
  if (!first.ok()) return kube::fail(first.error());
  auto last = time(c, path, "lastSampleStart");
  if (!last.ok()) return kube::fail(last.error());
  s.first_sample_start = *first;
  s.last_sample_start = *last;
  auto count = member(c, path, "totalSamplesCount");
  if (!count.ok()) return kube::fail(count.error());
  if (!(*count)->is_number_unsigned()) {
    return field_error(path + ".totalSamplesCount", "must be a non-negative integer");
  }
  s.total_samples_count = (*count)->get<std::uint64_t>();
  // memoryWindow: the single window of checkpoints written before memory windows were per
  // pod. Windows are not restored any more (as VPA's checkpoints hold none): read and ignored.
  return std::pair{(*name)->get<std::string>(), std::move(s)};
}

}  // namespace

nlohmann::json encode_checkpoint(const ContainerAggregates& aggregates,
                                 const AggregateOptions* options, const OpenIntervals* open) {
  json containers = json::array();
  for (const auto& [name, aggregate] : aggregates) {
    const AggregateState& s = aggregate.state();
    containers.push_back(
        {{"name", name},
         {"cpu", encode_histogram(s.cpu)},
         {"memory", options != nullptr && open != nullptr
                        ? encode_histogram(aggregate.checkpoint_memory(*options, *open))
                        : encode_histogram(s.memory)},
         {"firstSampleStart", format_rfc3339(s.first_sample_start)},
         {"lastSampleStart", format_rfc3339(s.last_sample_start)},
         {"totalSamplesCount", s.total_samples_count},
         // An empty window, for a replica of an older version that requires
         // the field (a rolling upgrade): it opens a new window, as we do.
         {"memoryWindow", empty_memory_window()}});
  }
  return {{"version", kCheckpointVersion}, {"containers", std::move(containers)}};
}

kube::Result<ContainerAggregates> decode_checkpoint(const nlohmann::json& spec,
                                                    const AggregateOptions& options) {
  auto version = member(spec, "spec", "version");
  if (!version.ok()) return kube::fail(version.error());
  if (!(*version)->is_number_integer() || (*version)->get<std::int64_t>() != kCheckpointVersion) {
    return field_error("spec.version", "must be " + std::to_string(kCheckpointVersion));
  }
  auto containers = member(spec, "spec", "containers");
  if (!containers.ok()) return kube::fail(containers.error());
  if (!(*containers)->is_array()) return field_error("spec.containers", "must be an array");
  ContainerAggregates out;
  std::size_t i = 0;
  for (const auto& c : **containers) {
    const std::string path = "spec.containers[" + std::to_string(i++) + "]";
    auto decoded = decode_container(c, path, options);
    if (!decoded.ok()) return kube::fail(decoded.error());
    auto& [name, state] = decoded.value();
    if (out.contains(name)) return field_error(path + ".name", "\"" + name + "\" appears twice");
    out.emplace(name, ContainerAggregate(std::move(state)));
  }
  out.shrink_to_fit();
  return out;
}

nlohmann::json checkpoint_object(std::string_view namespace_, std::string_view scaler_name,
                                 std::string_view scaler_uid, const ContainerAggregates& aggregates,
                                 bool history_wanted, const AggregateOptions* options,
                                 const OpenIntervals* open) {
  json object = {{"apiVersion", kCheckpointApiVersion},
                 {"kind", kCheckpointKind},
                 {"metadata",
                  {{"name", scaler_name},
                   {"namespace", namespace_},
                   {"ownerReferences", json::array({{{"apiVersion", kCheckpointApiVersion},
                                                     {"kind", "VerticalScaler"},
                                                     {"name", scaler_name},
                                                     {"uid", scaler_uid}}})}}},
                 {"spec", encode_checkpoint(aggregates, options, open)}};
  if (history_wanted) object["metadata"]["annotations"] = {{kHistoryWantedAnnotation, "true"}};
  return object;
}

bool checkpoint_wants_history(const nlohmann::json& object) {
  if (!object.is_object()) return false;
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return false;
  auto annotations = metadata->find("annotations");
  return annotations != metadata->end() && annotations->is_object() &&
         string_at(*annotations, kHistoryWantedAnnotation) == "true";
}

kube::Result<ContainerAggregates> decode_checkpoint_object(const nlohmann::json& object,
                                                           std::string_view scaler_uid,
                                                           const AggregateOptions& options) {
  if (!object.is_object()) return field_error("checkpoint", "must be an object");
  bool owned = false;
  auto metadata = object.find("metadata");
  if (metadata != object.end() && metadata->is_object()) {
    auto refs = metadata->find("ownerReferences");
    if (refs != metadata->end() && refs->is_array()) {
      for (const auto& ref : *refs) {
        if (string_at(ref, "kind") == "VerticalScaler" && string_at(ref, "uid") == scaler_uid) {
          owned = true;
        }
      }
    }
  }
  if (!owned) {
    return field_error("metadata.ownerReferences",
                       "no VerticalScaler owner with uid " + std::string(scaler_uid));
  }
  auto spec = member(object, "checkpoint", "spec");
  if (!spec.ok()) return kube::fail(spec.error());
  return decode_checkpoint(**spec, options);
}

}  // namespace vscaler::recommender

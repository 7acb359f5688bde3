// Checkpoint codec: exact round trip (the restored recommendation equals the original, the sample
// count continues), the owner check, and malformed checkpoints as errors naming the field.
#include "recommender/checkpoint.h"

#include <doctest/doctest.h>

#include "recommender/oom_dedup.h"
#include "recommender/recommendation.h"

using namespace vscaler::recommender;
using nlohmann::json;
using std::chrono::hours;
using std::chrono::minutes;

namespace {
const TimePoint kT0 = from_millis(1'764'547'200'123);  // 2025-12-01T00:00:00.123Z
constexpr double kMi = 1024.0 * 1024.0;

ContainerAggregates history(const AggregateOptions& options) {
  ContainerAggregates aggregates;
  for (int m = 0; m < 3 * 24 * 60; m += 3) {
    for (const char* pod : {"uid-1", "uid-2"}) {
      double wave = (m % 97) / 97.0;
      (void)aggregates["app"].add_sample(options, pod_key(pod),
                                         {kT0 + minutes(m), 0.1 + wave, (300 + 200 * wave) * kMi});
      (void)aggregates["sidecar"].add_sample(options, pod_key(pod),
                                             {kT0 + minutes(m), 0.01, 30 * kMi});
    }
  }
  REQUIRE(aggregates["app"].record_oom(options, pod_key("uid-1"), kT0 + hours(70), 256 * kMi).ok());
  return aggregates;
}

ContainerRecommendation recommend_for(const ContainerAggregates& aggregates, const char* name,
                                      const AggregateOptions& options) {
  return recommend(name, estimate(aggregates.at(name), options, RecommendationOptions{}, 2), {});
}
}  // namespace

TEST_CASE("a checkpoint round trip restores the same state and the same recommendation") {
  AggregateOptions options;
  options.memory_aggregation_interval = hours(6);
  auto original = history(options);
  json spec = encode_checkpoint(original);
  // Through text, as it travels to and from the API server.
  auto restored = decode_checkpoint(json::parse(spec.dump()), options);
  REQUIRE_MESSAGE(restored.ok(), restored.error());
  REQUIRE(restored->size() == 2);
  for (const char* name : {"app", "sidecar"}) {
    CHECK(restored->at(name).state() == original.at(name).state());
    CHECK(recommend_for(*restored, name, options) == recommend_for(original, name, options));
  }
  CHECK(spec["containers"][0]["name"] == "app");
  CHECK(spec["containers"][0]["firstSampleStart"] == "2025-12-01T00:00:00.123Z");
  CHECK(spec["containers"][0]["totalSamplesCount"] == 2 * 3 * 24 * 20);
  // The sample count continues after a restore.
  auto& app = restored->at("app");
  CHECK(app.add_sample(options, pod_key("uid-1"), {kT0 + hours(73), 0.2, 300 * kMi}) ==
        SampleOutcome::kAdded);
  CHECK(app.state().total_samples_count == 2 * 3 * 24 * 20 + 1);
}

TEST_CASE("checkpoint objects are owned by their scaler; another owner's is refused") {
  AggregateOptions options;
  auto original = history(options);
  json object = checkpoint_object("shop", "web", "scaler-uid-1", original);
  CHECK(object["kind"] == "VerticalScalerCheckpoint");
  CHECK(object["metadata"]["name"] == "web");
  CHECK(object["metadata"]["ownerReferences"][0]["uid"] == "scaler-uid-1");
  CHECK_FALSE(object["metadata"]["ownerReferences"][0].contains("blockOwnerDeletion"));
  auto mine = decode_checkpoint_object(object, "scaler-uid-1", options);
  REQUIRE(mine.ok());
  CHECK(mine->at("app").state() == original.at("app").state());
  auto other = decode_checkpoint_object(object, "scaler-uid-2", options);
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().find("ownerReferences") != std::string::npos);
  object["metadata"]["ownerReferences"][0]["uid"] = 42;  // wrong type: an error, not a throw
  CHECK_FALSE(decode_checkpoint_object(object, "scaler-uid-1", options).ok());
}

TEST_CASE("a malformed checkpoint is an error naming the field, never an exception") {
  AggregateOptions options;
  const json good = encode_checkpoint(history(options));
  struct Case {
    const char* pointer;
    json value;
    const char* expected;
  };
  const Case cases[] = {
      {"/version", 2, "spec.version"},
      {"/containers", json::object(), "spec.containers: must be an array"},
      {"/containers/0/name", "", "spec.containers[0].name"},
      {"/containers/1/name", "app", "spec.containers[1].name: \"app\" appears twice"},
      {"/containers/0/cpu/totalWeight", "many", "spec.containers[0].cpu.totalWeight"},
      {"/containers/0/cpu/totalWeight", -1, "spec.containers[0].cpu.totalWeight"},
      {"/containers/0/cpu/referenceTimestamp", "yesterday",
       "spec.containers[0].cpu.referenceTimestamp"},
      {"/containers/0/memory/buckets", json::array(), "spec.containers[0].memory.buckets"},
      {"/containers/0/memory/buckets/x7", 1.0, "spec.containers[0].memory.buckets.\"x7\""},
      {"/containers/0/memory/buckets/500", 1.0, "500 is outside"},
      {"/containers/0/memory/buckets/3", "heavy", "spec.containers[0].memory.buckets.\"3\""},
      {"/containers/1/totalSamplesCount", -5, "spec.containers[1].totalSamplesCount"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.pointer);
    json broken = good;
    broken[json::json_pointer(c.pointer)] = c.value;
    auto decoded = decode_checkpoint(broken, options);
    REQUIRE_FALSE(decoded.ok());
    CHECK_MESSAGE(decoded.error().find(c.expected) != std::string::npos, decoded.error());
  }
  json missing = good;
  missing["containers"][0].erase("lastSampleStart");
  auto decoded = decode_checkpoint(missing, options);
  REQUIRE_FALSE(decoded.ok());
  CHECK(decoded.error() == "spec.containers[0].lastSampleStart: is required");
  CHECK_FALSE(decode_checkpoint(json("not an object"), options).ok());
  CHECK_FALSE(decode_checkpoint(json::array({1, 2}), options).ok());
}

TEST_CASE("a checkpoint of an older version, with its single memory window, is read") {
  // Before memory windows were per pod, a checkpoint held the container's one window; it is
  // ignored now (windows open anew, as after a VPA restart). What we write keeps an empty window
  // so that an older replica in a rolling upgrade still reads it.
  AggregateOptions options;
  auto original = history(options);
  json written = encode_checkpoint(original);
  const json& window = written["containers"][0]["memoryWindow"];
  CHECK(window["end"] == "1970-01-01T00:00:00Z");
  CHECK(window["peak"] == 0);
  CHECK(window["oomPeak"] == 0);
  CHECK(window["lastSampleStart"] == "1970-01-01T00:00:00Z");
  json old = written;
  old["containers"][0]["memoryWindow"] = {{"end", "2026-11-30T00:00:00Z"},
                                          {"peak", 419430400.0},
                                          {"oomPeak", 0},
                                          {"lastSampleStart", "2026-11-29T23:59:00Z"}};
  auto from_old = decode_checkpoint(old, options);
  REQUIRE(from_old.ok());
  CHECK(from_old->at("app").state() == original.at("app").state());
  json none = written;
  none["containers"][0].erase("memoryWindow");
  auto from_none = decode_checkpoint(none, options);
  REQUIRE(from_none.ok());
  CHECK(from_none->at("app").state() == original.at("app").state());
}

TEST_CASE("each OOM kill is counted once, keyed by pod uid, container and restartCount") {
  OomDedup dedup(3);
  CHECK(dedup.first_time("uid-1", "app", 1));
  CHECK_FALSE(dedup.first_time("uid-1", "app", 1));
  CHECK(dedup.first_time("uid-1", "app", 2));
  CHECK(dedup.first_time("uid-1", "sidecar", 2));
  CHECK(dedup.size() == 3);
  CHECK(dedup.first_time("uid-2", "app", 1));  // evicts the oldest
  CHECK(dedup.size() == 3);
  CHECK(dedup.first_time("uid-1", "app", 1));  // forgotten, counted again
  CHECK_FALSE(dedup.first_time("uid-2", "app", 1));
  // Once full, the oldest goes first: (app, 2) went above; now (sidecar, 2), then (uid-2, app, 1).
  CHECK(dedup.first_time("uid-1", "app", 2));
  CHECK(dedup.first_time("uid-1", "sidecar", 2));
  CHECK(dedup.size() == 3);
  CHECK_FALSE(dedup.first_time("uid-1", "app", 1));
  CHECK(dedup.first_time("uid-2", "app", 1));  // evicted by (sidecar, 2)
}

TEST_CASE("an OomDedup moved before any kill still counts kills") {
  OomDedup dedup;
  OomDedup moved(std::move(dedup));
  CHECK(moved.size() == 0);
  CHECK(moved.first_time("uid-1", "app", 1));
  CHECK(moved.size() == 1);
}

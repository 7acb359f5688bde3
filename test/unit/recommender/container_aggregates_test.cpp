// ContainerAggregates: the std::map interface the recommender uses, over a sorted vector: order by
// name whatever the insertion order, operator[] creating an empty aggregate, at() throwing,
// emplace refusing a duplicate, memory_bytes counting what it holds.
#include "recommender/container_aggregates.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

using namespace vscaler::recommender;

namespace {
const TimePoint kT0 = from_millis(1'764'547'200'000);  // 2025-12-01T00:00:00Z
std::vector<std::string> names(const ContainerAggregates& aggregates) {
  std::vector<std::string> out;
  for (const auto& [name, aggregate] : aggregates) out.push_back(name);
  return out;
}
}  // namespace

TEST_CASE("entries sorted by name; operator[] creates, at() and find() look up") {
  AggregateOptions options;
  ContainerAggregates aggregates;
  CHECK(aggregates.empty());
  CHECK(aggregates.find("app") == nullptr);
  CHECK_THROWS_AS((void)aggregates.at("app"), std::out_of_range);
  for (const char* name : {"worker", "app", "sidecar", "a-very-long-container-name"}) {
    CHECK(aggregates[name].empty());
  }
  CHECK(names(aggregates) ==
        std::vector<std::string>{"a-very-long-container-name", "app", "sidecar", "worker"});
  REQUIRE(aggregates["app"].add_sample(options, pod_key("p1"), {kT0, 0.3, 1e8}) ==
          SampleOutcome::kAdded);
  CHECK(aggregates.size() == 4);  // operator[] of an existing name creates nothing
  CHECK(aggregates.at("app").state().total_samples_count == 1);
  CHECK(aggregates.count("app") == 1);
  CHECK(aggregates.contains("sidecar"));
  CHECK_FALSE(aggregates.contains("ap"));

  CHECK_FALSE(aggregates.emplace("app", ContainerAggregate()));  // kept: one sample
  CHECK(aggregates.at("app").state().total_samples_count == 1);
  CHECK(aggregates.emplace("b", ContainerAggregate()));
  CHECK(names(aggregates) ==
        std::vector<std::string>{"a-very-long-container-name", "app", "b", "sidecar", "worker"});
}

TEST_CASE(
    "memory_bytes: the entries, their aggregates and long names, nothing spare after a trim") {
  AggregateOptions options;
  ContainerAggregates aggregates;
  const std::size_t empty = aggregates.memory_bytes();
  CHECK(empty == sizeof(ContainerAggregates));
  (void)aggregates["app"].add_sample(options, pod_key("p1"), {kT0, 0.3, 1e8});
  (void)aggregates["a-very-long-container-name"];
  aggregates.shrink_to_fit();
  const std::size_t expected =
      sizeof(ContainerAggregates) +
      2 * (sizeof(ContainerAggregates::value_type) - sizeof(ContainerAggregate)) +
      aggregates.at("app").memory_bytes() +
      aggregates.at("a-very-long-container-name").memory_bytes() +
      std::string("a-very-long-container-name").size() + 1;
  CHECK(aggregates.memory_bytes() >= expected);
  CHECK(aggregates.memory_bytes() <= expected + 16);  // the long name's capacity may round up
}

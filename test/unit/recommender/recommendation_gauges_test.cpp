// RecommendationGauges renders exactly what a generic metrics::GaugeFamily with the same series
// rendered (the loop's former storage): same lines, same order, same values; a set replaces a
// scaler's rows, an empty set or remove() drops them; the cost per container stays small.
#include "recommender/recommendation_gauges.h"

#include <doctest/doctest.h>
#include <malloc.h>

#include <array>
#include <string>
#include <vector>

#include "metrics/registry.h"

using namespace vscaler;
using namespace vscaler::recommender;

namespace {

constexpr std::array<const char*, 4> kBounds = {"target", "lowerBound", "upperBound",
                                                "uncappedTarget"};

ContainerRecommendation rec(const std::string& name, const std::string& cpu,
                            const std::string& memory) {
  ContainerRecommendation r;
  r.container_name = name;
  auto q = [](const std::string& text) { return kube::Quantity::parse(text).value(); };
  r.target = {{kCpu, q(cpu)}, {kMemory, q(memory)}};
  r.lower_bound = {{kCpu, q("25m")}};  // no memory: that series is absent
  r.upper_bound = {{kCpu, q("4")}, {kMemory, q("8Gi")}};
  r.uncapped_target = {{kMemory, q(memory)}};
  return r;
}

// What the loop did before: one generic child per (container, resource, bound) present.
void set_generic(metrics::GaugeFamily& family, std::string_view ns, std::string_view name,
                 const std::vector<ContainerRecommendation>& recs) {
  for (const auto& r : recs) {
    const ResourceMap* maps[] = {&r.target, &r.lower_bound, &r.upper_bound, &r.uncapped_target};
    for (std::size_t b = 0; b < 4; ++b) {
      for (const char* resource : {kCpu, kMemory}) {
        if (const auto* value = find(*maps[b], resource)) {
          family.with({ns, name, r.container_name, resource, kBounds[b]}).set(base_units(*value));
        }
      }
    }
  }
}

void remove_generic(metrics::GaugeFamily& family, std::string_view ns, std::string_view name,
                    const std::vector<std::string>& containers) {
  for (const auto& c : containers) {
    for (const char* bound : kBounds) {
      for (const char* resource : {kCpu, kMemory}) family.remove({ns, name, c, resource, bound});
    }
  }
}

}  // namespace

TEST_CASE("rendered exactly as the generic gauge family, sorted by label values") {
  metrics::Registry generic_registry;
  auto& generic = generic_registry.gauge(
      "vscaler_recommendation",
      "The recommender's current recommendation (cpu in cores, memory in bytes)",
      {"namespace", "verticalscaler", "container", "resource", "bound"});
  metrics::Registry table_registry;
  auto& table = table_registry.custom<RecommendationGauges>();
  CHECK(table_registry.render().empty());  // no series: no header either, as the generic one

  // Namespaces where one is a prefix of another ("a" < "a-b", while "a-b/x" < "a/x"), names
  // and containers out of order, a label value that needs escaping.
  const std::vector<std::pair<std::string, std::string>> scalers = {
      {"a-b", "web"}, {"a", "web"}, {"a", "api"}, {"shop", "we\"b"}, {"a", "api-2"}};
  int n = 0;
  for (const auto& [ns, name] : scalers) {
    std::vector<ContainerRecommendation> recs = {
        rec("sidecar", std::to_string(10 + n) + "m", "64Mi"),
        rec("app", std::to_string(300 + n) + "m", std::to_string(400 + n) + "Mi")};
    set_generic(generic, ns, name, recs);
    table.set(ns, name, recs);
    ++n;
  }
  CHECK(table.series() == 5 * 2 * 6);
  CHECK(table_registry.render() == generic_registry.render());
  CHECK(table_registry.render().find(
            "vscaler_recommendation{namespace=\"a\",verticalscaler=\"api\",container=\"app\","
            "resource=\"cpu\",bound=\"target\"} 0.302\n") != std::string::npos);

  // A new set replaces the scaler's rows: a container gone loses its series.
  remove_generic(generic, "a", "web", {"sidecar"});
  set_generic(generic, "a", "web", {rec("app", "1", "1Gi")});
  table.set("a", "web", {rec("app", "1", "1Gi")});
  CHECK(table_registry.render() == generic_registry.render());

  // An empty set and remove() drop every series of the scaler, and only those.
  remove_generic(generic, "a-b", "web", {"app", "sidecar"});
  table.set("a-b", "web", {});
  remove_generic(generic, "shop", "we\"b", {"app", "sidecar"});
  table.remove("shop", "we\"b");
  table.remove("nowhere", "none");
  CHECK(table_registry.render() == generic_registry.render());
  CHECK(table.series() == 2 * 2 * 6 + 6);
}

TEST_CASE("registered once per registry; another family of that name is refused") {
  metrics::Registry registry;
  auto& first = registry.custom<RecommendationGauges>();
  CHECK(&registry.custom<RecommendationGauges>() == &first);
  CHECK_THROWS_AS(registry.gauge("vscaler_recommendation", "x",
                                 {"namespace", "verticalscaler", "container", "resource", "bound"}),
                  std::invalid_argument);
  metrics::Registry other;
  (void)other.gauge("vscaler_recommendation", "x", {"namespace"});
  CHECK_THROWS_AS(other.custom<RecommendationGauges>(), std::invalid_argument);
}

TEST_CASE("20,000 containers of recommendations cost a small fraction of generic children") {
  metrics::Registry registry;
  auto& table = registry.custom<RecommendationGauges>();
  const std::vector<ContainerRecommendation> recs = {rec("app", "300m", "400Mi"),
                                                     rec("sidecar", "10m", "64Mi")};
  const auto before = mallinfo2().uordblks;
  for (int s = 0; s < 10'000; ++s) {
    table.set("bench-recmem-" + std::to_string(s % 100), "bench-recmem-" + std::to_string(s), recs);
  }
  const double per_container = double(mallinfo2().uordblks - before) / 20'000;
  MESSAGE("heap bytes per container: " << per_container);
  // The generic family spent ~290 bytes per series, 6 series here: ~1,700 per container.
  CHECK(per_container < 250);
}

// Exponential bucketing and the sparse decaying histogram: VPA's layout, percentile semantics,
// half-life decay, reference shifts, subtraction, restore validation and the memory budget.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

#include "recommender/decaying_histogram.h"
#include "recommender/histogram_options.h"

using namespace vscaler::recommender;
using std::chrono::hours;
using std::chrono::minutes;

namespace {
const TimePoint kT0 = from_millis(1'764'547'200'000);  // 2025-12-01T00:00:00Z
HistogramConfig cpu_config(Duration half_life = hours(24)) {
  return {&ExponentialHistogramOptions::cpu(), half_life};
}
}  // namespace

TEST_CASE("VPA's CPU and memory layouts: 176 buckets, 5 % growth from 0.01 core / 1e7 bytes") {
  const auto& cpu = ExponentialHistogramOptions::cpu();
  const auto& memory = ExponentialHistogramOptions::memory();
  CHECK(cpu.num_buckets() == 176);
  CHECK(memory.num_buckets() == 176);
  CHECK(cpu.bucket_start(0) == 0.0);
  CHECK(cpu.bucket_start(1) == doctest::Approx(0.01));
  CHECK(cpu.bucket_start(2) == doctest::Approx(0.01 + 0.0105));
  CHECK(memory.bucket_start(1) == doctest::Approx(1e7));
  for (int b = 2; b < cpu.num_buckets(); ++b) {
    double width = cpu.bucket_start(b) - cpu.bucket_start(b - 1);
    double previous = cpu.bucket_start(b - 1) - (b >= 2 ? cpu.bucket_start(b - 2) : 0);
    CHECK(width / previous == doctest::Approx(1.05));
  }
  // The last (open-ended) bucket starts at or just above the maximum, as in VPA.
  CHECK(cpu.bucket_start(cpu.num_buckets() - 2) < 1000.0);
  CHECK(cpu.bucket_start(cpu.num_buckets() - 1) >= 1000.0);
}

TEST_CASE("find_bucket is exact at bucket starts and clamps at both ends") {
  const auto& cpu = ExponentialHistogramOptions::cpu();
  CHECK(cpu.find_bucket(0) == 0);
  CHECK(cpu.find_bucket(0.0099) == 0);
  CHECK(cpu.find_bucket(-5) == 0);
  CHECK(cpu.find_bucket(1e9) == cpu.num_buckets() - 1);
  for (int b = 1; b < cpu.num_buckets(); ++b) {
    CHECK(cpu.find_bucket(cpu.bucket_start(b)) == b);
    CHECK(cpu.find_bucket(std::nextafter(cpu.bucket_start(b), 0.0)) == b - 1);
  }
}

TEST_CASE("options reject nonsense parameters, naming them") {
  auto bad_ratio = ExponentialHistogramOptions::create(1000, 0.01, 1.0, 1e-4);
  REQUIRE_FALSE(bad_ratio.ok());
  CHECK(bad_ratio.error().find("ratio") != std::string::npos);
  auto bad_first = ExponentialHistogramOptions::create(1000, 0, 1.05, 1e-4);
  REQUIRE_FALSE(bad_first.ok());
  CHECK(bad_first.error().find("first_bucket_size") != std::string::npos);
  // Bucket indices are stored in one byte: a layout of more than 256 buckets is refused.
  auto too_fine = ExponentialHistogramOptions::create(1000, 0.01, 1.01, 1e-4);
  REQUIRE_FALSE(too_fine.ok());
  CHECK(too_fine.error().find("at most 256") != std::string::npos);
  CHECK(ExponentialHistogramOptions::create(1000, 0.01, 1.05, 1e-4).ok());
}

TEST_CASE("percentile returns the end of the bucket where the cumulative weight reaches it") {
  auto config = cpu_config();
  DecayingHistogram h;
  CHECK(h.percentile(config, 0.9) == 0.0);  // empty
  // 0.3 cores: the bucket [start(b), start(b+1)) holding it; percentile = start(b+1).
  const auto& cpu = ExponentialHistogramOptions::cpu();
  for (int i = 0; i < 10; ++i) h.add_sample(config, 0.3, 1.0, kT0);
  int b = cpu.find_bucket(0.3);
  CHECK(h.percentile(config, 0.5) == cpu.bucket_start(b + 1));
  CHECK(h.percentile(config, 0.9) == cpu.bucket_start(b + 1));
  CHECK(h.percentile(config, 0.9) >= 0.3);
  CHECK(h.percentile(config, 0.9) <= 0.3 * 1.05 + 1e-12);
  CHECK(h.buckets().size() == 1);
  CHECK(h.total_weight() == doctest::Approx(10.0));
}

TEST_CASE("the 90th percentile of a known mixture") {
  // 80 samples at 0.1 core, 15 at 0.5, 5 at 2.0 (equal weights, same time): the cumulative
  // weight reaches 90 % in the 0.5 bucket, 95 % still there, 96 % in the 2.0 bucket, 50 % at 0.1.
  auto config = cpu_config();
  const auto& cpu = ExponentialHistogramOptions::cpu();
  DecayingHistogram h;
  for (int i = 0; i < 80; ++i) h.add_sample(config, 0.1, 1.0, kT0);
  for (int i = 0; i < 15; ++i) h.add_sample(config, 0.5, 1.0, kT0);
  for (int i = 0; i < 5; ++i) h.add_sample(config, 2.0, 1.0, kT0);
  CHECK(h.percentile(config, 0.5) == cpu.bucket_start(cpu.find_bucket(0.1) + 1));
  CHECK(h.percentile(config, 0.9) == cpu.bucket_start(cpu.find_bucket(0.5) + 1));
  CHECK(h.percentile(config, 0.95) == cpu.bucket_start(cpu.find_bucket(0.5) + 1));
  CHECK(h.percentile(config, 0.96) == cpu.bucket_start(cpu.find_bucket(2.0) + 1));
  CHECK(h.percentile(config, 1.0) == cpu.bucket_start(cpu.find_bucket(2.0) + 1));
  CHECK(h.buckets().size() == 3);
}

TEST_CASE("one half-life halves a sample's weight relative to a new one") {
  auto config = cpu_config(hours(1));
  DecayingHistogram h;
  h.add_sample(config, 0.1, 1.0, kT0);
  h.add_sample(config, 1.0, 1.0, kT0 + hours(1));
  REQUIRE(h.buckets().size() == 2);
  CHECK(double(h.buckets()[1].weight) / double(h.buckets()[0].weight) == doctest::Approx(2.0));
  // Hence: 1 old sample at 0.1 and 1 new at 1.0 -> the new one is 2/3 of the weight, so the
  // median is in the 1.0 bucket; with two old samples at 0.1 it is exactly half.
  CHECK(h.percentile(config, 0.5) > 1.0);
  h.add_sample(config, 0.1, 1.0, kT0);
  CHECK(h.percentile(config, 0.5) < 0.111);  // the end of 0.1's bucket, [0.0955, 0.1103)
  CHECK(h.percentile(config, 0.51) > 1.0);
}

TEST_CASE("the reference moves by whole half-lives; percentiles and ratios stay the same") {
  auto config = cpu_config(minutes(1));
  DecayingHistogram h;
  h.add_sample(config, 0.2, 1.0, kT0);
  const TimePoint first_reference = h.reference();
  // 15 half-lives later: still within the exponent limit, no shift.
  h.add_sample(config, 0.4, 1.0, kT0 + minutes(15));
  CHECK(h.reference() == first_reference);
  CHECK(double(h.buckets()[1].weight) / double(h.buckets()[0].weight) == doctest::Approx(32768.0));
  // Past 20 half-lives: the reference moves to the new sample and weights are renormalised by
  // 2^-25; the 25-half-lives-old sample falls under epsilon (1e-4) and is dropped, as in VPA.
  h.add_sample(config, 0.4, 1.0, kT0 + minutes(25));
  CHECK(h.reference() == kT0 + minutes(25));
  REQUIRE(h.buckets().size() == 1);
  CHECK(double(h.buckets()[0].weight) == doctest::Approx(1.0 + std::ldexp(1.0, -10)));
  CHECK(h.total_weight() == doctest::Approx(1.0 + std::ldexp(1.0, -10)));
  // A month at one sample a minute with a one-minute half-life never overflows.
  for (int i = 0; i < 30 * 24 * 60; ++i) h.add_sample(config, 0.4, 1000.0, kT0 + minutes(26 + i));
  CHECK(std::isfinite(h.total_weight()));
  CHECK(h.total_weight() < 1e12);
  CHECK(h.buckets().size() == 1);
}

TEST_CASE("subtracting a sample removes exactly what was added") {
  auto config = cpu_config();
  DecayingHistogram h;
  h.add_sample(config, 0.1, 1.0, kT0);
  h.add_sample(config, 0.5, 2.0, kT0 + hours(3));
  h.subtract_sample(config, 0.5, 2.0, kT0 + hours(3));
  REQUIRE(h.buckets().size() == 1);
  CHECK(h.total_weight() == doctest::Approx(double(h.buckets()[0].weight)));
  h.subtract_sample(config, 0.1, 1.0, kT0);
  CHECK(h.empty());
  CHECK(h.total_weight() == 0.0);
}

TEST_CASE("restore validates the checkpointed buckets") {
  auto config = cpu_config();
  auto ok = DecayingHistogram::restore(config, kT0, 3.0, {{12, 2.0f}, {3, 1.0f}});
  REQUIRE(ok.ok());
  CHECK(ok->buckets()[0].index == 3);  // sorted
  auto outside = DecayingHistogram::restore(config, kT0, 1.0, {{176, 1.0f}});
  REQUIRE_FALSE(outside.ok());
  CHECK(outside.error().find("176") != std::string::npos);
  auto twice = DecayingHistogram::restore(config, kT0, 1.0, {{4, 1.0f}, {4, 1.0f}});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.error().find("twice") != std::string::npos);
  auto negative = DecayingHistogram::restore(config, kT0, 1.0, {{4, -1.0f}});
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.error().find("weight") != std::string::npos);
}

TEST_CASE("add_tail_of adds only the buckets above the highest, at the weight they had") {
  const HistogramConfig config = cpu_config();
  const auto& layout = *config.options;
  DecayingHistogram mine;
  mine.add_sample(config, 1.0, 1.0, kT0);
  DecayingHistogram other;
  other.add_sample(config, 0.5, 3.0, kT0 - hours(24));  // below: mine has it covered
  other.add_sample(config, 1.0, 3.0, kT0 - hours(24));  // the same bucket as mine's: not added
  other.add_sample(config, 2.0, 1.0, kT0 - hours(24));  // above: added, half a sample of now
  CHECK(mine.add_tail_of(config, other) == 1);
  const auto buckets = mine.buckets();
  REQUIRE(buckets.size() == 2);
  CHECK(buckets[0].index == layout.find_bucket(1.0));
  CHECK(buckets[1].index == layout.find_bucket(2.0));
  // Relative to one another as they were added: the tail's sample is a day older.
  CHECK(buckets[1].weight / buckets[0].weight == doctest::Approx(0.5));
  CHECK(mine.total_weight() == doctest::Approx(1.5 * buckets[0].weight));
  CHECK(mine.percentile(config, 1.0) == doctest::Approx(layout.bucket_start(buckets[1].index + 1)));
  // Nothing above: nothing added; into an empty histogram: all of it, at its reference.
  CHECK(mine.add_tail_of(config, other) == 0);
  DecayingHistogram empty;
  CHECK(empty.add_tail_of(config, other) == 3);
  CHECK(empty.percentile(config, 0.5) == other.percentile(config, 0.5));
  CHECK(empty.total_weight() == doctest::Approx(other.total_weight()));
}

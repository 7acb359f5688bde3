// Metrics: counters, gauges and histograms with labels, rendered in the Prometheus text exposition
// format (version 0.0.4) for /metrics. Built for hot paths: a metric resolved once (a Counter&,
// Gauge& or Histogram& taken from its family) is updated with a few relaxed atomic operations — no
// lock, no allocation. Resolving labels takes only the family's own reader lock and allocates
// nothing once the child exists; registering a family is a startup-time operation.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vscaler::metrics {

/// A value that only goes up (requests served, items enqueued). Rendered as a Prometheus counter.
class Counter {
 public:
  /// Adds `amount`; negative or NaN amounts are ignored, because a counter that goes down reads
  /// as a process restart to Prometheus' rate().
  void inc(double amount = 1.0) noexcept;
  /// The current total.
  double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// A value that goes up and down (queue depth, a certificate's expiry time).
class Gauge {
 public:
  /// Replaces the value.
  void set(double value) noexcept { value_.store(value, std::memory_order_relaxed); }
  /// Adds `amount` (may be negative).
  void add(double amount) noexcept { value_.fetch_add(amount, std::memory_order_relaxed); }
  /// Adds one; the usual pairing with dec() around work in flight.
  void inc() noexcept { add(1.0); }
  /// Subtracts one.
  void dec() noexcept { add(-1.0); }
  /// The current value.
  double value() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// A distribution of observations (latencies) in fixed buckets, with their sum and count.
class Histogram {
 public:
  /// `bounds` are the buckets' inclusive upper bounds, strictly increasing and finite; the +Inf
  /// bucket is implicit. The bounds are shared with the owning family and must outlive this.
  explicit Histogram(std::span<const double> bounds);

  /// Records one observation: one relaxed increment of its bucket plus an atomic add to the sum.
  void observe(double value) noexcept;

  /// A consistent-enough copy for rendering: `cumulative[i]` counts observations <= bound i, the
  /// last entry (the +Inf bucket) equals `count`.
  struct Snapshot {
    std::vector<std::uint64_t> cumulative;
    double sum = 0.0;
    std::uint64_t count = 0;
  };
  /// Reads every bucket once; observations racing with it land in this or the next snapshot.
  Snapshot snapshot() const;

  /// The buckets' upper bounds, without +Inf.
  std::span<const double> bounds() const { return bounds_; }

 private:
  std::span<const double> bounds_;
  // One slot per bound plus the +Inf bucket, each counting only its own range (made cumulative
  // when rendered, so an observation touches a single slot).
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

/// The kind of a family, as written on its # TYPE line.
enum class Type { kCounter, kGauge, kHistogram };

/// What all families share: name, help, label names; rendering of every child.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  Type type() const { return type_; }

  /// Appends this family in the text format: # HELP, # TYPE, then one line per sample, children
  /// sorted by label values so the output is stable. A labelled family without children renders
  /// nothing (as Prometheus' Go client does).
  virtual void render(std::string& out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, std::vector<std::string> label_names, Type type);
  /// Appends the family's # HELP and # TYPE lines (for render()).
  void write_header(std::string& out) const;
  /// Appends one sample line `name{label="value",...} value` with these label values (in
  /// label-name order), escaped as the text format requires (for render()).
  void write_sample(std::string& out, std::span<const std::string_view> values, double value) const;
  /// Checks the number of label values against the label names; throws std::invalid_argument.
  void check_arity(std::size_t count) const;

 private:
  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
  Type type_;
};

namespace detail {
/// Hashes and compares label-value tuples, stored (vector<string>) or looked up (span of views),
/// so that a lookup builds no key and allocates nothing.
struct LabelsHash {
  using is_transparent = void;
  std::size_t operator()(std::span<const std::string_view> values) const noexcept;
  std::size_t operator()(const std::vector<std::string>& values) const noexcept;
};
struct LabelsEqual {
  using is_transparent = void;
  bool operator()(const std::vector<std::string>& a, const std::vector<std::string>& b) const {
    return a == b;
  }
  bool operator()(std::span<const std::string_view> a, const std::vector<std::string>& b) const;
  bool operator()(const std::vector<std::string>& a, std::span<const std::string_view> b) const {
    return (*this)(b, a);
  }
};
}  // namespace detail

/// A metric name with its label names; children (one per distinct tuple of label values) are
/// created on first use and live as long as the registry (unless removed), so references to them
/// stay valid.
template <typename Metric>
class Family final : public FamilyBase {
 public:
  /// The child for these label values (in label-name order), created on first use. Throws
  /// std::invalid_argument when the count differs from the label names (a programming error).
  /// Label values must come from a small fixed set — never from request contents.
  Metric& with(std::span<const std::string_view> values);
  Metric& with(std::initializer_list<std::string_view> values) {
    return with(std::span<const std::string_view>(values.begin(), values.size()));
  }
  /// Removes the child for these label values (a series whose object is gone, such as the
  /// recommendation gauges of a deleted scaler); true when it existed. References to that child
  /// become invalid: remove only children that are resolved with with() at each use.
  bool remove(std::span<const std::string_view> values);
  bool remove(std::initializer_list<std::string_view> values) {
    return remove(std::span<const std::string_view>(values.begin(), values.size()));
  }
  /// The only child of a family without labels.
  Metric& get() { return with(std::span<const std::string_view>()); }

  void render(std::string& out) const override;

  /// Histogram families only: the bucket bounds every child uses.
  std::span<const double> bounds() const { return bounds_; }

 private:
  friend class Registry;
  Family(std::string name, std::string help, std::vector<std::string> label_names, Type type,
         std::vector<double> bounds = {});

  std::unique_ptr<Metric> make() const;

  std::vector<double> bounds_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::vector<std::string>, std::unique_ptr<Metric>, detail::LabelsHash,
                     detail::LabelsEqual>
      children_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

/// controller-runtime's latency buckets extended below 5 ms, because an admission answer takes
/// well under a millisecond and the default buckets would put every request in the first one.
std::vector<double> latency_buckets();
/// `count` bounds start, start*factor, start*factor^2, ... (Prometheus' ExponentialBuckets).
std::vector<double> exponential_buckets(double start, double factor, int count);

/// A set of families rendered together. Registration is idempotent: asking again for a name with
/// the same type, label names (and buckets) returns the existing family, so components can
/// register what they use without coordinating; a conflicting registration or an invalid name
/// throws std::invalid_argument (a programming error, found at startup).
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  CounterFamily& counter(const std::string& name, const std::string& help,
                         std::vector<std::string> label_names = {});
  GaugeFamily& gauge(const std::string& name, const std::string& help,
                     std::vector<std::string> label_names = {});
  /// `bounds` must be strictly increasing and finite; "le" is reserved and cannot be a label.
  HistogramFamily& histogram(const std::string& name, const std::string& help,
                             std::vector<std::string> label_names,
                             std::vector<double> bounds = latency_buckets());

  /// Registers a family that stores and renders its own series (a FamilyBase subclass built
  /// from `args`: for series that a generic family would store too expensively, such as a
  /// table of gauges per object). Idempotent like the others: a family of that name and class
  /// already registered is returned (the new one is discarded); another class of that name, an
  /// invalid name or label name throws std::invalid_argument.
  template <typename F, typename... Args>
  F& custom(Args&&... args) {
    FamilyBase& family = add_family(std::make_unique<F>(std::forward<Args>(args)...));
    auto* typed = dynamic_cast<F*>(&family);
    if (typed == nullptr) {
      throw std::invalid_argument("metric " + family.name() +
                                  " is already registered as another family");
    }
    return *typed;
  }

  /// The whole registry in the Prometheus text format, families sorted by name.
  std::string render() const;

 private:
  template <typename Metric>
  Family<Metric>& add(const std::string& name, const std::string& help,
                      std::vector<std::string> label_names, Type type, std::vector<double> bounds);
  FamilyBase& add_family(std::unique_ptr<FamilyBase> family);

  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<FamilyBase>, std::less<>> families_;
};

/// The process-wide registry that /metrics serves; libraries register into it by default.
Registry& default_registry();

/// The Content-Type of render()'s output.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

/// Formats a sample value as Prometheus expects: shortest round-trip decimal, "+Inf", "-Inf",
/// "NaN".
std::string format_value(double value);

}  // namespace vscaler::metrics

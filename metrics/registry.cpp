#include "metrics/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <utility>

namespace vscaler::metrics {
namespace {

bool valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

bool valid_label_name(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

// HELP text escapes backslash and newline; label values also escape the double quote.
void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '"':
        if (quote) {
          out += "\\\"";
          break;
        }
        [[fallthrough]];
      default:
        out += c;
    }
  }
}

// Appends {name="value",...} plus an optional extra label (histograms' "le"); nothing when
// there are no labels at all.
template <typename Values>
void append_labels(std::string& out, const std::vector<std::string>& names, const Values& values,
                   std::string_view extra_name = {}, std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    append_escaped(out, values[i], true);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

std::string_view type_name(Type type) {
  switch (type) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void append_header(std::string& out, const FamilyBase& family) {
  out += "# HELP ";
  out += family.name();
  out += ' ';
  append_escaped(out, family.help(), false);
  out += "\n# TYPE ";
  out += family.name();
  out += ' ';
  out += type_name(family.type());
  out += '\n';
}

void append_sample(std::string& out, std::string_view name, std::string_view suffix,
                   const std::vector<std::string>& label_names,
                   const std::vector<std::string>& values, double value,
                   std::string_view extra_name = {}, std::string_view extra_value = {}) {
  out += name;
  out += suffix;
  append_labels(out, label_names, values, extra_name, extra_value);
  out += ' ';
  out += format_value(value);
  out += '\n';
}

// Mixes one string into a running hash (boost::hash_combine's constant), with the length so
// that ("ab","c") and ("a","bc") differ.
std::size_t combine(std::size_t seed, std::string_view value) {
  std::size_t h = std::hash<std::string_view>{}(value) ^ (value.size() * 0x9e3779b97f4a7c15ULL);
  return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

}  // namespace

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (ec != std::errc()) return "NaN";  // cannot happen with 32 bytes; keeps the output valid
  return std::string(buffer, end);
}

void Counter::inc(double amount) noexcept {
  if (!(amount > 0.0)) return;  // also rejects NaN
  value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds), counts_(new std::atomic<std::uint64_t>[bounds.size() + 1]) {
  for (std::size_t i = 0; i <= bounds.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double value) noexcept {
  std::size_t index = bounds_.size();  // +Inf, also for NaN
  if (!std::isnan(value)) {
    index = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                     bounds_.begin());
  }
  counts_[index].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot snap;
  snap.cumulative.resize(bounds_.size() + 1);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    snap.cumulative[i] = running;
  }
  snap.count = running;
  snap.sum = sum_.load(std::memory_order_relaxed);
  return snap;
}

FamilyBase::FamilyBase(std::string name, std::string help, std::vector<std::string> label_names,
                       Type type)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      type_(type) {}

void FamilyBase::write_header(std::string& out) const {
  append_header(out, *this);
}

void FamilyBase::write_sample(std::string& out, std::span<const std::string_view> values,
                              double value) const {
  check_arity(values.size());
  out += name_;
  append_labels(out, label_names_, values);
  out += ' ';
  out += format_value(value);
  out += '\n';
}

void FamilyBase::check_arity(std::size_t count) const {
  if (count != label_names_.size()) {
    throw std::invalid_argument("metric " + name_ + " has " + std::to_string(label_names_.size()) +
                                " labels, got " + std::to_string(count) + " values");
  }
}

namespace detail {

std::size_t LabelsHash::operator()(std::span<const std::string_view> values) const noexcept {
  std::size_t seed = values.size();
  for (auto value : values) seed = combine(seed, value);
  return seed;
}

std::size_t LabelsHash::operator()(const std::vector<std::string>& values) const noexcept {
  std::size_t seed = values.size();
  for (const auto& value : values) seed = combine(seed, value);
  return seed;
}

bool LabelsEqual::operator()(std::span<const std::string_view> a,
                             const std::vector<std::string>& b) const {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace detail

template <typename Metric>
Family<Metric>::Family(std::string name, std::string help, std::vector<std::string> label_names,
                       Type type, std::vector<double> bounds)
    : FamilyBase(std::move(name), std::move(help), std::move(label_names), type),
      bounds_(std::move(bounds)) {
  // A family without labels has exactly one child, present from the start so that it renders
  // (as 0) before its first update.
  if (this->label_names().empty()) {
    children_.emplace(std::vector<std::string>{}, make());
  }
}

template <typename Metric>
std::unique_ptr<Metric> Family<Metric>::make() const {
  if constexpr (std::is_same_v<Metric, Histogram>) {
    return std::make_unique<Histogram>(std::span<const double>(bounds_));
  } else {
    return std::make_unique<Metric>();
  }
}

template <typename Metric>
Metric& Family<Metric>::with(std::span<const std::string_view> values) {
  check_arity(values.size());
  {
    std::shared_lock lock(mutex_);
    auto found = children_.find(values);
    if (found != children_.end()) return *found->second;
  }
  std::unique_lock lock(mutex_);
  auto found = children_.find(values);
  if (found != children_.end()) return *found->second;
  std::vector<std::string> key(values.begin(), values.end());
  auto [inserted, ok] = children_.emplace(std::move(key), make());
  return *inserted->second;
}

template <typename Metric>
bool Family<Metric>::remove(std::span<const std::string_view> values) {
  check_arity(values.size());
  std::unique_lock lock(mutex_);
  auto found = children_.find(values);
  if (found == children_.end()) return false;
  children_.erase(found);
  return true;
}

template <typename Metric>
void Family<Metric>::render(std::string& out) const {
  std::vector<std::pair<const std::vector<std::string>*, const Metric*>> children;
  // Held while rendering: remove() may erase a child, so the pointers are only valid under it.
  std::shared_lock lock(mutex_);
  children.reserve(children_.size());
  for (const auto& [values, metric] : children_) children.emplace_back(&values, metric.get());
  if (children.empty()) return;
  std::sort(children.begin(), children.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  append_header(out, *this);
  for (const auto& [values, metric] : children) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      auto snap = metric->snapshot();
      for (std::size_t i = 0; i < bounds_.size(); ++i) {
        append_sample(out, name(), "_bucket", label_names(), *values,
                      static_cast<double>(snap.cumulative[i]), "le", format_value(bounds_[i]));
      }
      append_sample(out, name(), "_bucket", label_names(), *values, static_cast<double>(snap.count),
                    "le", "+Inf");
      append_sample(out, name(), "_sum", label_names(), *values, snap.sum);
      append_sample(out, name(), "_count", label_names(), *values, static_cast<double>(snap.count));
    } else {
      append_sample(out, name(), "", label_names(), *values, metric->value());
    }
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

std::vector<double> latency_buckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) {
    throw std::invalid_argument("exponential_buckets needs start > 0, factor > 1, count >= 1");
  }
  std::vector<double> bounds;
  bounds.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    bounds.push_back(start);
    start *= factor;
  }
  return bounds;
}

template <typename Metric>
Family<Metric>& Registry::add(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names, Type type,
                              std::vector<double> bounds) {
  if (!valid_metric_name(name)) throw std::invalid_argument("invalid metric name: " + name);
  for (const auto& label : label_names) {
    if (!valid_label_name(label) || (type == Type::kHistogram && label == "le")) {
      throw std::invalid_argument("invalid label name " + label + " for metric " + name);
    }
  }
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      throw std::invalid_argument("histogram " + name +
                                  " needs strictly increasing finite bucket bounds");
    }
  }
  std::lock_guard lock(mutex_);
  auto found = families_.find(name);
  if (found != families_.end()) {
    auto* existing = dynamic_cast<Family<Metric>*>(found->second.get());
    if (existing == nullptr || existing->type() != type || existing->label_names() != label_names ||
        (type == Type::kHistogram &&
         !std::equal(bounds.begin(), bounds.end(), existing->bounds().begin(),
                     existing->bounds().end()))) {
      throw std::invalid_argument("metric " + name +
                                  " is already registered with another type, labels or buckets");
    }
    return *existing;
  }
  auto* family = new Family<Metric>(name, help, std::move(label_names), type, std::move(bounds));
  families_.emplace(name, std::unique_ptr<FamilyBase>(family));
  return *family;
}

FamilyBase& Registry::add_family(std::unique_ptr<FamilyBase> family) {
  const std::string& name = family->name();
  if (!valid_metric_name(name)) throw std::invalid_argument("invalid metric name: " + name);
  for (const auto& label : family->label_names()) {
    if (!valid_label_name(label) || (family->type() == Type::kHistogram && label == "le")) {
      throw std::invalid_argument("invalid label name " + label + " for metric " + name);
    }
  }
  std::lock_guard lock(mutex_);
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) it->second = std::move(family);
  return *it->second;
}

CounterFamily& Registry::counter(const std::string& name, const std::string& help,
                                 std::vector<std::string> label_names) {
  return add<Counter>(name, help, std::move(label_names), Type::kCounter, {});
}

GaugeFamily& Registry::gauge(const std::string& name, const std::string& help,
                             std::vector<std::string> label_names) {
  return add<Gauge>(name, help, std::move(label_names), Type::kGauge, {});
}

HistogramFamily& Registry::histogram(const std::string& name, const std::string& help,
                                     std::vector<std::string> label_names,
                                     std::vector<double> bounds) {
  if (bounds.empty()) throw std::invalid_argument("histogram " + name + " needs buckets");
  return add<Histogram>(name, help, std::move(label_names), Type::kHistogram, std::move(bounds));
}

std::string Registry::render() const {
  std::vector<const FamilyBase*> families;
  {
    std::lock_guard lock(mutex_);
    families.reserve(families_.size());
    for (const auto& [name, family] : families_) families.push_back(family.get());
  }
  // Families are never removed; the map is ordered by name already.
  std::string out;
  out.reserve(4096);
  for (const auto* family : families) family->render(out);
  return out;
}

Registry& default_registry() {
  static Registry registry;
  return registry;
}

}  // namespace vscaler::metrics

#include "controller/expectations.h"

#include <algorithm>

#include "controller/work_queue.h"

namespace vscaler::controller {

void Expectation::merge(const Expectation& newer) {
  min_generation_exclusive = std::max(min_generation_exclusive, newer.min_generation_exclusive);
  if (!newer.gone_uid.empty()) gone_uid = newer.gone_uid;
  must_exist = must_exist || newer.must_exist;
}

namespace {

// Whether `observed` shows everything `expected` asks for, or shows that it never will.
bool settled(const Expectation& expected, const Observed& observed) {
  if (!observed.exists || observed.deleting) {
    // Gone or going: a deletion is visible; an UPDATE of a vanished workload never will be. Only
    // a hinted CREATE is still to come (unless a deletion was hinted after it).
    return !expected.must_exist || !expected.gone_uid.empty();
  }
  bool generation_seen = expected.min_generation_exclusive == 0 ||
                         observed.generation > expected.min_generation_exclusive;
  bool uid_gone = expected.gone_uid.empty() || expected.gone_uid != observed.uid;
  return generation_seen && uid_gone;
}

}  // namespace

Expectations::Expectations(ExpectationsOptions options) : options_(std::move(options)) {
  if (!options_.now) options_.now = [] { return Clock::now(); };
  first_look_us_ = static_cast<double>(options_.first_look_initial.count());
}

void Expectations::expect(std::string_view key, const Expectation& expectation) {
  (void)expect_first_look(key, expectation);
}

std::chrono::microseconds Expectations::expect_first_look(std::string_view key,
                                                          const Expectation& expectation) {
  using std::chrono::microseconds;
  if (!expectation.any()) return microseconds::zero();
  Clock::time_point now = options_.now();
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  microseconds delay = microseconds::zero();
  if (it == entries_.end()) {
    it = entries_.emplace(std::string(key), Entry{{}, now, std::chrono::milliseconds(0), {}}).first;
    // Only an UPDATE's write is certainly still to come; a CREATE or DELETE is looked at once.
    if (expectation.min_generation_exclusive > 0 && options_.first_look_initial.count() > 0) {
      delay = microseconds(static_cast<int64_t>(first_look_us_));
      it->second.first_look = now + delay;
    }
  } else {
    it->second.first_look.reset();  // merged hints: a look's outcome says nothing clear
  }
  it->second.expected.merge(expectation);
  it->second.issued = std::max(it->second.issued, now);
  return delay;
}

std::chrono::microseconds Expectations::first_look_delay() const {
  std::lock_guard lock(mutex_);
  return std::chrono::microseconds(static_cast<int64_t>(first_look_us_));
}

void Expectations::learn_locked(bool in_time) {
  double step = static_cast<double>(options_.first_look_step.count());
  double q = std::clamp(options_.first_look_quantile, 0.5, 0.999);
  first_look_us_ += in_time ? -step * (1 - q) / q : step;
  first_look_us_ =
      std::clamp(first_look_us_, 0.0, static_cast<double>(options_.first_look_max.count()));
}

std::optional<std::chrono::milliseconds> Expectations::check(std::string_view key,
                                                             const Observed& observed) {
  Clock::time_point now = options_.now();
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  Entry& entry = it->second;
  // The delayed first look (not a reconcile that was already running when the hint came) teaches
  // the delay whether the write was stored by then.
  if (entry.first_look && now >= *entry.first_look) {
    learn_locked(settled(entry.expected, observed));
    entry.first_look.reset();
  }
  // A generation this far above the stored one is no write in flight but a forged review's
  // (QueueingHintSink drops it once a verify is known; before one only a look can tell). Merged
  // by max() it would hide a real hint's write for as long as hints come: expect the next
  // generation instead, which any real write brings.
  if (observed.exists &&
      entry.expected.min_generation_exclusive - observed.generation > kMaxGenerationLead) {
    entry.expected.min_generation_exclusive = observed.generation;
  }
  // The deadline counts from the newest hinted write: a write a later admission step rejected
  // never becomes visible, and the worker must stop looking.
  if (settled(entry.expected, observed) || now - entry.issued >= options_.deadline) {
    entries_.erase(it);
    return std::nullopt;
  }
  std::chrono::milliseconds delay = entry.next_delay;
  // At least 1 ms from the second re-check on, whatever the options say: doubling zero would
  // look again at once forever.
  entry.next_delay = delay.count() == 0
                         ? std::max(options_.recheck_initial, std::chrono::milliseconds(1))
                         : std::min(delay * 2, options_.recheck_max);
  return delay;
}

void Expectations::forget(std::string_view key) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it != entries_.end()) entries_.erase(it);
}

std::optional<Expectation> Expectations::pending(std::string_view key) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second.expected;
}

std::size_t Expectations::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

QueueingHintSink::QueueingHintSink(Expectations& expectations, WorkQueue& queue,
                                   UnclaimedCreates* unclaimed, const VerifiedState* verified,
                                   metrics::Counter* dropped)
    : expectations_(expectations),
      queue_(queue),
      unclaimed_(unclaimed),
      verified_(verified),
      dropped_(dropped) {}

void QueueingHintSink::unclaimed_create(std::string_view ns, std::string_view kind,
                                        std::string_view name) {
  if (unclaimed_ != nullptr) unclaimed_->record(UnclaimedCreates::key(ns, kind, name));
}

void QueueingHintSink::boosted_pod(std::string_view scaler_key) {
  const std::string key(scaler_key);
  if (on_boosted_pod_) on_boosted_pod_(key);
  queue_.add(key, Priority::kHigh);
}

void QueueingHintSink::hint(std::string_view scaler_key, const Expectation& expectation) {
  if (expectation.min_generation_exclusive > 0 && verified_ != nullptr) {
    auto last = verified_->get(std::string(scaler_key));
    if (last && last->found &&
        expectation.min_generation_exclusive - last->generation > kMaxGenerationLead) {
      if (dropped_ != nullptr) dropped_->inc();
      return;
    }
  }
  auto delay = expectations_.expect_first_look(scaler_key, expectation);
  if (delay.count() > 0) {
    queue_.add_after(scaler_key, delay, Priority::kHigh);
  } else {
    queue_.add(scaler_key, Priority::kHigh);
  }
}

}  // namespace vscaler::controller

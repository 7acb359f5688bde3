// WorkQueue: one mutex, intrusive FIFO lists per priority, a map of per-key entries whose nodes
// are recycled, and a heap of delayed adds that getters fire themselves (no timer thread): a
// blocked getter sleeps until the earliest timer, and a busy one fires due timers at its next
// get(), when it could take the key anyway.
#include "controller/work_queue.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vscaler::controller {
namespace {

// Enough recycled nodes for a resync burst of a few thousand keys without holding much memory
// (a node is a few hundred bytes).
constexpr size_t kMaxSpareNodes = 4096;
// add_after clamps absurd delays so that now + delay cannot overflow the clock.
constexpr std::chrono::nanoseconds kMaxDelay = std::chrono::hours(24 * 365);

QueueMetrics& no_metrics() {
  static QueueMetrics none;
  return none;
}

double seconds(WorkQueue::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

size_t index(Priority priority) {
  return static_cast<size_t>(priority);
}

// Orders timers_ as a min-heap: std::push_heap keeps the "largest" first, so "later" is less.
bool later(const auto& a, const auto& b) {
  return a.at != b.at ? a.at > b.at : a.seq > b.seq;
}

// Merges `hint` into `into`, stamping the issue time of a hint that asks for something but has
// none (callers need not know the clock).
void fold(Hint& into, const Hint& hint, WorkQueue::Clock::time_point now) {
  if (!hint.any()) return;
  into.merge(hint);
  if (hint.issued == WorkQueue::Clock::time_point{}) into.issued = std::max(into.issued, now);
}

}  // namespace

void Hint::merge(const Hint& newer) {
  min_generation_exclusive = std::max(min_generation_exclusive, newer.min_generation_exclusive);
  if (!newer.gone_uid.empty()) gone_uid = newer.gone_uid;
  must_exist = must_exist || newer.must_exist;
  issued = std::max(issued, newer.issued);
}

WorkQueue::WorkQueue(WorkQueueOptions options)
    : options_(std::move(options)),
      metrics_(options_.metrics ? options_.metrics.get() : &no_metrics()) {
  entries_.reserve(1024);
}

WorkQueue::~WorkQueue() {
  shutdown();
}

void WorkQueue::push_back(List& list, Entry* entry) {
  entry->next = nullptr;
  entry->prev = list.tail;
  if (list.tail) {
    list.tail->next = entry;
  } else {
    list.head = entry;
  }
  list.tail = entry;
  ++list.size;
}

void WorkQueue::unlink(List& list, Entry* entry) {
  if (entry->prev) {
    entry->prev->next = entry->next;
  } else {
    list.head = entry->next;
  }
  if (entry->next) {
    entry->next->prev = entry->prev;
  } else {
    list.tail = entry->prev;
  }
  entry->prev = entry->next = nullptr;
  --list.size;
}

WorkQueue::Entry* WorkQueue::find_locked(std::string_view key) {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

const WorkQueue::Entry* WorkQueue::find_locked(std::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

WorkQueue::Entry* WorkQueue::find_or_create_locked(std::string_view key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (spare_nodes_.empty()) {
      it = entries_.emplace(std::string(key), Entry{}).first;
    } else {
      Map::node_type node = std::move(spare_nodes_.back());
      spare_nodes_.pop_back();
      node.key().assign(key);  // reuses the string's buffer
      node.mapped() = Entry{};
      it = entries_.insert(std::move(node)).position;
    }
    it->second.key = &it->first;
  }
  return &it->second;
}

void WorkQueue::erase_if_idle_locked(Entry* entry) {
  if (entry->waiting || entry->processing || entry->dirty || entry->failures != 0 ||
      entry->delayed_until != Clock::time_point::max()) {
    return;
  }
  Map::node_type node = entries_.extract(entries_.find(*entry->key));
  if (spare_nodes_.size() < kMaxSpareNodes) spare_nodes_.push_back(std::move(node));
}

void WorkQueue::enqueue_locked(Entry* entry, Priority priority, const Hint& hint,
                               Clock::time_point now) {
  if (entry->waiting) {
    fold(entry->hint, hint, now);
    if (priority < entry->priority) {  // promotion: to the back of the higher list
      unlink(ready_[index(entry->priority)], entry);
      entry->priority = priority;
      push_back(ready_[index(priority)], entry);
    }
    return;
  }
  if (entry->processing) {
    if (entry->dirty) {
      entry->priority = std::min(entry->priority, priority);
    } else {
      entry->dirty = true;
      ++dirty_;
      entry->priority = priority;
      metrics_->on_add(priority);
    }
    fold(entry->hint, hint, now);
    return;
  }
  entry->waiting = true;
  entry->priority = priority;
  fold(entry->hint, hint, now);
  entry->added = now;
  push_back(ready_[index(priority)], entry);
  metrics_->on_add(priority);
  metrics_->on_depth(depth_locked());
  if (waiters_ > 0) ready_cv_.notify_one();
}

void WorkQueue::add(std::string_view key, Priority priority, const Hint& hint) {
  Clock::time_point now = Clock::now();
  std::lock_guard lock(mutex_);
  if (shutting_down_.load(std::memory_order_relaxed)) return;
  enqueue_locked(find_or_create_locked(key), priority, hint, now);
}

void WorkQueue::schedule_locked(Entry* entry, Clock::time_point now, std::chrono::nanoseconds delay,
                                Priority priority, const Hint& hint) {
  if (delay <= std::chrono::nanoseconds::zero()) {
    enqueue_locked(entry, priority, hint, now);
    return;
  }
  metrics_->on_retry();
  Clock::time_point at = now + std::min(delay, kMaxDelay);
  if (entry->delayed_until == Clock::time_point::max()) {
    entry->delayed_hint = Hint{};
    entry->delayed_priority = priority;
  } else {
    entry->delayed_priority = std::min(entry->delayed_priority, priority);
  }
  fold(entry->delayed_hint, hint, now);
  if (at >= entry->delayed_until) return;  // the pending, earlier timer will add it
  // An earlier deadline: a new timer; the old one becomes stale and is skipped when it pops.
  entry->delayed_until = at;
  entry->delay_seq = ++next_seq_;
  timers_.push_back(Timer{at, entry->delay_seq, *entry->key});
  std::push_heap(timers_.begin(), timers_.end(), later<Timer, Timer>);
  // Blocked getters sleep until the earliest timer at most; a new earliest one must reach them.
  if (waiters_ > 0 && timers_.front().seq == entry->delay_seq) ready_cv_.notify_all();
}

void WorkQueue::add_after(std::string_view key, std::chrono::nanoseconds delay, Priority priority,
                          const Hint& hint) {
  Clock::time_point now = Clock::now();
  std::lock_guard lock(mutex_);
  if (shutting_down_.load(std::memory_order_relaxed)) return;
  schedule_locked(find_or_create_locked(key), now, delay, priority, hint);
}

std::chrono::nanoseconds WorkQueue::backoff(uint32_t failures) const {
  // base * 2^failures in floating point, so that any exponent saturates at the cap.
  double delay = std::ldexp(static_cast<double>(options_.base_delay.count()),
                            static_cast<int>(std::min<uint32_t>(failures, 1024)));
  if (delay >= static_cast<double>(options_.max_delay.count())) return options_.max_delay;
  return std::chrono::nanoseconds(static_cast<int64_t>(delay));
}

void WorkQueue::add_rate_limited(std::string_view key, Priority priority, const Hint& hint,
                                 std::chrono::nanoseconds at_least) {
  Clock::time_point now = Clock::now();
  std::lock_guard lock(mutex_);
  if (shutting_down_.load(std::memory_order_relaxed)) return;
  Entry* entry = find_or_create_locked(key);
  std::chrono::nanoseconds delay = std::max(backoff(entry->failures), at_least);
  if (entry->failures < std::numeric_limits<uint32_t>::max()) ++entry->failures;
  schedule_locked(entry, now, delay, priority, hint);
}

void WorkQueue::forget(std::string_view key) {
  std::lock_guard lock(mutex_);
  Entry* entry = find_locked(key);
  if (!entry) return;
  entry->failures = 0;
  erase_if_idle_locked(entry);
}

uint32_t WorkQueue::num_requeues(std::string_view key) const {
  std::lock_guard lock(mutex_);
  const Entry* entry = find_locked(key);
  return entry ? entry->failures : 0;
}

std::chrono::nanoseconds WorkQueue::next_backoff(std::string_view key) const {
  std::lock_guard lock(mutex_);
  const Entry* entry = find_locked(key);
  return backoff(entry ? entry->failures : 0);
}

void WorkQueue::fire_due_timers_locked(Clock::time_point now) {
  while (!timers_.empty() && timers_.front().at <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), later<Timer, Timer>);
    Timer timer = std::move(timers_.back());
    timers_.pop_back();
    Entry* entry = find_locked(timer.key);
    if (!entry || entry->delay_seq != timer.seq ||
        entry->delayed_until == Clock::time_point::max()) {
      continue;  // superseded by an earlier timer, or dropped
    }
    entry->delayed_until = Clock::time_point::max();
    Hint hint = std::move(entry->delayed_hint);
    entry->delayed_hint = Hint{};
    // Time in queue counts from when the delay ended, not from when a getter noticed.
    enqueue_locked(entry, entry->delayed_priority, hint, timer.at);
  }
}

std::optional<WorkItem> WorkQueue::get() {
  return get_until(std::nullopt);
}

std::optional<WorkItem> WorkQueue::get_for(std::chrono::nanoseconds timeout) {
  return get_until(Clock::now() + std::min(timeout, kMaxDelay));
}

std::optional<WorkItem> WorkQueue::get_until(std::optional<Clock::time_point> deadline) {
  std::unique_lock lock(mutex_);
  for (;;) {
    Clock::time_point now{};
    bool have_now = false;
    if (!timers_.empty() || deadline) {
      now = Clock::now();
      have_now = true;
      fire_due_timers_locked(now);
    }
    List* list = ready_[0].head ? &ready_[0] : ready_[1].head ? &ready_[1] : nullptr;
    if (list) {
      Entry* entry = list->head;
      unlink(*list, entry);
      if (!have_now) now = Clock::now();
      entry->waiting = false;
      entry->processing = true;
      entry->started = now;
      std::optional<WorkItem> item(std::in_place, WorkItem{*entry->key, std::move(entry->hint),
                                                           entry->priority, entry->added});
      entry->hint = Hint{};
      size_t depth = depth_locked();
      metrics_->on_depth(depth);
      metrics_->on_queue_latency(seconds(now - entry->added));
      // Timers may have made several keys ready at once: pass the wake-up on.
      if (depth > 0 && waiters_ > 0) ready_cv_.notify_one();
      return item;
    }
    if (shutting_down_.load(std::memory_order_relaxed) && (!draining_ || dirty_ == 0)) {
      return std::nullopt;
    }
    if (deadline && now >= *deadline) return std::nullopt;
    std::optional<Clock::time_point> wake = deadline;
    if (!timers_.empty() && (!wake || timers_.front().at < *wake)) wake = timers_.front().at;
    ++waiters_;
    if (wake) {
      ready_cv_.wait_until(lock, *wake);
    } else {
      ready_cv_.wait(lock);
    }
    --waiters_;
  }
}

void WorkQueue::done(std::string_view key) {
  Clock::time_point now = Clock::now();
  std::lock_guard lock(mutex_);
  Entry* entry = find_locked(key);
  if (!entry || !entry->processing) return;  // not handed out: nothing to end
  entry->processing = false;
  metrics_->on_work_duration(seconds(now - entry->started));
  bool stopping = shutting_down_.load(std::memory_order_relaxed);
  if (entry->dirty) {
    entry->dirty = false;
    --dirty_;
    if (!stopping || draining_) {
      entry->waiting = true;
      entry->added = now;
      push_back(ready_[index(entry->priority)], entry);
      metrics_->on_depth(depth_locked());
      if (stopping) {
        ready_cv_.notify_all();  // drain: the others may exit once nothing else can come
      } else if (waiters_ > 0) {
        ready_cv_.notify_one();
      }
      return;
    }
    entry->hint = Hint{};
  }
  if (stopping && waiters_ > 0) ready_cv_.notify_all();
  erase_if_idle_locked(entry);
}

size_t WorkQueue::drop_timers_locked() {
  size_t dropped = 0;
  for (Timer& timer : timers_) {
    Entry* entry = find_locked(timer.key);
    if (!entry || entry->delay_seq != timer.seq ||
        entry->delayed_until == Clock::time_point::max()) {
      continue;
    }
    entry->delayed_until = Clock::time_point::max();
    entry->delayed_hint = Hint{};
    ++dropped;
    erase_if_idle_locked(entry);
  }
  timers_.clear();
  return dropped;
}

size_t WorkQueue::shutdown() {
  std::lock_guard lock(mutex_);
  if (shutting_down_.load(std::memory_order_relaxed) && !draining_) return 0;
  shutting_down_.store(true, std::memory_order_release);
  draining_ = false;
  size_t dropped = drop_timers_locked();
  for (List& list : ready_) {
    while (Entry* entry = list.head) {
      unlink(list, entry);
      entry->waiting = false;
      entry->hint = Hint{};
      ++dropped;
      erase_if_idle_locked(entry);
    }
  }
  metrics_->on_depth(0);
  ready_cv_.notify_all();
  return dropped;
}

void WorkQueue::shutdown_and_drain() {
  std::lock_guard lock(mutex_);
  if (shutting_down_.load(std::memory_order_relaxed)) return;
  shutting_down_.store(true, std::memory_order_release);
  draining_ = true;
  drop_timers_locked();
  ready_cv_.notify_all();
}

size_t WorkQueue::len() const {
  std::lock_guard lock(mutex_);
  return depth_locked();
}

}  // namespace vscaler::controller

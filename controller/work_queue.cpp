// WorkQueue: one mutex; an open-addressing table of recycled per-key entries (one hash per call,
// no allocation in steady state); intrusive FIFO lists per priority; and a heap of delayed adds
// that getters fire themselves (no timer thread): a blocked getter sleeps until the earliest timer,
// and a busy one fires due timers at its next get(), when it could take the key anyway. The clock
// is read only where a time is needed, and outside the lock where it can be: once per add, plus
// get/done when a metrics observer wants durations.
#include "controller/work_queue.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vscaler::controller {
namespace {

// Recycled entries kept: enough for a resync burst of a few thousand keys without pinning much
// memory (an entry is about 200 bytes plus its key).
constexpr size_t kMaxFreeEntries = 4096;
constexpr size_t kInitialSlots = 1024;
// add_after clamps absurd delays so that now + delay cannot overflow the clock.
constexpr std::chrono::nanoseconds kMaxDelay = std::chrono::hours(24 * 365);
constexpr WorkQueue::Clock::time_point kUnknown{};

double seconds(WorkQueue::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

size_t index(Priority priority) {
  return static_cast<size_t>(priority);
}

// Orders timers_ as a min-heap: std::push_heap keeps the "largest" first, so "later" is less.
template <typename T>
bool later(const T& a, const T& b) {
  return a.at != b.at ? a.at > b.at : a.seq > b.seq;
}

}  // namespace

WorkQueue::WorkQueue(WorkQueueOptions options)
    : options_(std::move(options)),
      metrics_(options_.metrics.get()),
      seed_(base::random_hash_seed()),
      entries_(kInitialSlots) {}

WorkQueue::~WorkQueue() {
  shutdown();
  entries_.for_each([](Entry* entry) { delete entry; });
  while (Entry* entry = free_) {
    free_ = entry->next;
    delete entry;
  }
}

uint64_t WorkQueue::hash(std::string_view key) const {
  return base::hash_finish(base::hash_bytes(seed_, key));
}

WorkQueue::Entry* WorkQueue::find_locked(std::string_view key, uint64_t h) const {
  return entries_.find(h, [key](const Entry& entry) { return entry.key == key; });
}

WorkQueue::Entry* WorkQueue::find_or_create_locked(std::string_view key, uint64_t h) {
  return entries_.find_or_insert(
      h, [key](const Entry& entry) { return entry.key == key; },
      [&] {
        Entry* entry = free_;
        if (entry) {
          free_ = entry->next;
          --free_count_;
          entry->next = nullptr;
        } else {
          entry = new Entry;
        }
        entry->key.assign(key);  // a recycled entry reuses its string's buffer
        entry->hash = h;
        return entry;
      });
}

void WorkQueue::erase_if_idle_locked(Entry* entry) {
  if (entry->waiting || entry->processing || entry->dirty || entry->failures != 0 ||
      entry->delayed_until != Clock::time_point::max()) {
    return;
  }
  entries_.erase(entry->hash, entry);
  entries_.shrink(kInitialSlots);  // the table of a past burst (a full resync) goes back
  if (free_count_ >= kMaxFreeEntries) {
    delete entry;
    return;
  }
  entry->delay_seq = 0;
  entry->not_before = {};
  entry->prev = nullptr;
  entry->next = free_;
  free_ = entry;
  ++free_count_;
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

void WorkQueue::enqueue_locked(Entry* entry, Priority priority, Clock::time_point now, Wake& wake) {
  if (entry->waiting) {
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
      if (metrics_) metrics_->on_add(priority);
    }
    return;
  }
  if (now == kUnknown) now = Clock::now();
  if (entry->not_before > now) {
    // Paused by a Retry-After: the add waits for it, its priority kept.
    schedule_locked(entry, now, entry->not_before - now, priority, wake);
    return;
  }
  entry->waiting = true;
  entry->priority = priority;
  entry->added = now;
  push_back(ready_[index(priority)], entry);
  if (metrics_) {
    metrics_->on_add(priority);
    metrics_->on_depth(depth_locked());
  }
  if (waiters_ > 0) raise(wake, Wake::kOne);
}

void WorkQueue::notify(Wake wake) {
  if (wake == Wake::kOne) {
    ready_cv_.notify_one();
  } else if (wake == Wake::kAll) {
    ready_cv_.notify_all();
  }
}

void WorkQueue::add(std::string_view key, Priority priority) {
  // Hash and clock before locking: the critical section is what workers contend on, and a clock
  // read costs about as much as the rest of it.
  uint64_t h = hash(key);
  Clock::time_point now = Clock::now();
  Wake wake = Wake::kNone;
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_.load(std::memory_order_relaxed)) return;
    enqueue_locked(find_or_create_locked(key, h), priority, now, wake);
  }
  notify(wake);
}

void WorkQueue::schedule_locked(Entry* entry, Clock::time_point now, std::chrono::nanoseconds delay,
                                Priority priority, Wake& wake) {
  if (delay <= std::chrono::nanoseconds::zero()) {
    enqueue_locked(entry, priority, now, wake);
    return;
  }
  if (metrics_) metrics_->on_retry();
  Clock::time_point at = now + std::min(delay, kMaxDelay);
  if (entry->delayed_until == Clock::time_point::max()) {
    entry->delayed_priority = priority;
  } else {
    entry->delayed_priority = std::min(entry->delayed_priority, priority);
  }
  if (at >= entry->delayed_until) return;  // the pending, earlier timer will add it
  // An earlier deadline: a new timer; the old one becomes stale and is skipped when it pops.
  entry->delayed_until = at;
  entry->delay_seq = ++next_seq_;
  timers_.push_back(Timer{at, entry->delay_seq, entry->key});
  std::push_heap(timers_.begin(), timers_.end(), later<Timer>);
  // Blocked getters sleep until the earliest timer at most; a new earliest one must reach them.
  if (waiters_ > 0 && timers_.front().seq == entry->delay_seq) raise(wake, Wake::kAll);
}

void WorkQueue::add_after(std::string_view key, std::chrono::nanoseconds delay, Priority priority) {
  Clock::time_point now = Clock::now();
  uint64_t h = hash(key);
  Wake wake = Wake::kNone;
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_.load(std::memory_order_relaxed)) return;
    schedule_locked(find_or_create_locked(key, h), now, delay, priority, wake);
  }
  notify(wake);
}

std::chrono::nanoseconds WorkQueue::backoff(uint32_t failures) const {
  // base * 2^failures in floating point, so that any exponent saturates at the cap.
  double delay = std::ldexp(static_cast<double>(options_.base_delay.count()),
                            static_cast<int>(std::min<uint32_t>(failures, 1024)));
  if (delay >= static_cast<double>(options_.max_delay.count())) return options_.max_delay;
  return std::chrono::nanoseconds(static_cast<int64_t>(delay));
}

void WorkQueue::add_rate_limited(std::string_view key, Priority priority,
                                 std::chrono::nanoseconds at_least) {
  Clock::time_point now = Clock::now();
  uint64_t h = hash(key);
  Wake wake = Wake::kNone;
  {
    std::lock_guard lock(mutex_);
    if (shutting_down_.load(std::memory_order_relaxed)) return;
    Entry* entry = find_or_create_locked(key, h);
    std::chrono::nanoseconds delay = std::max(backoff(entry->failures), at_least);
    if (entry->failures < std::numeric_limits<uint32_t>::max()) ++entry->failures;
    if (at_least > std::chrono::nanoseconds::zero()) {
      // The server asked for a pause (a 429's Retry-After): no add brings the key back sooner.
      entry->not_before = std::max(entry->not_before, now + std::min(delay, kMaxDelay));
    }
    schedule_locked(entry, now, delay, priority, wake);
  }
  notify(wake);
}

void WorkQueue::forget(std::string_view key) {
  uint64_t h = hash(key);
  std::lock_guard lock(mutex_);
  Entry* entry = find_locked(key, h);
  if (!entry) return;
  entry->failures = 0;
  entry->not_before = {};
  erase_if_idle_locked(entry);
}

uint32_t WorkQueue::num_requeues(std::string_view key) const {
  uint64_t h = hash(key);
  std::lock_guard lock(mutex_);
  const Entry* entry = find_locked(key, h);
  return entry ? entry->failures : 0;
}

std::chrono::nanoseconds WorkQueue::next_backoff(std::string_view key) const {
  uint64_t h = hash(key);
  std::lock_guard lock(mutex_);
  const Entry* entry = find_locked(key, h);
  return backoff(entry ? entry->failures : 0);
}

void WorkQueue::fire_due_timers_locked(Clock::time_point now, Wake& wake) {
  while (!timers_.empty() && timers_.front().at <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), later<Timer>);
    Timer timer = std::move(timers_.back());
    timers_.pop_back();
    Entry* entry = find_locked(timer.key, hash(timer.key));
    if (!entry || entry->delay_seq != timer.seq ||
        entry->delayed_until == Clock::time_point::max()) {
      continue;  // superseded by an earlier timer, or dropped
    }
    entry->delayed_until = Clock::time_point::max();
    // Time in queue counts from when the delay ended, not from when a getter noticed.
    enqueue_locked(entry, entry->delayed_priority, timer.at, wake);
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
    Clock::time_point now = kUnknown;
    if (!timers_.empty() || deadline) {
      now = Clock::now();
      Wake ignored = Wake::kNone;  // this getter takes the first key; see below for the others
      fire_due_timers_locked(now, ignored);
    }
    List* list = ready_[0].head ? &ready_[0] : ready_[1].head ? &ready_[1] : nullptr;
    if (list) {
      Entry* entry = list->head;
      unlink(*list, entry);
      entry->waiting = false;
      entry->processing = true;
      WorkItem item{{}, entry->priority, entry->added};
      size_t depth = depth_locked();
      if (metrics_) {
        if (now == kUnknown) now = Clock::now();
        entry->started = now;
        metrics_->on_depth(depth);
        metrics_->on_queue_latency(seconds(now - entry->added));
      }
      // Timers may have made several keys ready at once: pass the wake-up on.
      bool pass_on = depth > 0 && waiters_ > 0;
      lock.unlock();
      // The key is copied (an allocation) outside the lock: the entry stays this worker's until
      // it calls done(), and the key of a live entry never changes.
      item.key = entry->key;
      if (pass_on) ready_cv_.notify_one();
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
  uint64_t h = hash(key);
  Wake wake = Wake::kNone;
  {
    std::lock_guard lock(mutex_);
    done_locked(key, h, wake);
  }
  notify(wake);
}

void WorkQueue::done_locked(std::string_view key, uint64_t h, Wake& wake) {
  Entry* entry = find_locked(key, h);
  if (!entry || !entry->processing) return;  // not handed out: nothing to end
  entry->processing = false;
  Clock::time_point now = kUnknown;
  if (metrics_) {
    now = Clock::now();
    metrics_->on_work_duration(seconds(now - entry->started));
  }
  bool stopping = shutting_down_.load(std::memory_order_relaxed);
  // Draining getters wait while a requeue may come; once this one is settled they re-check.
  if (stopping && waiters_ > 0) raise(wake, Wake::kAll);
  if (entry->dirty) {
    entry->dirty = false;
    --dirty_;
    if (!stopping && entry->not_before != Clock::time_point{}) {
      if (now == kUnknown) now = Clock::now();
      if (entry->not_before > now) {
        // An add that came while this attempt ran, which was told to pause (Retry-After).
        schedule_locked(entry, now, entry->not_before - now, entry->priority, wake);
        return;
      }
    }
    if (!stopping || draining_) {
      entry->waiting = true;
      entry->added = now == kUnknown ? Clock::now() : now;
      push_back(ready_[index(entry->priority)], entry);
      if (metrics_) metrics_->on_depth(depth_locked());
      if (waiters_ > 0) raise(wake, Wake::kOne);
      return;
    }
  }
  erase_if_idle_locked(entry);
}

size_t WorkQueue::drop_timers_locked() {
  size_t dropped = 0;
  for (Timer& timer : timers_) {
    Entry* entry = find_locked(timer.key, hash(timer.key));
    if (!entry || entry->delay_seq != timer.seq ||
        entry->delayed_until == Clock::time_point::max()) {
      continue;
    }
    entry->delayed_until = Clock::time_point::max();
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
      ++dropped;
      erase_if_idle_locked(entry);
    }
  }
  if (metrics_) metrics_->on_depth(0);
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

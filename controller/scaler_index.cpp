// ScalerIndex: 64 shards of open-addressing tables for the readers, a table of Entries by scaler
// key for the (single) writer. A lookup is one hash of namespace, kind and name, one shard read
// lock, and usually one cache line of slots on a miss; std::unordered_map's node chains cost two
// or three cache misses instead. Targets and Entries are one allocation each, the strings inline.
#include "controller/scaler_index.h"

#include <cstring>
#include <new>
#include <utility>

#include "base/tsan.h"

namespace vscaler::controller {
namespace {

// Both headers are trivially destructible: a block is freed without running a destructor.
void* allocate_block(size_t header, size_t text) {
  return ::operator new(header + text);
}

}  // namespace

void ScalerIndex::BlockDelete::operator()(Entry* entry) const {
  ::operator delete(entry);
}

void ScalerIndex::BlockDelete::operator()(Target* target) const {
  ::operator delete(target);
}

ScalerIndex::EntryPtr ScalerIndex::make_entry(std::string_view scaler_key) {
  void* block = allocate_block(sizeof(Entry), scaler_key.size());
  EntryPtr entry(new (block) Entry{nullptr, nullptr, static_cast<uint32_t>(scaler_key.size())});
  std::memcpy(entry.get() + 1, scaler_key.data(), scaler_key.size());
  return entry;
}

ScalerIndex::TargetPtr ScalerIndex::make_target(std::string_view ns, std::string_view kind,
                                                std::string_view name) {
  void* block = allocate_block(sizeof(Target), ns.size() + kind.size() + name.size());
  TargetPtr target(new (block) Target{nullptr, 0, static_cast<uint32_t>(ns.size()),
                                      static_cast<uint32_t>(kind.size()),
                                      static_cast<uint32_t>(name.size())});
  char* text = reinterpret_cast<char*>(target.get() + 1);
  std::memcpy(text, ns.data(), ns.size());
  std::memcpy(text + ns.size(), kind.data(), kind.size());
  std::memcpy(text + ns.size() + kind.size(), name.data(), name.size());
  return target;
}

ScalerTarget ScalerIndex::target_value(const Target& target) {
  return ScalerTarget{std::string(target.ns()), std::string(target.kind()),
                      std::string(target.name())};
}

// Each part is compared on its own (with its length): "a"+"bc" is not "ab"+"c". Names with a '/'
// cannot exist in Kubernetes, but a mutating webhook sees objects before the API server
// validates them.
bool ScalerIndex::same_target(const Target& target, std::string_view ns, std::string_view kind,
                              std::string_view name) {
  return target.ns() == ns && target.kind() == kind && target.name() == name;
}

ScalerIndex::ScalerIndex() : seed_(base::random_hash_seed()) {}

ScalerIndex::~ScalerIndex() {
  base::mutex_destroyed(&writer_mutex_);
  for (Shard& shard : shards_) {
    base::mutex_destroyed(&shard.mutex);
    shard.targets.for_each([](Target* target) { BlockDelete{}(target); });
  }
  by_scaler_.for_each([](Entry* entry) { BlockDelete{}(entry); });
}

uint64_t ScalerIndex::hash(std::string_view ns, std::string_view kind,
                           std::string_view name) const {
  // Each part's length is mixed in, so "a"+"bc" and "ab"+"c" differ.
  return base::hash_finish(
      base::hash_bytes(base::hash_bytes(base::hash_bytes(seed_, ns), kind), name));
}

uint64_t ScalerIndex::key_hash(std::string_view scaler_key) const {
  return base::hash_finish(base::hash_bytes(~seed_, scaler_key));
}

ScalerIndex::Target* ScalerIndex::find_locked(const Shard& shard, uint64_t h, std::string_view ns,
                                              std::string_view kind, std::string_view name) {
  return shard.targets.find(
      h, [&](const Target& target) { return same_target(target, ns, kind, name); });
}

ScalerIndex::Entry* ScalerIndex::find_entry(uint64_t h, std::string_view scaler_key) const {
  return by_scaler_.find(h, [&](const Entry& entry) { return entry.key() == scaler_key; });
}

// Writers allocate before taking a shard's lock and free after releasing it, so readers of the
// shard wait for a few slot moves at most, never for the allocator.
void ScalerIndex::insert_locked(Entry* entry, std::string_view ns, std::string_view kind,
                                std::string_view name) {
  uint64_t h = hash(ns, kind, name);
  Shard& shard = shards_[h >> kShardShift];
  TargetPtr fresh = make_target(ns, kind, name);     // freed after the lock when unused
  std::vector<base::OpenTable<Target>::Slot> spare;  // the grown array in, the old one out
  {
    std::shared_lock lock(shard.mutex);  // only this writer changes the shard: sizing is stable
    if (shard.targets.full()) spare.resize(shard.targets.capacity() * 2);
  }
  std::unique_lock lock(shard.mutex);
  if (!spare.empty()) shard.targets.rehash(spare);
  // Never grows here: the table has room for one more.
  Target* found = shard.targets.find_or_insert(
      h, [&](const Target& t) { return same_target(t, ns, kind, name); },
      [&] { return fresh.release(); });
  entry->target = found;
  Entry** link = &found->scalers;
  while (*link && (*link)->key() < entry->key()) link = &(*link)->next;
  entry->next = *link;
  *link = entry;
  ++found->count;
}

// Unlinks `entry` from its target (and drops the target when it was its last scaler); the caller
// frees `entry` once no reader can reach it, which is after this returns.
void ScalerIndex::erase_locked(Entry* entry) {
  Target* target = entry->target;
  // The target's text is immutable and only this writer frees it: read it before the lock.
  uint64_t h = hash(target->ns(), target->kind(), target->name());
  Shard& shard = shards_[h >> kShardShift];
  TargetPtr gone;  // freed after the lock is released
  std::unique_lock lock(shard.mutex);
  Entry** link = &target->scalers;
  while (*link && *link != entry) link = &(*link)->next;
  if (*link == nullptr) return;
  *link = entry->next;
  if (--target->count > 0) return;
  shard.targets.erase(h, target);
  gone.reset(target);
}

std::optional<ScalerTarget> ScalerIndex::upsert(std::string_view scaler_key, std::string_view ns,
                                                std::string_view kind, std::string_view name) {
  std::lock_guard lock(writer_mutex_);
  uint64_t h = key_hash(scaler_key);
  Entry* old = find_entry(h, scaler_key);
  if (old && same_target(*old->target, ns, kind, name)) return std::nullopt;
  EntryPtr fresh = make_entry(scaler_key);
  // Insert into the new target before leaving the old one: a concurrent reader may see the
  // scaler under both workloads for an instant (an extra enqueue), never under neither.
  insert_locked(fresh.get(), ns, kind, name);
  if (!old) {
    by_scaler_.insert(h, fresh.release());
    size_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  ScalerTarget previous = target_value(*old->target);
  by_scaler_.erase(h, old);
  by_scaler_.insert(h, fresh.release());
  erase_locked(old);
  BlockDelete{}(old);  // unreachable by readers now
  return previous;
}

std::optional<ScalerTarget> ScalerIndex::remove(std::string_view scaler_key) {
  std::lock_guard lock(writer_mutex_);
  uint64_t h = key_hash(scaler_key);
  Entry* entry = find_entry(h, scaler_key);
  if (!entry) return std::nullopt;
  ScalerTarget old = target_value(*entry->target);
  by_scaler_.erase(h, entry);
  by_scaler_.shrink(kInitialSlots);
  erase_locked(entry);
  BlockDelete{}(entry);  // unreachable by readers now
  size_.fetch_sub(1, std::memory_order_relaxed);
  return old;
}

std::vector<std::string> ScalerIndex::lookup(std::string_view ns, std::string_view kind,
                                             std::string_view name) const {
  std::vector<std::string> keys;
  lookup(ns, kind, name, [&keys](std::string_view key) { keys.emplace_back(key); });
  return keys;
}

std::optional<ScalerTarget> ScalerIndex::target_of(std::string_view scaler_key) const {
  std::lock_guard lock(writer_mutex_);
  Entry* entry = find_entry(key_hash(scaler_key), scaler_key);
  if (!entry) return std::nullopt;
  return target_value(*entry->target);
}

}  // namespace vscaler::controller

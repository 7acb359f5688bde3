// OpenTable: insert, find and erase through collisions and the array's wrap-around, backward-shift
// deletion, growth and shrinking, and lookups by string_view that allocate nothing.
#include "base/open_table.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using vscaler::base::hash_bytes;
using vscaler::base::hash_finish;
using vscaler::base::OpenTable;

// Counts this thread's heap allocations, to prove a lookup makes none. Replacing the global
// operator new is allowed once per program; this test file is its own executable. Not inlined:
// GCC would then see operator delete given what malloc returned and warn of a mismatch.
namespace {
thread_local size_t g_allocations = 0;
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t size) {
  ++g_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace {

struct Item {
  std::string key;
  uint64_t hash;
};

// Items with chosen hashes, so a test decides which slots collide.
struct Items {
  std::vector<std::unique_ptr<Item>> owned;
  Item* make(std::string key, uint64_t hash) {
    owned.push_back(std::make_unique<Item>(Item{std::move(key), hash}));
    return owned.back().get();
  }
};

Item* find(const OpenTable<Item>& table, std::string_view key, uint64_t hash) {
  return table.find(hash, [key](const Item& item) { return item.key == key; });
}

}  // namespace

// An 8-slot table whose probe run wraps: a, b and c have home slot 6 and sit at 6, 7 and
// (wrapped) 0; d has home slot 0 and goes to 1.
struct WrappedRun {
  OpenTable<Item> table{8};
  Items items;
  Item* a = items.make("a", 6);
  Item* b = items.make("b", 14);
  Item* c = items.make("c", 22);
  Item* d = items.make("d", 8);
  WrappedRun() {
    for (Item* item : {a, b, c, d}) table.insert(item->hash, item);
  }
};

TEST_CASE_FIXTURE(WrappedRun,
                  "items whose probe runs collide and wrap around the end are all found") {
  CHECK(table.size() == 4);
  CHECK(table.capacity() == 8);
  CHECK(find(table, "a", 6) == a);
  CHECK(find(table, "b", 14) == b);
  CHECK(find(table, "c", 22) == c);
  CHECK(find(table, "d", 8) == d);
  CHECK(find(table, "e", 6) == nullptr);   // same hash as a, another key
  CHECK(find(table, "a", 14) == nullptr);  // a's key under b's hash
  CHECK(find(table, "x", 3) == nullptr);   // an empty home slot
}

TEST_CASE_FIXTURE(WrappedRun,
                  "erasing the head of a wrapped run shifts the rest back, all still found") {
  CHECK(table.erase(a->hash, a));
  CHECK(table.size() == 3);
  CHECK(find(table, "a", 6) == nullptr);
  CHECK(find(table, "b", 14) == b);
  CHECK(find(table, "c", 22) == c);
  CHECK(find(table, "d", 8) == d);
  // Erasing what is not there changes nothing.
  CHECK_FALSE(table.erase(a->hash, a));
  CHECK(table.size() == 3);
  // d moved to its home slot when a left; c's leaving must not lose it.
  CHECK(table.erase(c->hash, c));
  CHECK(find(table, "d", 8) == d);
  CHECK(find(table, "b", 14) == b);
  CHECK(table.erase(b->hash, b));
  CHECK(table.erase(d->hash, d));
  CHECK(table.size() == 0);
  size_t left = 0;
  table.for_each([&left](Item*) { ++left; });
  CHECK(left == 0);
}

TEST_CASE("random inserts and backward-shift erases keep every other key findable") {
  // Hashes from a small range in a 64-slot table: long runs, many of them wrapping.
  OpenTable<Item> table(64);
  Items items;
  std::mt19937_64 random(7);
  std::vector<Item*> live;
  std::set<Item*> erased;
  for (int round = 0; round < 2000; ++round) {
    bool insert = live.empty() || (table.size() < 30 && random() % 3 != 0);
    if (insert) {
      Item* item = items.make("k" + std::to_string(round), 56 + random() % 16);
      table.insert(item->hash, item);
      live.push_back(item);
    } else {
      size_t i = random() % live.size();
      REQUIRE(table.erase(live[i]->hash, live[i]));
      erased.insert(live[i]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    REQUIRE(table.size() == live.size());
    for (Item* item : live) REQUIRE(find(table, item->key, item->hash) == item);
  }
  for (Item* item : erased) CHECK(find(table, item->key, item->hash) == nullptr);
  CHECK(table.capacity() == 64);  // never more than half full: no growth
}

TEST_CASE("the table doubles before it would be more than half full") {
  OpenTable<Item> table(4);
  Items items;
  std::vector<Item*> all;
  for (int i = 0; i < 2; ++i) {
    all.push_back(items.make("k" + std::to_string(i), hash_finish(i)));
    table.insert(all.back()->hash, all.back());
  }
  CHECK(table.capacity() == 4);
  CHECK(table.full());
  all.push_back(items.make("k2", hash_finish(2)));
  table.insert(all.back()->hash, all.back());
  CHECK(table.capacity() == 8);
  for (int i = 3; i < 1000; ++i) {
    all.push_back(items.make("k" + std::to_string(i), hash_finish(i)));
    table.insert(all.back()->hash, all.back());
    REQUIRE(table.size() * 2 <= table.capacity());
  }
  CHECK(table.capacity() == 2048);
  for (Item* item : all) REQUIRE(find(table, item->key, item->hash) == item);
}

TEST_CASE("find_or_insert makes an item only when none matches, growing when full") {
  OpenTable<Item> table(4);
  Items items;
  int made = 0;
  auto get = [&](const std::string& key, uint64_t hash) {
    return table.find_or_insert(
        hash, [&key](const Item& item) { return item.key == key; },
        [&] {
          ++made;
          return items.make(key, hash);
        });
  };
  Item* a = get("a", 1);
  CHECK(made == 1);
  CHECK(get("a", 1) == a);
  CHECK(made == 1);
  Item* b = get("b", 1);  // same hash, another key: a second item in a's run
  CHECK(made == 2);
  CHECK(b != a);
  CHECK(table.capacity() == 4);
  Item* c = get("c", 2);  // the third item doubles the table first
  CHECK(table.capacity() == 8);
  CHECK(table.size() == 3);
  CHECK(find(table, "a", 1) == a);
  CHECK(find(table, "b", 1) == b);
  CHECK(find(table, "c", 2) == c);
}

TEST_CASE("rehash moves every item and hands the old array back") {
  OpenTable<Item> table(4);
  Items items;
  Item* a = items.make("a", 1);
  Item* b = items.make("b", 5);
  table.insert(a->hash, a);
  table.insert(b->hash, b);
  std::vector<OpenTable<Item>::Slot> storage(16);
  table.rehash(storage);
  CHECK(storage.size() == 4);  // the old array, for the caller to free
  CHECK(table.capacity() == 16);
  CHECK(find(table, "a", 1) == a);
  CHECK(find(table, "b", 5) == b);
}

TEST_CASE("a mostly empty table shrinks, never below its minimum") {
  OpenTable<Item> table(8);
  Items items;
  std::vector<Item*> all;
  for (int i = 0; i < 64; ++i) {
    all.push_back(items.make("k" + std::to_string(i), hash_finish(i)));
    table.insert(all.back()->hash, all.back());
  }
  CHECK(table.capacity() == 128);
  table.shrink(8);
  CHECK(table.capacity() == 128);  // half full: stays
  for (int i = 0; i < 60; ++i) {
    table.erase(all[i]->hash, all[i]);
    table.shrink(8);
  }
  CHECK(table.size() == 4);
  CHECK(table.capacity() == 32);  // halved each time it was under 1/8 full
  for (int i = 60; i < 64; ++i) CHECK(find(table, all[i]->key, all[i]->hash) == all[i]);
  for (int i = 60; i < 64; ++i) table.erase(all[i]->hash, all[i]);
  table.shrink(8);
  CHECK(table.capacity() == 16);
  table.shrink(8);
  table.shrink(8);
  CHECK(table.capacity() == 8);  // never below the minimum
}

TEST_CASE("a lookup by string_view parts allocates nothing") {
  OpenTable<Item> table(16);
  Items items;
  uint64_t seed = 42;
  auto hash = [seed](std::string_view ns, std::string_view name) {
    return hash_finish(hash_bytes(hash_bytes(seed, ns), name));
  };
  Item* web = items.make("shop/web", hash("shop", "web"));
  table.insert(web->hash, web);
  std::string_view ns = "shop";
  std::string_view name = "web";
  auto match = [&](const Item& item) {
    return item.key.size() == ns.size() + 1 + name.size() && item.key.starts_with(ns) &&
           item.key.ends_with(name);
  };
  size_t before = g_allocations;
  Item* hit = table.find(hash(ns, name), match);
  name = "api";
  Item* miss = table.find(hash(ns, name), match);
  CHECK(g_allocations == before);
  CHECK(hit == web);
  CHECK(miss == nullptr);
}

TEST_CASE("the hash keeps the boundary between parts and depends on the seed") {
  auto two = [](uint64_t seed, std::string_view a, std::string_view b) {
    return hash_finish(hash_bytes(hash_bytes(seed, a), b));
  };
  CHECK(two(1, "a", "bc") != two(1, "ab", "c"));
  CHECK(two(1, "", "abc") != two(1, "abc", ""));
  CHECK(two(1, "namespace-1", "deployment-12") == two(1, "namespace-1", "deployment-12"));
  CHECK(two(1, "namespace-1", "deployment-12") != two(2, "namespace-1", "deployment-12"));
  // Keys of 8+ bytes that differ only in their last byte.
  CHECK(hash_finish(hash_bytes(1, "bench-ns-0/scaler-0000001")) !=
        hash_finish(hash_bytes(1, "bench-ns-0/scaler-0000002")));
}

// FlatMap: a sorted-vector map with the part of std::map's interface vscaler uses, for maps of a
// few entries that live long (a scaler's requests/limits: "cpu" and "memory"). One allocation of
// exactly the entries instead of a tree node each: a two-entry std::map<std::string, Quantity>
// costs two ~112-byte nodes and a 48-byte header, this one 128-byte block and a 24-byte header
// (issue 17: 10,000 scalers held ~4 MB of map nodes).
//
// Differences from std::map a caller must know:
//   - value_type is std::pair<K, V> (not pair<const K, V>): do not change a key through an
//     iterator, that breaks the order;
//   - inserting or erasing invalidates every iterator and reference (a vector's rules);
//   - inserts are O(n) and the storage grows to exactly what is needed, one entry at a time
//     for small maps: meant for maps of a handful of entries, not for large ones.
// Lookups take any key type the comparator accepts when it is transparent (std::less<>).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <utility>
#include <vector>

namespace vscaler::base {

/// A map from K to V kept as a vector of pairs sorted by Compare (see the file comment).
template <typename K, typename V, typename Compare = std::less<>>
class FlatMap {
 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<K, V>;
  using size_type = std::size_t;
  using key_compare = Compare;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  FlatMap() = default;
  /// From pairs in any order; of equal keys the first wins (as std::map's range constructor).
  FlatMap(std::initializer_list<value_type> items) : FlatMap(items.begin(), items.end()) {}
  /// From a range of pairs (or anything a value_type is constructible from), in any order; of
  /// equal keys the first wins.
  template <typename InputIt>
  FlatMap(InputIt first, InputIt last) {
    for (; first != last; ++first) {
      value_type item(*first);
      emplace(std::move(item.first), std::move(item.second));
    }
  }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  const_iterator cbegin() const { return items_.cbegin(); }
  const_iterator cend() const { return items_.cend(); }

  bool empty() const { return items_.empty(); }
  size_type size() const { return items_.size(); }
  void clear() { items_.clear(); }
  /// Entries the storage has room for without growing (tests check that small maps waste none).
  size_type capacity() const { return items_.capacity(); }

  /// The first entry whose key is not less than `key`.
  template <typename Q>
  iterator lower_bound(const Q& key) {
    return std::lower_bound(items_.begin(), items_.end(), key, KeyLess{});
  }
  /// See lower_bound above.
  template <typename Q>
  const_iterator lower_bound(const Q& key) const {
    return std::lower_bound(items_.begin(), items_.end(), key, KeyLess{});
  }
  /// The entry with `key`, or end().
  template <typename Q>
  iterator find(const Q& key) {
    auto it = lower_bound(key);
    return it != items_.end() && !Compare{}(key, it->first) ? it : items_.end();
  }
  /// See find above.
  template <typename Q>
  const_iterator find(const Q& key) const {
    auto it = lower_bound(key);
    return it != items_.end() && !Compare{}(key, it->first) ? it : items_.end();
  }
  /// True when an entry has `key`.
  template <typename Q>
  bool contains(const Q& key) const {
    return find(key) != items_.end();
  }
  /// 1 when an entry has `key`, else 0.
  template <typename Q>
  size_type count(const Q& key) const {
    return contains(key) ? 1 : 0;
  }
  /// The value of `key`; throws std::out_of_range when absent (as std::map::at).
  template <typename Q>
  V& at(const Q& key) {
    auto it = find(key);
    if (it == items_.end()) throw std::out_of_range("FlatMap::at: no such key");
    return it->second;
  }
  /// See at above.
  template <typename Q>
  const V& at(const Q& key) const {
    auto it = find(key);
    if (it == items_.end()) throw std::out_of_range("FlatMap::at: no such key");
    return it->second;
  }

  /// Adds key -> V(args...) unless `key` is present; returns the entry and whether it was added.
  template <typename Q, typename... Args>
  std::pair<iterator, bool> try_emplace(Q&& key, Args&&... args) {
    auto it = lower_bound(key);
    if (it != items_.end() && !Compare{}(key, it->first)) return {it, false};
    return {insert_at(it, K(std::forward<Q>(key)), V(std::forward<Args>(args)...)), true};
  }
  /// As std::map::emplace(key, value): adds unless `key` is present.
  template <typename Q, typename... Args>
  std::pair<iterator, bool> emplace(Q&& key, Args&&... args) {
    return try_emplace(std::forward<Q>(key), std::forward<Args>(args)...);
  }
  /// Adds `item` unless its key is present.
  std::pair<iterator, bool> insert(value_type item) {
    return try_emplace(std::move(item.first), std::move(item.second));
  }
  /// Sets key -> value, adding or replacing; returns the entry and whether it was added.
  template <typename Q, typename M>
  std::pair<iterator, bool> insert_or_assign(Q&& key, M&& value) {
    auto it = lower_bound(key);
    if (it != items_.end() && !Compare{}(key, it->first)) {
      it->second = std::forward<M>(value);
      return {it, false};
    }
    return {insert_at(it, K(std::forward<Q>(key)), V(std::forward<M>(value))), true};
  }
  /// The value of `key`, added value-initialised when absent.
  V& operator[](const K& key) { return try_emplace(key).first->second; }
  /// See operator[] above.
  V& operator[](K&& key) { return try_emplace(std::move(key)).first->second; }

  /// Removes the entry at `pos`; returns the one after it.
  iterator erase(const_iterator pos) { return items_.erase(pos); }
  /// See erase(const_iterator) above (an exact match, so a key template never takes it).
  iterator erase(iterator pos) { return items_.erase(pos); }
  /// Removes the entry with `key`; returns how many were removed (0 or 1).
  template <typename Q>
  size_type erase(const Q& key) {
    auto it = find(key);
    if (it == items_.end()) return 0;
    items_.erase(it);
    return 1;
  }

  /// Equal when both hold the same entries (keys and values equal).
  friend bool operator==(const FlatMap& a, const FlatMap& b) { return a.items_ == b.items_; }

 private:
  // Compares an entry with a key of any type Compare accepts, either way round.
  struct KeyLess {
    template <typename Q>
    bool operator()(const value_type& item, const Q& key) const {
      return Compare{}(item.first, key);
    }
    template <typename Q>
    bool operator()(const Q& key, const value_type& item) const {
      return Compare{}(key, item.first);
    }
  };

  // Grows the storage by exactly one entry while small (most of these maps hold one or two for
  // the life of the process), by half beyond, so no capacity sits unused.
  iterator insert_at(iterator pos, K&& key, V&& value) {
    if (items_.size() == items_.capacity()) {
      const std::size_t index = static_cast<std::size_t>(pos - items_.begin());
      const std::size_t size = items_.size();
      items_.reserve(size < 4 ? size + 1 : size + size / 2);
      pos = items_.begin() + static_cast<std::ptrdiff_t>(index);
    }
    return items_.emplace(pos, std::move(key), std::move(value));
  }

  std::vector<value_type> items_;
};

}  // namespace vscaler::base

// ContainerAggregates: a scaler's history, one ContainerAggregate per container name, kept as a
// vector of (name, aggregate) sorted by name. A scaler has a handful of containers (two in the
// issue-17 benchmark): a std::map spent a node per container (~70 bytes of header and malloc
// overhead each) plus the map itself, at 20,000 containers ~2 MiB for nothing. The interface is
// the part of std::map's the recommender uses; operator[] and emplace invalidate references to
// other entries (vector insertion), so take a reference only for the call at hand.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "recommender/container_aggregate.h"

namespace vscaler::recommender {

/// A scaler's aggregates by container name (see the file comment).
class ContainerAggregates {
 public:
  /// An entry: the container name and its aggregate.
  using value_type = std::pair<std::string, ContainerAggregate>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  /// The aggregate of `name`, created empty (in name order) when absent.
  ContainerAggregate& operator[](std::string_view name);
  /// The aggregate of `name`; std::out_of_range when absent.
  const ContainerAggregate& at(std::string_view name) const;
  ContainerAggregate& at(std::string_view name) {
    return const_cast<ContainerAggregate&>(std::as_const(*this).at(name));
  }
  /// The aggregate of `name`, nullptr when absent.
  const ContainerAggregate* find(std::string_view name) const;
  ContainerAggregate* find(std::string_view name) {
    return const_cast<ContainerAggregate*>(std::as_const(*this).find(name));
  }
  /// 1 when `name` has an aggregate, else 0.
  std::size_t count(std::string_view name) const { return find(name) ? 1 : 0; }
  /// True when `name` has an aggregate.
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  /// Adds `aggregate` as `name`'s unless it has one; true when added.
  bool emplace(std::string name, ContainerAggregate aggregate);

  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }

  /// Removes the entries for which `remove(name, aggregate)` is true; returns how many.
  template <typename Predicate>
  std::size_t erase_if(Predicate remove) {
    return std::erase_if(entries_,
                         [&remove](const value_type& e) { return remove(e.first, e.second); });
  }

  /// Releases spare capacity, the entries' and each aggregate's.
  void shrink_to_fit();
  /// Bytes the aggregates occupy, names and spare capacity included.
  std::size_t memory_bytes() const;

 private:
  const_iterator lower_bound(std::string_view name) const;
  std::vector<value_type> entries_;  // sorted by name, names unique
};

}  // namespace vscaler::recommender

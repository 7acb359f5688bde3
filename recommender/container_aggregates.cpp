// A scaler's aggregates as a sorted vector.
#include "recommender/container_aggregates.h"

#include <algorithm>
#include <stdexcept>

namespace vscaler::recommender {

ContainerAggregates::const_iterator ContainerAggregates::lower_bound(std::string_view name) const {
  return std::lower_bound(entries_.begin(), entries_.end(), name,
                          [](const value_type& e, std::string_view n) { return e.first < n; });
}

ContainerAggregate& ContainerAggregates::operator[](std::string_view name) {
  auto it = lower_bound(name);
  const auto index = static_cast<std::size_t>(it - entries_.cbegin());
  if (it == entries_.end() || it->first != name) {
    entries_.emplace(it, std::string(name), ContainerAggregate());
  }
  return entries_[index].second;
}

const ContainerAggregate* ContainerAggregates::find(std::string_view name) const {
  auto it = lower_bound(name);
  return it != entries_.end() && it->first == name ? &it->second : nullptr;
}

const ContainerAggregate& ContainerAggregates::at(std::string_view name) const {
  const ContainerAggregate* found = find(name);
  if (found == nullptr) {
    throw std::out_of_range("no aggregate of container " + std::string(name));
  }
  return *found;
}

bool ContainerAggregates::emplace(std::string name, ContainerAggregate aggregate) {
  auto it = lower_bound(name);
  if (it != entries_.end() && it->first == name) return false;
  entries_.emplace(it, std::move(name), std::move(aggregate));
  return true;
}

void ContainerAggregates::shrink_to_fit() {
  for (auto& [name, aggregate] : entries_) aggregate.shrink_to_fit();
  entries_.shrink_to_fit();
}

std::size_t ContainerAggregates::memory_bytes() const {
  // Each entry's aggregate counts itself (memory_bytes includes sizeof); the rest of the slot is
  // the name, plus its heap buffer when it does not fit the small-string buffer.
  std::size_t total = sizeof(*this) + (entries_.capacity() - entries_.size()) * sizeof(value_type);
  for (const auto& [name, aggregate] : entries_) {
    total += sizeof(value_type) - sizeof(ContainerAggregate) + aggregate.memory_bytes() +
             (name.size() > 15 ? name.capacity() + 1 : 0);
  }
  return total;
}

}  // namespace vscaler::recommender

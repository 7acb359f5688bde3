// Random JSON values for the property tests of kube's JSON readers and writers: every kind of
// value, nested up to a depth, with strings (member names too) from the test's own generator (a
// reader's test needs text nlohmann can dump, a writer's any byte).
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace vscaler::test {

/// A random value nested up to `depth`: null, booleans, signed and unsigned integers of every
/// magnitude, doubles from 1e-6 to 1e12 of either sign, strings and names from `text(random)`,
/// objects and arrays of up to 4 members.
template <typename Text>
nlohmann::json random_json(std::mt19937_64& random, int depth, Text& text) {
  switch (random() % (depth > 0 ? 10 : 7)) {
    case 0:
      return nullptr;
    case 1:
      return random() % 2 == 0;
    case 2:
      return static_cast<std::int64_t>(random()) >> (random() % 64);
    case 3:
      return static_cast<std::uint64_t>(random()) >> (random() % 64);
    case 4:
      return std::ldexp(static_cast<double>(random() % 2000001) - 1000000.0,
                        static_cast<int>(random() % 60) - 40);
    case 5:
    case 6:
      return text(random);
    case 7:
    case 8: {
      nlohmann::json object = nlohmann::json::object();
      const int members = static_cast<int>(random() % 5);
      for (int i = 0; i < members; ++i) object[text(random)] = random_json(random, depth - 1, text);
      return object;
    }
    default: {
      nlohmann::json array = nlohmann::json::array();
      const int items = static_cast<int>(random() % 5);
      for (int i = 0; i < items; ++i) array.push_back(random_json(random, depth - 1, text));
      return array;
    }
  }
}

}  // namespace vscaler::test

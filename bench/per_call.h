// per_call_us: the benchmarks' timer for one in-process operation (bench/webhook_bench.cpp, the
// --cost mode of bench/tools/admission_server.cpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace vscaler::bench {

/// Median microseconds per call of `work`, over 7 rounds of `calls` calls: the median keeps one
/// round slowed by another process out of the result.
template <typename Work>
double per_call_us(int calls, Work work) {
  std::vector<double> rounds;
  for (int round = 0; round < 7; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) work();
    std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
    rounds.push_back(elapsed.count() / calls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace vscaler::bench

#include "base/cpus.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace vscaler::base {
namespace {

std::optional<long long> parse_number(std::string_view text) {
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string read_all(const std::string& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return text;
}

// The cgroup v2 path of this process ("0::/path" in /proc/self/cgroup), and, under cgroup v1,
// that of its cpu controller ("N:cpu,cpuacct:/path"); "" where absent.
struct CgroupPaths {
  std::string unified;
  std::string cpu_v1;
  std::string cpu_v1_controllers;  // the mount's name: "cpu,cpuacct" or "cpu"
};

CgroupPaths cgroup_paths() {
  CgroupPaths paths;
  std::istringstream lines(read_all("/proc/self/cgroup"));
  std::string line;
  while (std::getline(lines, line)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers.empty()) paths.unified = path;
    std::istringstream names(controllers);
    std::string name;
    while (std::getline(names, name, ',')) {
      if (name == "cpu") {
        paths.cpu_v1 = path;
        paths.cpu_v1_controllers = controllers;
      }
    }
  }
  return paths;
}

// `path` and each of its parents up to "/": a quota set on the pod's cgroup (or a systemd slice)
// binds the container's too.
std::vector<std::string> with_parents(std::string path) {
  std::vector<std::string> paths;
  while (!path.empty() && path.back() == '/') path.pop_back();
  while (true) {
    paths.push_back(path);
    if (path.empty()) return paths;
    path.erase(path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  }
}

// The smallest quota in CPUs over the cgroup and its parents; nullopt where there is none (or
// none is readable).
std::optional<std::size_t> quota_cpus() {
  const CgroupPaths paths = cgroup_paths();
  std::optional<std::size_t> smallest;
  auto take = [&smallest](std::optional<std::size_t> cpus) {
    if (cpus && (!smallest || *cpus < *smallest)) smallest = cpus;
  };
  // cgroup v2. Inside a cgroup namespace the process's own cgroup is the mount's root ("0::/").
  for (const std::string& path : with_parents(paths.unified)) {
    const std::string text = read_all("/sys/fs/cgroup" + path + "/cpu.max");
    if (!text.empty()) take(cpus_of_quota(trimmed(text)));
  }
  if (smallest || paths.cpu_v1_controllers.empty()) return smallest;
  // cgroup v1, at its usual mount (/sys/fs/cgroup/cpu,cpuacct).
  for (const std::string& path : with_parents(paths.cpu_v1)) {
    const std::string dir = "/sys/fs/cgroup/" + paths.cpu_v1_controllers + path;
    auto quota = parse_number(trimmed(read_all(dir + "/cpu.cfs_quota_us")));
    auto period = parse_number(trimmed(read_all(dir + "/cpu.cfs_period_us")));
    if (quota && period)
      take(cpus_of_quota(std::to_string(*quota) + " " + std::to_string(*period)));
  }
  return smallest;
}

}  // namespace

std::optional<std::size_t> cpus_of_quota(std::string_view cpu_max) {
  const auto space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto quota = parse_number(cpu_max.substr(0, space));  // "max" (no quota) does not parse
  auto period = parse_number(cpu_max.substr(space + 1));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<std::size_t>((*quota + *period - 1) / *period);
}

std::size_t usable_cpus() {
  std::size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    cpus = std::max(1, CPU_COUNT(&set));
  }
  if (auto quota = quota_cpus()) cpus = std::min(cpus, std::max<std::size_t>(1, *quota));
  return cpus;
}

}  // namespace vscaler::base

// vscaler: keeps Deployments' container resources as VerticalScaler resources declare them.
// main() parses flags, wires the informer, index, queue, workers and webhook server, and handles
// SIGTERM/SIGINT.
#include <cstdio>
#include <string>
#include <vector>

#include "cmd/options.h"

int main(int argc, char** argv) {
  auto options = vscaler::cmd::parse_options(std::vector<std::string>(argv + 1, argv + argc));
  if (!options.ok()) {
    std::fprintf(stderr, "vscaler: %s\n", options.error().c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(vscaler::cmd::kUsage, stdout);
    return 0;
  }
  if (options->version) {
    std::printf("vscaler %s\n", VSCALER_VERSION);
    return 0;
  }
  std::fputs(vscaler::cmd::kUsage, stderr);
  return 2;
}

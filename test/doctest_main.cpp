// The doctest entry point shared by the unit and integration test binaries. Logs below "warn"
// are dropped unless VSCALER_TEST_LOG_LEVEL says otherwise, so test output stays readable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

#include "base/log.h"

int main(int argc, char** argv) {
  const char* level = std::getenv("VSCALER_TEST_LOG_LEVEL");
  vscaler::log::set_level(level != nullptr ? level : "warn");
  doctest::Context context(argc, argv);
  return context.run();
}

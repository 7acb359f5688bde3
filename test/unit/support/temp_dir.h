// A fresh directory under the system's temp directory for one test, removed with everything in it
// when the test ends: certificates, kubeconfigs, token files, credential-plugin scripts.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace vscaler::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "vscaler-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;  // a test that failed half-way may have left anything
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  /// The full path of `name` in the directory (nothing is created).
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  /// Writes `text` to `name`, folders made as needed; its full path.
  std::string write(const std::string& name, const std::string& text) const {
    std::string target = file(name);
    std::filesystem::create_directories(std::filesystem::path(target).parent_path());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + target);
    return target;
  }
  /// Writes an executable shell script (`body` after "#!/bin/sh"); its full path.
  std::string script(const std::string& name, const std::string& body) const {
    std::string target = write(name, "#!/bin/sh\n" + body);
    if (::chmod(target.c_str(), 0700) != 0) throw std::runtime_error("cannot chmod " + target);
    return target;
  }
  /// What `name` holds ("" when it does not exist).
  std::string read(const std::string& name) const {
    std::ifstream in(file(name), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string path_;
};

}  // namespace vscaler::testing

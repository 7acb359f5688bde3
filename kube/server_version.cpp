// parse_server_version: /version's strings to numbers.
#include "kube/server_version.h"

#include <cctype>
#include <string>

namespace vscaler::kube {

namespace {

/// The leading digits of `field` in `answer` as a number; nullopt without any.
std::optional<int> leading_number(const nlohmann::json& answer, const char* field) {
  auto it = answer.find(field);
  if (it == answer.end() || !it->is_string()) return std::nullopt;
  const std::string& text = it->get_ref<const std::string&>();
  int value = 0;
  std::size_t digits = 0;
  while (digits < text.size() && digits < 6 &&
         std::isdigit(static_cast<unsigned char>(text[digits]))) {
    value = value * 10 + (text[digits] - '0');
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<ServerVersion> parse_server_version(const nlohmann::json& answer) {
  if (!answer.is_object()) return std::nullopt;
  auto major = leading_number(answer, "major");
  auto minor = leading_number(answer, "minor");
  if (!major || !minor) return std::nullopt;
  return ServerVersion{*major, *minor};
}

}  // namespace vscaler::kube

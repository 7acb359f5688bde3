// list_template_resources: see the header.
#include "controller/template_resources.h"

#include "kube/object_meta.h"
#include "kube/workloads.h"

namespace vscaler::controller {

kube::Result<kube::Unit, kube::ApiError> list_template_resources(
    kube::Client& client, const std::string& ns, const std::string& kind,
    api::TemplateResources& out, std::chrono::milliseconds page_timeout) {
  const kube::ResourceType* resource = kube::workload_resource(kind);
  if (resource == nullptr) return kube::Unit{};
  static const kube::JsonProjection projection =
      *kube::JsonProjection::parse({"/metadata/name", "/spec/template/spec/containers/*/name",
                                    "/spec/template/spec/containers/*/resources"});
  kube::ListOptions options;
  options.projection = projection;
  options.timeout = page_timeout;
  const std::string prefix = api::template_prefix(ns, kind);
  int attempt = 0;
  // The list started over (an expired continue token): what the abandoned attempt handed over
  // may name workloads deleted since.
  auto restarted = [&](int restart) {
    if (restart == attempt) return;
    attempt = restart;
    api::extract_templates(out, ns, kind);
  };
  options.on_page = [&](const kube::ListPage& page) { restarted(page.restart); };
  options.on_item = [&](nlohmann::json& item, int restart) {
    restarted(restart);
    auto& containers = out[prefix + kube::meta_string(item, "name")];
    for (const nlohmann::json& container : api::pod_containers_of(item)) {
      if (!container.is_object()) continue;
      auto name = container.find("name");
      if (name == container.end() || !name->is_string()) continue;
      auto resources = container.find("resources");
      containers[name->get<std::string>()] = resources != container.end() && resources->is_object()
                                                 ? *resources
                                                 : nlohmann::json::object();
    }
  };
  auto listed = client.list(*resource, ns, options);
  if (!listed.ok()) return kube::fail(std::move(listed).error());
  return kube::Unit{};
}

}  // namespace vscaler::controller

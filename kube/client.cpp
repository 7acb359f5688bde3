#include "kube/client.h"

#include <utility>

#include "base/log.h"
#include "kube/list_page.h"
#include "kube/watch.h"

namespace vscaler::kube {
namespace {

using nlohmann::json;

/// A request body as JSON text. Invalid UTF-8 (a message quoting another server's bytes) becomes
/// U+FFFD instead of the exception dump() throws, which no caller expects from a write.
std::string body_text(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

constexpr std::string_view kMetadataListAccept =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
constexpr std::string_view kMetadataAccept =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

// Query parameters in order; values are encoded when the target is built.
using Query = std::vector<std::pair<std::string, std::string>>;

std::string with_query(std::string path, const Query& query) {
  char separator = '?';
  for (const auto& [key, value] : query) {
    path += separator;
    path += key;
    path += '=';
    path += url_encode(value);
    separator = '&';
  }
  return path;
}

void add_write_options(Query& query, const WriteOptions& options, bool apply) {
  if (!options.field_manager.empty()) query.emplace_back("fieldManager", options.field_manager);
  if (options.dry_run) query.emplace_back("dryRun", "All");
  if (apply && options.force) query.emplace_back("force", "true");
  if (!options.field_validation.empty()) {
    query.emplace_back("fieldValidation", options.field_validation);
  }
}

std::string metadata_string(const json& object, const char* key) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return {};
  auto value = metadata->find(key);
  if (value == metadata->end() || !value->is_string()) return {};
  return value->get<std::string>();
}

ApiError needs_namespace(const ResourceType& type) {
  return make_error(ErrorKind::kBadRequest,
                    type.display() + " is namespaced: a namespace is required for this call");
}

}  // namespace

std::string url_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if ((byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
        (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' || byte == '_' || byte == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0x0F]);
    }
  }
  return out;
}

std::string ResourceType::api_prefix() const {
  if (group.empty()) return "/api/" + version;
  return "/apis/" + group + "/" + version;
}

std::string ResourceType::path(std::string_view ns, std::string_view name,
                               std::string_view subresource) const {
  std::string out = api_prefix();
  if (namespaced && !ns.empty()) out += "/namespaces/" + url_encode(ns);
  out += "/" + resource;
  if (!name.empty()) {
    out += "/" + url_encode(name);
    if (!subresource.empty()) out += "/" + std::string(subresource);
  }
  return out;
}

std::string ResourceType::display() const {
  return group.empty() ? resource : resource + "." + group;
}

std::string_view content_type(PatchType type) {
  switch (type) {
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";  // JSON is YAML; the server accepts either
  }
  return "application/json";
}

Client::Client(std::shared_ptr<Transport> transport) : transport_(std::move(transport)) {}

Result<Client> Client::connect(const ClientConfig& config) {
  auto transport = Transport::create(config);
  if (!transport) return fail(transport.error());
  return Client(std::move(*transport));
}

const std::string& Client::default_namespace() const {
  return transport_->config().default_namespace;
}

Result<json, ApiError> Client::call(const HttpRequest& request) const {
  auto raw = call_raw(request);
  if (!raw) return fail(std::move(raw).error());
  if (raw->empty()) return json::object();
  json body = json::parse(*raw, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return fail(
        make_error(ErrorKind::kDecode, request.method + " " +
                                           request.target.substr(0, request.target.find('?')) +
                                           ": the answer is not valid JSON"));
  }
  return body;
}

Result<std::string, ApiError> Client::call_raw(const HttpRequest& request) const {
  auto response = transport_->send(request);
  if (!response) return fail(std::move(response).error());
  for (const auto& warning : response->warnings) {
    log::warn("kube.client", "API server warning",
              {{"warning", warning}, {"method", request.method}});
  }
  if (response->status < 200 || response->status > 299) {
    return fail(error_from_response(response->status, response->body, response->retry_after));
  }
  return std::move(response->body);
}

Result<json, ApiError> Client::write(std::string_view method, std::string target, std::string body,
                                     std::string_view type, bool parse_answer,
                                     std::chrono::milliseconds timeout) const {
  HttpRequest request;
  request.timeout = timeout;
  request.method = std::string(method);
  request.target = std::move(target);
  request.body = std::move(body);
  request.content_type = std::string(type);
  if (parse_answer) return call(request);
  auto raw = call_raw(request);
  if (!raw) return fail(std::move(raw).error());
  return json();
}

Result<json, ApiError> Client::get(const ResourceType& type, std::string_view ns,
                                   std::string_view name, const GetOptions& options) const {
  if (type.namespaced && ns.empty()) return fail(needs_namespace(type));
  Query query;
  if (!options.resource_version.empty()) {
    query.emplace_back("resourceVersion", options.resource_version);
  }
  HttpRequest request;
  request.target = with_query(type.path(ns, name), query);
  request.timeout = options.timeout;
  return call(request);
}

Result<json, ApiError> Client::get_metadata(const ResourceType& type, std::string_view ns,
                                            std::string_view name) const {
  if (type.namespaced && ns.empty()) return fail(needs_namespace(type));
  HttpRequest request;
  request.target = type.path(ns, name);
  request.accept = std::string(kMetadataAccept);
  return call(request);
}

Result<json, ApiError> Client::get_status(const ResourceType& type, std::string_view ns,
                                          std::string_view name) const {
  if (type.namespaced && ns.empty()) return fail(needs_namespace(type));
  HttpRequest request;
  request.target = type.path(ns, name, "status");
  return call(request);
}

Result<ObjectList, ApiError> Client::list(const ResourceType& type, std::string_view ns,
                                          const ListOptions& options) const {
  return list_impl(type, ns, options, "application/json");
}

Result<ObjectList, ApiError> Client::list_metadata(const ResourceType& type, std::string_view ns,
                                                   const ListOptions& options) const {
  return list_impl(type, ns, options, kMetadataListAccept);
}

Result<ObjectList, ApiError> Client::list_impl(const ResourceType& type, std::string_view ns,
                                               const ListOptions& options,
                                               std::string_view accept) const {
  // What one page said; its items are already handed over (on_item) or in `out`.
  struct PageRead {
    std::string resource_version;
    std::string continue_token;
    size_t count = 0;
  };
  ProjectingParser projecting;  // item by item: reused across items and pages
  auto read_page = [&](const HttpRequest& request, int restart,
                       ObjectList& out) -> Result<PageRead, ApiError> {
    if (options.on_item || options.projection) {
      // Item by item (kube/list_page.h): one object's DOM at a time, never the page's.
      auto raw = call_raw(request);
      if (!raw) return fail(std::move(raw).error());
      std::string bad_item;  // why an item could not be parsed, and which
      std::size_t index = 0;
      auto read = for_each_list_item(*raw, [&](std::string_view text) {
        // The item is a view into the page, which for_each_list_item has padded: the rest of
        // the page and its padding may be read past the item's end.
        const char* readable_end = raw->data() + raw->capacity();
        auto parsed = projecting.parse(
            text, static_cast<std::size_t>(readable_end - (text.data() + text.size())),
            options.projection ? *options.projection : keep_everything());
        if (!parsed) {
          bad_item = "items[" + std::to_string(index) +
                     "] (of this page) is not valid JSON: " + parsed.error();
          return false;
        }
        ++index;
        json item = std::move(parsed).value();
        if (options.transform) options.transform(item);
        if (options.on_item) {
          options.on_item(item, restart);
        } else {
          out.items.push_back(std::move(item));
        }
        return true;
      });
      if (!read) {
        return fail(make_error(
            ErrorKind::kDecode,
            "list of " + type.display() + ": " + (bad_item.empty() ? read.error() : bad_item)));
      }
      return PageRead{std::move(read->resource_version), std::move(read->continue_token),
                      read->count};
    }
    auto body = call(request);
    if (!body) return fail(std::move(body).error());
    auto items = body->find("items");
    if (items == body->end() || !(items->is_array() || items->is_null())) {
      return fail(make_error(ErrorKind::kDecode,
                             "list of " + type.display() + ": the answer has no items"));
    }
    PageRead page{metadata_string(*body, "resourceVersion"), metadata_string(*body, "continue"),
                  items->is_array() ? items->size() : 0};
    if (items->is_array()) {
      for (auto& item : *items) {
        if (options.transform) options.transform(item);
        out.items.push_back(std::move(item));
      }
    }
    return page;
  };

  for (int restart = 0;; ++restart) {
    ObjectList out;
    out.restarts = restart;
    std::string continue_token;
    bool expired = false;
    for (int page = 0;; ++page) {
      Query query;
      if (!options.label_selector.empty()) {
        query.emplace_back("labelSelector", options.label_selector);
      }
      if (!options.field_selector.empty()) {
        query.emplace_back("fieldSelector", options.field_selector);
      }
      if (options.limit > 0) query.emplace_back("limit", std::to_string(options.limit));
      if (!continue_token.empty()) {
        // The token carries the snapshot's version; resourceVersion must not be repeated.
        query.emplace_back("continue", continue_token);
      } else if (!options.resource_version.empty()) {
        query.emplace_back("resourceVersion", options.resource_version);
      }
      HttpRequest request;
      request.target = with_query(type.path(ns), query);
      request.accept = std::string(accept);
      request.timeout = options.timeout;
      auto read = read_page(request, restart, out);
      if (!read) {
        // A continue token outlives its snapshot only until etcd compacts it (5 minutes by
        // default): the pages so far are from a version we can no longer finish, so start over.
        if (is_expired(read.error()) && !continue_token.empty() && restart < options.max_restarts) {
          log::info("kube.client", "list continue token expired; restarting the list",
                    {{"resource", type.display()}, {"page", std::to_string(page)}});
          expired = true;
          break;
        }
        return fail(std::move(read).error());
      }
      if (page == 0) out.resource_version = std::move(read->resource_version);
      continue_token = std::move(read->continue_token);
      out.pages = page + 1;
      if (options.on_page) options.on_page(ListPage{page, read->count, continue_token, restart});
      if (continue_token.empty()) return out;
      if (options.max_pages > 0 && out.pages >= options.max_pages) return out;
    }
    if (!expired) return fail(make_error(ErrorKind::kDecode, "list ended unexpectedly"));
  }
}

Result<json, ApiError> Client::create(const ResourceType& type, std::string_view ns,
                                      const json& object, const WriteOptions& options) const {
  std::string namespace_name(ns);
  if (namespace_name.empty() && type.namespaced)
    namespace_name = metadata_string(object, "namespace");
  if (type.namespaced && namespace_name.empty()) return fail(needs_namespace(type));
  Query query;
  add_write_options(query, options, false);
  return write("POST", with_query(type.path(namespace_name), query), body_text(object),
               "application/json", options.parse_answer, options.timeout);
}

Result<json, ApiError> Client::update(const ResourceType& type, const json& object,
                                      const WriteOptions& options) const {
  std::string ns = metadata_string(object, "namespace");
  std::string name = metadata_string(object, "name");
  if (name.empty()) {
    return fail(make_error(ErrorKind::kBadRequest, "update: the object has no metadata.name"));
  }
  if (type.namespaced && ns.empty()) return fail(needs_namespace(type));
  Query query;
  add_write_options(query, options, false);
  return write("PUT", with_query(type.path(ns, name), query), body_text(object), "application/json",
               options.parse_answer, options.timeout);
}

Result<json, ApiError> Client::update_status(const ResourceType& type, const json& object,
                                             const WriteOptions& options) const {
  std::string ns = metadata_string(object, "namespace");
  std::string name = metadata_string(object, "name");
  if (name.empty()) {
    return fail(
        make_error(ErrorKind::kBadRequest, "update_status: the object has no metadata.name"));
  }
  if (type.namespaced && ns.empty()) return fail(needs_namespace(type));
  Query query;
  add_write_options(query, options, false);
  return write("PUT", with_query(type.path(ns, name, "status"), query), body_text(object),
               "application/json", options.parse_answer, options.timeout);
}

Result<json, ApiError> Client::patch(const ResourceType& type, std::string_view ns,
                                     std::string_view name, PatchType patch_type, const json& patch,
                                     const WriteOptions& options,
                                     std::string_view subresource) const {
  if (type.namespaced && ns.empty()) return fail(needs_namespace(type));
  if (patch_type == PatchType::kApply && options.field_manager.empty()) {
    return fail(make_error(ErrorKind::kBadRequest,
                           "server-side apply needs a field manager (WriteOptions.field_manager)"));
  }
  Query query;
  add_write_options(query, options, patch_type == PatchType::kApply);
  return write("PATCH", with_query(type.path(ns, name, subresource), query), body_text(patch),
               content_type(patch_type), options.parse_answer, options.timeout);
}

Result<json, ApiError> Client::patch_status(const ResourceType& type, std::string_view ns,
                                            std::string_view name, PatchType patch_type,
                                            const json& patch, const WriteOptions& options) const {
  return this->patch(type, ns, name, patch_type, patch, options, "status");
}

Result<json, ApiError> Client::remove(const ResourceType& type, std::string_view ns,
                                      std::string_view name, const DeleteOptions& options) const {
  if (type.namespaced && ns.empty()) return fail(needs_namespace(type));
  json body = json::object();
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty()) {
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  }
  if (options.dry_run) body["dryRun"] = json::array({"All"});
  std::string text;
  if (!body.empty()) {
    body["apiVersion"] = "v1";
    body["kind"] = "DeleteOptions";
    text = body_text(body);
  }
  return write("DELETE", type.path(ns, name), std::move(text), "application/json");
}

std::unique_ptr<Watch> Client::watch(const ResourceType& type, std::string_view ns,
                                     const WatchOptions& options) const {
  Query query{{"watch", "true"}};
  if (options.allow_bookmarks) query.emplace_back("allowWatchBookmarks", "true");
  if (!options.resource_version.empty()) {
    query.emplace_back("resourceVersion", options.resource_version);
  }
  if (!options.label_selector.empty()) query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) query.emplace_back("fieldSelector", options.field_selector);
  if (options.timeout.count() > 0) {
    query.emplace_back("timeoutSeconds", std::to_string(options.timeout.count()));
  }
  return std::make_unique<Watch>(transport_, with_query(type.path(ns), query), options);
}

}  // namespace vscaler::kube

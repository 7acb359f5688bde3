// Client: the API operations on any resource (get, list with pagination, metadata-only list,
// create, update, delete, the four patch types, the status subresource, watch), with objects
// as nlohmann::json and failures as ApiError values.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "kube/errors.h"
#include "kube/json_projection.h"
#include "kube/transport.h"

namespace vscaler::kube {

class Watch;
struct WatchOptions;

/// Names a resource of the API: group ("" for the core group), version, plural resource name,
/// and whether its objects live in a namespace. Decides the URL paths.
struct ResourceType {
  std::string group;       ///< "" for the core group, else e.g. "apps"
  std::string version;     ///< e.g. "v1"
  std::string resource;    ///< plural, lower case: "deployments"
  bool namespaced = true;  ///< false for cluster-scoped types (namespaces, CRDs, webhooks)

  /// "/api/v1" for the core group, "/apis/<group>/<version>" otherwise.
  std::string api_prefix() const;
  /// The path of the collection or of one object: /apis/apps/v1/namespaces/ns/deployments/name
  /// [/subresource]. An empty `ns` of a namespaced type means all namespaces (collections only);
  /// `ns` is ignored for cluster-scoped types.
  std::string path(std::string_view ns, std::string_view name = {},
                   std::string_view subresource = {}) const;
  /// "deployments.apps" / "configmaps", for messages.
  std::string display() const;
};

/// Resource types vscaler and its tests use; any other can be written the same way.
namespace resources {
inline const ResourceType kNamespaces{"", "v1", "namespaces", false};
inline const ResourceType kNodes{"", "v1", "nodes", false};
inline const ResourceType kConfigMaps{"", "v1", "configmaps", true};
inline const ResourceType kSecrets{"", "v1", "secrets", true};
inline const ResourceType kServiceAccounts{"", "v1", "serviceaccounts", true};
inline const ResourceType kPods{"", "v1", "pods", true};
inline const ResourceType kLimitRanges{"", "v1", "limitranges", true};
inline const ResourceType kResourceQuotas{"", "v1", "resourcequotas", true};
inline const ResourceType kEvents{"", "v1", "events", true};
inline const ResourceType kDeployments{"apps", "v1", "deployments", true};
inline const ResourceType kStatefulSets{"apps", "v1", "statefulsets", true};
inline const ResourceType kDaemonSets{"apps", "v1", "daemonsets", true};
inline const ResourceType kLeases{"coordination.k8s.io", "v1", "leases", true};
inline const ResourceType kHorizontalPodAutoscalers{"autoscaling", "v2", "horizontalpodautoscalers",
                                                    true};
inline const ResourceType kCustomResourceDefinitions{"apiextensions.k8s.io", "v1",
                                                     "customresourcedefinitions", false};
/// The operator's own custom resource (see DESIGN.md).
inline const ResourceType kVerticalScalers{"scaling.vscaler.dev", "v1beta1", "verticalscalers",
                                           true};
}  // namespace resources

/// Percent-encodes a query parameter value or path segment (RFC 3986 unreserved kept).
std::string url_encode(std::string_view text);

/// Options of get().
struct GetOptions {
  /// "" = the latest (a quorum read); "0" = any cached version is fine.
  std::string resource_version;
  /// The longest the call may take (see HttpRequest::timeout); zero = the client's default.
  std::chrono::milliseconds timeout{0};
};

/// What one page of a list held; passed to ListOptions::on_page.
struct ListPage {
  int index = 0;               ///< 0 for the first page of an attempt
  size_t items = 0;            ///< objects on this page
  std::string continue_token;  ///< "" on the last page
  int restart = 0;             ///< how many times the list was restarted before this page
};

/// Options of list() and list_metadata().
struct ListOptions {
  std::string label_selector;  ///< e.g. "app=web,tier in (a,b)"
  std::string field_selector;  ///< e.g. "metadata.name=x"
  /// Objects per page; 0 asks for everything in one answer. Pages keep a busy server's memory
  /// bounded; the API server serves every page from the snapshot of the first.
  std::int64_t limit = 500;
  /// "" = a consistent, up-to-date list; "0" = whatever the watch cache has (no read of etcd,
  /// possibly stale, and the API server, v1.36 too, ignores `limit` with it: every object in
  /// one answer).
  std::string resource_version;
  /// Called after each page (progress, tests); may be empty.
  std::function<void(const ListPage&)> on_page;
  /// Applied to each item as its page arrives, before it joins the result: dropping what the
  /// caller never reads there (managedFields) keeps a long list from holding it all at once.
  /// May be empty.
  std::function<void(nlohmann::json& item)> transform;
  /// When set, each item (after `transform`) is handed here as its page arrives and is not kept
  /// in ObjectList::items: a long list then never holds more than one page. `restart` is
  /// ListPage::restart: after an expired continue token the list starts over from its first
  /// page, and items of the abandoned attempt were already handed over. May be empty.
  std::function<void(nlohmann::json& item, int restart)> on_item;
  /// When set, each item is parsed keeping only these paths (see kube/json_projection.h), item
  /// by item as with on_item: a reader of a pod's containers and owners skips building its
  /// managedFields and status, most of its bytes. A projected path the reader forgets is simply
  /// absent, so each reader keeps its projection next to its parser and tests them together.
  std::optional<JsonProjection> projection;
  /// An expired continue token (410, after an etcd compaction) restarts the list from the
  /// beginning at most this many times before the Expired error is returned.
  int max_restarts = 3;
  /// Stop after this many pages (0: follow continue tokens to the end). A probe that only asks
  /// "may I list?" reads one page; following the tokens would read every object, page by page.
  int max_pages = 0;
  /// The longest each page's request may take (see HttpRequest::timeout); zero = the default.
  std::chrono::milliseconds timeout{0};
};

/// A complete list: every page's items, and the resourceVersion to watch from.
struct ObjectList {
  std::vector<nlohmann::json> items;
  std::string resource_version;  ///< of the list (the snapshot all pages were served from)
  int pages = 0;                 ///< pages fetched by the successful attempt
  int restarts = 0;              ///< times an expired continue token restarted the list
};

/// Options shared by writes (create, update, patch).
struct WriteOptions {
  /// Recorded in managedFields; required for server-side apply. vscaler uses "vscaler".
  std::string field_manager;
  /// Validate and admit, but persist nothing (dryRun=All).
  bool dry_run = false;
  /// Server-side apply only: take ownership of fields other managers own instead of failing
  /// with Conflict.
  bool force = false;
  /// "" (server default), "Ignore", "Warn" or "Strict": what to do with unknown fields.
  std::string field_validation;
  /// False: the API server's answer (the object as written) is checked for success only and
  /// dropped unparsed; the result is null (create, update, update_status, patch). For writes whose
  /// object nobody reads back, like the recommender's status writes (the informer brings it
  /// anyway): parsing that answer, a VerticalScaler with its managedFields, was ~40 % of such a
  /// write's CPU here.
  bool parse_answer = true;
  /// The longest the call may take (see HttpRequest::timeout); zero = the client's default. For
  /// calls made while someone waits on the answer (a /metrics scrape's access review).
  std::chrono::milliseconds timeout{0};
};

/// The body formats of PATCH.
enum class PatchType {
  kJson,            ///< RFC 6902 JSON patch (a list of operations)
  kMerge,           ///< RFC 7386 JSON merge patch
  kStrategicMerge,  ///< Kubernetes strategic merge patch (built-in types only; 415 on CRDs)
  kApply,           ///< server-side apply (needs field_manager; `force` takes conflicts)
};

/// The Content-Type of a patch type.
std::string_view content_type(PatchType type);

/// Options of remove().
struct DeleteOptions {
  /// "", "Orphan", "Background" or "Foreground".
  std::string propagation_policy;
  /// Seconds the object may take to terminate (pods); 0 = now; unset = the type's default.
  std::optional<std::int64_t> grace_period_seconds;
  /// Preconditions: delete only if the object still has this uid / resourceVersion (else
  /// Conflict).
  std::string precondition_uid;
  std::string precondition_resource_version;
  /// Admit the deletion but persist nothing (dryRun=All).
  bool dry_run = false;
};

/// Operations against the API server. Cheap to copy (it shares the Transport); thread-safe.
class Client {
 public:
  /// A client over an existing transport.
  explicit Client(std::shared_ptr<Transport> transport);
  /// Builds the transport for `config`; fails on an unusable configuration.
  static Result<Client> connect(const ClientConfig& config);

  /// The namespace of the configuration's context (or service account).
  const std::string& default_namespace() const;
  /// The transport underneath (stats, config); shared by copies of this client.
  Transport& transport() const { return *transport_; }
  /// The same, as a shared pointer, to build another client or a wrapper over it.
  const std::shared_ptr<Transport>& shared_transport() const { return transport_; }

  /// GET one object. NotFound when it (or its namespace) does not exist.
  Result<nlohmann::json, ApiError> get(const ResourceType& type, std::string_view ns,
                                       std::string_view name, const GetOptions& options = {}) const;

  /// GET one object as PartialObjectMetadata (apiVersion meta.k8s.io/v1, kind, metadata only):
  /// uid, generation and resourceVersion without transferring the object.
  Result<nlohmann::json, ApiError> get_metadata(const ResourceType& type, std::string_view ns,
                                                std::string_view name) const;

  /// Lists objects, following continue tokens until the last page. `ns` "" lists all
  /// namespaces of a namespaced type.
  Result<ObjectList, ApiError> list(const ResourceType& type, std::string_view ns,
                                    const ListOptions& options = {}) const;

  /// Like list(), but the items are PartialObjectMetadata (apiVersion, kind, metadata only):
  /// far less to transfer and parse when only names, uids and generations matter.
  Result<ObjectList, ApiError> list_metadata(const ResourceType& type, std::string_view ns,
                                             const ListOptions& options = {}) const;

  /// POST a new object into `ns` (for namespaced types; "" takes metadata.namespace).
  /// AlreadyExists when the name is taken; Invalid with causes when validation fails.
  Result<nlohmann::json, ApiError> create(const ResourceType& type, std::string_view ns,
                                          const nlohmann::json& object,
                                          const WriteOptions& options = {}) const;

  /// PUT the whole object (namespace and name from its metadata). With metadata.resourceVersion
  /// set, a stale copy fails with Conflict instead of overwriting someone else's change.
  Result<nlohmann::json, ApiError> update(const ResourceType& type, const nlohmann::json& object,
                                          const WriteOptions& options = {}) const;

  /// PUT the status subresource (the object's spec is ignored by the server).
  Result<nlohmann::json, ApiError> update_status(const ResourceType& type,
                                                 const nlohmann::json& object,
                                                 const WriteOptions& options = {}) const;

  /// PATCH an object (or one of its subresources, e.g. "status" or "scale"). For kApply,
  /// `patch` is the full intent (apiVersion, kind, metadata.name and the owned fields) and
  /// options.field_manager is required.
  Result<nlohmann::json, ApiError> patch(const ResourceType& type, std::string_view ns,
                                         std::string_view name, PatchType patch_type,
                                         const nlohmann::json& patch,
                                         const WriteOptions& options = {},
                                         std::string_view subresource = {}) const;

  /// GET the status subresource.
  Result<nlohmann::json, ApiError> get_status(const ResourceType& type, std::string_view ns,
                                              std::string_view name) const;

  /// PATCH the status subresource.
  Result<nlohmann::json, ApiError> patch_status(const ResourceType& type, std::string_view ns,
                                                std::string_view name, PatchType patch_type,
                                                const nlohmann::json& patch,
                                                const WriteOptions& options = {}) const;

  /// DELETE an object. Returns what the server returns: the object (still present while
  /// finalizers run) or a Status. NotFound when it is already gone.
  Result<nlohmann::json, ApiError> remove(const ResourceType& type, std::string_view ns,
                                          std::string_view name,
                                          const DeleteOptions& options = {}) const;

  /// Prepares a watch of a collection; run it with Watch::run (see kube/watch.h).
  std::unique_ptr<Watch> watch(const ResourceType& type, std::string_view ns,
                               const WatchOptions& options) const;

  /// Any other call (discovery, /version, an eviction): sends `request` and parses the JSON
  /// answer; non-2xx answers become ApiError.
  Result<nlohmann::json, ApiError> call(const HttpRequest& request) const;
  /// Like call(), but returns the answer's body unparsed, for callers with a parser of their own
  /// (a streaming one that builds no document of the whole answer).
  Result<std::string, ApiError> call_raw(const HttpRequest& request) const;

 private:
  Result<ObjectList, ApiError> list_impl(const ResourceType& type, std::string_view ns,
                                         const ListOptions& options, std::string_view accept) const;
  Result<nlohmann::json, ApiError> write(std::string_view method, std::string target,
                                         std::string body, std::string_view content_type,
                                         bool parse_answer = true,
                                         std::chrono::milliseconds timeout = {}) const;

  std::shared_ptr<Transport> transport_;
};

}  // namespace vscaler::kube

// The admission.k8s.io/v1 AdmissionReview codec: untrusted request bytes in, a small struct out
// (admission.cpp: decoding and projection); a handler's answer in, response bytes out
// (admission_encode.cpp). JSON Patch checks live in json_patch.h.
//
// Parsing uses simdjson's DOM parser (about 10 us for a 22 KB Deployment UPDATE review, against
// about 370 us for nlohmann_json, which would dominate the webhook's cost), validates the whole
// document, and enforces a nesting-depth limit before anything recursive touches it. `object`
// and `oldObject` are handed to handlers as nlohmann::json, either whole or — much cheaper —
// reduced to the paths a handler declares it reads (a Projection).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/resources.h"
#include "base/result.h"
#include "kube/base64.h"
#include "kube/json_projection.h"
#include "webhook/json_patch.h"

namespace vscaler::webhook {

/// The operation being admitted (request.operation).
enum class Operation { kCreate, kUpdate, kDelete, kConnect };

/// "CREATE", "UPDATE", "DELETE", "CONNECT".
std::string_view to_string(Operation operation);

/// The apiVersion and kind of every AdmissionReview read and written (admission.k8s.io/v1 only).
inline constexpr std::string_view kAdmissionApiVersion = "admission.k8s.io/v1";
inline constexpr std::string_view kAdmissionKind = "AdmissionReview";

/// request.kind / request.requestKind.
struct GroupVersionKind {
  std::string group;
  std::string version;
  std::string kind;
};

/// request.resource / request.requestResource.
struct GroupVersionResource {
  std::string group;
  std::string version;
  std::string resource;
};

/// What a workload hook reads of an UPDATE's or DELETE's oldObject, read from the parsed review
/// without a JSON tree of it (Projection::old_object_stored): the old object is only compared
/// against, and converting it was about a tenth of the instructions a 20 KB review took from its
/// parse to its answer. Holds what stored_old_object_of reads from the tree of the same oldObject.
struct StoredOldObject {
  std::string name;             ///< metadata.name ("" when absent or not a string)
  std::string namespace_name;   ///< metadata.namespace
  std::string uid;              ///< metadata.uid
  std::int64_t generation = 0;  ///< metadata.generation (0 when absent or not an integer)
  /// The containers of its pod spec (api::pod_spec_of: spec.template.spec, or spec of a Pod)
  /// with their stored requests and limits, as api::stored_containers_of reads a tree.
  std::vector<api::StoredContainer> containers;
};

/// `object` (an oldObject's tree) read as parse_review reads oldObject into
/// AdmissionRequest::old_stored: for a request parsed without Projection::old_object_stored. An
/// empty StoredOldObject when `object` is not an object.
StoredOldObject stored_old_object_of(const nlohmann::json& object);

/// The parts of an AdmissionReview request vscaler's handlers read. Deliberately absent:
/// userInfo, which nothing in vscaler may trust; of options only the field manager.
struct AdmissionRequest {
  /// Echoed in the response; the API server matches answers by it. Never empty.
  std::string uid;
  GroupVersionKind kind;
  GroupVersionResource resource;
  /// "status", "scale", ... or empty for the main resource.
  std::string sub_resource;
  /// request.name: empty for a CREATE with only generateName and for each item of a
  /// deletecollection — read metadata from object/old_object instead.
  std::string name;
  /// request.namespace (empty for cluster-scoped resources).
  std::string namespace_name;
  Operation operation = Operation::kCreate;
  /// True for `--dry-run=server` requests: no side effects allowed.
  bool dry_run = false;
  /// request.options.fieldManager ("" when absent): vscaler's own writes say "vscaler".
  std::string field_manager;
  /// request.object: null on DELETE. Whole, or projected (see Projection).
  nlohmann::json object;
  /// request.oldObject: null on CREATE and CONNECT. Whole, or projected; null as well when the
  /// projection reads it as old_stored.
  nlohmann::json old_object;
  /// request.oldObject as a StoredOldObject, when the projection asks for it
  /// (Projection::old_object_stored) and the review has one that is an object.
  std::optional<StoredOldObject> old_stored;
  /// Whether object's and oldObject's subtrees the projection names (Projection::compare_subtree)
  /// are equal but for the members it ignores; nullopt when it names none or either object is
  /// absent or null (CREATE, DELETE).
  std::optional<bool> subtree_unchanged;
  std::chrono::steady_clock::time_point deadline{};  ///< from ?timeout=; {}: unknown
};

/// Which parts of object/oldObject to keep (a kube::JsonProjection: paths whose tokens may be
/// "*", {"/metadata", "/spec/template/spec/containers/*/name"}; array elements keep their
/// positions, so JSON patch paths computed from a projected object are right), and optionally
/// which subtree of both to compare.
class Projection {
 public:
  /// Keeps everything (the same as no projection).
  Projection() = default;
  /// See kube::JsonProjection::parse. Fails on a path that does not start with "/".
  static kube::Result<Projection> parse(const std::vector<std::string>& paths);

  /// The kept paths.
  const kube::JsonProjection& paths() const { return paths_; }

  /// What compare_subtree asked for.
  struct Comparison {
    std::vector<std::string> path;                  ///< plain member names from the root
    std::vector<std::vector<std::string>> ignored;  ///< relative to `path`; "*" = any
  };
  /// Also compares the subtree at `path` (member names, e.g. {"spec", "template"}) of object and
  /// oldObject into AdmissionRequest::subtree_unchanged, leaving out members matched by `ignored`
  /// (token lists relative to `path`; "*" matches any array element or member) and objects left
  /// empty by that. Members' order does not matter (objects of more than 64 members out of
  /// order count as different: comparing them by name would be quadratic). One walk of both parsed
  /// subtrees, no copy, stopping at the first difference: they are compared without being
  /// projected.
  Projection& compare_subtree(std::vector<std::string> path,
                              std::vector<std::vector<std::string>> ignored);
  /// The comparison asked for, or nullptr.
  const Comparison* comparison() const { return comparison_.get(); }

  /// Reads oldObject into AdmissionRequest::old_stored instead of a (projected) JSON tree,
  /// which stays null. The subtree comparison still sees the whole of it.
  Projection& old_object_stored() {
    old_object_stored_ = true;
    return *this;
  }
  /// Whether old_object_stored() was asked for.
  bool reads_old_object_stored() const { return old_object_stored_; }

 private:
  kube::JsonProjection paths_;
  std::shared_ptr<const Comparison> comparison_;
  bool old_object_stored_ = false;
};

/// Limits and shaping for parse_review.
struct ParseOptions {
  /// Deepest nesting accepted in the whole review (the review object itself is level 1, its
  /// request level 2, the admitted object level 3). A Deployment review is about 20 deep;
  /// untrusted 100k-deep input is refused before any recursive code sees it.
  std::size_t max_depth = 128;
  /// Applied to object and oldObject; null keeps them whole.
  const Projection* projection = nullptr;
  /// Bytes past the body's end that may be read (not written), e.g. a std::string's capacity
  /// beyond its size: with kParsePadding or more the parser reads the body in place instead of
  /// copying it into a padded buffer of its own.
  std::size_t readable_padding = 0;
};

/// How many readable bytes past a body's end let parse_review skip its copy of the body
/// (simdjson's SIMDJSON_PADDING).
inline constexpr std::size_t kParsePadding = 64;

/// Default for ParseOptions::max_depth.
inline constexpr std::size_t kDefaultMaxDepth = 128;

/// Parses an admission.k8s.io/v1 AdmissionReview. The error is a message fit for an HTTP 400
/// body: malformed JSON, nesting too deep, another apiVersion or kind, no request, no uid, an
/// unknown operation, or a field of the wrong type. Messages never quote the body beyond short
/// identifiers (apiVersion, kind, operation), so they are safe to log.
kube::Result<AdmissionRequest> parse_review(std::string_view body,
                                            const ParseOptions& options = {});

/// A handler's answer. The uid is not here: the server copies it from the request.
struct AdmissionResponse {
  /// False denies the operation (validating handlers); mutating handlers in vscaler never deny.
  bool allowed = true;
  /// For denials: an HTTP-style code (403, 422, ...) and a message naming the field; 0 = none.
  int status_code = 0;
  std::string status_message;
  /// Optional machine-readable reason (metav1.StatusReason, e.g. "Invalid").
  std::string status_reason;
  /// Shown to the user by kubectl ("Warning: ..."). Keep each under 120 characters.
  std::vector<std::string> warnings;
  /// An RFC 6902 JSON Patch (an array of operations) or null for none; sent base64-encoded with
  /// patchType JSONPatch. Only meaningful for allowed CREATE/UPDATE answers.
  nlohmann::json patch;

  /// Allowed, no patch, no warnings.
  static AdmissionResponse allow() { return {}; }
  /// Denied with a code and message.
  static AdmissionResponse deny(int code, std::string message, std::string reason = {}) {
    AdmissionResponse response;
    response.allowed = false;
    response.status_code = code;
    response.status_message = std::move(message);
    response.status_reason = std::move(reason);
    return response;
  }
};

/// The response AdmissionReview as JSON text: apiVersion/kind, response.uid = `uid`, allowed,
/// status (when a code or message is set), warnings (when any), and patch + patchType (when
/// `response.patch` is not null). Invalid UTF-8 in messages is replaced, never thrown.
std::string encode_review(std::string_view uid, const AdmissionResponse& response);

/// Standard base64 (RFC 4648, with padding): kube's, which the patch is sent in.
using kube::base64_encode;

/// The bytes of standard base64 text (with padding, no whitespace); the error says why the text
/// is not base64.
kube::Result<std::string> base64_decode(std::string_view text);

}  // namespace vscaler::webhook

// JsonProjection: JSON text into nlohmann trees that keep only the paths a reader declares.
// simdjson parses the text; only the kept subtrees become nlohmann values, so the cost of a large
// object whose reader needs a few fields is the parse, not a tree of every member (a 22 KB
// Deployment review: ~27 us against nlohmann's ~240). The webhook's reviews and the recommender's
// list items (pods with their managedFields and status) both go through it.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace simdjson::dom {
class element;
class parser;
}  // namespace simdjson::dom

namespace vscaler::kube {

/// Which parts of a JSON object to keep, as JSON-pointer-like paths whose tokens may be "*"
/// (every array element or object member): {"/metadata/name", "/spec/containers/*/resources"}.
/// A member matched both by name and by "*" keeps the paths of both.
/// Kept subtrees are copied whole; array elements keep their positions (index i of a projected
/// array is index i of the original, so JSON patch paths computed from it are right). A value of
/// another kind than the path expects is kept if it is a scalar, and becomes an empty object or
/// array if it is a container (so a reader still sees the wrong type, at no cost).
class JsonProjection {
 public:
  /// Keeps everything.
  JsonProjection() = default;
  /// Paths use "/" separators and JSON-pointer escapes (~0 for "~", ~1 for "/"); the empty path
  /// "" keeps the whole object, and no paths at all keep everything. Fails on a path that does
  /// not start with "/".
  static base::Result<JsonProjection, std::string> parse(const std::vector<std::string>& paths);

  /// A node of the path trie.
  struct Node {
    bool keep_all = false;  ///< this subtree is kept whole
    // Few entries: a linear scan is fastest. (Children by pointer: clang before 16, which builds
    // the fuzz targets, rejects a std::pair holding this still incomplete type by value.)
    std::vector<std::pair<std::string, std::unique_ptr<Node>>> children;  ///< named members
    std::unique_ptr<Node> any;                                            ///< the "*" child
  };
  /// The trie's root (keep_all when everything is kept).
  const Node& root() const { return *root_; }

 private:
  std::shared_ptr<const Node> root_ = std::make_shared<const Node>(Node{true, {}, nullptr});
};

/// A projection that keeps everything, shared (its trie is built once).
const JsonProjection& keep_everything();

/// The whole of a parsed simdjson element as an nlohmann value (duplicate keys: the last wins,
/// as in nlohmann_json and Go's encoding/json). Recursion follows the element's depth, which the
/// parser bounded.
nlohmann::json json_of(const simdjson::dom::element& element);

/// The parts of `element` that `node` keeps (see JsonProjection).
nlohmann::json project_element(const simdjson::dom::element& element,
                               const JsonProjection::Node& node);

/// Parses JSON texts one after another into projected nlohmann trees, reusing one simdjson
/// parser's buffers. Not thread-safe: one per reader.
class ProjectingParser {
 public:
  /// Buffers grow to the largest text seen up to `max_retained_bytes`; a larger text (a rare
  /// 1 MB ConfigMap in a watch that lasts minutes) is parsed with them and they are freed after
  /// it, so it pins nothing.
  explicit ProjectingParser(std::size_t max_retained_bytes = kDefaultMaxRetainedBytes);
  /// Default for max_retained_bytes: a pod with its status is a few KB, a review ~20 KB.
  static constexpr std::size_t kDefaultMaxRetainedBytes = 256 * 1024;
  ~ProjectingParser();
  ProjectingParser(const ProjectingParser&) = delete;
  ProjectingParser& operator=(const ProjectingParser&) = delete;

  /// Parses `text` and keeps what `projection` names. `readable_padding` is how many bytes past
  /// the text's end may be read (not written): with 64 or more (simdjson's padding) the text is
  /// parsed in place, else copied first. A valid text simdjson refuses for an integer beyond 64
  /// bits is parsed by nlohmann instead (such a number becomes a double, as nlohmann reads it),
  /// within the same nesting limit (1,024). The error says why the text is not valid JSON.
  base::Result<nlohmann::json, std::string> parse(std::string_view text,
                                                  std::size_t readable_padding,
                                                  const JsonProjection& projection);

  /// The text size the buffers are allocated for now (0 before a parse and after a large one).
  std::size_t retained_capacity() const;

 private:
  std::unique_ptr<simdjson::dom::parser> parser_;
  std::size_t max_retained_bytes_;
};

}  // namespace vscaler::kube

// Which nodes a float32 -> float16/bfloat16 conversion leaves in float32 (`--keep-fp32`).
//
// An entry is one of:
//   re:PATTERN   a regular expression (ECMAScript) searched in node names: re:^encoder/.*/Softmax
//   op:TYPE      an op type, even one ONNX does not define (a custom op)
//   node:NAME    a node name, even one spelled like an ONNX op type
//   @PATH        a file of entries, one a line; '#' at the start of a line or after a blank starts
//                a comment; blank lines are skipped; files do not include other files
//   NAME         an op type when ONNX defines an operator of that name (any domain, any version),
//                otherwise a node name
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

namespace parity::onnx {

class PrecisionKeepList {
 public:
  enum class Kind { kOpType, kNodeName, kNodeNamePattern };
  struct Entry {
    Kind kind;
    std::string text;    // the op type, node name or pattern, without its prefix
    std::string origin;  // "--keep-fp32" or "file:line", for messages
    bool is_default = false;
    std::regex pattern;  // kNodeNamePattern only
    bool matched = false;
  };

  // Op types kept in float32 unless --no-default-keep: reductions and normalizations whose sums
  // overflow or lose too much in 16 bits, and the elementwise ops whose results leave float16's
  // range for ordinary inputs (docs/reduced-precision.md says why each is there).
  static const std::vector<std::string>& default_op_types();

  // Adds one --keep-fp32 value (see the file comment). Throws InvalidInputError for an unreadable
  // @file, an empty entry, a nested @file or an invalid pattern, naming the entry and its origin.
  void add(std::string_view entry, const std::string& origin = "--keep-fp32");
  void add_all(const std::vector<std::string>& entries);
  void add_default_op_types();

  // Whether some entry keeps the node; every entry matching it is marked matched.
  bool matches(const ::onnx::NodeProto& node);
  // Whether some entry keeps the node, without marking anything.
  bool would_match(const ::onnx::NodeProto& node) const;

  // User entries (not the default list) that matched no node, after the conversion.
  std::vector<const Entry*> unmatched() const;
  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

  // "op type 'Softmax'", "node 'conv1'", "pattern 're:^enc'" (+ " (keep.txt:3)" from a file).
  static std::string describe(const Entry& entry);

 private:
  void add_one(std::string_view entry, const std::string& origin, bool is_default);
  static bool entry_matches(const Entry& entry, const ::onnx::NodeProto& node);
  std::vector<Entry> entries_;
};

}  // namespace parity::onnx

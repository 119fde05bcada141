// --keep-fp32 entries: op types, node names, node-name patterns and @files of them.
#include "parity/onnx/precision_keep_list.h"

#include <fstream>

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include "parity/core/error.h"

namespace parity::onnx {

namespace {

std::string_view trim(std::string_view text) {
  const char* blanks = " \t\r\n";
  std::size_t first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  std::size_t last = text.find_last_not_of(blanks);
  return text.substr(first, last - first + 1);
}

// Whether ONNX defines an operator of this name in any of its domains, at any version.
bool is_onnx_op_type(const std::string& name) {
  for (const char* domain : {"", "ai.onnx.ml", "ai.onnx.preview.training"})
    if (::onnx::OpSchemaRegistry::Schema(name, domain) != nullptr) return true;
  return false;
}

// The line without its comment: '#' at the start or after a blank begins one.
std::string_view strip_comment(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return line.substr(0, i);
  return line;
}

}  // namespace

const std::vector<std::string>& PrecisionKeepList::default_op_types() {
  static const std::vector<std::string> ops = {
      // Sums over many elements: the running sum overflows float16 long before the mean or norm
      // would, and its rounding error grows with the length.
      "ReduceSum", "ReduceSumSquare", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
      "ReduceLogSumExp", "CumSum",
      // Normalizations and softmax: a variance (a sum of squares) overflows once |x| > 256, and
      // subtracting the mean cancels the few bits float16 keeps.
      "LayerNormalization", "GroupNormalization", "InstanceNormalization", "MeanVarianceNormalization",
      "LpNormalization", "Softmax", "LogSoftmax",
      // Elementwise results beyond 65504 for ordinary inputs: exp(x) for x > 11.1, x^p.
      "Exp", "Pow"};
  return ops;
}

void PrecisionKeepList::add(std::string_view entry, const std::string& origin) {
  entry = trim(entry);
  if (entry.starts_with('@')) {
    const std::string path(trim(entry.substr(1)));
    std::ifstream file(path);
    if (path.empty() || !file) raise<FileError>("{}: cannot read the keep list '{}'", origin, path);
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
      std::string_view text = trim(strip_comment(line));
      if (text.empty()) continue;
      const std::string where = fmt::format("{}:{}", path, number);
      if (text.starts_with('@')) raise<InvalidInputError>("{}: a keep list cannot include another ('{}')", where, text);
      add_one(text, where, false);
    }
    return;
  }
  add_one(entry, origin, false);
}

void PrecisionKeepList::add_all(const std::vector<std::string>& entries) {
  for (const auto& entry : entries) add(entry);
}

void PrecisionKeepList::add_default_op_types() {
  for (const auto& op : default_op_types()) add_one("op:" + op, "the default keep list", true);
}

void PrecisionKeepList::add_one(std::string_view text, const std::string& origin, bool is_default) {
  text = trim(text);
  Entry entry;
  entry.origin = origin;
  entry.is_default = is_default;
  auto take = [&](std::string_view prefix) {
    if (!text.starts_with(prefix)) return false;
    entry.text = std::string(trim(text.substr(prefix.size())));
    return true;
  };
  if (take("re:")) {
    entry.kind = Kind::kNodeNamePattern;
    try {
      entry.pattern = std::regex(entry.text, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      raise<InvalidInputError>("{}: invalid regular expression '{}': {}", origin, entry.text, e.what());
    }
  } else if (take("op:")) {
    entry.kind = Kind::kOpType;
  } else if (take("node:")) {
    entry.kind = Kind::kNodeName;
  } else {
    entry.text = std::string(text);
    entry.kind = is_onnx_op_type(entry.text) ? Kind::kOpType : Kind::kNodeName;
  }
  if (entry.text.empty()) raise<InvalidInputError>("{}: empty keep-list entry '{}'", origin, text);
  entries_.push_back(std::move(entry));
}

bool PrecisionKeepList::entry_matches(const Entry& entry, const ::onnx::NodeProto& node) {
  switch (entry.kind) {
    case Kind::kOpType:
      return node.op_type() == entry.text;
    case Kind::kNodeName:
      return !node.name().empty() && node.name() == entry.text;
    case Kind::kNodeNamePattern:
      return !node.name().empty() && std::regex_search(node.name(), entry.pattern);
  }
  return false;
}

bool PrecisionKeepList::matches(const ::onnx::NodeProto& node) {
  bool any = false;
  for (auto& entry : entries_)
    if (entry_matches(entry, node)) any = entry.matched = true;
  return any;
}

bool PrecisionKeepList::would_match(const ::onnx::NodeProto& node) const {
  for (const auto& entry : entries_)
    if (entry_matches(entry, node)) return true;
  return false;
}

std::vector<const PrecisionKeepList::Entry*> PrecisionKeepList::unmatched() const {
  std::vector<const Entry*> found;
  for (const auto& entry : entries_)
    if (!entry.is_default && !entry.matched) found.push_back(&entry);
  return found;
}

std::string PrecisionKeepList::describe(const Entry& entry) {
  std::string what;
  switch (entry.kind) {
    case Kind::kOpType: what = fmt::format("op type '{}'", entry.text); break;
    case Kind::kNodeName: what = fmt::format("node '{}'", entry.text); break;
    case Kind::kNodeNamePattern: what = fmt::format("pattern 're:{}'", entry.text); break;
  }
  if (entry.origin != "--keep-fp32") what += fmt::format(" ({})", entry.origin);
  return what;
}

}  // namespace parity::onnx

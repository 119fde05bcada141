// StringSplit: splits each string on a delimiter (or on runs of whitespace when the delimiter
// is empty or absent, leading/trailing whitespace removed), at most `maxsplit` times. An empty
// string gives no substrings.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (true) {
    while (i < n && is_space(s[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      std::size_t end = n;  // the rest, without its trailing whitespace
      while (end > i && is_space(s[end - 1])) --end;
      parts.emplace_back(s.substr(i, end - i));
      break;
    }
    std::size_t j = i;
    while (j < n && !is_space(s[j])) ++j;
    parts.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return parts;
}

std::vector<std::string> split_delimiter(std::string_view s, std::string_view delim, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (s.empty()) return parts;  // an empty string has no substrings (as onnxruntime does)
  std::size_t start = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) break;
    std::size_t pos = s.find(delim, start);
    if (pos == std::string_view::npos) break;
    parts.emplace_back(s.substr(start, pos - start));
    start = pos + delim.size();
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

void string_split(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kString) ctx.fail("input must be a string tensor, found {}", dtype_name(x.dtype()));
  const std::string delim = ctx.attr_string("delimiter", std::string());
  const int64_t maxsplit = ctx.has_attribute("maxsplit") ? ctx.attr_int("maxsplit") : -1;
  if (ctx.has_attribute("maxsplit") && maxsplit < 0) ctx.fail("maxsplit must be >= 0, found {}", maxsplit);
  const auto* in = x.data<std::string>();
  std::vector<std::vector<std::string>> parts(static_cast<std::size_t>(x.size()));
  std::size_t widest = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    parts[i] = delim.empty() ? split_whitespace(in[i], maxsplit) : split_delimiter(in[i], delim, maxsplit);
    widest = std::max(widest, parts[i].size());
  }
  Shape shape = x.shape();
  shape.push_back(static_cast<int64_t>(widest));
  Tensor& y = ctx.allocate_output(0, DType::kString, shape);
  Tensor& z = ctx.allocate_output(1, DType::kInt64, x.shape());
  auto* py = y.mutable_data<std::string>();
  auto* pz = z.mutable_data<int64_t>();
  for (int64_t i = 0; i < x.size(); ++i) {
    pz[i] = static_cast<int64_t>(parts[i].size());
    for (std::size_t k = 0; k < parts[i].size(); ++k) py[i * static_cast<int64_t>(widest) + k] = std::move(parts[i][k]);
  }
}

}  // namespace

PARITY_KERNEL("", "StringSplit", 20, string_split);

}  // namespace parity::ops

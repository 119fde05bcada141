// RegexFullMatch: whether each string matches the pattern in full. The pattern is RE2 syntax;
// std::regex's ECMAScript grammar accepts the common subset (classes, \w \W \d \s \b, groups,
// alternation, counted repetition).
#include <regex>
#include <string>

#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

void regex_full_match(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kString) ctx.fail("input must be a string tensor, found {}", dtype_name(x.dtype()));
  const std::string pattern = ctx.attr_string("pattern");
  // libstdc++'s default (backtracking) matcher recurses once per input character and overflows
  // the stack on long strings; its polynomial (breadth-first) mode does not, and RE2 has no
  // back-references anyway. Fall back to the default mode only if the pattern needs it.
  std::regex re;
  try {
#ifdef __GLIBCXX__
    re = std::regex(pattern, std::regex::ECMAScript | std::regex_constants::__polynomial);
#else
    re = std::regex(pattern, std::regex::ECMAScript);
#endif
  } catch (const std::regex_error&) {
    try {
      re = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      ctx.unsupported("pattern '{}' is not supported: {}", pattern, e.what());
    }
  }
  Tensor& y = ctx.allocate_output(0, DType::kBool, x.shape());
  const auto* in = x.data<std::string>();
  bool* out = y.mutable_data<bool>();
  for (int64_t i = 0; i < x.size(); ++i) {
    try {
      out[i] = std::regex_match(in[i], re);
    } catch (const std::regex_error& e) {
      ctx.fail("matching element {} failed: {}", i, e.what());
    }
  }
}

}  // namespace

PARITY_KERNEL("", "RegexFullMatch", 20, regex_full_match);

}  // namespace parity::ops

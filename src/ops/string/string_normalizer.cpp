// StringNormalizer: removes stopwords (case-sensitively or not), then changes case. Case mapping
// is Unicode-aware through the C.UTF-8 locale when available (ASCII otherwise); 'locale' is
// accepted but only the en_US behaviour is implemented.
#include <clocale>
#include <cwctype>
#include <locale.h>
#include <string>
#include <unordered_set>
#include <vector>

#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

locale_t utf8_locale() {
  static locale_t loc = [] {
    locale_t l = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
    if (!l) l = newlocale(LC_CTYPE_MASK, "en_US.UTF-8", static_cast<locale_t>(0));
    return l;
  }();
  return loc;
}

// Decodes one UTF-8 code point at s[i]; returns false (and consumes one byte) on malformed input.
bool decode_utf8(const std::string& s, std::size_t& i, char32_t& cp) {
  const auto c0 = static_cast<unsigned char>(s[i]);
  int len = c0 < 0x80 ? 1 : (c0 >> 5) == 0x6 ? 2 : (c0 >> 4) == 0xE ? 3 : (c0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + static_cast<std::size_t>(len) > s.size()) {
    ++i;
    return false;
  }
  cp = len == 1 ? c0 : len == 2 ? (c0 & 0x1F) : len == 3 ? (c0 & 0x0F) : (c0 & 0x07);
  for (int k = 1; k < len; ++k) {
    const auto ck = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((ck >> 6) != 0x2) {
      ++i;
      return false;
    }
    cp = (cp << 6) | (ck & 0x3F);
  }
  i += static_cast<std::size_t>(len);
  return true;
}

void encode_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string change_case(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  locale_t loc = utf8_locale();
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t start = i;
    char32_t cp = 0;
    if (!decode_utf8(s, i, cp)) {
      out.append(s, start, i - start);  // malformed bytes pass through unchanged
      continue;
    }
    char32_t mapped = cp;
    if (loc) {
      mapped = static_cast<char32_t>(upper ? towupper_l(static_cast<wint_t>(cp), loc)
                                           : towlower_l(static_cast<wint_t>(cp), loc));
    } else if (cp < 0x80) {
      if (upper && cp >= 'a' && cp <= 'z') mapped = cp - 32;
      if (!upper && cp >= 'A' && cp <= 'Z') mapped = cp + 32;
    }
    encode_utf8(mapped, out);
  }
  return out;
}

void string_normalizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kString) ctx.fail("input must be a string tensor, found {}", dtype_name(x.dtype()));
  const bool two_dim = x.rank() == 2;
  if (!(x.rank() == 1 || (two_dim && x.shape()[0] == 1)))
    ctx.fail("input must have shape [C] or [1, C], found {}", shape_to_string(x.shape()));
  const std::string action = ctx.attr_string("case_change_action", std::string("NONE"));
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    ctx.fail("case_change_action must be NONE, LOWER or UPPER, found '{}'", action);
  const bool case_sensitive = ctx.attr_int("is_case_sensitive", int64_t{0}) != 0;
  std::unordered_set<std::string> stop;
  for (const std::string& w : ctx.attr_strings("stopwords")) stop.insert(case_sensitive ? w : change_case(w, false));

  const auto* in = x.data<std::string>();
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.size(); ++i) {
    if (!stop.empty() && stop.count(case_sensitive ? in[i] : change_case(in[i], false))) continue;
    if (action == "LOWER") kept.push_back(change_case(in[i], false));
    else if (action == "UPPER") kept.push_back(change_case(in[i], true));
    else kept.push_back(in[i]);
  }
  if (kept.empty()) kept.emplace_back();  // an all-stopword input gives one empty string
  const auto n = static_cast<int64_t>(kept.size());
  Tensor& y = ctx.allocate_output(0, DType::kString, two_dim ? Shape{1, n} : Shape{n});
  auto* out = y.mutable_data<std::string>();
  for (int64_t i = 0; i < n; ++i) out[i] = std::move(kept[static_cast<std::size_t>(i)]);
}

}  // namespace

PARITY_KERNEL("", "StringNormalizer", 10, string_normalizer);

}  // namespace parity::ops

#include "args/tensor_meta_parse.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "parity/core/error.h"

namespace parity::cli {
namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

std::vector<Dim> parse_shape_text(const std::string& raw, const std::string& option) {
  std::string text = trim(raw);
  if (text.size() < 2 || !((text.front() == '[' && text.back() == ']') || (text.front() == '(' && text.back() == ')')))
    raise<InvalidInputError>("{}: cannot parse shape '{}': expected a bracketed list such as [1,3,224,224]", option,
                             raw);
  std::string body = text.substr(1, text.size() - 2);
  std::vector<Dim> dims;
  if (trim(body).empty()) return dims;
  std::size_t start = 0;
  while (true) {
    auto comma = body.find(',', start);
    std::string item = trim(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!item.empty() && (item.front() == '\'' || item.front() == '"')) {
      if (item.size() < 2 || item.back() != item.front())
        raise<InvalidInputError>("{}: unterminated quote in shape '{}'", option, raw);
      item = item.substr(1, item.size() - 2);
      dims.push_back(Dim::named(item));
    } else if (item.empty()) {
      if (comma == std::string::npos && !dims.empty()) break;  // trailing comma, as in "(1,)"
      raise<InvalidInputError>("{}: empty dimension in shape '{}'", option, raw);
    } else {
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(item.c_str(), &end, 10);
      const bool numeric = std::isdigit(static_cast<unsigned char>(item.front())) || item.front() == '-' ||
                           item.front() == '+' || item.front() == '.';
      if (end && *end == '\0' && errno == 0) {
        if (v < -1)
          raise<InvalidInputError>("{}: negative dimension {} in shape '{}' (-1, ? or None is a dynamic one)", option,
                                   item, raw);
        if (v < 0) dims.push_back(Dim::unknown());
        else dims.push_back(Dim::fixed(v));
      } else if (numeric) {
        // A number that is not an int64 ("1e9", "2.5", "99999999999999999999") is no dimension name.
        raise<InvalidInputError>("{}: dimension '{}' in shape '{}' is not an integer from -1 to {}", option, item,
                                 raw, INT64_MAX);
      } else if (item == "?" || item == "None") {
        dims.push_back(Dim::unknown());
      } else {
        if (item.find_first_of("[]()'\"") != std::string::npos)
          raise<InvalidInputError>("{}: cannot parse dimension '{}' in shape '{}'", option, item, raw);
        dims.push_back(Dim::named(item));
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return dims;
}

ParsedTensorArg parse_tensor_arg(const std::string& text, bool has_shape, bool has_dtype, const std::string& option) {
  ParsedTensorArg parsed;
  std::string rest = text;
  auto pop = [&](const char* what) -> std::string {
    auto colon = rest.rfind(':');
    if (colon == std::string::npos)
      raise<InvalidInputError>("{}: '{}' has no {} part (expected name{}{})", option, text, what,
                               has_shape ? ":shape" : "", has_dtype ? ":dtype" : "");
    std::string value = trim(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    return value;
  };
  if (has_dtype) {
    std::string value = pop("dtype");
    if (value != "auto") {
      try {
        parsed.dtype = dtype_from_name(value);
      } catch (const Error& e) {
        raise<InvalidInputError>("{}: unknown dtype '{}' in '{}'", option, value, text);
      }
    }
  }
  if (has_shape) {
    // The shape is bracketed and may itself contain no ':'; find its opening bracket.
    auto colon = rest.rfind(':');
    if (colon == std::string::npos)
      raise<InvalidInputError>("{}: '{}' has no shape part (expected name:shape{})", option, text,
                               has_dtype ? ":dtype" : "");
    std::string value = trim(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (value != "auto") parsed.shape = parse_shape_text(value, option);
  }
  parsed.name = rest;
  if (parsed.name.empty()) raise<InvalidInputError>("{}: '{}' has an empty tensor name", option, text);
  return parsed;
}

TensorMetadata parse_input_shapes(const std::vector<std::string>& args, const std::string& option) {
  TensorMetadata meta;
  for (const auto& a : args) {
    auto parsed = parse_tensor_arg(a, /*has_shape=*/true, /*has_dtype=*/false, option);
    if (!parsed.shape) raise<InvalidInputError>("{}: '{}' needs a shape, not auto", option, a);
    meta.add(parsed.name, DType::kUndefined, parsed.shape);
  }
  return meta;
}

std::vector<std::pair<std::string, std::pair<double, double>>> parse_val_ranges(const std::vector<std::string>& args,
                                                                               const std::string& option) {
  std::vector<std::pair<std::string, std::pair<double, double>>> ranges;
  for (const auto& raw : args) {
    auto open = raw.rfind('[');
    if (open == std::string::npos || raw.back() != ']')
      raise<InvalidInputError>("{}: cannot parse '{}': expected [min,max] or name:[min,max]", option, raw);
    std::string name = open == 0 ? "" : raw.substr(0, open);
    if (!name.empty()) {
      if (name.back() != ':') raise<InvalidInputError>("{}: cannot parse '{}': expected name:[min,max]", option, raw);
      name.pop_back();
    }
    std::string body = raw.substr(open + 1, raw.size() - open - 2);
    auto comma = body.find(',');
    if (comma == std::string::npos)
      raise<InvalidInputError>("{}: cannot parse '{}': expected two numbers, [min,max]", option, raw);
    auto number = [&](const std::string& text) {
      std::string t = trim(text);
      char* end = nullptr;
      errno = 0;
      double v = std::strtod(t.c_str(), &end);
      if (t.empty() || !end || *end != '\0' || errno != 0)
        raise<InvalidInputError>("{}: cannot parse '{}' in '{}' as a number", option, t, raw);
      return v;
    };
    ranges.emplace_back(name, std::make_pair(number(body.substr(0, comma)), number(body.substr(comma + 1))));
  }
  return ranges;
}

int64_t parse_num_bytes(const std::string& raw, const std::string& option) {
  std::string text = trim(raw);
  double multiplier = 1;
  if (!text.empty()) {
    char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    if (last == 'K') multiplier = 1 << 10;
    if (last == 'M') multiplier = 1 << 20;
    if (last == 'G') multiplier = 1 << 30;
    if (multiplier != 1) text.pop_back();
  }
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || !end || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0)
    raise<InvalidInputError>("{}: cannot convert '{}' to a number of bytes (use e.g. 16000000, 16e6 or 16M)", option,
                             raw);
  return static_cast<int64_t>(v * multiplier);
}

}  // namespace parity::cli

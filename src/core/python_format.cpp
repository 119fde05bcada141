#include "parity/core/python_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include <fmt/format.h>

#include "parity/core/half.h"

namespace parity {

std::string format_g(double value, int precision) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // printf's "%.*g", as the standard defines this overload of to_chars, at a fifth of the cost
  // (every statistics line formats about forty numbers).
  char buffer[64];
  const std::to_chars_result written =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, precision);
  if (written.ec == std::errc()) return std::string(buffer, written.ptr);
  std::string text(static_cast<std::size_t>(std::snprintf(nullptr, 0, "%.*g", precision, value)), '\0');
  std::snprintf(text.data(), text.size() + 1, "%.*g", precision, value);
  return text;  // a precision too long for the buffer
}

namespace {

// The shortest round-tripping decimal digits of a value and its decimal exponent:
// value = 0.d1d2d3... * 10^(exponent + 1), i.e. d1.d2d3... * 10^exponent.
struct ShortestDigits {
  std::string digits;  // no leading zeros (except "0" for zero)
  int exponent = 0;
  bool negative = false;
};

template <typename Float>
ShortestDigits shortest_digits(Float value) {
  ShortestDigits out;
  out.negative = std::signbit(value);
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, std::fabs(value), std::chars_format::scientific);
  std::string text(buffer, result.ptr);
  auto e = text.find('e');
  std::string mantissa = text.substr(0, e);
  out.exponent = std::atoi(text.c_str() + e + 1);
  for (char c : mantissa)
    if (c != '.') out.digits += c;
  return out;
}

// Shortest digits for a float16 value: the fewest significant digits that convert back to the
// same half.
ShortestDigits shortest_digits_half(float value) {
  uint16_t bits = float_to_float16_bits(value);
  for (int precision = 1; precision <= 8; ++precision) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*e", precision - 1, static_cast<double>(std::fabs(value)));
    float back = static_cast<float>(std::strtod(buffer, nullptr));
    if ((float_to_float16_bits(back) & 0x7fff) == (bits & 0x7fff)) {
      ShortestDigits out;
      out.negative = std::signbit(value);
      std::string text(buffer);
      auto e = text.find('e');
      out.exponent = std::atoi(text.c_str() + e + 1);
      for (char c : text.substr(0, e))
        if (c != '.') out.digits += c;
      while (out.digits.size() > 1 && out.digits.back() == '0') out.digits.pop_back();
      return out;
    }
  }
  return shortest_digits(static_cast<double>(value));
}

}  // namespace

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  ShortestDigits d = shortest_digits(value);
  std::string out = d.negative ? "-" : "";
  const int n = static_cast<int>(d.digits.size());
  if (d.exponent >= -4 && d.exponent < 16) {
    if (d.exponent < 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-d.exponent - 1), '0');
      out += d.digits;
    } else if (d.exponent + 1 >= n) {
      out += d.digits;
      out.append(static_cast<std::size_t>(d.exponent + 1 - n), '0');
      out += ".0";
    } else {
      out += d.digits.substr(0, static_cast<std::size_t>(d.exponent + 1));
      out += '.';
      out += d.digits.substr(static_cast<std::size_t>(d.exponent + 1));
    }
    return out;
  }
  out += d.digits[0];
  if (n > 1) {
    out += '.';
    out += d.digits.substr(1);
  }
  out += fmt::format("e{}{:02d}", d.exponent < 0 ? '-' : '+', std::abs(d.exponent));
  return out;
}

std::string python_str_repr(std::string_view text) {
  bool has_single = text.find('\'') != std::string_view::npos;
  bool has_double = text.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == static_cast<unsigned char>(quote)) { out += '\\'; out += static_cast<char>(c); }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  out += quote;
  return out;
}

std::string python_list_repr(std::span<const std::string> items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += python_str_repr(items[i]);
  }
  return out + "]";
}

std::string python_tuple_repr(std::span<const int64_t> items) {
  if (items.size() == 1) return fmt::format("({},)", items[0]);
  std::string out = "(";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(items[i]);
  }
  return out + ")";
}

std::string pad_right(std::string_view text, std::size_t width) {
  std::string out(text);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

std::string pad_left(std::string_view text, std::size_t width) {
  std::string out;
  if (text.size() < width) out.append(width - text.size(), ' ');
  out += text;
  return out;
}

// ------------------------------------------------------------------------------------------------
// numpy's str(ndarray)
// ------------------------------------------------------------------------------------------------
namespace {

enum class FloatKind { kHalf, kSingle, kDouble };

// numpy's Dragon4 output in "unique" mode with a cutoff of `precision` digits (fractional digits in
// positional mode, digits after the first in scientific mode): the shortest round-tripping digits
// when they fit, otherwise the exact value correctly rounded at the cutoff.
ShortestDigits unique_digits(double value, FloatKind kind) {
  if (kind == FloatKind::kHalf) return shortest_digits_half(static_cast<float>(value));
  if (kind == FloatKind::kSingle) return shortest_digits(static_cast<float>(value));
  return shortest_digits(value);
}

// Digits of |value| rounded to `fraction_digits` decimals (positional), exactly, as a string
// "123.4500" (no sign).
std::string rounded_positional(double value, int fraction_digits) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.*f", fraction_digits, std::fabs(value));
  return buffer;
}

// dragon4_positional(x, precision=8, unique=True, fractional=True, trim='.') without padding:
// returns (integer part incl. sign, fraction part without the dot).
std::pair<std::string, std::string> positional_parts(double value, FloatKind kind, int precision) {
  std::string sign = std::signbit(value) ? "-" : "";
  std::string int_part, frac_part;
  ShortestDigits d = unique_digits(value, kind);
  int n = static_cast<int>(d.digits.size());
  int frac_digits_needed = (value == 0) ? 0 : std::max(0, n - 1 - d.exponent);
  if (frac_digits_needed <= precision) {
    if (value == 0) {
      int_part = "0";
    } else if (d.exponent < 0) {
      int_part = "0";
      frac_part = std::string(static_cast<std::size_t>(-d.exponent - 1), '0') + d.digits;
    } else if (d.exponent + 1 >= n) {
      int_part = d.digits + std::string(static_cast<std::size_t>(d.exponent + 1 - n), '0');
    } else {
      int_part = d.digits.substr(0, static_cast<std::size_t>(d.exponent + 1));
      frac_part = d.digits.substr(static_cast<std::size_t>(d.exponent + 1));
    }
  } else {
    std::string text = rounded_positional(value, precision);
    auto dot = text.find('.');
    int_part = text.substr(0, dot);
    frac_part = dot == std::string::npos ? "" : text.substr(dot + 1);
    while (!frac_part.empty() && frac_part.back() == '0') frac_part.pop_back();
  }
  return {sign + int_part, frac_part};
}

// dragon4_scientific(x, precision, unique=True, trim='.'): (mantissa integer digit incl. sign,
// fraction digits, exponent value).
struct ScientificParts {
  std::string int_part;
  std::string frac_part;
  int exponent = 0;
};

// printf's "%.*e" rendering of `value` with `precision` digits after the point (the exact decimal
// digits, rounded), split into its parts: "-1.2500e-03" -> {"-1", "2500", -3}.
ScientificParts printf_scientific_parts(double value, int precision) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, "%.*e", precision, std::fabs(value));
  std::string text(buffer);
  auto e = text.find('e');
  std::string mantissa = text.substr(0, e);
  ScientificParts parts;
  parts.exponent = std::atoi(text.c_str() + e + 1);
  parts.int_part = (std::signbit(value) ? "-" : "") + mantissa.substr(0, 1);
  parts.frac_part = mantissa.size() > 2 ? mantissa.substr(2) : "";
  return parts;
}

ScientificParts scientific_parts(double value, FloatKind kind, int precision) {
  ScientificParts out;
  std::string sign = std::signbit(value) ? "-" : "";
  if (value == 0) {
    out.int_part = sign + "0";
    return out;
  }
  ShortestDigits d = unique_digits(value, kind);
  if (static_cast<int>(d.digits.size()) - 1 <= precision) {
    out.int_part = sign + d.digits.substr(0, 1);
    out.frac_part = d.digits.substr(1);
    out.exponent = d.exponent;
  } else {
    out = printf_scientific_parts(value, precision);
    while (!out.frac_part.empty() && out.frac_part.back() == '0') out.frac_part.pop_back();
  }
  return out;
}

class FloatFormatter {
 public:
  FloatFormatter(const std::vector<double>& shown, FloatKind kind) : kind_(kind) {
    std::vector<double> finite;
    bool any_nonfinite = false, negative_inf = false;
    for (double v : shown) {
      if (std::isfinite(v)) finite.push_back(v);
      else {
        any_nonfinite = true;
        if (std::isinf(v) && v < 0) negative_inf = true;
      }
    }
    double max_val = 0, min_val = INFINITY;
    bool any_nonzero = false;
    for (double v : finite) {
      if (v == 0) continue;
      any_nonzero = true;
      max_val = std::max(max_val, std::fabs(v));
      min_val = std::min(min_val, std::fabs(v));
    }
    if (any_nonzero) {
      // 10 ** min(8, finfo(dtype).precision): float16 3, float32 6, float64 15.
      double cutoff = kind == FloatKind::kHalf ? 1e3 : kind == FloatKind::kSingle ? 1e6 : 1e8;
      if (max_val >= cutoff || min_val < 0.0001 || max_val / min_val > 1000.) exp_format_ = true;
    }
    if (finite.empty()) {
      pad_left_ = 0;
      pad_right_ = 0;
    } else if (exp_format_) {
      int max_exp_len = 0;
      std::size_t max_frac = 0, max_int = 0;
      for (double v : finite) {
        ScientificParts p = scientific_parts(v, kind_, kPrecision);
        max_frac = std::max(max_frac, p.frac_part.size());
        max_int = std::max(max_int, p.int_part.size());
        int exp_len = static_cast<int>(fmt::format("{:02d}", std::abs(p.exponent)).size());
        max_exp_len = std::max(max_exp_len, exp_len);
      }
      exp_size_ = max_exp_len;
      precision_ = static_cast<int>(max_frac);
      pad_left_ = max_int;
      pad_right_ = static_cast<std::size_t>(exp_size_ + 2 + precision_);
    } else {
      for (double v : finite) {
        auto [int_part, frac_part] = positional_parts(v, kind_, kPrecision);
        pad_left_ = std::max(pad_left_, int_part.size());
        pad_right_ = std::max(pad_right_, frac_part.size());
      }
    }
    if (any_nonfinite) {
      std::size_t offset = pad_right_ + 1;
      std::size_t nan_need = 3 > offset ? 3 - offset : 0;
      std::size_t inf_len = 3 + (negative_inf ? 1 : 0);
      std::size_t inf_need = inf_len > offset ? inf_len - offset : 0;
      pad_left_ = std::max({pad_left_, nan_need, inf_need});
    }
  }

  std::string operator()(double v) const {
    if (!std::isfinite(v)) {
      std::string text = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
      return pad_left(text, pad_left_ + pad_right_ + 1);
    }
    if (exp_format_) {
      ScientificParts p = scientific_parts(v, kind_, precision_);
      std::string frac = p.frac_part;
      if (static_cast<int>(frac.size()) < precision_ && v != 0) {
        // numpy prints min_digits=precision digits here: the value's exact digits past the
        // shortest ones (Dragon4), not zeros: float32 0.417022 -> 4.17021990e-01.
        p = printf_scientific_parts(v, precision_);
        frac = p.frac_part;
      }
      if (static_cast<int>(frac.size()) < precision_)
        frac.append(static_cast<std::size_t>(precision_) - frac.size(), '0');
      std::string exp_digits = std::to_string(std::abs(p.exponent));
      if (static_cast<int>(exp_digits.size()) < exp_size_)
        exp_digits.insert(0, static_cast<std::size_t>(exp_size_) - exp_digits.size(), '0');
      return pad_left(p.int_part, pad_left_) + "." + frac + "e" + (p.exponent < 0 ? "-" : "+") + exp_digits;
    }
    auto [int_part, frac_part] = positional_parts(v, kind_, kPrecision);
    return pad_left(int_part, pad_left_) + "." + pad_right(frac_part, pad_right_);
  }

 private:
  static constexpr int kPrecision = 8;
  FloatKind kind_;
  bool exp_format_ = false;
  int precision_ = kPrecision;
  int exp_size_ = -1;
  std::size_t pad_left_ = 0;
  std::size_t pad_right_ = 0;
};

std::string integer_text(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kInt8: return std::to_string(t.data<int8_t>()[i]);
    case DType::kInt16: return std::to_string(t.data<int16_t>()[i]);
    case DType::kInt32: return std::to_string(t.data<int32_t>()[i]);
    case DType::kInt64: return std::to_string(t.data<int64_t>()[i]);
    case DType::kUInt8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::kUInt16: return std::to_string(t.data<uint16_t>()[i]);
    case DType::kUInt32: return std::to_string(t.data<uint32_t>()[i]);
    case DType::kUInt64: return std::to_string(t.data<uint64_t>()[i]);
    default: return "?";
  }
}

double float_value(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return float16_bits_to_float(t.data<uint16_t>()[i]);
    case DType::kBFloat16: return bfloat16_bits_to_float(t.data<uint16_t>()[i]);
    default: return NAN;
  }
}

// Flat indices numpy shows: all of them, or, above 1000 elements, 3 leading and 3 trailing items
// along every axis.
bool index_shown(const Shape& shape, int64_t flat, bool summarise, int64_t edge = 3) {
  // numpy formats the summarised array a[:edge] + a[-edge:]; with edge 0, a[-0:] is all of it.
  if (!summarise || edge == 0) return true;
  for (int64_t axis = static_cast<int64_t>(shape.size()) - 1; axis >= 0; --axis) {
    int64_t dim = shape[static_cast<std::size_t>(axis)];
    int64_t coordinate = flat % dim;
    flat /= dim;
    if (dim > 2 * edge && coordinate >= edge && coordinate < dim - edge) return false;
  }
  return true;
}

struct ArrayPrinter {
  const Shape& shape;
  std::function<std::string(int64_t)> element;  // formatted element at a flat index
  bool summarise;
  std::size_t line_width = 75;
  std::vector<int64_t> strides;
  int64_t edge = 3;

  void extend_line(std::string& s, std::string& line, const std::string& word, std::size_t width,
                   const std::string& next_line_prefix) const {
    bool needs_wrap = line.size() + word.size() > width;
    if (line.size() <= next_line_prefix.size()) needs_wrap = false;
    if (needs_wrap) {
      std::size_t end = line.find_last_not_of(' ');
      s += (end == std::string::npos ? std::string() : line.substr(0, end + 1)) + "\n";
      line = next_line_prefix;
    }
    line += word;
  }

  std::string recurse(std::size_t axis, int64_t offset, const std::string& hanging_indent,
                      std::size_t current_width) const {
    std::size_t axes_left = shape.size() - axis;
    if (axes_left == 0) return element(offset);
    std::string next_hanging_indent = hanging_indent + " ";
    std::size_t next_width = current_width - 1;
    int64_t length = shape[axis];
    bool show_summary = summarise && length > 2 * edge;
    int64_t leading = show_summary ? edge : 0;
    int64_t trailing = show_summary ? edge : length;
    std::string s;
    auto child = [&](int64_t index) {
      return recurse(axis + 1, offset + index * strides[axis], next_hanging_indent, next_width);
    };
    if (axes_left == 1) {
      std::size_t element_width = current_width - 1;
      std::string line = hanging_indent;
      for (int64_t i = 0; i < leading; ++i) {
        extend_line(s, line, child(i), element_width, hanging_indent);
        line += " ";
      }
      if (show_summary) {
        extend_line(s, line, "...", element_width, hanging_indent);
        line += " ";
      }
      for (int64_t i = trailing; i > 1; --i) {
        extend_line(s, line, child(length - i), element_width, hanging_indent);
        line += " ";
      }
      extend_line(s, line, child(length - 1), element_width, hanging_indent);
      s += line;
    } else {
      std::string line_separator(axes_left - 1, '\n');
      for (int64_t i = 0; i < leading; ++i) s += hanging_indent + child(i) + line_separator;
      if (show_summary) s += hanging_indent + "..." + line_separator;
      for (int64_t i = trailing; i > 1; --i) s += hanging_indent + child(length - i) + line_separator;
      s += hanging_indent + child(length - 1);
    }
    return "[" + s.substr(hanging_indent.size()) + "]";
  }
};

}  // namespace

std::string numpy_array_str(const TensorView& t) { return numpy_array_str(t, NumpyPrintOptions{}); }

std::string numpy_array_str(const TensorView& t, const NumpyPrintOptions& options) {
  const int64_t edge = options.edgeitems < 0 ? (int64_t{1} << 40) : options.edgeitems;
  const std::size_t line_width = options.linewidth < 0 ? (std::numeric_limits<std::size_t>::max() / 4)
                                                       : static_cast<std::size_t>(options.linewidth);
  const Shape& shape = t.shape();
  const int64_t n = t.size();
  const DType dtype = t.dtype();
  const bool is_float = dtype == DType::kFloat32 || dtype == DType::kFloat64 ||
                        dtype == DType::kFloat16 || dtype == DType::kBFloat16;
  const bool is_bool = dtype == DType::kBool;
  const bool is_int = is_integer(dtype) && !is_packed(dtype);
  if (!is_float && !is_bool && !is_int) return fmt::format("<{} values of {}>", n, dtype_name(dtype));
  FloatKind kind = dtype == DType::kFloat64 ? FloatKind::kDouble
                   : dtype == DType::kFloat16 ? FloatKind::kHalf : FloatKind::kSingle;

  if (shape.empty()) {  // 0-d: str() of the scalar
    if (is_bool) return t.data<uint8_t>()[0] ? "True" : "False";
    if (is_int) return integer_text(t, 0);
    double v = float_value(t, 0);
    if (kind == FloatKind::kDouble) return python_float_repr(v);
    if (!std::isfinite(v)) return python_float_repr(v);
    ShortestDigits d = unique_digits(v, kind);
    // numpy scalars print like Python floats, with their own type's shortest digits.
    std::string digits = d.digits;
    double reparsed = std::strtod((std::string(d.negative ? "-" : "") + digits.substr(0, 1) + "." +
                                   digits.substr(1) + "e" + std::to_string(d.exponent)).c_str(), nullptr);
    return python_float_repr(reparsed);
  }
  if (n == 0) return "[]";

  const bool summarise = n > 1000;
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t axis = static_cast<int64_t>(shape.size()) - 2; axis >= 0; --axis)
    strides[static_cast<std::size_t>(axis)] =
        strides[static_cast<std::size_t>(axis) + 1] * shape[static_cast<std::size_t>(axis) + 1];

  std::function<std::string(int64_t)> element;
  std::vector<std::string> cache;
  if (is_bool) {
    element = [&](int64_t i) { return std::string(t.data<uint8_t>()[i] ? " True" : "False"); };
  } else if (is_int) {
    std::size_t width = 0;
    for (int64_t i = 0; i < n; ++i)
      if (index_shown(shape, i, summarise, edge)) width = std::max(width, integer_text(t, i).size());
    element = [&t, width](int64_t i) { return pad_left(integer_text(t, i), width); };
  } else {
    std::vector<double> shown;
    for (int64_t i = 0; i < n; ++i)
      if (index_shown(shape, i, summarise, edge)) shown.push_back(float_value(t, i));
    auto formatter = std::make_shared<FloatFormatter>(shown, kind);
    element = [&t, formatter](int64_t i) { return (*formatter)(float_value(t, i)); };
  }
  ArrayPrinter printer{shape, element, summarise, line_width, strides, edge};
  return printer.recurse(0, 0, " ", line_width);
}

std::string numpy_array_str_of_elements(const Shape& shape, const std::function<std::string(int64_t)>& element) {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  if (shape.empty()) return element(0);
  if (n == 0) return "[]";
  std::vector<int64_t> strides(shape.size(), 1);
  for (std::size_t axis = shape.size() - 1; axis-- > 0;) strides[axis] = strides[axis + 1] * shape[axis + 1];
  ArrayPrinter printer{shape, element, n > 1000, 75, strides, 3};
  return printer.recurse(0, 0, " ", 75);
}

}  // namespace parity

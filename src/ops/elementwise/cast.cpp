// Cast and CastLike between every ONNX element type: float / double / float16 / bfloat16, all
// integer widths, bool, string, the float8 kinds (with `saturate`), FLOAT8E8M0 (`round_mode`),
// the packed int4 / uint4 / int2 / uint2 / float4 and float6 types.
//
// Every conversion rounds once: exotic sources are first decoded exactly (float8 -> float,
// int4 -> int8), then converted from the exact value. Rules:
//   float -> int: truncation toward zero, then wrap-around to the target width (NaN and values
//                 outside int64 are undefined by ONNX; they give INT64_MIN before wrapping).
//   int -> int:   wrap-around (two's complement), e.g. 200 (int16) -> -56 (int8).
//   x -> bool:    x != 0 (NaN -> true).
//   x -> string:  like numpy's str(): shortest round-trip digits of the source type, positional
//                 for 1e-4 <= |x| < 1e16 (1e6 for float32, 1e3 for float16), scientific otherwise;
//                 bools as True / False.
//   string -> x:  decimal or scientific notation, INF / +INF / -INF / NaN (any case); to an
//                 integer type, a fractional value is truncated.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

#include "elementwise/elementwise_util.h"

namespace parity::ops {
namespace {

using namespace elementwise;

struct CastOptions {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::kUp;
};

// ---- packed sub-byte elements (LSB first within each byte, as TensorProto stores them) ----

inline uint32_t get_bits(const uint8_t* data, int64_t index, int bits) {
  uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(bits);
  uint64_t byte = bit / 8, offset = bit % 8;
  uint32_t value = data[byte] >> offset;
  if (offset + static_cast<uint64_t>(bits) > 8) value |= static_cast<uint32_t>(data[byte + 1]) << (8 - offset);
  return value & ((1u << bits) - 1);
}

// `data` must be zeroed first.
inline void put_bits(uint8_t* data, int64_t index, int bits, uint32_t value) {
  value &= (1u << bits) - 1;
  uint64_t bit = static_cast<uint64_t>(index) * static_cast<uint64_t>(bits);
  uint64_t byte = bit / 8, offset = bit % 8;
  data[byte] = static_cast<uint8_t>(data[byte] | ((value << offset) & 0xFF));
  if (offset + static_cast<uint64_t>(bits) > 8)
    data[byte + 1] = static_cast<uint8_t>(data[byte + 1] | (value >> (8 - offset)));
}

bool is_packed_int(DType dtype) {
  return dtype == DType::kInt4 || dtype == DType::kUInt4 || dtype == DType::kInt2 || dtype == DType::kUInt2;
}
bool is_exotic_float(DType dtype) { return is_minifloat(dtype) || dtype == DType::kFloat8E8M0; }

// Element i of an exotic float tensor, exactly.
inline float exotic_float_at(const uint8_t* data, int64_t i, DType dtype) {
  if (dtype == DType::kFloat8E8M0) return e8m0_to_float(data[i]);
  int bits = dtype_bits(dtype);
  if (bits == 8) return minifloat_to_float(data[i], dtype);
  return minifloat_to_float(static_cast<uint8_t>(get_bits(data, i, bits)), dtype);
}

// An exotic source decoded into a standard tensor holding the same values exactly: float8 /
// float4 / float6 -> float32, int4 / int2 -> int8, uint4 / uint2 -> uint8.
Tensor decode_exotic(const KernelContext& ctx, const Tensor& in) {
  DType src = in.dtype();
  const auto* data = static_cast<const uint8_t*>(in.raw());
  const int64_t n = in.size();
  if (is_exotic_float(src)) {
    Tensor out = Tensor::zeros(DType::kFloat32, in.shape(), ctx.limits().max_elements);
    float* po = out.mutable_data<float>();
    for (int64_t i = 0; i < n; ++i) po[i] = exotic_float_at(data, i, src);
    return out;
  }
  const int bits = dtype_bits(src);
  const bool is_signed = src == DType::kInt4 || src == DType::kInt2;
  Tensor out = Tensor::zeros(is_signed ? DType::kInt8 : DType::kUInt8, in.shape(), ctx.limits().max_elements);
  auto* po = out.mutable_data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    uint32_t v = get_bits(data, i, bits);
    if (is_signed) {
      int shift = 8 - bits;
      po[i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<uint8_t>(v << shift)) >> shift);
    } else {
      po[i] = static_cast<uint8_t>(v);
    }
  }
  return out;
}

// ---- numeric conversions ----

// An integer as a double rounded to odd at 53 bits, so that a second rounding to a narrower
// format (<= 51 significant bits) equals a single correct rounding.
template <typename I>
double int_to_double_odd(I value) {
  bool negative = false;
  uint64_t magnitude;
  if constexpr (std::is_signed_v<I>) {
    negative = value < 0;
    magnitude = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  } else {
    magnitude = static_cast<uint64_t>(value);
  }
  double result;
  if (magnitude < (uint64_t{1} << 53)) {
    result = static_cast<double>(magnitude);
  } else {
    int shift = 64 - std::countl_zero(magnitude) - 53;
    uint64_t high = magnitude >> shift;
    if (magnitude & ((uint64_t{1} << shift) - 1)) high |= 1;
    result = std::ldexp(static_cast<double>(high), shift);
  }
  return negative ? -result : result;
}

// The exact (or round-to-odd for huge ints) value of a non-string element as a double.
template <typename S>
double to_double(S x) {
  if constexpr (std::is_same_v<S, bool>) return x ? 1.0 : 0.0;
  else if constexpr (is_float_v<S>) return load<double>(x);
  else return int_to_double_odd(x);
}

// A non-string element as int64 (floats truncated) for packing into int4 / int2.
template <typename S>
int64_t to_int64(S x) {
  if constexpr (std::is_same_v<S, bool>) return x ? 1 : 0;
  else if constexpr (is_float_v<S>) return float_to_int<int64_t>(load<double>(x));
  else return static_cast<int64_t>(x);
}

template <typename T, typename S>
T cast_value(S x) {
  if constexpr (std::is_same_v<T, S>) {
    return x;
  } else if constexpr (std::is_same_v<T, bool>) {
    if constexpr (is_half_v<S>) return static_cast<float>(x) != 0.0f;
    else return x != S(0);
  } else if constexpr (std::is_same_v<S, bool>) {
    return convert<T>(static_cast<int>(x));
  } else if constexpr (is_half_v<T>) {
    if constexpr (std::is_same_v<S, float> || is_half_v<S>) return T(static_cast<float>(x));
    else if constexpr (std::is_same_v<S, double>) return store<T>(x);
    else return store<T>(int_to_double_odd(x));
  } else if constexpr (is_float_v<T>) {
    if constexpr (is_half_v<S>) return static_cast<T>(static_cast<float>(x));
    else return static_cast<T>(x);
  } else {  // integer target
    if constexpr (is_float_v<S>) return float_to_int<T>(load<double>(x));
    else return static_cast<T>(x);
  }
}

// ---- strings ----

// Shortest round-trip scientific text of x ("1.5e+00") for the source type S.
template <typename S>
std::string shortest_scientific(S x) {
  char buffer[64];
  if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>) {
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), x, std::chars_format::scientific);
    return std::string(buffer, result.ptr);
  } else {  // half types: the fewest digits that read back to the same value
    const double value = load<double>(x);
    for (int precision = 0; precision < 17; ++precision) {
      auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific, precision);
      double back = 0;
      std::from_chars(buffer, result.ptr, back);
      bool same = std::is_same_v<S, Float16> ? double_to_float16_bits(back) == x.bits
                                              : double_to_bfloat16_bits(back) == x.bits;
      if (same) return std::string(buffer, result.ptr);
    }
    auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
    return std::string(buffer, result.ptr);
  }
}

// numpy's str() of a float of type S.
template <typename S>
std::string format_float(S x) {
  const double value = load<double>(x);
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  const double positional_limit = std::is_same_v<S, double> ? 1e16 : std::is_same_v<S, float> ? 1e6 : 1e3;
  std::string scientific = shortest_scientific(x);
  const double magnitude = std::fabs(value);
  if (magnitude < 1e-4 || magnitude >= positional_limit) return scientific;
  // Rewrite d.ddde±XX positionally.
  std::string sign = value < 0 ? "-" : "";
  std::size_t start = sign.size();
  std::size_t e = scientific.find('e');
  std::string digits;
  for (std::size_t i = start; i < e; ++i)
    if (scientific[i] != '.') digits += scientific[i];
  int exponent = std::stoi(scientific.substr(e + 1));
  std::string integer, fraction;
  if (exponent >= 0) {
    auto split = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= split) {
      integer = digits + std::string(split - digits.size(), '0');
    } else {
      integer = digits.substr(0, split);
      fraction = digits.substr(split);
    }
  } else {
    integer = "0";
    fraction = std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  }
  if (fraction.empty()) fraction = "0";
  return sign + integer + "." + fraction;
}

template <typename S>
std::string to_text(const S& x) {
  if constexpr (std::is_same_v<S, std::string>) return x;
  else if constexpr (std::is_same_v<S, bool>) return x ? "True" : "False";
  else if constexpr (is_float_v<S>) return format_float(x);
  else return std::to_string(x);
}

std::string_view trim(std::string_view text) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

// Parses a number (decimal, scientific, INF / NaN in any case, optional '+') as F.
template <typename F>
F parse_float(const KernelContext& ctx, const std::string& text) {
  std::string_view s = trim(text);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  F value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || end != s.data() + s.size() || (ec != std::errc() && ec != std::errc::result_out_of_range))
    ctx.fail("cannot convert the string '{}' to a number", text);
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves value unchanged: work out overflow vs underflow from the exponent.
    double probe = std::strtod(std::string(s).c_str(), nullptr);
    value = static_cast<F>(probe);
  }
  return negative ? -value : value;
}

template <typename I>
I parse_int(const KernelContext& ctx, const std::string& text) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  using Wide = std::conditional_t<std::is_signed_v<I>, int64_t, uint64_t>;
  Wide value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (!s.empty() && ec == std::errc() && end == s.data() + s.size()) return static_cast<I>(value);
  return float_to_int<I>(parse_float<double>(ctx, text));  // "100.5" -> 100, "1e3" -> 1000
}

template <typename T>
T from_text(const KernelContext& ctx, const std::string& text) {
  if constexpr (std::is_same_v<T, std::string>) return text;
  else if constexpr (std::is_same_v<T, bool>) {
    std::string_view s = trim(text);
    std::string lower(s);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == "true") return true;
    if (lower == "false") return false;
    return parse_float<double>(ctx, text) != 0;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return parse_float<T>(ctx, text);
  } else if constexpr (is_half_v<T>) {
    return store<T>(parse_float<double>(ctx, text));
  } else {
    return parse_int<T>(ctx, text);
  }
}

// ---- the cast ----

// Writes `in` (a standard dtype) converted to the exotic dtype `to` into `out`.
template <typename S>
void cast_to_exotic(const KernelContext& ctx, const Tensor& in, Tensor& out, DType to, const CastOptions& options) {
  const S* px = in.data<S>();
  auto* po = static_cast<uint8_t*>(out.mutable_raw());
  const int64_t n = in.size();
  const int bits = dtype_bits(to);
  auto value_of = [&](int64_t i) -> double {
    if constexpr (std::is_same_v<S, std::string>) return parse_float<double>(ctx, px[i]);
    else return to_double(px[i]);
  };
  if (to == DType::kFloat8E8M0) {
    for (int64_t i = 0; i < n; ++i) po[i] = float_to_e8m0(value_of(i), options.saturate, options.rounding);
  } else if (is_minifloat(to)) {
    const MiniFloatFormat& format = minifloat_format(to);
    if (bits == 8) {
      for (int64_t i = 0; i < n; ++i)
        po[i] = static_cast<uint8_t>(minifloat_encode(value_of(i), format, options.saturate));
    } else {
      for (int64_t i = 0; i < n; ++i) put_bits(po, i, bits, minifloat_encode(value_of(i), format, options.saturate));
    }
  } else {  // packed integers keep the low bits
    for (int64_t i = 0; i < n; ++i) {
      int64_t v;
      if constexpr (std::is_same_v<S, std::string>) v = parse_int<int64_t>(ctx, px[i]);
      else v = to_int64(px[i]);
      put_bits(po, i, bits, static_cast<uint32_t>(static_cast<uint64_t>(v)));
    }
  }
}

template <typename T, typename S>
void cast_standard(const KernelContext& ctx, const Tensor& in, Tensor& out) {
  const S* px = in.data<S>();
  T* po = out.mutable_data<T>();
  const int64_t n = in.size();
  if constexpr (std::is_same_v<T, std::string>) {
    for (int64_t i = 0; i < n; ++i) po[i] = to_text(px[i]);
  } else if constexpr (std::is_same_v<S, std::string>) {
    for (int64_t i = 0; i < n; ++i) po[i] = from_text<T>(ctx, px[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) po[i] = cast_value<T, S>(px[i]);
  }
}

void cast_into(KernelContext& ctx, const Tensor& input, DType to, const CastOptions& options) {
  DType from = input.dtype();
  if (from == DType::kComplex64 || from == DType::kComplex128 || to == DType::kComplex64 || to == DType::kComplex128)
    ctx.unsupported("casts from {} to {} are not supported", dtype_name(from), dtype_name(to));
  if (from == to) {
    ctx.set_output(0, input);
    return;
  }
  Tensor decoded;
  const Tensor* in = &input;
  if (is_exotic_float(from) || is_packed_int(from)) {
    decoded = decode_exotic(ctx, input);
    in = &decoded;
    if (in->dtype() == to) {
      ctx.set_output(0, decoded);
      return;
    }
  }
  Tensor& out = ctx.allocate_output(0, to, input.shape());
  dispatch<AllTypes>(in->dtype(), ctx, [&]<typename S>() {
    if (is_exotic_float(to) || is_packed_int(to)) {
      cast_to_exotic<S>(ctx, *in, out, to, options);
      return;
    }
    dispatch<AllTypes>(to, ctx, [&]<typename T>() { cast_standard<T, S>(ctx, *in, out); });
  });
}

CastOptions read_options(const KernelContext& ctx) {
  CastOptions options;
  options.saturate = ctx.attr_int("saturate", 1) != 0;
  options.rounding = e8m0_rounding_from_string(ctx.attr_string("round_mode", std::string("up")));
  return options;
}

void cast_kernel(KernelContext& ctx) {
  const auto* to_attr = ctx.attribute("to");
  if (!to_attr) ctx.fail("required attribute 'to' is missing");
  DType to;
  try {
    // Opset 1 spelled the type as a string ("FLOAT"); later opsets use the TensorProto enum.
    if (to_attr->type() == ::onnx::AttributeProto::STRING) to = dtype_from_name(to_attr->s());
    else to = dtype_from_onnx(static_cast<int32_t>(to_attr->i()));
  } catch (const Error& e) {
    ctx.fail("attribute 'to': {}", e.message());
  }
  cast_into(ctx, ctx.input(0), to, read_options(ctx));
}

void cast_like_kernel(KernelContext& ctx) {
  cast_into(ctx, ctx.input(0), ctx.input(1).dtype(), read_options(ctx));
}

}  // namespace

PARITY_KERNEL("", "Cast", 1, cast_kernel);
PARITY_KERNEL("", "CastLike", 15, cast_like_kernel);

}  // namespace parity::ops

#include "parity/core/float8.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "parity/core/error.h"

namespace parity {
namespace {

using NaN = MiniFloatFormat::NaN;

constexpr MiniFloatFormat kE4M3FN{4, 3, 7, NaN::kAllOnes, false};
constexpr MiniFloatFormat kE4M3FNUZ{4, 3, 8, NaN::kNegZero, false};
constexpr MiniFloatFormat kE5M2{5, 2, 15, NaN::kIeee, true};
constexpr MiniFloatFormat kE5M2FNUZ{5, 2, 16, NaN::kNegZero, false};
constexpr MiniFloatFormat kE2M1{2, 1, 1, NaN::kNone, false};
constexpr MiniFloatFormat kE2M3{2, 3, 1, NaN::kNone, false};
constexpr MiniFloatFormat kE3M2{3, 2, 3, NaN::kNone, false};
constexpr MiniFloatFormat kHalf{5, 10, 15, NaN::kIeee, true};
constexpr MiniFloatFormat kBFloat{8, 7, 127, NaN::kIeee, true};

// Exponent field and mantissa of the largest finite value.
std::pair<uint32_t, uint32_t> max_fields(const MiniFloatFormat& f) {
  uint32_t exponent = (1u << f.exponent_bits) - 1;
  uint32_t mantissa = (1u << f.mantissa_bits) - 1;
  if (f.nan == NaN::kIeee) exponent -= 1;         // all-ones exponent is Inf / NaN
  else if (f.nan == NaN::kAllOnes) mantissa -= 1;  // S.1111.111 is NaN
  return {exponent, mantissa};
}

uint32_t sign_mask(const MiniFloatFormat& f) { return 1u << (f.exponent_bits + f.mantissa_bits); }

uint32_t nan_bits(const MiniFloatFormat& f, bool negative) {
  uint32_t sign = negative ? sign_mask(f) : 0u;
  uint32_t exponent_all = ((1u << f.exponent_bits) - 1) << f.mantissa_bits;
  switch (f.nan) {
    case NaN::kAllOnes: return sign | exponent_all | ((1u << f.mantissa_bits) - 1);
    case NaN::kIeee: return sign | exponent_all | (1u << (f.mantissa_bits - 1));  // quiet NaN
    case NaN::kNegZero: return sign_mask(f);
    case NaN::kNone: return sign_mask(f);  // no NaN: -0, as ml_dtypes does
  }
  return 0;
}

// What an out-of-range magnitude (rounded above max_finite, or Inf) encodes to.
uint32_t overflow_bits(const MiniFloatFormat& f, bool negative, bool saturate) {
  uint32_t sign = negative ? sign_mask(f) : 0u;
  if (saturate || f.nan == NaN::kNone) return sign | f.max_finite_bits();
  if (f.has_inf) return sign | (((1u << f.exponent_bits) - 1) << f.mantissa_bits);
  return nan_bits(f, negative);
}

template <std::size_t N>
std::array<float, N> decode_table(const MiniFloatFormat& f) {
  std::array<float, N> table{};
  for (uint32_t i = 0; i < N; ++i) table[i] = static_cast<float>(minifloat_decode(i, f));
  return table;
}

}  // namespace

double MiniFloatFormat::max_finite() const {
  auto [exponent, mantissa] = max_fields(*this);
  return std::ldexp(static_cast<double>((1u << mantissa_bits) + mantissa),
                    static_cast<int>(exponent) - bias - mantissa_bits);
}

uint32_t MiniFloatFormat::max_finite_bits() const {
  auto [exponent, mantissa] = max_fields(*this);
  return (exponent << mantissa_bits) | mantissa;
}

const MiniFloatFormat& minifloat_format(DType dtype) {
  switch (dtype) {
    case DType::kFloat8E4M3FN: return kE4M3FN;
    case DType::kFloat8E4M3FNUZ: return kE4M3FNUZ;
    case DType::kFloat8E5M2: return kE5M2;
    case DType::kFloat8E5M2FNUZ: return kE5M2FNUZ;
    case DType::kFloat4E2M1: return kE2M1;
    case DType::kFloat6E2M3: return kE2M3;
    case DType::kFloat6E3M2: return kE3M2;
    case DType::kFloat16: return kHalf;
    case DType::kBFloat16: return kBFloat;
    default: break;
  }
  raise<InvalidInputError>("{} is not a small float format", dtype_name(dtype));
}

bool is_minifloat(DType dtype) {
  switch (dtype) {
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1:
    case DType::kFloat6E2M3:
    case DType::kFloat6E3M2: return true;
    default: return false;
  }
}

double minifloat_decode(uint32_t bits, const MiniFloatFormat& f) {
  const uint32_t mantissa_mask = (1u << f.mantissa_bits) - 1;
  const uint32_t exponent_mask = (1u << f.exponent_bits) - 1;
  bits &= (1u << f.total_bits()) - 1;
  const bool negative = (bits & sign_mask(f)) != 0;
  const uint32_t exponent = (bits >> f.mantissa_bits) & exponent_mask;
  const uint32_t mantissa = bits & mantissa_mask;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (f.nan) {
    case NaN::kAllOnes:
      if (exponent == exponent_mask && mantissa == mantissa_mask) return negative ? -nan : nan;
      break;
    case NaN::kIeee:
      if (exponent == exponent_mask) {
        if (mantissa != 0) return negative ? -nan : nan;
        return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      }
      break;
    case NaN::kNegZero:
      if (bits == sign_mask(f)) return nan;
      break;
    case NaN::kNone: break;
  }
  double magnitude = exponent == 0
                         ? std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissa_bits)
                         : std::ldexp(static_cast<double>(mantissa | (1u << f.mantissa_bits)),
                                      static_cast<int>(exponent) - f.bias - f.mantissa_bits);
  return negative ? -magnitude : magnitude;
}

uint32_t minifloat_encode(double value, const MiniFloatFormat& f, bool saturate) {
  // Integer rounding on the double's fields: exact, and independent of the FP environment.
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const bool negative = (bits >> 63) != 0;
  const auto exponent_field = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  if (exponent_field == 0x7FF) return fraction ? nan_bits(f, negative) : overflow_bits(f, negative, saturate);
  const bool zero_has_sign = f.nan != NaN::kNegZero;  // FNUZ formats have no -0
  const uint32_t zero = (negative && zero_has_sign) ? sign_mask(f) : 0u;
  // Zero, or a double subnormal (< 2^-1022): far below half the smallest value of any format.
  if (exponent_field == 0) return zero;

  const int exponent = exponent_field - 1023;             // value = 1.fraction * 2^exponent
  const int min_exponent = 1 - f.bias;                     // exponent of the smallest normal
  const int past_top = (1 << f.exponent_bits) - f.bias;   // above every finite code's exponent
  if (exponent > past_top) return overflow_bits(f, negative, saturate);
  const uint64_t significand = fraction | (uint64_t{1} << 52);
  // Drop the bits below the target's last place (more of them for subnormal results).
  const int shift = 52 - f.mantissa_bits + (exponent < min_exponent ? min_exponent - exponent : 0);
  if (shift > 53) return zero;  // below half the smallest subnormal
  uint64_t units = significand >> shift;
  const uint64_t remainder = significand & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (remainder > half || (remainder == half && (units & 1))) ++units;  // ties to even
  // Codes grow with magnitude; a carry out of the mantissa moves into the exponent field.
  const uint64_t code = exponent < min_exponent
                            ? units
                            : (static_cast<uint64_t>(exponent - min_exponent) << f.mantissa_bits) + units;
  if (code > f.max_finite_bits()) return overflow_bits(f, negative, saturate);
  if (code == 0) return zero;
  return (negative ? sign_mask(f) : 0u) | static_cast<uint32_t>(code);
}

float minifloat_to_float(uint8_t bits, DType dtype) {
  static const auto e4m3fn = decode_table<256>(kE4M3FN);
  static const auto e4m3fnuz = decode_table<256>(kE4M3FNUZ);
  static const auto e5m2 = decode_table<256>(kE5M2);
  static const auto e5m2fnuz = decode_table<256>(kE5M2FNUZ);
  static const auto e2m1 = decode_table<16>(kE2M1);
  static const auto e2m3 = decode_table<64>(kE2M3);
  static const auto e3m2 = decode_table<64>(kE3M2);
  switch (dtype) {
    case DType::kFloat8E4M3FN: return e4m3fn[bits];
    case DType::kFloat8E4M3FNUZ: return e4m3fnuz[bits];
    case DType::kFloat8E5M2: return e5m2[bits];
    case DType::kFloat8E5M2FNUZ: return e5m2fnuz[bits];
    case DType::kFloat4E2M1: return e2m1[bits & 0xf];
    case DType::kFloat6E2M3: return e2m3[bits & 0x3f];
    case DType::kFloat6E3M2: return e3m2[bits & 0x3f];
    default: break;
  }
  raise<InvalidInputError>("{} is not a small float format", dtype_name(dtype));
}

uint8_t float_to_minifloat(double value, DType dtype, bool saturate) {
  return static_cast<uint8_t>(minifloat_encode(value, minifloat_format(dtype), saturate));
}

E8M0Rounding e8m0_rounding_from_string(std::string_view mode) {
  if (mode == "up") return E8M0Rounding::kUp;
  if (mode == "down") return E8M0Rounding::kDown;
  if (mode == "nearest") return E8M0Rounding::kNearest;
  raise<InvalidInputError>("round_mode is '{}', expected 'up', 'down' or 'nearest'", mode);
}

float e8m0_to_float(uint8_t bits) {
  if (bits == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(bits) - 127);
}

uint8_t float_to_e8m0(double value, bool saturate, E8M0Rounding rounding) {
  constexpr uint8_t kNaN = 0xFF, kMax = 0xFE, kMin = 0x00;
  if (std::isnan(value)) return kNaN;
  const double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return saturate ? kMax : kNaN;
  if (magnitude == 0) return saturate ? kMin : kNaN;
  int exponent = 0;
  double fraction = std::frexp(magnitude, &exponent);  // [0.5, 1)
  exponent -= 1;                                        // magnitude = 2^exponent * (2 * fraction)
  switch (rounding) {
    case E8M0Rounding::kUp:
      if (fraction > 0.5) ++exponent;
      break;
    case E8M0Rounding::kDown: break;
    case E8M0Rounding::kNearest:
      if (fraction >= 0.75) ++exponent;
      break;
  }
  int code = exponent + 127;
  if (code < 0) return saturate ? kMin : kNaN;
  if (code > 254) return saturate ? kMax : kNaN;
  return static_cast<uint8_t>(code);
}

uint16_t double_to_float16_bits(double value) {
  return static_cast<uint16_t>(minifloat_encode(value, kHalf, false));
}

uint16_t double_to_bfloat16_bits(double value) {
  return static_cast<uint16_t>(minifloat_encode(value, kBFloat, false));
}

}  // namespace parity

// Exact conversions for ONNX's small float formats: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ),
// float4 (E2M1), float6 (E2M3, E3M2) and the power-of-two scale format FLOAT8E8M0. Also exact
// (single-rounding) double -> float16 / bfloat16.
//
// Encoding rounds to nearest, ties to even, ONCE from the exact input value (a double holds every
// float32 / float16 / bfloat16 value exactly). Overflow and special values follow ONNX's Cast:
//
//   saturate (default)   Inf, and values whose rounded magnitude exceeds the largest finite value,
//                        become +/- that largest value; NaN stays NaN.
//   no saturate          E4M3FN: NaN (sign kept); E4M3FNUZ / E5M2FNUZ: the single NaN (0x80);
//                        E5M2: +/- Inf.
//   -0                   kept where the format has it; +0 in the FNUZ formats.
//
// float4 / float6 have neither Inf nor NaN: out-of-range values (and Inf) always saturate, NaN
// encodes as -0 (sign bit only), as ml_dtypes and ONNX's test data do.
#pragma once

#include <cstdint>
#include <string_view>

#include "parity/core/dtype.h"

namespace parity {

// How a small float format lays out its bits: 1 sign bit, `exponent_bits`, `mantissa_bits`.
struct MiniFloatFormat {
  enum class NaN {
    kNone,     // no NaN (float4, float6)
    kAllOnes,  // exponent and mantissa all ones, either sign (E4M3FN)
    kIeee,     // exponent all ones, mantissa non-zero; all-ones exponent with zero mantissa is Inf
    kNegZero,  // the "negative zero" pattern 1000...0 is the only NaN (FNUZ formats)
  };
  int exponent_bits;
  int mantissa_bits;
  int bias;
  NaN nan;
  bool has_inf;  // only kIeee formats (E5M2, float16, bfloat16)

  int total_bits() const { return 1 + exponent_bits + mantissa_bits; }
  double max_finite() const;         // largest finite magnitude
  uint32_t max_finite_bits() const;  // its positive encoding
};

// The layout of a minifloat dtype (float8 kinds except E8M0, float4, float6, and also float16 /
// bfloat16); throws InvalidInputError for any other dtype.
const MiniFloatFormat& minifloat_format(DType dtype);
bool is_minifloat(DType dtype);  // float8 (not E8M0), float4, float6

// Exact value of a code (the low total_bits() bits of `bits`). NaN codes decode to a quiet NaN
// with the code's sign bit where the format has one.
double minifloat_decode(uint32_t bits, const MiniFloatFormat& format);
// Rounds `value` once (nearest, ties to even) into the format; see the header comment for the
// special cases.
uint32_t minifloat_encode(double value, const MiniFloatFormat& format, bool saturate);

// Convenience wrappers on dtypes (float8 kinds except E8M0, float4, float6).
float minifloat_to_float(uint8_t bits, DType dtype);
uint8_t float_to_minifloat(double value, DType dtype, bool saturate);

// FLOAT8E8M0: an unsigned power of two 2^(code - 127), code 0..254; 0xFF is NaN.
enum class E8M0Rounding { kUp, kDown, kNearest };
E8M0Rounding e8m0_rounding_from_string(std::string_view mode);  // "up" | "down" | "nearest"
float e8m0_to_float(uint8_t bits);
// The sign of `value` is ignored (negative inputs are undefined by ONNX; their magnitude is
// used). "nearest" rounds the exponent up when the magnitude is at least 1.5 * 2^e (ties up).
// Results below 2^-127 or above 2^127: saturate -> the nearest end (code 0 / 0xFE), otherwise
// NaN. Zero: saturate -> code 0 (2^-127), otherwise NaN. Inf: saturate -> 0xFE, otherwise NaN.
uint8_t float_to_e8m0(double value, bool saturate, E8M0Rounding rounding);

// Correctly rounded (once) double -> float16 / bfloat16 (Inf on overflow, NaN kept).
uint16_t double_to_float16_bits(double value);
uint16_t double_to_bfloat16_bits(double value);

}  // namespace parity

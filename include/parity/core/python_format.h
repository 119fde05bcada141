// Text exactly as Python and numpy print it, for log lines that must match Polygraphy's byte for
// byte: format(x, '.5g'), repr(float), repr(str), str(list of str), str(tuple of int), and numpy's
// str(ndarray) for the "---- Values ----" block.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parity/core/tensor.h"

namespace parity {

// Python's format(x, '.{precision}g'): "1e-05", "0.5", "1.2346e+05", "nan" (for any NaN), "inf",
// "-inf", "-0".
std::string format_g(double value, int precision);

// Python's repr(float) (and str(float)): the shortest string that round-trips, in fixed notation
// when the decimal exponent is in [-4, 16), else scientific: "1e-05", "0.001", "100.0", "1e+16".
std::string python_float_repr(double value);

// Python's repr(str): single quotes unless the text holds a single quote and no double quote;
// backslashes, quotes and control characters escaped.
std::string python_str_repr(std::string_view text);

// Python's str(list of str): "['a', 'b']", "[]".
std::string python_list_repr(std::span<const std::string> items);

// Python's str(tuple of int): "(0, 3)", "(5,)", "()".
std::string python_tuple_repr(std::span<const int64_t> items);

// numpy's str(ndarray) with default print options (precision 8, line width 75, no summarising
// below 1000 elements): "[[ 1.  2.  3.]\n [ 4. -5.  6.]]". Supports bool, integers, float16,
// bfloat16 (printed like float32), float32 and float64. Arrays above 1000 elements are summarised
// with "..." as numpy does (3 edge items).
std::string numpy_array_str(const TensorView& tensor);

// numpy's print options that `inspect data` exposes (np.set_printoptions(edgeitems=, linewidth=));
// -1 means unlimited (sys.maxsize). Arrays above 1000 elements are summarised with `edgeitems`.
struct NumpyPrintOptions {
  int64_t edgeitems = 3;
  int64_t linewidth = 75;
};
std::string numpy_array_str(const TensorView& tensor, const NumpyPrintOptions& options);

// numpy's str(ndarray) layout for arrays whose elements numpy renders one by one with no common
// width: object arrays (repr of each item) and ml_dtypes' types (bfloat16, float8, int4: "%g"
// of each item), e.g. "[1.5 -2 0.100098]". `element(i)` is the text of the element at flat
// (C-order) index i. Default print options; summarised above 1000 elements.
std::string numpy_array_str_of_elements(const Shape& shape, const std::function<std::string(int64_t)>& element);

// Python's `" " * n + text` style helpers used by Polygraphy's f-strings.
std::string pad_right(std::string_view text, std::size_t width);  // f"{text:<width}" / f"{text:width}"
std::string pad_left(std::string_view text, std::size_t width);   // f"{text:>width}"

}  // namespace parity

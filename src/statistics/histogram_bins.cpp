// numpy.histogram's bins for the display histograms (BinSpec): the edges numpy computes for a
// range in the data's own arithmetic, checked increasing. Split from streaming_statistics.cpp.
#include <cfloat>
#include <cmath>

#include "parity/core/error.h"
#include "parity/core/values.h"
#include "streaming_statistics.h"

namespace parity::statistics::detail {
// ------------------------------------------------------------------------------------------------
// numpy.histogram bins
// ------------------------------------------------------------------------------------------------
namespace {

double round_to(BinSpec::Arithmetic arithmetic, double v) {
  switch (arithmetic) {
    case BinSpec::Arithmetic::kSingle: return static_cast<double>(static_cast<float>(v));
    case BinSpec::Arithmetic::kHalf:
      return static_cast<double>(float16_bits_to_float(float_to_float16_bits(static_cast<float>(v))));
    case BinSpec::Arithmetic::kDouble: break;
  }
  return v;
}

BinSpec::Arithmetic arithmetic_of(DType data) {
  switch (data) {
    case DType::kFloat16: return BinSpec::Arithmetic::kHalf;
    case DType::kFloat64: return BinSpec::Arithmetic::kDouble;
    default: return is_floating(data) ? BinSpec::Arithmetic::kSingle : BinSpec::Arithmetic::kDouble;
  }
}

// np.linspace(first, last, 11) computed in B: step = (last - first) / 10, y_i = i * step + first.
template <typename B>
void linspace_edges(std::array<double, 11>& edges, double first, double last) {
  B f = static_cast<B>(first), l = static_cast<B>(last);
  B delta = l - f;
  B step = delta / static_cast<B>(10);
  for (int i = 0; i <= 10; ++i) {
    B y = (step == 0) ? (static_cast<B>(i) / static_cast<B>(10)) * delta : static_cast<B>(i) * step;
    y = y + f;
    edges[static_cast<std::size_t>(i)] = static_cast<double>(y);
  }
  edges[10] = static_cast<double>(l);
}

}  // namespace

void BinSpec::check_increasing() {
  for (std::size_t i = 0; i < 10; ++i)
    if (!(edges[i] < edges[i + 1])) {
      valid = false;
      error = "Too many bins for data range. Cannot create 10 finite-sized bins.";
      return;
    }
}

BinSpec BinSpec::supplied_range(double first, double last, DType data) {
  BinSpec spec;
  if (!std::isfinite(first) || !std::isfinite(last) || first > last) return spec;
  if (first == last) {
    first -= 0.5;
    last += 0.5;
  }
  spec.valid = true;
  spec.supplied = true;
  spec.arithmetic = arithmetic_of(data);
  // Comparisons with a Python number happen in the data's type (a float) or in float64 (ints).
  spec.keep_first = round_to(spec.arithmetic, first);
  spec.keep_last = round_to(spec.arithmetic, last);
  spec.first_bin = round_to(spec.arithmetic, first);
  spec.denominator = last - first;
  linspace_edges<double>(spec.edges, first, last);
  for (double& e : spec.edges) e = round_to(spec.arithmetic, e);
  spec.check_increasing();
  return spec;
}

BinSpec BinSpec::data_range(double first, double last, Work data) {
  BinSpec spec;
  if (!std::isfinite(first) || !std::isfinite(last) || first > last) return spec;
  const bool single = data == Work::kFloat32;
  if (first == last) {
    // numpy scalar +- 0.5: stays float32 for float32, becomes float64 for ints.
    if (single) {
      first = static_cast<double>(static_cast<float>(first) - 0.5f);
      last = static_cast<double>(static_cast<float>(last) + 0.5f);
    } else {
      first -= 0.5;
      last += 0.5;
    }
  }
  spec.valid = true;
  spec.supplied = false;
  spec.arithmetic = single ? Arithmetic::kSingle : Arithmetic::kDouble;
  spec.keep_first = first;
  spec.keep_last = last;
  spec.first_bin = first;
  spec.denominator = round_to(spec.arithmetic, last - first);
  if (single) linspace_edges<float>(spec.edges, first, last);
  else linspace_edges<double>(spec.edges, first, last);
  spec.check_increasing();
  return spec;
}

BinSpec BinSpec::data_range_half(double first, double last) {
  BinSpec spec;
  if (!std::isfinite(first) || !std::isfinite(last) || first > last) return spec;
  auto h = [](double v) { return round_to(Arithmetic::kHalf, v); };
  if (first == last) {  // float16 scalar +- 0.5 stays float16
    first = h(first - 0.5);
    last = h(last + 0.5);
  }
  spec.valid = true;
  spec.supplied = false;
  spec.arithmetic = Arithmetic::kHalf;
  spec.keep_first = first;
  spec.keep_last = last;
  spec.first_bin = first;
  spec.denominator = h(last - first);
  // np.linspace with a float16 dtype: y = arange(11) (float16), y *= step, y += first.
  double delta = spec.denominator, step = h(delta / 10.0);
  for (int i = 0; i <= 10; ++i) {
    double y = step == 0 ? h(h(i / 10.0) * delta) : h(i * step);
    spec.edges[static_cast<std::size_t>(i)] = h(y + first);
  }
  spec.edges[10] = last;
  spec.check_increasing();
  return spec;
}

}  // namespace parity::statistics::detail

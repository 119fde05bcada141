// np.quantile's arithmetic and the ranks a median or quantile needs, and their values from the
// selected ranks (RankPlan, QuantileArithmetic). Split from streaming_statistics.cpp.
#include <cmath>

#include "parity/core/error.h"
#include "parity/core/values.h"
#include "streaming_statistics.h"

namespace parity::statistics::detail {
// ------------------------------------------------------------------------------------------------
// Quantile arithmetic and ranks
// ------------------------------------------------------------------------------------------------
QuantileArithmetic QuantileArithmetic::of(DType dtype) {
  QuantileArithmetic q;
  switch (dtype) {
    case DType::kFloat16: q.kind = Kind::kHalf; break;
    case DType::kFloat64: q.kind = Kind::kDouble; break;
    case DType::kBool: case DType::kInt8: case DType::kUInt8: case DType::kInt16: case DType::kUInt16:
    case DType::kInt32: case DType::kUInt32: case DType::kInt64: case DType::kUInt64:
      q.kind = Kind::kInteger;
      q.integer_bits = dtype == DType::kBool ? 64 : dtype_bits(dtype);
      q.integer_signed = dtype == DType::kBool || dtype_info(dtype).kind == DTypeKind::kSignedInt;
      break;
    default:
      if (is_integer(dtype)) {
        q.kind = Kind::kInteger;
        q.integer_bits = 64;
      } else {
        q.kind = Kind::kSingle;
      }
      break;
  }
  return q;
}

QuantileArithmetic QuantileArithmetic::of_work(Work work) { return of(work_dtype(work)); }

namespace {

void add_position(const RankPlan& plan, int64_t position, std::vector<uint64_t>& ranks) {
  int64_t r = plan.map(position);
  if (r >= 0) ranks.push_back(static_cast<uint64_t>(r));
}

struct QuantilePositions {
  int64_t previous, next;
  double gamma;
};

QuantilePositions quantile_positions(int64_t n, double q) {
  double virtual_index = static_cast<double>(n - 1) * q;
  QuantilePositions p;
  double previous = std::floor(virtual_index);
  p.gamma = virtual_index - previous;
  p.previous = static_cast<int64_t>(previous);
  p.next = p.previous + 1;
  if (virtual_index >= static_cast<double>(n - 1)) p.previous = p.next = n - 1;
  if (virtual_index < 0) p.previous = p.next = 0;
  return p;
}

double round_half(double x) { return float16_bits_to_float(float_to_float16_bits(static_cast<float>(x))); }

double wrap_integer(int64_t value, int bits, bool is_signed) {
  if (bits >= 64) return static_cast<double>(value);
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(value) & mask;
  if (is_signed && (u >> (bits - 1))) return static_cast<double>(static_cast<int64_t>(u | ~mask));
  return static_cast<double>(u);
}

// numpy's _lerp(a, b, t) in the array's arithmetic.
double numpy_lerp(double a, double b, double t, const QuantileArithmetic& arithmetic) {
  using Kind = QuantileArithmetic::Kind;
  switch (arithmetic.kind) {
    case Kind::kHalf: {
      double d = round_half(b - a);
      if (t >= 0.5) return round_half(b - round_half(d * round_half(1 - t)));
      return round_half(a + round_half(d * round_half(t)));
    }
    case Kind::kSingle: {
      float fa = static_cast<float>(a), fb = static_cast<float>(b);
      float d = fb - fa;
      if (t >= 0.5) return static_cast<double>(fb - d * static_cast<float>(1 - t));
      return static_cast<double>(fa + d * static_cast<float>(t));
    }
    case Kind::kInteger: {
      double d;
      if (std::isfinite(a) && std::isfinite(b) && std::fabs(a) < 9.2e18 && std::fabs(b) < 9.2e18)
        d = wrap_integer(static_cast<int64_t>(b) - static_cast<int64_t>(a), arithmetic.integer_bits,
                         arithmetic.integer_signed);
      else
        d = b - a;
      if (t >= 0.5) return b - d * (1 - t);
      return a + d * t;
    }
    case Kind::kDouble:
      break;
  }
  double d = b - a;
  if (t >= 0.5) return b - d * (1 - t);
  return a + d * t;
}

double value_at(const RankPlan& plan, const RankValue& value, int64_t position) {
  int64_t r = plan.map(position);
  if (r == -1) return -INFINITY;
  if (r == -2) return INFINITY;
  return value(static_cast<uint64_t>(r));
}

}  // namespace

void add_median_ranks(const RankPlan& plan, std::vector<uint64_t>& ranks) {
  if (plan.total <= 0) return;
  int64_t half = plan.total / 2;
  add_position(plan, half, ranks);
  if (plan.total % 2 == 0) add_position(plan, half - 1, ranks);
}

void add_quantile_ranks(const RankPlan& plan, double q, std::vector<uint64_t>& ranks) {
  if (plan.total <= 0) return;
  QuantilePositions p = quantile_positions(plan.total, q);
  add_position(plan, p.previous, ranks);
  add_position(plan, p.next, ranks);
}

double median_from(const RankPlan& plan, const RankValue& value, Work work) {
  int64_t half = plan.total / 2;
  if (plan.total % 2 == 1) {
    double v = value_at(plan, value, half);
    return v;
  }
  double a = value_at(plan, value, half - 1), b = value_at(plan, value, half);
  if (work == Work::kFloat32) return static_cast<double>((static_cast<float>(a) + static_cast<float>(b)) / 2.0f);
  return (a + b) / 2.0;
}

double quantile_from(const RankPlan& plan, const RankValue& value, double q, const QuantileArithmetic& arithmetic) {
  QuantilePositions p = quantile_positions(plan.total, q);
  double a = value_at(plan, value, p.previous), b = value_at(plan, value, p.next);
  return numpy_lerp(a, b, p.gamma, arithmetic);
}

}  // namespace parity::statistics::detail

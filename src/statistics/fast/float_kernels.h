// Vectorised per-chunk kernels of the float32 pair statistics (private to statistics).
//
// Each kernel works on one chunk (at most kChunk values, so its scratch stays in L1) and computes
// exactly what the scalar code of pair_statistics.cpp computes per element: the same float32
// operations in the same order, so every number is bit-identical. Where the CPU has AVX-512 the
// kernels use it (chosen once at run time); elsewhere a portable scalar version runs.
#pragma once

#include <array>
#include <cstdint>

#include "../streaming_statistics.h"

namespace parity::statistics::detail::kernels {

// Which implementation runs: AVX-512 where the CPU has it, else portable code. Tests force the
// portable one to check both against the same expectations.
enum class Level { kPortable, kAvx512 };
Level level();
void force_level(Level level);  // for tests; kAvx512 only where supported

struct MinMax {
  float min, max;
};
struct Verdict {
  int64_t mismatches = 0;       // d > atol and r > rtol
  int64_t zero_references = 0;  // y == 0
  float max_abs_at_zero = 0;    // largest d where y == 0
};
// What pass 1 needs of a chunk besides its sums, gathered while its errors are computed.
struct ChunkExtremes {
  MinMax x, y, d, r;       // which of two equal zeros is unspecified (first_equal finds the first)
  MinMax r_nonzero;        // of r where y != 0, if any_nonzero
  bool any_nonzero = false;
};

// d = |x - y|, r = d / (y == 0 ? epsilon : |y|), magnitude_x = |x|, magnitude_y = |y| over n >= 1
// values; with them the chunk's extremes, and the verdict counts (tolerances atol, rtol) added to
// `verdict`. Returns false when any x, y, d or r is NaN or infinite (the rest is then meaningless).
bool errors(const float* x, const float* y, int64_t n, float epsilon, float atol, float rtol, float* d, float* r,
            float* magnitude_x, float* magnitude_y, ChunkExtremes& extremes, Verdict& verdict);

// errors() for a chunk whose two outputs are bit for bit the same (so d and r are +0 throughout):
// magnitude = |x|, the chunk's min and max of x, and how many x are zero (added to `zeros`).
// Returns false when any value is NaN or infinite (x - x is then NaN, not zero).
bool magnitudes(const float* x, int64_t n, float* magnitude, MinMax& extremes, int64_t& zeros);

// squares[i] = (v[i] - mean) * (v[i] - mean) in float32: differences_and_squares's for one stream.
void squared_deviations(const float* v, int64_t n, float mean, float* squares);

// The first index whose value equals `value`, or n.
int64_t first_equal(const float* v, int64_t n, float value);

// Pass 2's per-chunk arithmetic, for values pass 1 found finite: the errors d = |x - y| and
// r = d / (y == 0 ? epsilon : |y|) as errors() computes them, and the squared deviations of the
// four streams x, y, d and r from their means, squares[s][i] = (s[i] - means[s])^2 in float32.
void differences_and_squares(const float* x, const float* y, int64_t n, float epsilon, const float* means, float* d,
                             float* r, float* const* squares);

// Adds, in float64, sum(v - shift), sum((v - shift)^2) and sum(v) over v[0, n) to sums[0..3) (the
// AVX-512 version in eight lanes, so the last bits may differ from the portable version's).
void shifted_sums(const float* v, int64_t n, double shift, double* sums);

// numpy.histogram's bin of each value under `spec` (kSingle or kDouble arithmetic), 10 when the
// value is outside the range: BinSpec::bin, vectorised. Adds the counts to `counts`.
void count_bins(const float* v, int64_t n, const BinSpec& spec, std::array<int64_t, 10>& counts);

// For windows [lows[w], highs[w]] (w < count) of one ordered stream, at once (each value is read
// once for all of them): how many values lie below each window and equal its ends, added to
// counts[w], and the values strictly inside, appended at inside[w] (room for n + 16 values);
// taken[w] is set to how many were appended. When a window's low == high only `at_low` counts.
struct WindowCounts {
  int64_t below = 0, at_low = 0, at_high = 0;
};
void windows(const float* v, int64_t n, int count, const float* lows, const float* highs, WindowCounts* counts,
             float* const* inside, int64_t* taken);
// The same for up to kMaxHalfOpenWindows half-open windows [lows[w], highs[w]): only `below`
// counts, and the values inside any of them (those equal to a low included) are appended once, in
// order, at the one buffer `inside` (room for n + 16). Returns how many; each window's own are
// those of them within its bounds.
constexpr int kMaxHalfOpenWindows = 4;
int64_t half_open_windows(const float* v, int64_t n, int count, const float* lows, const float* highs,
                          WindowCounts* counts, float* inside);

// The values of v where y != 0, appended at `out` (room for n + 16). Returns how many.
int64_t select_nonzero_reference(const float* v, const float* y, int64_t n, float* out);

}  // namespace parity::statistics::detail::kernels

// Calibration: the float model run over the calibration batches on a runner that returns the
// activations to quantize (marked as outputs) with each batch's outputs; each is folded into its
// AbsHistogram and dropped before the next batch, so memory is bounded by the histograms (2048
// counters a tensor) and one batch's tensors per runner, not by the number of batches. When every
// input's leading dimension is the same named dynamic dimension (a batch), consecutive feeds that
// agree on the other dimensions are stacked along it into one inference: up to 16, and as many as
// keep the stack's largest calibrated activation within 1 MiB (sized on the first feed's run alone).
// A histogram takes a stack's activations one feed's share at a time, so its bins are those of the
// feeds run one at a time; if a stacked inference fails, its feeds run one at a time. Logs a
// progress line (batches done, tensors seen) at most once a second and after the last batch.
//
// The batches come from a FeedStream, taken as the runners ask for them: a data loader that is still
// producing them (a script's process) overlaps the inferences, and only the feeds being run are held.
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "parity/core/array_io.h"
#include "parity/core/feed_stream.h"
#include "parity/quantize/abs_histogram.h"
#include "parity/quantize/calibration_algorithm.h"
#include "parity/runtime/runner.h"

namespace parity::quantize {

struct CalibrationResult {
  std::map<std::string, AbsHistogram> histograms;
  std::map<std::string, double> amax;
  // amax / 127; 1 for a tensor that was zero in every batch (a scale of 0 would divide by zero).
  std::map<std::string, float> scales;
  int64_t batches = 0;
  double seconds = 0;
};

// Runs `runner` on every batch of `batches`, gathering the statistics of `tensors` (float32 graph
// inputs or node outputs); an inactive runner is activated here, and the runner is deactivated at
// the end. `returned`: tensors the runner's model has as graph inputs or outputs already; the
// other tensors are marked as intermediate outputs. Throws InvalidInputError when a batch's input
// names differ from the runner's inputs (naming both), when there are no batches, and when no
// batch reached a tensor (no values in any batch: naming it).
CalibrationResult calibrate(runtime::Runner& runner, const std::vector<std::string>& tensors,
                            std::span<const NamedTensors> batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned = {});
// The same on several runners of the same model, one thread each (the calling thread runs the
// first): the first feed runs alone on the first runner (its activations size the stacks), then each
// thread takes the next stack not yet taken (a stack taken before the stacking check has passed is
// checked against its first feed run alone). The outputs are folded into the statistics one stack at a time in
// the order of the batches, so the result is that of one runner (the scales bit for bit).
CalibrationResult calibrate(std::span<runtime::Runner* const> runners, const std::vector<std::string>& tensors,
                            FeedStream& batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned = {});
CalibrationResult calibrate(std::span<runtime::Runner* const> runners, const std::vector<std::string>& tensors,
                            std::span<const NamedTensors> batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned = {});

// The scale of an amax: amax / 127, or 1 when amax is 0.
float scale_of_amax(double amax);

}  // namespace parity::quantize

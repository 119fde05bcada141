#include "parity/quantize/calibrator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::quantize {

float scale_of_amax(double amax) { return amax > 0 ? static_cast<float>(amax / 127.0) : 1.0f; }

namespace {

constexpr std::size_t kStackedFeeds = 16;

void check_batch_names(const NamedTensors& batch, const TensorMetadata& inputs, std::size_t index) {
  std::set<std::string> given, expected;
  for (const auto& [name, tensor] : batch) given.insert(name);
  for (const auto& [name, info] : inputs) expected.insert(name);
  if (given == expected) return;
  raise<InvalidInputError>("calibration batch {} has input(s) {} but the model's inputs are {}", index,
                           fmt::join(given, ", "), fmt::join(expected, ", "));
}

// Whether feeds can be stacked along axis 0 into one inference: every input's leading dimension is
// the same named dynamic dimension (the batch) and no input holds strings.
bool stackable(const TensorMetadata& inputs) {
  std::string symbol;
  for (const auto& [name, info] : inputs) {
    if (!info.shape || info.shape->empty() || info.dtype == DType::kString) return false;
    const Dim& leading = info.shape->front();
    if (leading.is_fixed() || leading.symbol.empty()) return false;
    if (symbol.empty()) symbol = leading.symbol;
    if (leading.symbol != symbol) return false;
  }
  return !symbol.empty();
}

// Whether `b` stacks onto `a`: the same inputs in the same order, with the same dtypes and the same
// dimensions after the first.
bool stacks_onto(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Tensor& x = a[i].second;
    const Tensor& y = b[i].second;
    if (a[i].first != b[i].first || x.dtype() != y.dtype() || x.rank() < 1 || x.rank() != y.rank() ||
        !std::equal(x.shape().begin() + 1, x.shape().end(), y.shape().begin() + 1))
      return false;
  }
  return true;
}

NamedTensors stack(std::span<const NamedTensors> feeds) {
  NamedTensors stacked;
  for (std::size_t i = 0; i < feeds.front().size(); ++i) {
    Shape shape = feeds.front()[i].second.shape();
    shape[0] = 0;
    for (const auto& feed : feeds) shape[0] += feed[i].second.shape()[0];
    Tensor tensor = Tensor::uninitialized(feeds.front()[i].second.dtype(), shape);
    auto* out = static_cast<std::byte*>(tensor.mutable_raw());
    for (const auto& feed : feeds) {
      std::memcpy(out, feed[i].second.raw(), feed[i].second.byte_size());
      out += feed[i].second.byte_size();
    }
    stacked.emplace_back(feeds.front()[i].first, std::move(tensor));
  }
  return stacked;
}

// Whether each element of `single` equals the element of `stacked` at its index within the
// tolerance below (both NaN, or the same infinity, count as equal).
//
// A stack of feeds is a different batch size, for which ONNX Runtime may pick other kernels (another
// GEMM blocking, another split of a reduction over threads), so float sums come out in another order:
// an element differs by a few float32 epsilons of the terms summed into it, which can be large beside
// an element that cancels to near zero. Hence a relative tolerance of 1e-5 (about 80 epsilons) plus
// an absolute one of 1e-5 of the tensor's largest |x|, the size of the terms of its sums. Samples mixed
// across the batch change values by the order of the data itself (another mean subtracted, another
// row read), far beyond both; a mixing small enough to pass them moves a min-max scale by about 1e-5
// of itself at most.
bool equal_within_tolerance(std::span<const float> single, std::span<const float> stacked) {
  constexpr double kRelative = 1e-5;
  constexpr double kOfLargest = 1e-5;
  double largest = 0;
  for (float x : single)
    if (std::isfinite(x)) largest = std::max(largest, std::fabs(static_cast<double>(x)));
  const double absolute = kOfLargest * largest;
  for (std::size_t i = 0; i < single.size(); ++i) {
    const double a = single[i], b = stacked[i];
    if (!std::isfinite(a) || !std::isfinite(b)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b) return false;
      continue;
    }
    if (std::fabs(a - b) > kRelative * std::fabs(a) + absolute) return false;
  }
  return true;
}

// The first calibrated activation whose values for the first feed differ between `single` (that
// feed's inference alone) and `stacked` (the inference of a stack that begins with it), or none.
// A per-sample activation's leading dimension grows with the stack's inputs' (from `single_rows`
// to `stacked_rows`) and its first slice is the single run's output; anything else (a leading
// dimension that stays, another shape, other values) reads several samples of the batch at once.
std::optional<std::string> first_mixing_activation(const NamedTensors& single, const NamedTensors& stacked,
                                                   int64_t single_rows, int64_t stacked_rows,
                                                   const std::set<std::string>& calibrated) {
  for (const auto& [name, s] : stacked) {
    if (!calibrated.count(name) || s.dtype() != DType::kFloat32) continue;
    const auto one = std::find_if(single.begin(), single.end(), [&](const auto& named) { return named.first == name; });
    if (one == single.end()) return name;
    const Tensor& t = one->second;
    if (t.dtype() != DType::kFloat32 || t.rank() < 1 || t.rank() != s.rank() ||
        s.shape()[0] * single_rows != t.shape()[0] * stacked_rows ||
        !std::equal(t.shape().begin() + 1, t.shape().end(), s.shape().begin() + 1) ||
        !equal_within_tolerance(t.span<float>(), s.span<float>().first(t.span<float>().size())))
      return name;
  }
  return std::nullopt;
}

}  // namespace

CalibrationResult calibrate(runtime::Runner& runner, const std::vector<std::string>& tensors,
                            std::span<const NamedTensors> batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (batches.empty()) raise<InvalidInputError>("calibration: the data loader gave no batches");
  CalibrationResult result;
  for (const auto& name : tensors) result.histograms[name];
  auto fold = [&](const std::string& name, const Tensor& tensor) {
    auto it = result.histograms.find(name);
    if (it == result.histograms.end() || tensor.dtype() != DType::kFloat32) return;
    if (settings.algo == CalibrationAlgo::kMinMax)
      it->second.add_max_only(tensor.span<float>());
    else
      it->second.add(tensor.span<float>());
  };

  if (!runner.is_active()) runner.activate();
  struct Deactivation {
    runtime::Runner& runner;
    ~Deactivation() { runner.deactivate(); }
  } deactivation{runner};
  const TensorMetadata inputs = runner.input_metadata();
  std::vector<std::string> marked;
  std::set<std::string> input_names;
  for (const auto& [name, info] : inputs) input_names.insert(name);
  for (const auto& name : tensors)
    if (!input_names.count(name) && !returned.count(name)) marked.push_back(name);
  // The marked tensors come back with each batch's outputs (one batch's at a time); a tensor
  // callback would make ONNX Runtime return every tensor of the graph.
  runner.set_intermediate_outputs(runtime::IntermediateOutputs::list(marked));

  auto last_log = start;
  auto log_progress = [&](std::size_t done) {
    std::size_t seen = 0;
    for (const auto& [name, histogram] : result.histograms) seen += histogram.count() > 0;
    log::info("Calibrating: {}/{} batches, {}/{} tensors seen", done, batches.size(), seen, tensors.size());
  };
  for (std::size_t b = 0; b < batches.size(); ++b) check_batch_names(batches[b], inputs, b);
  // Stacking changes no activation's values per sample only where the model computes each sample on
  // its own; the first stack is checked against its first feed run alone (that run's outputs stand
  // for the feed when the check fails, and are not counted when it passes: the stack counts them).
  bool stacking = stackable(inputs);
  bool stacking_checked = false;
  std::set<std::string> calibrated;
  for (const auto& name : tensors)
    if (!input_names.count(name)) calibrated.insert(name);
  for (std::size_t b = 0; b < batches.size();) {
    std::size_t end = b + 1;
    while (stacking && end < batches.size() && end - b < kStackedFeeds && stacks_onto(batches[b], batches[end])) ++end;
    NamedTensors outputs;
    if (end - b > 1) {
      std::optional<NamedTensors> single;
      if (!stacking_checked) single = runner.infer(batches[b]);
      std::optional<NamedTensors> stacked;
      try {
        stacked = runner.infer(stack(batches.subspan(b, end - b)));
      } catch (const Error& error) {
        log::info("calibration: {} feeds stacked along the batch dimension fail to run ({}); running the feeds one "
                  "at a time",
                  end - b, error.what());
        stacking = false;
      }
      if (stacked && !stacking_checked) {
        int64_t stacked_rows = 0;
        for (std::size_t i = b; i < end; ++i) stacked_rows += batches[i].front().second.shape()[0];
        const auto mixing = first_mixing_activation(*single, *stacked, batches[b].front().second.shape()[0],
                                                    stacked_rows, calibrated);
        if (mixing) {
          log::info("calibration: feeds are run one at a time: tensor '{}' mixes the samples of a batch", *mixing);
          stacking = false;
          stacked.reset();
        } else {
          log::verbose("calibration: up to {} feeds stacked into one inference (the first stack's activations "
                       "equal its first feed's run alone)",
                       kStackedFeeds);
        }
        stacking_checked = true;
      }
      if (stacked) {
        outputs = std::move(*stacked);
      } else if (single) {
        outputs = std::move(*single);
        end = b + 1;
      } else {
        continue;
      }
    } else {
      outputs = runner.infer(batches[b]);
    }
    // Graph inputs from the feeds; the rest from the outputs, each once (an input returned as a
    // graph output is not counted twice).
    for (std::size_t i = b; i < end; ++i)
      for (const auto& [name, tensor] : batches[i]) fold(name, tensor);
    std::set<std::string> folded;
    for (const auto& [name, tensor] : outputs)
      if (!input_names.count(name) && folded.insert(name).second) fold(name, tensor);
    result.batches += static_cast<int64_t>(end - b);
    b = end;
    const auto now = Clock::now();
    if (b == batches.size() || now - last_log >= std::chrono::seconds(1)) {
      log_progress(b);
      last_log = now;
    }
  }
  runner.set_intermediate_outputs(runtime::IntermediateOutputs::none());

  for (const auto& name : tensors) {
    const AbsHistogram& histogram = result.histograms.at(name);
    if (histogram.count() == 0)
      raise<InvalidInputError>("calibration: no batch reached tensor '{}' ({} batch(es) run): it holds no values; "
                               "exclude its consumers with --keep-fp32",
                               name, batches.size());
    if (histogram.non_finite())
      log::warning("calibration: tensor '{}' had {} NaN or infinite value(s), left out of its statistics", name,
                   histogram.non_finite());
    const double amax = amax_from(histogram, settings);
    if (amax == 0)
      log::warning("calibration: tensor '{}' was zero in every batch; its scale is 1 (a scale of 0 would divide "
                   "by zero)",
                   name);
    result.amax[name] = amax;
    result.scales[name] = scale_of_amax(amax);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace parity::quantize

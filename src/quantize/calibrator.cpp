#include "parity/quantize/calibrator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::quantize {

float scale_of_amax(double amax) {
  return amax > 0 ? static_cast<float>(amax / 127.0) : 1.0f;
}

namespace {

// At most this many feeds per stack, and as many as keep the stack's largest calibrated activation
// within kStackBytes: past a core's cache (1-2 MiB of L2 per core on current x86 server CPUs) each op
// of a stack streams its activations through memory, while the per-inference overhead that stacking
// saves is paid off by a few feeds already.
constexpr std::size_t kStackedFeeds = 16;
constexpr std::size_t kStackBytes = std::size_t{1} << 20;

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

// How many feeds a stack holds: kStackBytes over the bytes of the largest calibrated activation of one
// feed's run (`single`), between 1 and kStackedFeeds.
std::size_t feeds_per_stack(const NamedTensors& single, const std::set<std::string>& calibrated) {
  std::size_t largest = 1;
  for (const auto& [name, tensor] : single)
    if (calibrated.count(name)) largest = std::max(largest, tensor.byte_size());
  return std::clamp<std::size_t>(kStackBytes / largest, 1, kStackedFeeds);
}

// Consecutive batches [begin, end) run as one inference (one batch when not stacked).
struct BatchRange {
  std::size_t begin;
  std::size_t end;
};

// The batches from `from` on cut into runs of consecutive feeds that stack onto the first of their
// run, at most `limit` each (1: one batch per range).
std::vector<BatchRange> stack_ranges(std::span<const NamedTensors> batches, std::size_t limit, std::size_t from) {
  std::vector<BatchRange> ranges;
  for (std::size_t b = from; b < batches.size();) {
    std::size_t end = b + 1;
    while (end < batches.size() && end - b < limit && stacks_onto(batches[b], batches[end])) ++end;
    ranges.push_back({b, end});
    b = end;
  }
  return ranges;
}

}  // namespace

CalibrationResult calibrate(std::span<runtime::Runner* const> runners, const std::vector<std::string>& tensors,
                            std::span<const NamedTensors> batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (runners.empty()) raise<InternalError>("calibrate: no runner");
  if (batches.empty()) raise<InvalidInputError>("calibration: the data loader gave no batches");
  CalibrationResult result;
  for (const auto& name : tensors) result.histograms[name];
  // Folds `tensor`, the activation of `rows[0] + rows[1] + ...` samples (one feed's rows each, in
  // order), into its statistics. A histogram takes one feed's share at a time, as where the feeds run
  // one at a time (its range is set by the first share it sees), so the stack size does not change
  // its bins and stacking changes them only by the float rounding of the stacked kernels; the shares
  // are the tensor cut in proportion to the rows where that cuts between elements, else the tensor
  // is taken whole. The largest |x| takes the whole tensor.
  auto fold = [&](const std::string& name, const Tensor& tensor, std::span<const int64_t> rows) {
    auto it = result.histograms.find(name);
    if (it == result.histograms.end() || tensor.dtype() != DType::kFloat32) return;
    const std::span<const float> values = tensor.span<float>();
    if (settings.algo == CalibrationAlgo::kMinMax) {
      it->second.add_max_only(values);
      return;
    }
    int64_t total = 0;
    for (int64_t r : rows) total += r;
    const auto size = static_cast<int64_t>(values.size());
    bool cuts = rows.size() > 1 && total > 0;
    std::vector<std::size_t> edges{0};
    int64_t before = 0;
    for (std::size_t i = 0; cuts && i < rows.size(); ++i) {
      before += rows[i];
      if ((size * before) % total != 0) cuts = false;
      edges.push_back(static_cast<std::size_t>(size * before / total));
    }
    if (!cuts) {
      it->second.add(values);
      return;
    }
    for (std::size_t i = 0; i + 1 < edges.size(); ++i)
      it->second.add(values.subspan(edges[i], edges[i + 1] - edges[i]));
  };

  struct Deactivation {
    std::span<runtime::Runner* const> runners;
    ~Deactivation() {
      for (auto* runner : runners)
        if (runner->is_active()) runner->deactivate();
    }
  } deactivation{runners};
  for (auto* runner : runners)
    if (!runner->is_active()) runner->activate();
  const TensorMetadata inputs = runners.front()->input_metadata();
  std::vector<std::string> marked;
  std::set<std::string> input_names;
  for (const auto& [name, info] : inputs) input_names.insert(name);
  for (const auto& name : tensors)
    if (!input_names.count(name) && !returned.count(name)) marked.push_back(name);
  // The marked tensors come back with each batch's outputs (one batch's at a time); a tensor
  // callback would make ONNX Runtime return every tensor of the graph.
  for (auto* runner : runners) runner->set_intermediate_outputs(runtime::IntermediateOutputs::list(marked));

  auto last_log = start;
  auto log_progress = [&](std::size_t done) {
    std::size_t seen = 0;
    for (const auto& [name, histogram] : result.histograms) seen += histogram.count() > 0;
    log::info("Calibrating: {}/{} batches, {}/{} tensors seen", done, batches.size(), seen, tensors.size());
  };
  // Folds batches [begin, end) given their outputs: graph inputs from the feeds, the rest from the
  // outputs, each once (an input returned as a graph output is not counted twice).
  std::size_t done = 0;
  auto fold_range = [&](BatchRange range, const NamedTensors& outputs) {
    std::vector<int64_t> rows;
    for (std::size_t i = range.begin; i < range.end; ++i) {
      const Tensor& first_input = batches[i].front().second;
      rows.push_back(first_input.rank() > 0 ? first_input.shape()[0] : 1);
      for (const auto& [name, tensor] : batches[i]) fold(name, tensor, {});
    }
    std::set<std::string> folded;
    for (const auto& [name, tensor] : outputs)
      if (!input_names.count(name) && folded.insert(name).second) fold(name, tensor, rows);
    result.batches += static_cast<int64_t>(range.end - range.begin);
    done = range.end;
    const auto now = Clock::now();
    if (done == batches.size() || now - last_log >= std::chrono::seconds(1)) {
      log_progress(done);
      last_log = now;
    }
  };
  for (std::size_t b = 0; b < batches.size(); ++b) check_batch_names(batches[b], inputs, b);

  // Stacking changes no activation's values per sample only where the model computes each sample on
  // its own; the first stack is checked against its first feed run alone (that run's outputs stand
  // for the feed when the check fails, and are not counted when it passes: the stack counts them).
  // The first feed's run alone also sizes the stacks.
  runtime::Runner& first_runner = *runners.front();
  std::set<std::string> calibrated;
  for (const auto& name : tensors)
    if (!input_names.count(name)) calibrated.insert(name);
  std::optional<NamedTensors> first_single = first_runner.infer(batches.front());
  const std::size_t stack_limit = stackable(inputs) ? feeds_per_stack(*first_single, calibrated) : 1;
  std::vector<BatchRange> ranges = stack_ranges(batches, stack_limit, 0);
  // Where there is a stack of several feeds, the ranges up to it (the stack checked) run here in order.
  const bool any_stack = std::any_of(ranges.begin(), ranges.end(), [](BatchRange r) { return r.end - r.begin > 1; });
  if (!any_stack) {
    fold_range(ranges.front(), *first_single);
    ranges.erase(ranges.begin());
    first_single.reset();
  }
  std::size_t first_unrun = 0;
  while (any_stack && first_unrun < ranges.size()) {
    const BatchRange range = ranges[first_unrun++];
    NamedTensors single = range.begin == 0 ? std::move(*first_single) : first_runner.infer(batches[range.begin]);
    if (range.end - range.begin == 1) {
      fold_range(range, single);
      continue;
    }
    std::optional<NamedTensors> stacked;
    try {
      stacked = first_runner.infer(stack(batches.subspan(range.begin, range.end - range.begin)));
    } catch (const Error& error) {
      log::info(
          "calibration: {} feeds stacked along the batch dimension fail to run ({}); running the feeds one "
          "at a time",
          range.end - range.begin, error.what());
    }
    if (stacked) {
      int64_t stacked_rows = 0;
      for (std::size_t i = range.begin; i < range.end; ++i) stacked_rows += batches[i].front().second.shape()[0];
      const auto mixing = first_mixing_activation(single, *stacked, batches[range.begin].front().second.shape()[0],
                                                  stacked_rows, calibrated);
      if (mixing) {
        log::info("calibration: feeds are run one at a time: tensor '{}' mixes the samples of a batch", *mixing);
        stacked.reset();
      } else {
        log::verbose(
            "calibration: up to {} feeds stacked into one inference (the first stack's activations "
            "equal its first feed's run alone)",
            stack_limit);
      }
    }
    if (stacked) {
      fold_range(range, *stacked);
    } else {
      fold_range({range.begin, range.begin + 1}, single);
      ranges = stack_ranges(batches, 1, range.begin + 1);
      first_unrun = 0;
    }
    break;
  }
  ranges.erase(ranges.begin(), ranges.begin() + static_cast<std::ptrdiff_t>(first_unrun));

  // The other ranges, each worker on its own runner taking the next range not taken; the outputs
  // are folded in the order of the ranges (a histogram's range is set by the first batch it sees),
  // one fold at a time while the other workers' inferences run, so the statistics are those of one
  // runner going through the batches in order.
  std::mutex mutex;
  std::condition_variable folded_one;
  std::size_t next_range = 0;
  std::size_t next_to_fold = 0;
  std::exception_ptr failure;
  std::atomic<bool> logged_unstacking = false;
  auto work = [&](runtime::Runner& runner) {
    try {
      while (true) {
        std::size_t index;
        {
          std::lock_guard lock(mutex);
          if (failure || next_range == ranges.size()) return;
          index = next_range++;
        }
        const BatchRange range = ranges[index];
        // A range's inferences: the stack, or its feeds one at a time where the stack fails to run.
        std::vector<std::pair<BatchRange, NamedTensors>> runs;
        if (range.end - range.begin == 1) {
          runs.emplace_back(range, runner.infer(batches[range.begin]));
        } else {
          try {
            runs.emplace_back(range, runner.infer(stack(batches.subspan(range.begin, range.end - range.begin))));
          } catch (const Error& error) {
            if (!logged_unstacking.exchange(true))
              log::info(
                  "calibration: {} feeds stacked along the batch dimension fail to run ({}); running them one "
                  "at a time",
                  range.end - range.begin, error.what());
            for (std::size_t i = range.begin; i < range.end; ++i)
              runs.emplace_back(BatchRange{i, i + 1}, runner.infer(batches[i]));
          }
        }
        {
          std::unique_lock lock(mutex);
          folded_one.wait(lock, [&] { return failure || next_to_fold == index; });
          if (failure) return;
          for (const auto& [part, outputs] : runs) fold_range(part, outputs);
          ++next_to_fold;
        }
        folded_one.notify_all();
        // The outputs are released here, outside the lock.
      }
    } catch (...) {
      {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
      }
      folded_one.notify_all();
    }
  };
  const std::size_t workers = std::min(runners.size(), ranges.size());
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work, std::ref(*runners[w]));
  if (workers > 0) work(first_runner);
  for (auto& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
  for (auto* runner : runners) runner->set_intermediate_outputs(runtime::IntermediateOutputs::none());

  for (const auto& name : tensors) {
    const AbsHistogram& histogram = result.histograms.at(name);
    if (histogram.count() == 0)
      raise<InvalidInputError>(
          "calibration: no batch reached tensor '{}' ({} batch(es) run): it holds no values; "
          "exclude its consumers with --keep-fp32",
          name, batches.size());
    if (histogram.non_finite())
      log::warning("calibration: tensor '{}' had {} NaN or infinite value(s), left out of its statistics", name,
                   histogram.non_finite());
    const double amax = amax_from(histogram, settings);
    if (amax == 0)
      log::warning(
          "calibration: tensor '{}' was zero in every batch; its scale is 1 (a scale of 0 would divide "
          "by zero)",
          name);
    result.amax[name] = amax;
    result.scales[name] = scale_of_amax(amax);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

CalibrationResult calibrate(runtime::Runner& runner, const std::vector<std::string>& tensors,
                            std::span<const NamedTensors> batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned) {
  runtime::Runner* const runners[] = {&runner};
  return calibrate(runners, tensors, batches, settings, returned);
}

}  // namespace parity::quantize

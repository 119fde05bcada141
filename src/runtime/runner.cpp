#include "parity/runtime/runner.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>
#include <optional>
#include <mutex>

#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::runtime {
namespace {

std::string runner_name(std::string_view prefix) {
  static std::mutex mutex;
  static std::map<std::string, int, std::less<>> counts;
  int index;
  {
    std::lock_guard lock(mutex);
    index = counts[std::string(prefix)]++;
  }
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%m/%d/%y-%H:%M:%S", std::localtime(&now));
  return fmt::format("{}-N{}-{}", prefix, index, stamp);
}

// Levenshtein distance, for "did you mean" hints.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

Runner::Runner(std::string_view prefix) : name_(runner_name(prefix)) {}

void Runner::activate() {
  std::lock_guard lock(lifecycle_);
  if (active_) {
    log::warning("{} | Runner is already active; ignoring activate()", name_);
    return;
  }
  with_context(name_, [&] { activate_impl(); });
  active_ = true;
}

void Runner::deactivate() {
  std::lock_guard lock(lifecycle_);
  if (!active_) return;
  active_ = false;
  deactivate_impl();
}

TensorMetadata Runner::input_metadata() {
  std::lock_guard lock(lifecycle_);
  if (!active_) raise<InvalidInputError>("{}: input_metadata() needs an active runner; call activate() first", name_);
  return input_metadata_impl();
}

NamedTensors Runner::infer(const NamedTensors& feed) {
  std::lock_guard lock(lifecycle_);
  if (!active_) raise<InvalidInputError>("{}: infer() needs an active runner; call activate() first", name_);
  validate_feed(input_metadata_impl(), feed, name_);
  auto start = std::chrono::steady_clock::now();
  NamedTensors outputs = with_context(name_, [&] { return infer_impl(feed); });
  last_inference_time_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outputs;
}

std::optional<std::string> closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  std::size_t best_distance = SIZE_MAX;
  for (const auto& candidate : candidates) {
    std::size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = &candidate;
    }
  }
  if (!best || best_distance > std::max<std::size_t>(2, name.size() / 3)) return std::nullopt;
  return *best;
}

namespace {

std::string lower_case(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Polygraphy's util.find_str_in_iterable over the feed's names: the index of the entry for `name`.
std::optional<std::size_t> find_feed_entry(const NamedTensors& feed, const std::string& name, std::size_t position) {
  for (std::size_t i = 0; i < feed.size(); ++i)
    if (feed[i].first == name) return i;
  const std::string wanted = lower_case(name);
  for (std::size_t i = 0; i < feed.size(); ++i) {
    const std::string entry = lower_case(feed[i].first);
    if (entry.find(wanted) != std::string::npos || wanted.find(entry) != std::string::npos) return i;
  }
  if (position < feed.size()) return position;
  return std::nullopt;
}

}  // namespace

void match_feed_names(const TensorMetadata& metadata, NamedTensors& feed) {
  NamedTensors matched;
  std::vector<bool> taken(feed.size(), false);
  std::size_t position = 0;
  for (const auto& [input, _] : metadata) {
    auto entry = find_feed_entry(feed, input, position++);
    if (!entry) continue;
    taken[*entry] = true;
    if (feed[*entry].first != input)
      log::warning("Input tensor: {} | Buffer name ({}) does not match expected input name ({}).", input,
                   feed[*entry].first, input);
    matched.emplace_back(input, feed[*entry].second);
  }
  for (std::size_t i = 0; i < feed.size(); ++i)
    if (!taken[i]) log::warning("Input tensor: {} | Not an input of the model: ignored.", feed[i].first);
  feed = std::move(matched);
}

void validate_feed(const TensorMetadata& metadata, const NamedTensors& feed, const std::string& runner_name) {
  for (const auto& [name, tensor] : feed) {
    const TensorInfo* info = metadata.find(name);
    if (!info) {
      std::vector<std::string> names;
      for (const auto& [known, _] : metadata) names.push_back(known);
      auto hint = closest_name(name, names);
      raise<InvalidInputError>("{}: input '{}' is not an input of the model{} (inputs: {})", runner_name, name,
                               hint ? fmt::format("; did you mean '{}'?", *hint) : "", fmt::join(names, ", "));
    }
    if (info->dtype != DType::kUndefined && tensor.dtype() != info->dtype)
      raise<InvalidInputError>("{}: input '{}' has dtype {}, but the model expects {}", runner_name, name,
                               dtype_name(tensor.dtype()), dtype_name(info->dtype));
    if (info->shape) {
      const auto& dims = *info->shape;
      if (dims.size() != tensor.shape().size())
        raise<InvalidInputError>("{}: input '{}' has shape {} (rank {}), but the model expects rank {} {}",
                                 runner_name, name, shape_to_string(tensor.shape()), tensor.shape().size(),
                                 dims.size(), info->to_string());
      for (std::size_t i = 0; i < dims.size(); ++i)
        if (dims[i].value && *dims[i].value != tensor.shape()[i])
          raise<InvalidInputError>("{}: input '{}' has shape {}, but the model expects {} (dimension {} must be {})",
                                   runner_name, name, shape_to_string(tensor.shape()), info->to_string(), i,
                                   *dims[i].value);
    }
  }
  for (const auto& [name, info] : metadata) {
    bool given = std::any_of(feed.begin(), feed.end(), [&](const auto& entry) { return entry.first == name; });
    if (!given)
      raise<InvalidInputError>("{}: input '{}' {} is missing from the feed", runner_name, name, info.to_string());
  }
}

}  // namespace parity::runtime

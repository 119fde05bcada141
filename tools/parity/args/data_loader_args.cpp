#include "args/data_loader_args.h"

#include <cstdlib>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "args/generated_script.h"
#include "args/python_scripts.h"
#include "args/value_parsing.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"

namespace parity::cli {

void DataLoaderArgs::add_to(CLI::App& app, const DataLoaderFlags& flags) {
  const char* data = "Data Loader";
  app.add_option("--seed", seed_, "Seed for random inputs (default 1)")->group(data);
  if (flags.iterations) {
    app.add_option("--iterations,--iters", iterations_, "Number of inference iterations (default 1)")->group(data);
    if (flags.warm_up)
      app.add_option("--warm-up", warm_up_, "Untimed inferences on the first input before the timed ones (default 0)")
          ->group(data);
  }
  app.add_option("--data-loader-backend-module", backend_module_,
                 "Module whose random generator makes the inputs: numpy (default) or torch (torch.rand / "
                 "torch.randint values, without Python; torch ignores --val-range for floats, like Polygraphy)")
      ->group(data);
  app.add_option("--val-range", val_range_, "Value ranges of random inputs: [<name>:][min,max] ...")->group(data);
  if (!flags.input_shapes.empty()) {
    auto* option = app.add_option(flags.input_shapes, input_shapes_, flags.input_shapes_help)->group(data);
    input_shapes_flag_ = option->get_name();
  }
  auto* load_inputs = app.add_option("--load-inputs,--load-input-data", load_inputs_,
                                     "Input files: Polygraphy JSON lists of feed dicts, .npz (one iteration), .npy "
                                     "(single input)")
                          ->group(data);
  app.add_option("--data-loader-script", data_loader_script_,
                 "Python script[:function] whose function (default load_data) returns an iterable of "
                 "{input name: array} dicts; runs in $PARITY_PYTHON or python3")
      ->group(data)
      ->excludes(load_inputs);
}

void DataLoaderArgs::add_save_inputs_to(CLI::App& app, const char* group) {
  app.add_option("--save-inputs,--save-input-data", save_inputs_, "Save the inputs (Polygraphy JSON list)")
      ->group(group);
}

namespace {

std::optional<double> as_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

// A value as Polygraphy's args_util.cast leaves it, in Python's repr: 1, 1.5, 'a'.
std::string python_repr(const std::string& text) {
  auto number = as_number(text);
  if (!number) return "'" + text + "'";
  if (text.find_first_of(".eEnN") == std::string::npos) return text;  // an int
  std::string shown = fmt::format("{}", *number);
  if (shown.find_first_of(".en") == std::string::npos) shown += ".0";
  return shown;
}

// Polygraphy's checks of one --val-range entry, with its messages: exactly two values, both numbers.
void check_range_values(const std::string& name, const std::vector<std::string>& values) {
  std::vector<std::string> shown;
  for (const auto& value : values) shown.push_back(python_repr(value));
  std::string parsed =
      fmt::format("input: {}, range: ({}{})", name, fmt::join(shown, ", "), values.size() == 1 ? "," : "");
  if (values.size() != 2)
    raise<InvalidInputError>("In --val-range, for input: {}, expected to receive exactly 2 values, but received {}.\n"
                             "Note: Option was parsed as: {}",
                             name, values.size(), parsed);
  if (!as_number(values[0]) || !as_number(values[1]))
    raise<InvalidInputError>("In --val-range, for input: {}, one or more elements of the range could not be parsed as "
                             "a number.\nNote: Option was parsed as: {}",
                             name, parsed);
}

}  // namespace

void DataLoaderArgs::parse() {
  // 0 is allowed, as in Polygraphy: the runners activate and run nothing.
  if (iterations_ < 0) raise<InvalidInputError>("--iterations must be 0 or more, got {}", iterations_);
  if (warm_up_ < 0) raise<InvalidInputError>("--warm-up must be 0 or more, got {}", warm_up_);
  if (seed_ < 0 || seed_ > 0xFFFFFFFFLL) raise<InvalidInputError>("--seed must be in [0, 2^32 - 1], got {}", seed_);
  // CLI11 splits a token that is entirely "[a,b]" into "a" and "b" (its list syntax); put the
  // default range ("[min,max]" without a name) back together.
  std::vector<std::string> ranges;
  for (std::size_t i = 0; i < val_range_.size(); ++i) {
    const std::string& token = val_range_[i];
    if (token.find_first_of(":[") != std::string::npos) {
      ranges.push_back(token);
    } else if (i + 1 < val_range_.size() && val_range_[i + 1].find_first_of(":[") == std::string::npos) {
      ranges.push_back("[" + token + "," + val_range_[i + 1] + "]");
      ++i;
    } else {
      check_range_values("", {token});  // a default range of one value: Polygraphy's message
    }
  }
  for (const auto& arg : ranges) {
    auto [name, range] = split_named_bracket(arg, false, "--val-range");
    if (range.back() != ']') raise<InvalidInputError>("--val-range: expected [<name>:][min,max], got '{}'", arg);
    std::vector<std::string> values;
    std::string body = range.substr(1, range.size() - 2);
    for (std::size_t start = 0;;) {
      auto comma = body.find(',', start);
      values.push_back(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    check_range_values(name, values);
    double low = parse_double(values[0], "--val-range");
    double high = parse_double(values[1], "--val-range");
    options_.val_ranges.emplace_back(name, std::pair(low, high));
  }
  for (const auto& arg : input_shapes_) {
    auto [name, dims] = split_named_bracket(arg, true, input_shapes_flag_);
    options_.input_shapes.emplace_back(name, parse_dims(dims, input_shapes_flag_ + " " + name));
  }
  if (backend_module_ != "numpy" && backend_module_ != "torch")
    raise<InvalidInputError>("argument --data-loader-backend-module: invalid choice: '{}' (choose from 'numpy', "
                             "'torch')",
                             backend_module_);
  options_.backend_module = backend_module_;
  options_.seed = static_cast<uint32_t>(seed_);
  options_.iterations = iterations_;
}

bool DataLoaderArgs::random_flags_given() const {
  return !val_range_.empty() || seed_ != 1 || iterations_ != 1 || !input_shapes_.empty();
}

std::vector<NamedTensors> DataLoaderArgs::load_input_files(const TensorMetadata& metadata) const {
  std::vector<NamedTensors> feeds;
  for (const auto& path : load_inputs_) {
    std::string extension = file_extension(path);
    if (extension == ".npz") {
      feeds.push_back(load_npz(path));
    } else if (extension == ".npy") {
      if (metadata.size() != 1)
        raise<InvalidInputError>("{}: a .npy file holds one array, but the model has {} inputs; use .npz or a "
                                 "Polygraphy JSON input file", path, metadata.size());
      feeds.push_back({{metadata[0].first, load_npy(path)}});
    } else {
      auto loaded = load_inputs_json(path);
      feeds.insert(feeds.end(), std::make_move_iterator(loaded.begin()), std::make_move_iterator(loaded.end()));
    }
  }
  if (feeds.empty()) raise<InvalidInputError>("--load-inputs: the input file(s) hold no iterations");
  log::info("Loaded {} iteration(s) of inputs from {}", feeds.size(), fmt::join(load_inputs_, ", "));
  return feeds;
}

// --input-shapes and --val-range name inputs of the model: a name that matches none is an error
// (Polygraphy only warns, or for --input-shapes says nothing, and runs with the defaults), with
// a "did you mean" hint when an input's name is close to it.
void DataLoaderArgs::check_input_names(const TensorMetadata& metadata) const {
  std::vector<std::string> names;
  for (const auto& [known, info] : metadata) names.push_back(known);
  auto check = [&](const std::string& name, const char* flag) {
    if (metadata.contains(name)) return;
    auto hint = runtime::closest_name(name, names);
    raise<InvalidInputError>("{}: the model has no input called '{}'{} (inputs: {})", flag, name,
                             hint ? fmt::format("; did you mean '{}'?", *hint) : "", fmt::join(names, ", "));
  };
  for (const auto& [name, dims] : options_.input_shapes)
    if (name.find_first_of("*?[") == std::string::npos) check(name, input_shapes_flag_.c_str());  // else a wildcard
  for (const auto& [name, range] : options_.val_ranges)
    if (!name.empty()) check(name, "--val-range");  // "" is the default range
}

void DataLoaderArgs::warn_random_flags_ignored(const char* source_flag) const {
  if (random_flags_given())
    log::warning("{} is set: --seed, --val-range, --iterations and --input-shapes are ignored", source_flag);
}

compare::DataLoaderFunc DataLoaderArgs::data_loader() const {
  return [this](const TensorMetadata& metadata) -> std::vector<NamedTensors> {
    if (!load_inputs_.empty()) {
      warn_random_flags_ignored("--load-inputs");
      return load_input_files(metadata);
    }
    if (!data_loader_script_.empty()) {
      warn_random_flags_ignored("--data-loader-script");
      return run_data_loader_script(parse_script_spec(data_loader_script_, "load_data"));
    }
    check_input_names(metadata);
    return runtime::DataLoader(options_).generate_all(metadata);
  };
}

namespace {

// Seeded random feeds, each generated when taken.
class RandomFeedStream final : public FeedStream {
 public:
  RandomFeedStream(const runtime::DataLoaderOptions& options, TensorMetadata metadata)
      : loader_(options), metadata_(std::move(metadata)), count_(static_cast<std::size_t>(options.iterations)) {}

  std::optional<NamedTensors> next() override {
    if (next_ == count_) return std::nullopt;
    return loader_.generate(metadata_, static_cast<int>(next_++));
  }
  std::optional<std::size_t> size() const override { return count_; }

 private:
  runtime::DataLoader loader_;
  TensorMetadata metadata_;
  std::size_t count_;
  std::size_t next_ = 0;
};

}  // namespace

FeedStreamFunc DataLoaderArgs::feed_stream() const {
  return [this](const TensorMetadata& metadata) -> std::unique_ptr<FeedStream> {
    if (!load_inputs_.empty()) return feed_stream_of(data_loader()(metadata));
    if (!data_loader_script_.empty()) {
      warn_random_flags_ignored("--data-loader-script");
      return data_loader_script_stream(parse_script_spec(data_loader_script_, "load_data"));
    }
    check_input_names(metadata);
    return std::make_unique<RandomFeedStream>(options_, metadata);
  };
}

FeedStreamFunc DataLoaderArgs::feed_stream_started_now() const {
  if (!load_inputs_.empty() || data_loader_script_.empty()) return feed_stream();
  warn_random_flags_ignored("--data-loader-script");
  auto started = std::make_shared<std::unique_ptr<FeedStream>>(
      data_loader_script_stream(parse_script_spec(data_loader_script_, "load_data")));
  return [this, started](const TensorMetadata& metadata) -> std::unique_ptr<FeedStream> {
    if (*started) return std::move(*started);
    return feed_stream()(metadata);
  };
}

compare::DataLoaderFunc DataLoaderArgs::random_data_loader_with_shapes(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& shapes) const {
  return [this, shapes](const TensorMetadata& metadata) {
    runtime::DataLoaderOptions options = options_;
    options.iterations = 1;
    options.input_shapes.insert(options.input_shapes.end(), shapes.begin(), shapes.end());  // the last match wins
    return runtime::DataLoader(options).generate_all(metadata);
  };
}

void DataLoaderArgs::save_inputs(const std::vector<NamedTensors>& feeds) const {
  if (save_inputs_.empty()) return;
  save_inputs_json(save_inputs_, feeds);
  log::info("Saving inference input data to {}", save_inputs_);
}

std::vector<std::string> DataLoaderArgs::add_to_script(GeneratedScript& script) const {
  std::vector<std::string> run_arguments;
  if (warm_up_ > 0) run_arguments.push_back(fmt::format("warm_up={}", warm_up_));
  if (!load_inputs_.empty()) {
    for (const auto& path : load_inputs_)
      if (file_extension(path) != ".json") script.cannot_express("--load-inputs " + path + " (only JSON input files)");
    script.add_import("parity.json", "load_json");
    script.add_section("Data Loader", {"data_loader = []",
                                       fmt::format("for input_data_path in {}:", script.path_list(load_inputs_)),
                                       "    data_loader.extend(load_json(input_data_path, description='input data'))"});
    run_arguments.push_back("data_loader=data_loader");
  } else if (!data_loader_script_.empty()) {
    auto spec = parse_script_spec(data_loader_script_, "load_data");
    script.add_import("parity.backend.common", "invoke_from_script");
    script.add_section("Data Loader", {fmt::format("data_loader = invoke_from_script({}, name={})",
                                                   script.path(spec.path), python_string(spec.function))});
    run_arguments.push_back("data_loader=data_loader");
  } else if (random_flags_given() || backend_module_ != "numpy") {
    std::vector<std::string> arguments;
    if (seed_ != 1) arguments.push_back(fmt::format("seed={}", seed_));
    if (iterations_ != 1) arguments.push_back(fmt::format("iterations={}", iterations_));
    if (!options_.input_shapes.empty()) {
      script.add_import("parity.common", "TensorMetadata");
      std::string metadata = "TensorMetadata()";
      for (const auto& [name, dims] : options_.input_shapes)
        metadata += fmt::format(".add({}, None, [{}])", python_string(name), fmt::join(dims, ", "));
      arguments.push_back("input_metadata=" + metadata);
    }
    if (!options_.val_ranges.empty()) {
      std::vector<std::string> ranges;
      for (const auto& [name, range] : options_.val_ranges)
        ranges.push_back(fmt::format("{}: ({}, {})", python_string(name), python_float(range.first),
                                     python_float(range.second)));
      arguments.push_back(fmt::format("val_range={{{}}}", fmt::join(ranges, ", ")));
    }
    if (backend_module_ != "numpy")
      arguments.push_back("data_loader_backend_module=" + python_string(backend_module_));
    script.add_import("parity.comparator", "DataLoader");
    script.add_section("Data Loader", {fmt::format("data_loader = DataLoader({})", fmt::join(arguments, ", "))});
    run_arguments.push_back("data_loader=data_loader");
  }
  if (!save_inputs_.empty()) run_arguments.push_back("save_inputs_path=" + script.path(save_inputs_));
  return run_arguments;
}

}  // namespace parity::cli

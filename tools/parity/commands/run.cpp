// `parity run`: runs a model on one or more backends (in command-line order, each activated
// once), then compares their outputs the way Polygraphy's `run` does: adjacent pairs by default
// (or every result against one with --compare-to), simple/indices/distance/quality comparison
// functions, per-output tolerances, --validate, saved and loaded inputs and outputs in
// Polygraphy's formats, and a JSON report.
//
// Layerwise (--onnx-outputs): with exactly two results and no --save-outputs, tensors are compared
// one by one as the second run produces them (the first run's tensors wait in a spill file), so
// memory stays bounded; the first divergence in topological order is named with its node.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "args/python_scripts.h"
#include "args/model_args.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/compare/comparator.h"
#include "parity/compare/layerwise.h"
#include "parity/compare/postprocess.h"
#include "parity/compare/run_results.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/runtime/data_loader.h"
#include "parity/runtime/onnxrt_runner.h"
#include "parity/runtime/ref_runner.h"

namespace parity::cli {
namespace {

// What runners and the layerwise bookkeeping load: large weights stay in the model file.
const onnx::LoadOptions kRunnerLoad{.lazy_weights = true};

// --validate over a streamed layerwise run: every tensor a runner produced, checked for NaN/Inf.
struct StreamedValidation {
  struct Finding {
    int64_t iteration = 0;
    std::string tensor, node, op;
    compare::NonFiniteCounts counts;
  };
  std::string runner;
  int64_t checked = 0;
  std::vector<Finding> findings;  // in execution order

  void check(int64_t iteration, const runtime::ProducedTensor& t) {
    ++checked;
    compare::NonFiniteCounts counts = compare::count_nonfinite(t.tensor);
    if (counts.any()) findings.push_back({iteration, t.name, t.node_name, t.op_type, counts});
  }
  bool passed() const { return findings.empty(); }

  void log() const {
    if (passed()) {
      log::finish("PASSED | Validation (every streamed tensor) | {}: no NaN or Inf in {} tensor(s)", runner, checked);
      return;
    }
    const Finding& first = findings.front();
    log::error("FAILED | Validation (every streamed tensor) | {}: {} of {} tensor(s) hold NaN or Inf. The first, in "
               "execution order: '{}' (iteration {}, node '{}', op {}): NaN: {}, Inf: {}, -Inf: {}",
               runner, findings.size(), checked, first.tensor, first.iteration, first.node, first.op, first.counts.nan,
               first.counts.posinf, first.counts.neginf);
  }

  nlohmann::ordered_json to_json() const {
    nlohmann::ordered_json j;
    j["runner"] = runner;
    j["tensors_checked"] = checked;
    j["passed"] = passed();
    auto list = nlohmann::ordered_json::array();
    for (const auto& f : findings)
      list.push_back({{"tensor", f.tensor}, {"iteration", f.iteration}, {"node", f.node}, {"op", f.op},
                      {"nan", f.counts.nan}, {"inf", f.counts.posinf}, {"neg_inf", f.counts.neginf}});
    j["nonfinite_tensors"] = std::move(list);
    return j;
  }
};

struct LiveRunner {
  std::unique_ptr<runtime::Runner> runner;
  std::string kind;  // "ref", "onnxrt"
};

class RunCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"run"}; }
  std::string description() const override {
    return "Run a model on one or more backends and compare their outputs (Polygraphy's `run`)";
  }

  void add_options(CLI::App& app) override {
    app_ = &app;
    model_.add_to(app, /*shape_inference_by_default=*/false);
    const char* runners = "Runners";
    ref_flag_ = app.add_flag("--ref", ref_count_, "Run Parity's reference interpreter (repeatable)")->group(runners);
    onnxrt_flag_ = app.add_flag("--onnxrt", onnxrt_count_, "Run ONNX Runtime (repeatable)")->group(runners);
    const char* ref = "Reference Runner";
    app.add_option("--ref-precision", ref_precision_, "Reference interpreter precision: fp32 (default) or fp64")
        ->check(CLI::IsMember({"fp32", "fp64"}))
        ->group(ref);
    const char* ort = "ONNX-Runtime Session Creation";
    app.add_option("--providers,--execution-providers", providers_,
                   "ONNX Runtime execution providers in priority order (exact or case-insensitive partial "
                   "match; default: cpu)")
        ->group(ort);
    app.add_option("--ort-opt-level", ort_opt_level_, "ONNX Runtime graph optimization level: disable, basic, "
                   "extended, all (default)")->group(ort);
    app.add_option("--ort-intra-op-threads", ort_intra_threads_, "ONNX Runtime intra-op threads (0: its default)")
        ->group(ort);
    app.add_option("--ort-library", ort_library_, "ONNX Runtime shared library (file or folder)")->group(ort);
    app.add_option("--ort-layerwise-budget", ort_layerwise_budget_mib_,
                   "Layerwise runs: MiB of intermediate tensors one ONNX Runtime partial run may produce; the "
                   "graph is split into pieces that fit (default 64; 0: half the available memory)")
        ->group(ort);

    const char* onnx_load = "ONNX Model Loading";
    app.add_option("--onnx-outputs,--outputs", onnx_outputs_,
                   "Tensors to compare besides the graph outputs: 'mark all', names, or @file (one name a line)")
        ->group(onnx_load);
    app.add_option("--onnx-exclude-outputs", onnx_exclude_outputs_,
                   "Tensors to leave out of the comparison (and of --save-outputs), graph outputs included")
        ->group(onnx_load);
    app.add_option("--layerwise-worst", layerwise_worst_,
                   "Layerwise: how many of the worst tensors to list (default 10)")->group(onnx_load);

    const char* data = "Data Loader";
    app.add_option("--seed", seed_, "Seed for random inputs (default 1)")->group(data);
    app.add_option("--iterations,--iters", iterations_, "Number of inference iterations (default 1)")->group(data);
    app.add_option("--warm-up", warm_up_, "Untimed inferences on the first input before the timed ones (default 0)")
        ->group(data);
    app.add_option("--val-range", val_range_, "Value ranges of random inputs: [<name>:][min,max] ...")->group(data);
    app.add_option("--input-shapes,--inputs", input_shapes_, "Input shapes: <name>:[d0,d1,...] ...")->group(data);
    auto* load_inputs = app.add_option("--load-inputs,--load-input-data", load_inputs_,
                   "Input files: Polygraphy JSON lists of feed dicts, .npz (one iteration), .npy (single input)")
        ->group(data);
    app.add_option("--data-loader-script", data_loader_script_,
                   "Python script[:function] whose function (default load_data) returns an iterable of "
                   "{input name: array} dicts; runs in $PARITY_PYTHON or python3")
        ->group(data)
        ->excludes(load_inputs);

    const char* run = "Comparator Inference";
    app.add_option("--save-inputs,--save-input-data", save_inputs_, "Save the inputs (Polygraphy JSON list)")
        ->group(run);
    app.add_option("--save-outputs,--save-results", save_outputs_, "Save the results (Polygraphy RunResults JSON)")
        ->group(run);

    const char* post = "Comparator Postprocessing";
    app.add_option("--postprocess,--postprocess-func", postprocess_, "[<out>:]top-<K>[,axis=<A>] ...")->group(post);

    const char* cmp = "Comparator Comparisons";
    app.add_flag("--validate", validate_, "Check outputs for NaN and Inf")->group(cmp);
    app.add_flag("--fail-fast", fail_fast_, "Stop at the first failing comparison")->group(cmp);
    app.add_option("--compare,--compare-func", compare_func_, "Comparison function: simple, indices, distance, quality")
        ->check(CLI::IsMember({"simple", "indices", "distance", "quality"}))
        ->group(cmp);
    app.add_option("--compare-func-script", compare_func_script_,
                   "Python script[:function] (default compare_outputs) called with two iteration results, "
                   "returning {output name: result}; bool(result) is the verdict. Replaces --compare")
        ->group(cmp);
    app.add_option("--compare-to", compare_to_,
                   "Compare every result against this one ('first', a runner name or prefix, or an index) "
                   "instead of adjacent pairs")->group(cmp);
    app.add_option("--load-outputs,--load-results", load_outputs_,
                   "RunResults files whose results take part in the comparison like live runners")->group(cmp);
    app.add_option("--report", report_, "Write a JSON report of the comparisons")->group(cmp);
    app.add_option("--stats-style", stats_style_, "Statistics text: parity (default) or polygraphy")
        ->check(CLI::IsMember({"parity", "polygraphy"}))
        ->group(cmp);

    const char* simple = "Comparison Function: simple";
    app.add_flag("--no-shape-check", no_shape_check_, "Compare outputs of different shapes after reshaping")
        ->group(simple);
    app.add_option("--rtol,--rel-tol", rtol_, "Relative tolerance [<out>:]value ...")->group(simple);
    app.add_option("--atol,--abs-tol", atol_, "Absolute tolerance [<out>:]value ...")->group(simple);
    app.add_option("--check-error-stat", check_error_stat_,
                   "Error statistic to check: [<out>:]{max,mean,median,elemwise,quantile} ...")->group(simple);
    app.add_flag("--infinities-compare-equal", infinities_compare_equal_, "Matching infinities count as equal")
        ->group(simple);
    app.add_option("--error-quantile", error_quantile_, "Quantile for --check-error-stat quantile: [<out>:]q ...")
        ->group(simple);
    const char* idx = "Comparison Function: indices";
    app.add_option("--index-tolerance", index_tolerance_, "Index tolerance [<out>:]n ...")->group(idx);
    const char* dist = "Comparison Function: distance";
    app.add_option("--l2-tolerance", l2_tolerance_, "Largest L2 norm of the difference [<out>:]value ... (1e-5)")
        ->group(dist);
    app.add_option("--cosine-similarity-threshold", cosine_threshold_,
                   "Smallest cosine similarity [<out>:]value ... in [-1, 1] (0.997)")->group(dist);
    const char* quality = "Comparison Function: quality";
    app.add_option("--psnr-tolerance", psnr_tolerance_, "Smallest PSNR in dB [<out>:]value ... (30)")->group(quality);
    app.add_option("--snr-tolerance", snr_tolerance_, "Smallest SNR in dB [<out>:]value ... (20)")->group(quality);
  }

  int run() override {
    const auto start = std::chrono::steady_clock::now();
    const std::string command = command_line();
    log::start("RUNNING | Command: {}", command);
    bool passed = execute();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (passed) log::finish("PASSED | Runtime: {:.3f}s | Command: {}", seconds, command);
    else log::error("FAILED | Runtime: {:.3f}s | Command: {}", seconds, command);
    return passed ? 0 : 1;
  }

 private:
  // ---- argument parsing (all before any inference, so bad flags fail fast) ----
  void parse_arguments() {
    style_ = stats_style_ == "polygraphy" ? compare::StatsStyle::kPolygraphy : compare::StatsStyle::kParity;
    if (iterations_ < 1) raise<InvalidInputError>("--iterations must be at least 1, got {}", iterations_);
    if (warm_up_ < 0) raise<InvalidInputError>("--warm-up must be 0 or more, got {}", warm_up_);
    excluded_.insert(onnx_exclude_outputs_.begin(), onnx_exclude_outputs_.end());
    if (seed_ < 0 || seed_ > 0xFFFFFFFFLL) raise<InvalidInputError>("--seed must be in [0, 2^32 - 1], got {}", seed_);
    if (layerwise_worst_ < 1) raise<InvalidInputError>("--layerwise-worst must be at least 1");
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
        raise<InvalidInputError>("--val-range: expected [<name>:][min,max], got '{}'", token);
      }
    }
    for (const auto& arg : ranges) {
      auto [name, range] = split_named_bracket(arg, false, "--val-range");
      std::string body = range.substr(1, range.size() - 2);
      auto comma = body.find(',');
      if (comma == std::string::npos || range.back() != ']')
        raise<InvalidInputError>("--val-range: expected [<name>:][min,max], got '{}'", arg);
      double lo = parse_double(body.substr(0, comma), "--val-range"), hi = parse_double(body.substr(comma + 1), "--val-range");
      data_options_.val_ranges.emplace_back(name, std::pair(lo, hi));
    }
    for (const auto& arg : input_shapes_) {
      auto [name, dims] = split_named_bracket(arg, true, "--input-shapes");
      data_options_.input_shapes.emplace_back(name, parse_dims(dims, "--input-shapes " + name));
    }
    data_options_.seed = static_cast<uint32_t>(seed_);
    data_options_.iterations = iterations_;

    for (const auto& arg : postprocess_) postprocess_rules_.push_back(compare::parse_postprocess(arg));

    simple_options_.atol = per_output<double>(atol_, 1e-5, [](const std::string& s) { return parse_double(s, "--atol"); });
    simple_options_.rtol = per_output<double>(rtol_, 1e-5, [](const std::string& s) { return parse_double(s, "--rtol"); });
    simple_options_.check_error_stat = per_output<compare::ErrorStat>(
        check_error_stat_, compare::ErrorStat::kElemwise, [](const std::string& s) { return compare::parse_error_stat(s); });
    simple_options_.error_quantile = per_output<double>(error_quantile_, 0.99, [](const std::string& s) {
      double q = parse_double(s, "--error-quantile");
      if (!(q >= 0 && q <= 1)) raise<InvalidInputError>("--error-quantile must be in [0, 1], got {}", s);
      return q;
    });
    simple_options_.infinities_compare_equal = infinities_compare_equal_;
    simple_options_.check_shapes = !no_shape_check_;
    simple_options_.fail_fast = fail_fast_;
    simple_options_.style = style_;
    distance_options_.l2_tolerance = per_output<double>(l2_tolerance_, 1e-5, [](const std::string& s) {
      double v = parse_double(s, "--l2-tolerance");
      if (!(v >= 0)) raise<InvalidInputError>("--l2-tolerance must be >= 0, got {}", s);
      return v;
    });
    distance_options_.cosine_similarity_threshold = per_output<double>(cosine_threshold_, 0.997, [](const std::string& s) {
      double v = parse_double(s, "--cosine-similarity-threshold");
      if (!(v >= -1 && v <= 1)) raise<InvalidInputError>("--cosine-similarity-threshold must be in [-1, 1], got {}", s);
      return v;
    });
    quality_options_.psnr_tolerance = per_output<double>(psnr_tolerance_, 30.0, [](const std::string& s) {
      return parse_double(s, "--psnr-tolerance");
    });
    quality_options_.snr_tolerance = per_output<double>(snr_tolerance_, 20.0, [](const std::string& s) {
      return parse_double(s, "--snr-tolerance");
    });
    for (auto [flag, given] : {std::pair{"--l2-tolerance", &l2_tolerance_},
                               std::pair{"--cosine-similarity-threshold", &cosine_threshold_}})
      if (!given->empty() && compare_func_ != "distance")
        log::warning("{} applies to --compare distance only; it is ignored with --compare {}", flag, compare_func_);
    for (auto [flag, given] : {std::pair{"--psnr-tolerance", &psnr_tolerance_}, std::pair{"--snr-tolerance", &snr_tolerance_}})
      if (!given->empty() && compare_func_ != "quality")
        log::warning("{} applies to --compare quality only; it is ignored with --compare {}", flag, compare_func_);
    indices_options_.index_tolerance = per_output<int64_t>(index_tolerance_, 0, [](const std::string& s) {
      int64_t n = parse_int(s, "--index-tolerance");
      if (n < 0) raise<InvalidInputError>("--index-tolerance must be >= 0, got {}", n);
      return n;
    });
    indices_options_.fail_fast = fail_fast_;
    indices_options_.style = style_;

    // --onnx-outputs
    if (!onnx_outputs_.empty()) {
      if (onnx_outputs_.size() == 2 && onnx_outputs_[0] == "mark" && onnx_outputs_[1] == "all") {
        intermediates_ = runtime::IntermediateOutputs::all();
      } else {
        std::vector<std::string> names;
        for (const auto& arg : onnx_outputs_) {
          if (arg == "mark" || arg == "all")
            raise<InvalidInputError>("--onnx-outputs: use 'mark all' (two words, alone) to mark every tensor");
          if (arg.starts_with("@")) {
            std::string text = read_file(arg.substr(1));
            std::size_t pos = 0;
            while (pos < text.size()) {
              auto end = text.find('\n', pos);
              std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
              line.erase(0, line.find_first_not_of(" \t\r"));
              line.erase(line.find_last_not_of(" \t\r") + 1);
              if (!line.empty() && line[0] != '#') names.push_back(line);
              if (end == std::string::npos) break;
              pos = end + 1;
            }
          } else {
            names.push_back(arg);
          }
        }
        intermediates_ = runtime::IntermediateOutputs::list(std::move(names));
      }
    }
    if (!ort_opt_level_.empty()) (void)runtime::ort_optimization_level_from_name(ort_opt_level_);
    if (ort_intra_threads_ < 0) raise<InvalidInputError>("--ort-intra-op-threads must be >= 0");
    if (ort_layerwise_budget_mib_ < 0 || ort_layerwise_budget_mib_ > (int64_t{1} << 30))
      raise<InvalidInputError>("--ort-layerwise-budget must be between 0 and 2^30 MiB, got {}", ort_layerwise_budget_mib_);
  }

  bool layerwise() const { return intermediates_.mode != runtime::IntermediateOutputs::Mode::kNone; }

  // ---- runners ----
  std::vector<LiveRunner> make_runners() {
    std::vector<LiveRunner> runners;
    // Runners read large weights from the model file when they need them (LoadOptions::lazy_weights).
    runtime::ModelLoader loader = [this] { return model_.load(kRunnerLoad); };
    for (const CLI::Option* option : app_->parse_order()) {
      if (option == ref_flag_) {
        runtime::RefOptions options;
        options.fp64 = ref_precision_ == "fp64";
        runners.push_back({std::make_unique<runtime::RefRunner>(loader, options), "ref"});
      } else if (option == onnxrt_flag_) {
        runtime::OnnxrtOptions options;
        if (!providers_.empty()) options.providers = providers_;
        if (!ort_opt_level_.empty()) options.optimization_level = runtime::ort_optimization_level_from_name(ort_opt_level_);
        options.intra_op_threads = ort_intra_threads_;
        options.library_path = ort_library_;
        options.intermediate_memory_budget = static_cast<std::size_t>(ort_layerwise_budget_mib_) << 20;
        runners.push_back({std::make_unique<runtime::OnnxrtRunner>(loader, options), "onnxrt"});
      }
    }
    return runners;
  }

  // ---- inputs ----
  std::vector<NamedTensors> load_input_files(const TensorMetadata& metadata) {
    std::vector<NamedTensors> feeds;
    for (const auto& path : load_inputs_) {
      std::string ext = file_extension(path);
      if (ext == ".npz") {
        feeds.push_back(load_npz(path));
      } else if (ext == ".npy") {
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
  void check_input_names(const TensorMetadata& metadata) {
    std::vector<std::string> names;
    for (const auto& [known, info] : metadata) names.push_back(known);
    auto check = [&](const std::string& name, const char* flag) {
      if (metadata.contains(name)) return;
      auto hint = runtime::closest_name(name, names);
      raise<InvalidInputError>("{}: the model has no input called '{}'{} (inputs: {})", flag, name,
                               hint ? fmt::format("; did you mean '{}'?", *hint) : "", fmt::join(names, ", "));
    };
    for (const auto& [name, dims] : data_options_.input_shapes)
      if (name.find_first_of("*?[") == std::string::npos) check(name, "--input-shapes");  // else a wildcard
    for (const auto& [name, range] : data_options_.val_ranges)
      if (!name.empty()) check(name, "--val-range");  // "" is the default range
  }

  std::vector<NamedTensors> make_feeds(runtime::Runner& first) {
    TensorMetadata metadata = first.input_metadata();
    std::vector<NamedTensors> feeds;
    if (!load_inputs_.empty()) {
      if (!val_range_.empty() || seed_ != 1 || iterations_ != 1 || !input_shapes_.empty())
        log::warning("--load-inputs is set: --seed, --val-range, --iterations and --input-shapes are ignored");
      feeds = load_input_files(metadata);
    } else if (!data_loader_script_.empty()) {
      if (!val_range_.empty() || seed_ != 1 || iterations_ != 1 || !input_shapes_.empty())
        log::warning("--data-loader-script is set: --seed, --val-range, --iterations and --input-shapes are ignored");
      feeds = run_data_loader_script(parse_script_spec(data_loader_script_, "load_data"));
    } else {
      check_input_names(metadata);
      runtime::DataLoader loader(data_options_);
      feeds = loader.generate_all(metadata);
    }
    for (std::size_t i = 0; i < feeds.size(); ++i)
      with_context(fmt::format("iteration {}", i), [&] { runtime::validate_feed(metadata, feeds[i], first.name()); });
    if (!save_inputs_.empty()) {
      save_inputs_json(save_inputs_, feeds);
      log::info("Saving inference input data to {}", save_inputs_);
    }
    return feeds;
  }

  // ---- comparisons ----
  compare::CompareFunc make_compare_func() const {
    if (!compare_func_script_.empty())
      return compare_func_script(parse_script_spec(compare_func_script_, "compare_outputs"));
    if (compare_func_ == "indices") return compare::indices(indices_options_);
    if (compare_func_ == "distance") {
      compare::DistanceOptions o = distance_options_;
      o.check_shapes = !no_shape_check_;
      o.fail_fast = fail_fast_;
      o.style = style_;
      return compare::distance(o);
    }
    if (compare_func_ == "quality") {
      compare::QualityOptions o = quality_options_;
      o.check_shapes = !no_shape_check_;
      o.fail_fast = fail_fast_;
      o.style = style_;
      return compare::quality(o);
    }
    return compare::simple(simple_options_);
  }

  compare::SimpleOutputParams simple_params(const std::string& name) const {
    compare::SimpleOutputParams p;
    p.atol = simple_options_.atol.get(name, 1e-5);
    p.rtol = simple_options_.rtol.get(name, 1e-5);
    p.check_error_stat = simple_options_.check_error_stat.get(name, compare::ErrorStat::kElemwise);
    p.error_quantile = simple_options_.error_quantile.get(name, 0.99);
    p.check_shapes = simple_options_.check_shapes;
    p.infinities_compare_equal = simple_options_.infinities_compare_equal;
    p.style = style_;
    return p;
  }

  std::vector<std::pair<std::size_t, std::size_t>> comparisons(const compare::RunResults& results) const {
    if (compare_to_.empty()) return compare::default_comparisons(results);
    std::size_t target = SIZE_MAX;
    if (compare_to_ == "first") {
      target = 0;
    } else if (compare_to_ == "last") {
      target = results.empty() ? 0 : results.size() - 1;
    } else if (!compare_to_.empty() && compare_to_.find_first_not_of("-0123456789") == std::string::npos) {
      int64_t index = parse_int(compare_to_, "--compare-to");
      if (index < 0) index += static_cast<int64_t>(results.size());
      if (index < 0 || index >= static_cast<int64_t>(results.size()))
        raise<InvalidInputError>("--compare-to: index {} is out of range ({} result(s))", compare_to_, results.size());
      target = static_cast<std::size_t>(index);
    } else {
      std::vector<std::size_t> matches;
      for (std::size_t i = 0; i < results.size(); ++i)
        if (results[i].runner_name == compare_to_) matches = {i};
      if (matches.empty())
        for (std::size_t i = 0; i < results.size(); ++i)
          if (results[i].runner_name.starts_with(compare_to_)) matches.push_back(i);
      std::vector<std::string> names;
      for (const auto& r : results) names.push_back(r.runner_name);
      if (matches.size() != 1)
        raise<InvalidInputError>("--compare-to: '{}' {} (results: {})", compare_to_,
                                 matches.empty() ? "matches no runner" : "matches more than one runner",
                                 fmt::join(names, ", "));
      target = matches[0];
    }
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    for (std::size_t i = 0; i < results.size(); ++i)
      if (i != target) pairs.emplace_back(i, target);
    return pairs;
  }

  // Tensor -> (position, node, op) in the main graph's node order (ONNX graphs are topologically
  // sorted), for layerwise summaries of whole-output comparisons.
  std::function<compare::TensorProducer(const std::string&)> producer_map() {
    auto map = std::make_shared<std::map<std::string, compare::TensorProducer>>();
    onnx::Model model = onnx::load_model(model_.path(), model_.load_options(kRunnerLoad));
    std::size_t order = 0;
    for (const auto& node : model->graph().node())
      for (const auto& output : node.output())
        if (!output.empty()) (*map)[output] = {order++, node.name(), node.op_type()};
    return [map](const std::string& name) {
      auto it = map->find(name);
      return it == map->end() ? compare::TensorProducer{} : it->second;
    };
  }

  // ---- running ----
  void log_metadata(const runtime::Runner& runner, const char* what, const NamedTensors& tensors) {
    TensorMetadata metadata;
    for (const auto& [name, tensor] : tensors) {
      std::vector<Dim> dims;
      for (int64_t d : tensor.shape()) dims.push_back(Dim::fixed(d));
      metadata.add(name, tensor.dtype(), dims);
    }
    log::info("{:35}\n---- Inference {}(s) ----\n{}", runner.name(), what, metadata.to_string());
  }

  // Runs one runner over every feed. `on_tensor(iteration, produced)` streams tensors when set.
  compare::RunnerResults execute_runner(
      runtime::Runner& runner, std::vector<NamedTensors>& feeds, bool first_runner,
      const std::function<void(int64_t, const runtime::ProducedTensor&)>& on_tensor) {
    log::start("{:35} | Activating and starting inference", runner.name());
    runtime::ActiveRunner active(runner);
    if (first_runner) feeds = make_feeds(runner);
    compare::RunnerResults results;
    results.runner_name = runner.name();
    if (warm_up_ > 0 && !feeds.empty()) {
      log::info("{:35} | Running {} warm-up inference(s)", runner.name(), warm_up_);
      for (int i = 0; i < warm_up_; ++i) runner.infer(feeds.front());
    }
    int64_t iteration = 0;
    if (on_tensor) {
      // Streamed tensors are not kept for --validate: they are checked for NaN/Inf as they come.
      StreamedValidation* checks = nullptr;
      if (validate_) checks = &streamed_validation_.emplace_back(StreamedValidation{runner.name()});
      runner.set_tensor_callback([&, checks](const runtime::ProducedTensor& t) {
        if (checks && wanted_tensor(t.name) && t.tensor.dtype() != DType::kString) checks->check(iteration, t);
        on_tensor(iteration, t);
      });
    } else if (layerwise()) {
      runner.set_intermediate_outputs(intermediates_);
    }
    double total = 0;
    for (const auto& feed : feeds) {
      if (iteration == 0) log_metadata(runner, "Input", feed);
      compare::IterationResult result;
      result.runner_name = runner.name();
      result.outputs = runner.infer(feed);
      result.runtime = runner.last_inference_time();
      if (!excluded_.empty())
        std::erase_if(result.outputs, [&](const auto& output) { return excluded_.count(output.first) > 0; });
      total += *result.runtime;
      if (iteration == 0) log_metadata(runner, "Output", result.outputs);
      results.iterations.push_back(std::move(result));
      ++iteration;
    }
    runner.set_tensor_callback(nullptr);
    double ms = total * 1000.0;
    log::finish("{:35} | Completed {} iteration(s) in {:.4g} ms | Average inference time: {:.4g} ms.", runner.name(),
                feeds.size(), ms, feeds.empty() ? 0.0 : ms / static_cast<double>(feeds.size()));
    return results;
  }

  bool wanted_tensor(const std::string& name) const {
    if (excluded_.count(name)) return false;
    if (intermediates_.mode == runtime::IntermediateOutputs::Mode::kAll) return true;
    return std::find(intermediates_.names.begin(), intermediates_.names.end(), name) != intermediates_.names.end() ||
           graph_outputs_.count(name) > 0;
  }

  // The tensor after --postprocess (the same handle, no copy, when no rule applies).
  Tensor postprocessed(const std::string& name, const Tensor& tensor) const {
    if (auto rule = compare::postprocess_rule(postprocess_rules_, name))
      return with_context(fmt::format("--postprocess: tensor '{}'", name),
                          [&] { return compare::top_k_indices(tensor, rule->k, rule->axis); });
    return tensor;
  }

  // --fail-fast in a streamed comparison: once a tensor failed, the rest are not compared.
  bool stop_early(const compare::LayerwiseResult& lw) const {
    return fail_fast_ && !lw.entries.empty() && !lw.entries.back().comparison.passed;
  }

  // Streaming layerwise run of exactly two results (pair (a, b): a is compared against b).
  // Entries of `results` that are live runners are run here.
  compare::LayerwiseResult run_streaming(std::vector<LiveRunner>& live, compare::RunResults& loaded,
                                         std::vector<NamedTensors>& feeds, compare::RunResults& results,
                                         std::pair<std::size_t, std::size_t> pair) {
    // Result slots: live runners first (command-line order), then loaded results.
    auto name_of = [&](std::size_t slot) {
      return slot < live.size() ? live[slot].runner->name() : loaded[slot - live.size()].runner_name;
    };
    compare::LayerwiseResult lw;
    lw.runner0 = name_of(pair.first);
    lw.runner1 = name_of(pair.second);
    results.resize(live.size() + loaded.size());
    for (std::size_t i = 0; i < loaded.size(); ++i) results[live.size() + i] = loaded[i];

    std::set<std::pair<int64_t, std::string>> seen;
    auto header = [&] {
      log::start("Accuracy Comparison | {} vs. {} (layerwise, streamed tensor by tensor)", lw.runner0, lw.runner1);
    };
    if (live.size() == 2) {
      // Spill the first-run side, then stream the other and compare.
      std::size_t spill_slot = pair.first, stream_slot = pair.second;
      compare::TensorSpill spill;
      results[spill_slot] = execute_runner(*live[spill_slot].runner, feeds, true,
                                           [&](int64_t it, const runtime::ProducedTensor& t) {
                                             if (!wanted_tensor(t.name)) return;
                                             if (t.tensor.dtype() == DType::kString) {
                                               lw.skipped.push_back(t.name);  // no numeric error
                                               return;
                                             }
                                             spill.append(it, t.name, t.tensor, t.node_name, t.op_type);
                                           });
      header();
      results[stream_slot] = execute_runner(
          *live[stream_slot].runner, feeds, false, [&](int64_t it, const runtime::ProducedTensor& t) {
            if (!wanted_tensor(t.name) || t.tensor.dtype() == DType::kString || stop_early(lw)) return;
            const auto* record = spill.find(it, t.name);
            if (!record) {
              lw.only_in_runner1.push_back(t.name);
              return;
            }
            seen.emplace(it, t.name);
            Tensor a = postprocessed(t.name, spill.read(*record));
            Tensor b = postprocessed(t.name, t.tensor);
            Logger::Indent indent;
            compare::compare_layer(lw, record->order, it, t.name, record->node, record->op, a, b, simple_params(t.name));
          });
      if (!stop_early(lw))
        for (const auto& record : spill.records())
          if (!seen.count({record.iteration, record.name})) lw.only_in_runner0.push_back(record.name);
      lw.spilled_bytes = spill.bytes_written();
    } else {
      // One live runner against loaded results (held in memory already).
      std::size_t live_slot = pair.first < live.size() ? pair.first : pair.second;
      std::size_t loaded_slot = live_slot == pair.first ? pair.second : pair.first;
      const compare::RunnerResults& reference = results[loaded_slot];
      std::size_t order = 0;
      int64_t order_iteration = 0;
      header();
      results[live_slot] = execute_runner(
          *live[live_slot].runner, feeds, true, [&](int64_t it, const runtime::ProducedTensor& t) {
            if (it != order_iteration) order = 0, order_iteration = it;  // positions count per iteration
            ++order;
            if (!wanted_tensor(t.name) || stop_early(lw)) return;
            if (it >= static_cast<int64_t>(reference.iterations.size())) return;
            const Tensor* other = reference.iterations[static_cast<std::size_t>(it)].find(t.name);
            if (!other) {
              (live_slot == pair.first ? lw.only_in_runner0 : lw.only_in_runner1).push_back(t.name);
              return;
            }
            seen.emplace(it, t.name);
            Tensor live_tensor = postprocessed(t.name, t.tensor);
            Tensor loaded_tensor = postprocessed(t.name, *other);
            Logger::Indent indent;
            if (live_slot == pair.first)
              compare::compare_layer(lw, order - 1, it, t.name, t.node_name, t.op_type, live_tensor, loaded_tensor,
                                     simple_params(t.name));
            else
              compare::compare_layer(lw, order - 1, it, t.name, t.node_name, t.op_type, loaded_tensor, live_tensor,
                                     simple_params(t.name));
          });
      for (std::size_t it = 0; !stop_early(lw) && it < reference.iterations.size() && it < feeds.size(); ++it)
        for (const auto& [name, tensor] : reference.iterations[it].outputs)
          if (wanted_tensor(name) && !seen.count({static_cast<int64_t>(it), name}))
            (live_slot == pair.first ? lw.only_in_runner1 : lw.only_in_runner0).push_back(name);
    }
    return lw;
  }

  bool execute() {
    parse_arguments();
    compare::RunResults loaded;
    for (const auto& path : load_outputs_) {
      auto more = compare::load_run_results(path);
      log::info("Loaded {} result(s) from {}", more.size(), path);
      loaded.insert(loaded.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    std::vector<LiveRunner> live = make_runners();
#ifdef __GLIBC__
    // Layerwise runs allocate and free many large tensors; glibc's adaptive mmap threshold would
    // move them onto the heap, whose freed pages stay resident. A fixed threshold returns them.
    if (layerwise()) mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
    if (live.empty() && loaded.empty())
      log::warning("No runners were given (--ref, --onnxrt) and no results loaded; nothing to run or compare");
    if (!live.empty() && !excluded_.empty()) {
      onnx::Model model = onnx::load_model(model_.path(), model_.load_options(kRunnerLoad));
      std::vector<std::string> known;
      for (const auto& node : model->graph().node())
        for (const auto& output : node.output())
          if (!output.empty()) known.push_back(output);
      for (const auto& output : model->graph().output()) known.push_back(output.name());
      std::set<std::string> known_set(known.begin(), known.end());
      for (const auto& name : onnx_exclude_outputs_) {
        if (known_set.count(name)) continue;
        auto hint = runtime::closest_name(name, known);
        raise<InvalidInputError>("--onnx-exclude-outputs: no node of {} produces a tensor called '{}'{}", model_.path(),
                                 name, hint ? fmt::format("; did you mean '{}'?", *hint) : "");
      }
    }
    if (!live.empty() && layerwise()) {
      // Graph output names, so that a list of --onnx-outputs still compares the graph outputs.
      onnx::Model model = onnx::load_model(model_.path(), model_.load_options(kRunnerLoad));
      for (const auto& output : model->graph().output()) graph_outputs_.insert(output.name());
      if (intermediates_.mode == runtime::IntermediateOutputs::Mode::kList) {
        std::set<std::string> produced;
        for (const auto& node : model->graph().node())
          for (const auto& output : node.output()) produced.insert(output);
        for (const auto& name : intermediates_.names)
          if (!produced.count(name))
            raise<InvalidInputError>("--onnx-outputs: no node of {} produces a tensor called '{}'", model_.path(), name);
      }
    }

    std::vector<NamedTensors> feeds;
    compare::RunResults results;
    std::optional<compare::AccuracyResult> accuracy;
    std::vector<compare::LayerwiseResult> layerwise_results;

    // The order of results: live runners, then loaded ones (Polygraphy: results.extend(load)).
    compare::RunResults names_only(live.size() + loaded.size());
    for (std::size_t i = 0; i < live.size(); ++i) names_only[i].runner_name = live[i].runner->name();
    for (std::size_t i = 0; i < loaded.size(); ++i) names_only[live.size() + i].runner_name = loaded[i].runner_name;
    const auto pairs = comparisons(names_only);

    const bool streaming = layerwise() && save_outputs_.empty() && compare_func_ == "simple" &&
                           compare_func_script_.empty() && live.size() + loaded.size() == 2 && !live.empty();
    if (streaming) {
      auto lw = run_streaming(live, loaded, feeds, results, pairs.at(0));
      compare::AccuracyResult acc;
      acc.pairs.push_back(lw.as_pair());
      const auto& pair = acc.pairs.back();
      if (pair.passed()) log::finish("    PASSED | All {} tensor(s) matched", lw.entries.size());
      else log::error("    FAILED | {} of {} tensor(s) mismatched", lw.entries.size() - std::count_if(lw.entries.begin(), lw.entries.end(), [](const auto& e) { return e.comparison.passed; }), lw.entries.size());
      std::string rate = fmt::format("{}", pair.pass_rate());
      if (rate.find_first_of(".en") == std::string::npos) rate += ".0";  // Python's str(float)
      auto summary = fmt::format("Accuracy Summary | {} vs. {} | Passed: {}/{} iterations | Pass Rate: {}%", pair.runner0,
                                 pair.runner1, pair.passed_iterations(), pair.total_iterations(), rate);
      if (pair.passed()) log::finish("{}", summary);
      else log::error("{}", summary);
      accuracy = std::move(acc);
      layerwise_results.push_back(std::move(lw));
    } else {
      for (std::size_t i = 0; i < live.size(); ++i)
        results.push_back(execute_runner(*live[i].runner, feeds, i == 0, nullptr));
      if (!save_outputs_.empty()) {
        compare::save_run_results(save_outputs_, results);
        log::info("Saving inference results to {}", save_outputs_);
      }
      results.insert(results.end(), std::make_move_iterator(loaded.begin()), std::make_move_iterator(loaded.end()));
      if (!postprocess_rules_.empty()) {
        log::start("Applying post-processing to outputs: top_k");
        for (auto& runner : results)
          for (auto& iteration : runner.iterations) compare::postprocess(iteration, postprocess_rules_);
        log::finish("Finished applying post-processing");
      }
      if (results.size() > 1) {
        compare::CompareAccuracyOptions options;
        options.fail_fast = fail_fast_;
        options.comparisons = comparisons(results);
        accuracy = compare::compare_accuracy(results, make_compare_func(), options);
        if (layerwise() && !live.empty()) {
          auto producer = producer_map();
          for (const auto& pair : accuracy->pairs) layerwise_results.push_back(compare::layerwise_from_pair(pair, producer));
        }
      }
    }
    for (const auto& lw : layerwise_results) compare::log_layerwise_summary(lw, static_cast<std::size_t>(layerwise_worst_));

    bool passed = !accuracy || accuracy->passed();
    std::optional<compare::ValidationResult> validation;
    if (validate_) {
      compare::ValidateOptions options;
      options.check_inf = options.check_nan = true;
      options.fail_fast = fail_fast_;
      options.style = style_;
      validation = compare::validate(results, options);
      passed = passed && validation->passed;
      for (const auto& streamed : streamed_validation_) {
        streamed.log();
        passed = passed && streamed.passed();
      }
    }
    if (!report_.empty()) {
      auto report = compare::make_report(accuracy ? &*accuracy : nullptr, validation ? &*validation : nullptr);
      if (!layerwise_results.empty()) {
        report["layerwise"] = nlohmann::ordered_json::array();
        for (const auto& lw : layerwise_results)
          report["layerwise"].push_back(compare::to_json(lw, static_cast<std::size_t>(layerwise_worst_)));
      }
      if (!streamed_validation_.empty()) {
        report["streamed_validation"] = nlohmann::ordered_json::array();
        for (const auto& streamed : streamed_validation_) report["streamed_validation"].push_back(streamed.to_json());
      }
      report["passed"] = passed;
      compare::save_report(report_, report);
      log::info("Saved report to {}", report_);
    }
    return passed;
  }

  CLI::App* app_ = nullptr;
  ModelArgs model_;
  CLI::Option* ref_flag_ = nullptr;
  CLI::Option* onnxrt_flag_ = nullptr;
  int ref_count_ = 0, onnxrt_count_ = 0;
  std::string ref_precision_ = "fp32";
  std::vector<std::string> providers_;
  std::string ort_opt_level_;
  int ort_intra_threads_ = 0;
  std::string ort_library_;
  int64_t ort_layerwise_budget_mib_ = 64;  // ppocrv4_det 640x640: 216 MiB peak at 64, 378 at 256
  std::vector<std::string> onnx_outputs_, onnx_exclude_outputs_;
  std::string data_loader_script_, compare_func_script_;
  std::set<std::string> excluded_;
  std::deque<StreamedValidation> streamed_validation_;  // stable addresses for the callbacks
  int warm_up_ = 0;
  int layerwise_worst_ = 10;
  int64_t seed_ = 1;
  int iterations_ = 1;
  std::vector<std::string> val_range_, input_shapes_, load_inputs_;
  std::string save_inputs_, save_outputs_;
  std::vector<std::string> postprocess_;
  bool validate_ = false, fail_fast_ = false;
  std::string compare_func_ = "simple", compare_to_;
  std::vector<std::string> load_outputs_;
  std::string report_, stats_style_ = "parity";
  bool no_shape_check_ = false, infinities_compare_equal_ = false;
  std::vector<std::string> rtol_, atol_, check_error_stat_, error_quantile_, index_tolerance_;
  std::vector<std::string> l2_tolerance_, cosine_threshold_, psnr_tolerance_, snr_tolerance_;

  // Parsed.
  compare::StatsStyle style_ = compare::StatsStyle::kParity;
  runtime::DataLoaderOptions data_options_;
  compare::PostprocessRules postprocess_rules_;
  compare::SimpleOptions simple_options_;
  compare::IndicesOptions indices_options_;
  compare::DistanceOptions distance_options_;
  compare::QualityOptions quality_options_;
  runtime::IntermediateOutputs intermediates_;
  std::set<std::string> graph_outputs_;
};

PARITY_REGISTER_COMMAND(RunCommand);

}  // namespace
}  // namespace parity::cli

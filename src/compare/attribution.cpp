#include "parity/compare/attribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/statistics/pair_statistics.h"

namespace parity::compare {
namespace {

// A batch model's name for a node's output: distinct from every name the batch reads, so no node
// of a batch feeds another.
const std::string kLocalSuffix = "::parity_local";

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// A local error this many times the total error (and over the tolerance) is flagged: the unit alone
// computes otherwise than inside the whole run.
constexpr double kLocalOverTotal = 10;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The larger error, NaN when either is.
double worse(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return std::max(a, b);
}

double ratio(double error, double tolerance) {
  if (std::isnan(error)) return kInf;
  if (tolerance > 0) return error / tolerance;
  return error > 0 ? kInf : 0.0;
}

// The comparison's checked statistic of an error's summary (Polygraphy's arithmetic).
double checked(const statistics::TensorSummary& summary, ErrorStat stat, double quantile) {
  const statistics::Statistics& values = summary.polygraphy;
  if (values.state == statistics::Statistics::State::kEmpty) return 0;
  switch (stat) {
    case ErrorStat::kElemwise:
    case ErrorStat::kMax: return values.max;
    case ErrorStat::kMean: return values.mean;
    case ErrorStat::kMedian: return values.median;
    case ErrorStat::kQuantile: return values.quantile(quantile);
  }
  return values.max;
}

// Ops whose output jumps on an arbitrarily small change of their input.
bool is_discontinuous(const ::onnx::NodeProto& node, int output_index) {
  static const std::set<std::string> kOps = {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual",
                                             "ArgMax", "ArgMin", "Round", "Floor", "Ceil", "Sign",
                                             "NonMaxSuppression"};
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (kOps.count(node.op_type())) return true;
  if (node.op_type() == "TopK") return output_index == 1;
  if (node.op_type() == "Cast")
    for (const auto& attribute : node.attribute())
      if (attribute.name() == "to") {
        auto to = static_cast<DType>(attribute.i());
        return is_integer(to) || to == DType::kBool;
      }
  return false;
}

// What runs alone: one node, or the ONNX nodes of the fused engine layer that wrote a compared
// tensor (Runner::engine_layer_nodes), with its internal edges kept.
struct Unit {
  std::vector<int> nodes;            // graph indices, in graph order
  std::vector<std::size_t> tensors;  // indices into the result's tensors
  std::vector<std::string> fed;      // reads from outside the unit fed the reference's values (unique)
  uint64_t bytes = 0;                // fed inputs and compared outputs
};

class Attributor {
 public:
  Attributor(const onnx::Model& model, const runtime::Runner& under_test, const LayerwiseResult& totals,
             const AttributionOptions& options)
      : model_(model), graph_(model->graph()), under_test_(under_test), totals_(totals), options_(options),
        spill_(options.spill_directory, options.memory_budget) {
    for (const auto& initializer : graph_.initializer()) initializers_[initializer.name()] = &initializer;
    for (const auto& node : graph_.node())
      if (node.op_type() == "Constant")
        for (const auto& output : node.output()) constants_[output] = &node;
    for (const auto& value : graph_.value_info()) declared_[value.name()] = &value;
    for (const auto& value : graph_.output()) declared_[value.name()] = &value;
  }

  AttributionResult run(runtime::Runner& reference, const NamedTensors& feed) {
    result_.reference = totals_.runner0;
    result_.under_test = totals_.runner1;
    for (const auto& [name, tensor] : feed) feed_[name] = tensor;
    run_reference(reference, feed);
    collect();
    std::vector<Unit*> batch;
    uint64_t batch_bytes = 0;
    const uint64_t limit = options_.memory_budget / 4;  // a unit over it runs in a batch of its own
    for (auto& unit : units_) {
      if (!batch.empty() && batch_bytes + unit.bytes > limit) {
        run_batch(batch);
        batch.clear();
        batch_bytes = 0;
      }
      batch.push_back(&unit);
      batch_bytes += unit.bytes;
    }
    if (!batch.empty()) run_batch(batch);
    return std::move(result_);
  }

 private:
  // The reference run again, every tensor it produces kept in the spill.
  void run_reference(runtime::Runner& reference, const NamedTensors& feed) {
    reference.set_intermediate_outputs(runtime::IntermediateOutputs::all());
    reference.set_tensor_callback([this](const runtime::ProducedTensor& t) {
      if (t.tensor.dtype() == DType::kString) return;
      if (t.immutable) spill_.append_shared(0, t.name, t.tensor, t.node_name, t.op_type);
      else spill_.append(0, t.name, t.tensor, t.node_name, t.op_type);
    });
    try {
      runtime::ActiveRunner active(reference);
      active->infer(feed);
    } catch (...) {
      reference.set_tensor_callback(nullptr);
      reference.set_intermediate_outputs(runtime::IntermediateOutputs::none());
      throw;
    }
    reference.set_tensor_callback(nullptr);
    reference.set_intermediate_outputs(runtime::IntermediateOutputs::none());
  }

  // The compared tensors by unit, with their totals and inherited errors, and what each unit is fed.
  void collect() {
    const auto entries = first_iteration_entries(totals_);
    std::unordered_map<std::string, int> producer, by_name;
    for (int i = 0; i < graph_.node_size(); ++i) {
      for (const auto& output : graph_.node(i).output())
        if (!output.empty()) producer[output] = i;
      if (!graph_.node(i).name().empty()) by_name[graph_.node(i).name()] = i;
    }
    std::map<std::vector<int>, std::size_t> unit_of;  // node set -> index in units_
    for (int i = 0; i < graph_.node_size(); ++i) {
      const ::onnx::NodeProto& node = graph_.node(i);
      if (node.op_type() == "Constant") continue;
      for (int o = 0; o < node.output_size(); ++o) {
        auto entry = entries.find(node.output(o));
        if (node.output(o).empty() || entry == entries.end()) continue;
        std::vector<int> nodes = layer_nodes(node.output(o), i, by_name);
        auto [it, added] = unit_of.emplace(nodes, units_.size());
        if (added) units_.push_back(Unit{nodes, {}, {}, 0});
        Unit& unit = units_[it->second];
        unit.tensors.push_back(result_.tensors.size());
        result_.tensors.push_back(attribution_of(*entry->second, node, o, nodes));
      }
    }
    for (auto& unit : units_) {
      std::set<std::string> inside, seen;
      for (int i : unit.nodes)
        for (const auto& output : graph_.node(i).output()) inside.insert(output);
      double inherited_abs = 0, inherited_rel = 0;
      std::string missing;
      for (int i : unit.nodes)
        for (const auto& read : onnx::node_reads(graph_.node(i))) {
          if (inside.count(read) || !seen.insert(read).second || initializers_.count(read) || constants_.count(read))
            continue;
          if (auto entry = entries.find(read); entry != entries.end()) {
            inherited_abs = worse(inherited_abs, entry->second->comparison.simple->required_atol);
            inherited_rel = worse(inherited_rel, entry->second->comparison.simple->required_rtol);
          }
          unit.fed.push_back(read);
          if (auto it = feed_.find(read); it != feed_.end()) unit.bytes += it->second.byte_size();
          else if (const auto* record = spill_.find(0, read)) unit.bytes += record->bytes;
          else if (missing.empty()) missing = read;
        }
      for (std::size_t t : unit.tensors) {
        TensorAttribution& tensor = result_.tensors[t];
        tensor.inherited_abs = inherited_abs;
        tensor.inherited_rel = inherited_rel;
        tensor.amplification = inherited_abs > 0                                           ? tensor.total_abs / inherited_abs
                               : tensor.total_abs > 0 || std::isnan(tensor.total_abs) ? kInf
                                                                                      : kNaN;
        if (!missing.empty())
          tensor.not_run = fmt::format("the reference run produced no value for its input '{}'", missing);
        if (const auto* record = spill_.find(0, tensor.tensor)) unit.bytes += record->bytes;
      }
      if (!missing.empty()) unit.tensors.clear();  // not run
    }
    std::erase_if(units_, [](const Unit& unit) { return unit.tensors.empty(); });
  }

  // The nodes that run alone to recompute `tensor` (made by node `producer`): the engine layer's
  // ONNX nodes when the runner under test names them and they include the producer, else the producer.
  std::vector<int> layer_nodes(const std::string& tensor, int producer,
                               const std::unordered_map<std::string, int>& by_name) const {
    std::vector<int> nodes;
    for (const auto& name : under_test_.engine_layer_nodes(tensor)) {
      auto it = by_name.find(name);
      if (it == by_name.end()) return {producer};
      if (graph_.node(it->second).op_type() != "Constant") nodes.push_back(it->second);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    if (std::find(nodes.begin(), nodes.end(), producer) == nodes.end()) return {producer};
    return nodes;
  }

  TensorAttribution attribution_of(const LayerwiseEntry& total, const ::onnx::NodeProto& node, int output,
                                   const std::vector<int>& nodes) const {
    TensorAttribution tensor;
    tensor.order = total.order;
    tensor.tensor = total.tensor;
    tensor.node = node.name();
    tensor.op = node.op_type();
    tensor.modules = total.module_outputs;
    if (nodes.size() > 1)
      for (int i : nodes) tensor.covering.push_back(graph_.node(i).name());
    tensor.total_abs = total.comparison.simple->required_atol;
    tensor.total_rel = total.comparison.simple->required_rtol;
    tensor.total_failed = !total.comparison.passed;
    tensor.discontinuous = is_discontinuous(node, output);
    tensor.flipped = total.comparison.simple->mismatch_count;
    tensor.local_abs = tensor.local_rel = tensor.local_excess = kNaN;
    return tensor;
  }

  // A model of the batch's units, each reading what comes from outside it as graph inputs (or
  // initializers and Constants as the model has them) and writing its outputs under kLocalSuffix
  // names; the tensors no node of its unit reads are its graph outputs.
  onnx::Model batch_model(const std::vector<Unit*>& batch, NamedTensors& feed) {
    auto proto = std::make_shared<::onnx::ModelProto>();
    proto->set_ir_version(model_->ir_version());
    *proto->mutable_opset_import() = model_->opset_import();
    *proto->mutable_functions() = model_->functions();
    ::onnx::GraphProto& graph = *proto->mutable_graph();
    graph.set_name(batch.size() == 1 && batch.front()->nodes.size() == 1 ? graph_.node(batch.front()->nodes[0]).name()
                                                                          : "attribution_batch");
    std::set<std::string> added;
    for (const Unit* unit : batch) {
      std::set<std::string> inside, read_inside;
      for (int i : unit->nodes)
        for (const auto& output : graph_.node(i).output()) inside.insert(output);
      for (int i : unit->nodes)
        for (const auto& read : onnx::node_reads(graph_.node(i)))
          if (inside.count(read)) read_inside.insert(read);
      std::set<std::string> compared;
      for (std::size_t t : unit->tensors) compared.insert(result_.tensors[t].tensor);
      for (int i : unit->nodes) {
        const ::onnx::NodeProto& node = graph_.node(i);
        for (const auto& read : onnx::node_reads(node)) {
          if (inside.count(read) || !added.insert(read).second) continue;
          if (auto initializer = initializers_.find(read); initializer != initializers_.end()) {
            *graph.add_initializer() = *initializer->second;
          } else if (auto constant = constants_.find(read); constant != constants_.end()) {
            *graph.add_node() = *constant->second;
          } else {
            Tensor value = reference_value(read);
            auto* input = graph.add_input();
            input->set_name(read);
            auto* type = input->mutable_type()->mutable_tensor_type();
            type->set_elem_type(static_cast<int32_t>(value.dtype()));
            auto* shape = type->mutable_shape();
            for (int64_t dim : value.shape()) shape->add_dim()->set_dim_value(dim);
            feed.emplace_back(read, std::move(value));
          }
        }
        ::onnx::NodeProto& copy = *graph.add_node();
        copy = node;
        for (auto& input : *copy.mutable_input())
          if (inside.count(input)) input += kLocalSuffix;
        for (auto& output : *copy.mutable_output()) {
          if (output.empty()) continue;
          if (!read_inside.count(output) || compared.count(output)) {
            auto* graph_output = graph.add_output();
            if (auto declared = declared_.find(output); declared != declared_.end()) *graph_output = *declared->second;
            graph_output->set_name(output + kLocalSuffix);
          }
          output += kLocalSuffix;
        }
      }
    }
    return onnx::Model{proto, model_.path, model_.base_dir, model_.external_data_ignored};
  }

  Tensor reference_value(const std::string& name) const {
    if (auto it = feed_.find(name); it != feed_.end()) return it->second;
    const auto* record = spill_.find(0, name);
    if (!record) raise<InternalError>("attribution: no reference value of '{}'", name);
    return spill_.read(*record);
  }

  // Runs a batch on a fresh runner of the backend under test; a batch it refuses is run node by
  // node, and a node refused alone keeps the reason.
  void run_batch(const std::vector<Unit*>& batch) {
    NamedTensors outputs;
    try {
      NamedTensors feed;
      onnx::Model model = batch_model(batch, feed);
      if (options_.prepare_batch) {
        options_.prepare_batch(model);
        note_reduced_outputs(batch, model);
      }
      auto runner = under_test_.with_model([model] { return model; });
      runtime::ActiveRunner active(*runner);
      ++result_.batches;
      outputs = active->infer(feed);
    } catch (const Error& error) {
      if (batch.size() > 1) {
        for (Unit* unit : batch) run_batch({unit});
        return;
      }
      for (std::size_t t : batch.front()->tensors)
        result_.tensors[t].not_run =
            fmt::format("{} cannot run {} alone: {}", result_.under_test,
                        batch.front()->nodes.size() > 1 ? "the nodes of its layer" : "its node", error.message());
      return;
    }
    std::unordered_map<std::string, const Tensor*> produced;
    for (const auto& [name, tensor] : outputs) produced[name] = &tensor;
    for (const Unit* unit : batch)
      for (std::size_t t : unit->tensors) measure(result_.tensors[t], produced);
  }

  // The compared tensors the prepared batch writes through a Cast it inserted (a node it converted to
  // options_.prepared_type: the Cast is not one of the batch's own nodes).
  void note_reduced_outputs(const std::vector<Unit*>& batch, const onnx::Model& prepared) {
    std::set<std::string> own;
    for (const Unit* unit : batch)
      for (int i : unit->nodes) own.insert(graph_.node(i).name());
    std::unordered_map<std::string, const ::onnx::NodeProto*> producer;
    for (const auto& node : prepared->graph().node())
      for (const auto& output : node.output()) producer[output] = &node;
    for (const auto& output : prepared->graph().output()) {
      auto it = producer.find(output.name());
      if (it == producer.end() || it->second->op_type() != "Cast" || own.count(it->second->name())) continue;
      reduced_.insert(output.name().substr(0, output.name().size() - kLocalSuffix.size()));
    }
  }

  // A copy of `reference` (float32; it may share the spill's memory) in which each element is the
  // reference's value or its rounding to options_.prepared_type, whichever is closer to the node's
  // `value`: a backend that keeps the tensor in float32 (OpenVINO computing a float16 graph at f32,
  // ONNX Runtime between ops without float16 kernels) is not charged for not rounding it. A value
  // beyond the type's range is not rounded: overflowing it is the node's error.
  Tensor nearest_admissible_reference(const Tensor& reference, const Tensor& value) const {
    if (reference.dtype() != DType::kFloat32 || value.dtype() != DType::kFloat32 || value.size() != reference.size())
      return reference;
    Tensor admissible = Tensor::copy_of(reference.view());
    const auto computed = value.span<float>();
    auto elements = admissible.mutable_span<float>();
    for (std::size_t i = 0; i < elements.size(); ++i) {
      const float exact = elements[i];
      const float rounded = options_.prepared_type == DType::kBFloat16
                                ? bfloat16_bits_to_float(float_to_bfloat16_bits(exact))
                                : float16_bits_to_float(float_to_float16_bits(exact));
      if (std::isfinite(rounded) && std::fabs(computed[i] - rounded) < std::fabs(computed[i] - exact))
        elements[i] = rounded;
    }
    return admissible;
  }

  void measure(TensorAttribution& tensor, const std::unordered_map<std::string, const Tensor*>& produced) {
    auto local = produced.find(tensor.tensor + kLocalSuffix);
    const auto* record = spill_.find(0, tensor.tensor);
    if (local == produced.end() || !record) {
      tensor.not_run = fmt::format("{} returned no value for it", local == produced.end() ? result_.under_test
                                                                                           : result_.reference);
      return;
    }
    Tensor reference = spill_.read(*record);
    const Tensor& value = *local->second;
    if (options_.prepared_type != DType::kUndefined && reduced_.count(tensor.tensor))
      reference = nearest_admissible_reference(reference, value);
    if (reference.size() != value.size()) {
      tensor.not_run = fmt::format("alone it has shape {}, the reference's has {}", shape_to_string(value.shape()),
                                   shape_to_string(reference.shape()));
      return;
    }
    measure_local(tensor, reference, value, options_.simple);
  }

  const onnx::Model& model_;
  const ::onnx::GraphProto& graph_;
  const runtime::Runner& under_test_;
  const LayerwiseResult& totals_;
  const AttributionOptions& options_;
  TensorSpill spill_;
  std::unordered_map<std::string, Tensor> feed_;
  std::unordered_map<std::string, const ::onnx::TensorProto*> initializers_;
  std::unordered_map<std::string, const ::onnx::NodeProto*> constants_;
  std::set<std::string> reduced_;  // compared tensors a prepared batch computes in options_.prepared_type
  std::map<std::string, const ::onnx::ValueInfoProto*> declared_;
  std::vector<Unit> units_;
  AttributionResult result_;
};

std::string number(double value) {
  if (std::isnan(value)) return "-";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", value);
}

nlohmann::ordered_json json_number(double value) {
  if (std::isnan(value)) return nullptr;
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

nlohmann::ordered_json tensor_json(const TensorAttribution& t) {
  nlohmann::ordered_json json;
  json["tensor"] = t.tensor;
  json["node"] = t.node;
  json["op"] = t.op;
  if (!t.covering.empty()) json["covering"] = t.covering;
  if (!t.modules.empty()) json["modules"] = t.modules;
  json["total"] = {{"abs", json_number(t.total_abs)}, {"rel", json_number(t.total_rel)}, {"failed", t.total_failed}};
  if (t.not_run.empty())
    json["local"] = {{"abs", json_number(t.local_abs)},
                     {"rel", json_number(t.local_rel)},
                     {"excess", json_number(t.local_excess)},
                     {"failed", t.local_failed}};
  else
    json["local"] = nullptr;
  json["inherited"] = {{"abs", json_number(t.inherited_abs)}, {"rel", json_number(t.inherited_rel)}};
  json["amplification"] = json_number(t.amplification);
  if (t.flips) json["flipped"] = t.flipped;
  if (!t.not_run.empty()) json["not_run"] = t.not_run;
  return json;
}

}  // namespace

std::unordered_map<std::string, const LayerwiseEntry*> first_iteration_entries(const LayerwiseResult& totals) {
  std::unordered_map<std::string, const LayerwiseEntry*> entries;
  for (const auto& entry : totals.entries)
    if (entry.iteration == 0) {
      if (!entry.comparison.simple)
        raise<InvalidInputError>("--attribute measures errors as the `simple` comparison does; tensor '{}' was "
                                 "compared with `{}`",
                                 entry.tensor, entry.comparison.kind);
      entries[entry.tensor] = &entry;
    }
  return entries;
}

void measure_local(TensorAttribution& tensor, const Tensor& reference, const Tensor& value, const SimpleOptions& simple) {
  const SimpleOutputParams params = simple_output_params(simple, tensor.tensor);
  statistics::PairStatisticsRequest request;
  request.atol = params.atol;
  request.rtol = params.rtol;
  request.infinities_compare_equal = params.infinities_compare_equal;
  if (params.check_error_stat == ErrorStat::kQuantile) request.error_quantile = params.error_quantile;
  try {
    auto stats = statistics::compute_pair_statistics(reference, value, reference.shape(), request);
    tensor.local_abs = checked(stats.absdiff, params.check_error_stat, params.error_quantile);
    tensor.local_rel = checked(stats.reldiff, params.check_error_stat, params.error_quantile);
    tensor.local_failed = params.check_error_stat == ErrorStat::kElemwise
                              ? stats.mismatch_count > 0
                              : !(tensor.local_abs <= params.atol || tensor.local_rel <= params.rtol);
  } catch (const UnsupportedError& error) {
    tensor.not_run = fmt::format("no numeric error: {}", error.message());
    return;
  }
  tensor.local_excess = std::min(ratio(tensor.local_abs, params.atol), ratio(tensor.local_rel, params.rtol));
  tensor.flips = tensor.discontinuous && tensor.total_failed && !tensor.local_failed &&
                 (tensor.inherited_abs > 0 || std::isnan(tensor.inherited_abs));
}

std::pair<double, double> attribution_error(const std::string& tensor, const Tensor& reference, const Tensor& value,
                                            const SimpleOptions& simple) {
  const SimpleOutputParams params = simple_output_params(simple, tensor);
  statistics::PairStatisticsRequest request;
  request.atol = params.atol;
  request.rtol = params.rtol;
  request.infinities_compare_equal = params.infinities_compare_equal;
  if (params.check_error_stat == ErrorStat::kQuantile) request.error_quantile = params.error_quantile;
  auto stats = statistics::compute_pair_statistics(reference, value, reference.shape(), request);
  return {checked(stats.absdiff, params.check_error_stat, params.error_quantile),
          checked(stats.reldiff, params.check_error_stat, params.error_quantile)};
}

std::vector<std::size_t> AttributionResult::ranked() const {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    // An absolute error of 0 is an exact node, whatever the relative error (NaN for a bool or 0/0).
    if (tensors[i].not_run.empty() && tensors[i].local_abs != 0) order.push_back(i);
  auto key = [](double v) { return std::isnan(v) ? kInf : v; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = tensors[a];
    const auto& y = tensors[b];
    if (key(x.local_excess) != key(y.local_excess)) return key(x.local_excess) > key(y.local_excess);
    return key(x.local_abs) > key(y.local_abs);
  });
  return order;
}

const TensorAttribution* AttributionResult::first_local_failure() const {
  for (const auto& t : tensors)
    if (t.not_run.empty() && t.local_failed) return &t;
  return nullptr;
}

const TensorAttribution* AttributionResult::first_total_failure() const {
  for (const auto& t : tensors)
    if (t.total_failed) return &t;
  return nullptr;
}

AttributionResult attribute(const onnx::Model& model, runtime::Runner& reference, const runtime::Runner& under_test,
                            const NamedTensors& feed, const LayerwiseResult& totals,
                            const AttributionOptions& options) {
  if (!under_test.with_model([] { return onnx::Model{}; }))
    raise<InvalidInputError>("error attribution runs single nodes on {}, which cannot run another model (a compiled "
                             "model file or a session made elsewhere)",
                             under_test.name());
  return Attributor(model, under_test, totals, options).run(reference, feed);
}

void log_attribution(const AttributionResult& result, std::size_t count) {
  std::size_t run = 0;
  for (const auto& t : result.tensors) run += t.not_run.empty() ? 1 : 0;
  const bool modules = result.by_module;
  const char* unit = modules ? "module" : "node";
  if (modules)
    log::start("Error Attribution | {} vs. {} | {} of {} PyTorch module(s) run alone on {} ({} run(s)), fed {}'s "
               "values of their inputs",
               result.reference, result.under_test, run, result.tensors.size(), result.under_test, result.batches,
               result.reference);
  else
    log::start("Error Attribution | {} vs. {} | {} of {} tensor(s) recomputed by their node (or fused layer's nodes) "
               "alone on {} ({} batch(es)), fed {}'s values",
               result.reference, result.under_test, run, result.tensors.size(), result.under_test, result.batches,
               result.reference);
  Logger::Indent indent;
  auto ranked = result.ranked();
  if (ranked.size() > count) ranked.resize(count);
  if (!ranked.empty()) {
    std::string table = fmt::format("Top {} introducer(s) (local: the {} alone on the reference's inputs; inherited: "
                                    "its inputs' error; amplification: total / inherited):\n",
                                    ranked.size(), unit);
    table += fmt::format("{:>4}  {:<40} {:<16} {:>10} {:>10} {:>10} {:>10} {:>8}", "rank", unit,
                         modules ? "class" : "op", "local abs", "local rel", "inherited", "total abs", "amplif.");
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      const auto& t = result.tensors[ranked[i]];
      std::string node = t.node.empty() ? t.tensor : t.node;
      std::string layer = t.covering.empty() ? "" : fmt::format(" (layer of {})", t.covering.size());
      if (node.size() + layer.size() > 40) node = "..." + node.substr(node.size() + layer.size() - 37);
      node += layer;
      table += fmt::format("\n{:>4}  {:<40} {:<16} {:>10} {:>10} {:>10} {:>10} {:>8}", i + 1, node, t.op,
                           number(t.local_abs), number(t.local_rel), number(t.inherited_abs), number(t.total_abs),
                           number(t.amplification));
    }
    log::info("{}", table);
  } else {
    log::info("No {} run alone on {} differs from {}", unit, result.under_test, result.reference);
  }
  const auto module_note = [](const TensorAttribution& t) {
    return t.modules.empty() ? std::string() : fmt::format(", output of module {}", fmt::join(t.modules, ", "));
  };
  if (const auto* first = result.first_local_failure())
    log::error("First {} whose local error exceeds the tolerance: '{}' [{}: {}]{} (tensor '{}'{}: local abs {}, rel "
               "{}, {}x the tolerance)",
               unit, first->node, modules ? "Class" : "Op", first->op,
               first->covering.empty() ? std::string()
                                       : fmt::format(", in a layer covering {}", fmt::join(first->covering, ", ")),
               first->tensor, modules ? std::string() : module_note(*first), number(first->local_abs),
               number(first->local_rel), number(first->local_excess));
  else
    log::info("No {}'s local error exceeds the tolerance", unit);
  if (const auto* total = result.first_total_failure(); total && total->not_run.empty() && !total->local_failed)
    log::warning("The first tensor over the tolerance, '{}' ({} '{}' [{}: {}]), only inherits its error: local abs "
                 "{}, inherited abs {}, amplification {}",
                 total->tensor, unit, total->node, modules ? "Class" : "Op", total->op, number(total->local_abs),
                 number(total->inherited_abs), number(total->amplification));
  for (const auto& t : result.tensors)
    if (t.flips)
      log::warning("'{}' [{}: {}] flips {} element(s) of '{}' on inherited differences (exact on the reference's "
                   "inputs; inherited abs {})",
                   t.node, modules ? "Class" : "Op", t.op, t.flipped, t.tensor, number(t.inherited_abs));
  std::vector<std::string> over_total;
  for (const auto& t : result.tensors)
    if (t.not_run.empty() && t.local_failed && t.local_abs > kLocalOverTotal * t.total_abs)
      over_total.push_back(fmt::format("'{}' (local abs {}, total abs {})", t.tensor, number(t.local_abs),
                                       number(t.total_abs)));
  if (!over_total.empty())
    log::warning("{} tensor(s) differ far more recomputed alone than in the whole run: {}; the backend may compile "
                 "a {} alone otherwise than inside the model (other kernels, fusions or precisions), so "
                 "their local error says more about that than about the model",
                 over_total.size(), fmt::join(over_total, ", "), modules ? "module" : "node or layer");
  for (const auto& t : result.tensors)
    if (!t.not_run.empty())
      log::warning("Not attributed: '{}' ({} '{}' [{}: {}]): {}", t.tensor, unit, t.node, modules ? "Class" : "Op",
                   t.op, t.not_run);
}

nlohmann::ordered_json to_json(const AttributionResult& result, std::size_t count) {
  nlohmann::ordered_json json;
  json["reference"] = result.reference;
  json["under_test"] = result.under_test;
  json["batches"] = result.batches;
  json["by"] = result.by_module ? "module" : "node";
  const auto* first = result.first_local_failure();
  json["first_local_failure"] = first ? tensor_json(*first) : nlohmann::ordered_json(nullptr);
  auto ranked = result.ranked();
  if (ranked.size() > count) ranked.resize(count);
  json["top"] = nlohmann::ordered_json::array();
  for (std::size_t i : ranked) json["top"].push_back(tensor_json(result.tensors[i]));
  json["flips"] = nlohmann::ordered_json::array();
  for (const auto& t : result.tensors)
    if (t.flips) json["flips"].push_back(tensor_json(t));
  json["tensors"] = nlohmann::ordered_json::array();
  for (const auto& t : result.tensors) json["tensors"].push_back(tensor_json(t));
  return json;
}

}  // namespace parity::compare

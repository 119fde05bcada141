#include "parity/onnx/weight_strip.h"

#include <cstring>
#include <map>

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include "parity/core/dtype.h"
#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/onnx/sparsity.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::onnx {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

constexpr const char* kWeightlessMark = "TRT_WEIGHTLESS";
constexpr const char* kSparseFlag = "SPARSE_2_4";

// The single ops Polygraphy's patterns match, with the input counts each accepts.
const std::map<std::string, std::set<int>>& base_input_counts() {
  static const std::map<std::string, std::set<int>> counts = {
      {"Conv", {2, 3}},   {"ConvTranspose", {2, 3}}, {"Gemm", {2, 3}},
      {"MatMul", {2}},    {"Gather", {2}},           {"Slice", {3, 4, 5}}};
  return counts;
}

// The ops a QuantizeLinear->DequantizeLinear pair or a Transpose may feed, and at which inputs.
const std::map<std::string, std::set<int>>& fed_input_positions() {
  static const std::map<std::string, std::set<int>> positions = {
      {"Conv", {0}}, {"ConvTranspose", {0}}, {"Gemm", {0, 1, 2}}, {"MatMul", {0, 1}}};
  return positions;
}

class StripSelection {
 public:
  StripSelection(const GraphProto& graph, const std::set<std::string>& exclude) : exclude_(exclude) {
    for (const auto& tensor : graph.initializer()) initializers_.emplace(tensor.name(), &tensor);
    for (const auto& output : graph.output()) graph_outputs_.insert(output.name());
    for (const auto& node : graph.node())
      for (const auto& input : node.input())
        if (!input.empty()) consumers_[input].insert(&node);
  }

  void select(const GraphProto& graph) {
    for (const auto& node : graph.node()) {
      const std::string& op = node.op_type();
      if (matches_single(node)) strip_inputs_of(node);
      if (op == "QuantizeLinear" && quantize_pair_feeds_base(node)) strip_inputs_of(node);
      if (op == "Transpose" && node.input_size() == 1 && node.output_size() == 1) {
        const NodeProto* consumer = only_consumer(node.output(0));
        if (consumer && feeds_at_position(node.output(0), *consumer)) strip_inputs_of(node);
      }
    }
    for (const auto& node : graph.node()) {
      bool is_onnx_op = ::onnx::OpSchemaRegistry::Schema(node.op_type(), ::onnx::ONNX_DOMAIN) != nullptr;
      if (!is_onnx_op) strip_inputs_of(node, /*plugin=*/true);
    }
  }

  const std::set<std::string>& selected() const { return selected_; }
  const std::set<std::string>& exclusions_found() const { return exclusions_found_; }

 private:
  static bool matches_single(const NodeProto& node) {
    auto it = base_input_counts().find(node.op_type());
    return it != base_input_counts().end() && it->second.count(node.input_size()) && node.output_size() == 1;
  }

  // The one node reading `tensor` (which is no graph output), or null.
  const NodeProto* only_consumer(const std::string& tensor) const {
    if (graph_outputs_.count(tensor)) return nullptr;
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return nullptr;
    return *it->second.begin();
  }

  // Whether `consumer` is one of the fed ops, reading `tensor` at one of its pattern positions.
  static bool feeds_at_position(const std::string& tensor, const NodeProto& consumer) {
    auto positions = fed_input_positions().find(consumer.op_type());
    if (positions == fed_input_positions().end() || !matches_single(consumer)) return false;
    for (int position : positions->second)
      if (position < consumer.input_size() && consumer.input(position) == tensor) return true;
    return false;
  }

  bool quantize_pair_feeds_base(const NodeProto& quantize) const {
    auto two_or_three = [](const NodeProto& node) { return node.input_size() == 2 || node.input_size() == 3; };
    if (!two_or_three(quantize) || quantize.output_size() != 1) return false;
    const NodeProto* dequantize = only_consumer(quantize.output(0));
    if (!dequantize || dequantize->op_type() != "DequantizeLinear" || !two_or_three(*dequantize) ||
        dequantize->output_size() != 1 || dequantize->input(0) != quantize.output(0))
      return false;
    const NodeProto* consumer = only_consumer(dequantize->output(0));
    return consumer && feeds_at_position(dequantize->output(0), *consumer);
  }

  // Polygraphy's per-op limits: QuantizeLinear and Slice give only their data input; a few ops
  // only initializers of some size.
  bool skip(const NodeProto& node, int index, const std::string& name) {
    const std::string& op = node.op_type();
    if ((op == "QuantizeLinear" || op == "Slice") && index != 0) return true;
    auto initializer = initializers_.find(name);
    if (initializer == initializers_.end()) return true;
    if (initializer->second->data_type() == TensorProto::UINT8) return true;
    if (exclude_.count(name)) {
      exclusions_found_.insert(name);
      return true;
    }
    static const std::map<std::string, int64_t> kSizeThresholds = {{"Conv", 1}, {"ConvTranspose", 1}, {"Gather", 1024},
                                                                   {"Gemm", 1}, {"Slice", 1024}};
    if (auto threshold = kSizeThresholds.find(op);
        threshold != kSizeThresholds.end() && declared_element_count(*initializer->second) < threshold->second)
      return true;
    return false;
  }

  void strip_inputs_of(const NodeProto& node, bool plugin = false) {
    for (int index = 0; index < node.input_size(); ++index) {
      const std::string& name = node.input(index);
      if (skip(node, index, name)) continue;
      if (plugin) log::verbose("Stripping initializer {} to the {} op.", name, node.op_type());
      selected_.insert(name);
    }
  }

  const std::set<std::string>& exclude_;
  std::map<std::string, const TensorProto*> initializers_;
  std::set<std::string> graph_outputs_;
  std::map<std::string, std::set<const NodeProto*>> consumers_;
  std::set<std::string> selected_, exclusions_found_;
};

void clear_data(TensorProto& tensor) {
  tensor.clear_raw_data();
  tensor.clear_float_data();
  tensor.clear_double_data();
  tensor.clear_int32_data();
  tensor.clear_int64_data();
  tensor.clear_uint64_data();
  tensor.clear_string_data();
  tensor.clear_external_data();
  tensor.clear_data_location();
}

bool carries_typed_data(const TensorProto& tensor) {
  return tensor.float_data_size() || tensor.double_data_size() || tensor.int32_data_size() ||
         tensor.int64_data_size() || tensor.uint64_data_size() || tensor.string_data_size();
}

std::string python_set(const std::set<std::string>& names) {
  std::string text = "{";
  for (const auto& name : names) {
    if (text.size() > 1) text += ", ";
    text += "'" + name + "'";
  }
  return text + "}";
}

// One standard-normal draw cast to `dtype` as numpy's astype casts a float64 (towards zero for
// integers), written at `out`.
void write_normal_value(DType dtype, double value, std::byte* out) {
  auto store = [&](auto typed) { std::memcpy(out, &typed, sizeof(typed)); };
  switch (dtype) {
    case DType::kFloat32: return store(static_cast<float>(value));
    case DType::kFloat64: return store(value);
    case DType::kFloat16: return store(double_to_float16_bits(value));
    case DType::kBFloat16: return store(double_to_bfloat16_bits(value));
    case DType::kInt8: return store(static_cast<int8_t>(value));
    case DType::kInt16: return store(static_cast<int16_t>(value));
    case DType::kInt32: return store(static_cast<int32_t>(value));
    case DType::kInt64: return store(static_cast<int64_t>(value));
    case DType::kUInt8: return store(static_cast<uint8_t>(static_cast<int64_t>(value)));
    case DType::kUInt16: return store(static_cast<uint16_t>(static_cast<int64_t>(value)));
    case DType::kUInt32: return store(static_cast<uint32_t>(static_cast<int64_t>(value)));
    case DType::kUInt64: return store(static_cast<uint64_t>(static_cast<int64_t>(value)));
    case DType::kBool: return store(static_cast<uint8_t>(value != 0.0));
    default: raise<UnsupportedError>("random weights of type {} are not supported", dtype_name(dtype));
  }
}

}  // namespace

std::set<std::string> weights_to_strip(const GraphProto& graph, const std::set<std::string>& exclude,
                                       std::set<std::string>* exclusions_found) {
  StripSelection selection(graph, exclude);
  selection.select(graph);
  if (exclusions_found) *exclusions_found = selection.exclusions_found();
  return selection.selected();
}

bool is_weightless(const TensorProto& tensor) { return tensor.doc_string().find(kWeightlessMark) != std::string::npos; }

WeightStripReport strip_weights(Model& model, const std::set<std::string>& exclude) {
  log::start("Beginning weight stripping...");
  log::warning(
      "The model is expected to be constant folded to successfully capture all weights eligible for stripping");
  log::info("Querying Sparse Initializers in the model");
  std::set<std::string> sparse = check_sparsity(model);
  std::set<std::string> found;
  std::set<std::string> selected = weights_to_strip(model->graph(), exclude, &found);
  WeightStripReport report;
  for (auto& tensor : *model->mutable_graph()->mutable_initializer()) {
    if (!selected.count(tensor.name())) continue;
    log::verbose("Stripping initializer {}", tensor.name());
    clear_data(tensor);
    tensor.set_doc_string(fmt::format("{}/{}", kWeightlessMark, sparse.count(tensor.name()) ? kSparseFlag : ""));
    report.stripped.push_back(tensor.name());
  }
  for (const auto& name : exclude)
    if (!found.count(name)) report.exclusions_not_found.insert(name);
  if (!report.exclusions_not_found.empty())
    log::warning("The following weights provided by the user to skip stripping were not found in the model: {}.",
                 python_set(report.exclusions_not_found));
  if (!report.stripped.empty())
    model->set_doc_string(model->doc_string().empty() ? std::string(kWeightlessMark)
                                                      : model->doc_string() + "-" + kWeightlessMark);
  log::finish("Finished stripping {} weights", report.stripped.size());
  return report;
}

int64_t reconstruct_weights(Model& model, std::mt19937_64& random) {
  log::start("Beginning weight reconstruction...");
  std::normal_distribution<double> normal(0.0, 1.0);
  std::set<std::string> not_sparse;
  int64_t reconstructed = 0;
  for (auto& tensor : *model->mutable_graph()->mutable_initializer()) {
    if (!is_weightless(tensor)) {
      // Loaded without the data checks (a stripped tensor has none): the other tensors are checked here.
      validate_tensor_data(tensor, model.base_dir);
      not_sparse.insert(tensor.name());
      continue;
    }
    const std::string& mark = tensor.doc_string();
    auto slash = mark.find('/');
    if (slash == std::string::npos || mark.find('/', slash + 1) != std::string::npos)
      raise<InvalidInputError>("initializer '{}': doc_string '{}' is not a weightless mark of the form "
                               "'TRT_WEIGHTLESS/<flag>'", tensor.name(), mark);
    if (mark.substr(slash + 1).empty()) not_sparse.insert(tensor.name());
    if (!tensor.raw_data().empty() || tensor.data_location() == TensorProto::EXTERNAL)
      raise<InvalidInputError>("initializer '{}' is marked '{}' but still carries data: it was not stripped (or was "
                               "reconstructed already)", tensor.name(), mark);
    DType dtype = dtype_from_onnx(tensor.data_type());
    int64_t count = with_context(fmt::format("initializer '{}'", tensor.name()),
                                 [&] { return declared_element_count(tensor); });
    const std::size_t element_size = storage_bytes(dtype, 1);
    if (is_packed(dtype) || dtype == DType::kString || dtype == DType::kUndefined)
      raise<UnsupportedError>("initializer '{}': random weights of type {} are not supported", tensor.name(),
                              dtype_name(dtype));
    std::string bytes(static_cast<std::size_t>(count) * element_size, '\0');
    with_context(fmt::format("initializer '{}'", tensor.name()), [&] {
      for (int64_t i = 0; i < count; ++i)
        write_normal_value(dtype, normal(random), reinterpret_cast<std::byte*>(bytes.data()) + i * element_size);
    });
    log::verbose("Reconstructing weights for the {} initializer", tensor.name());
    if (carries_typed_data(tensor)) clear_data(tensor);
    tensor.set_raw_data(std::move(bytes));
    tensor.clear_doc_string();
    ++reconstructed;
  }
  log::info("Calling Sparsity Pruner to prune selected weights");
  prune_sparsity(model, not_sparse);
  // The weights are back: the model no longer carries the weightless mark.
  std::string doc = model->doc_string();
  for (const std::string mark : {std::string("-") + kWeightlessMark, std::string(kWeightlessMark)})
    if (auto at = doc.find(mark); at != std::string::npos) {
      doc.erase(at, mark.size());
      break;
    }
  model->set_doc_string(doc);
  log::finish("Finished reconstructing {} weights", reconstructed);
  return reconstructed;
}

}  // namespace parity::onnx

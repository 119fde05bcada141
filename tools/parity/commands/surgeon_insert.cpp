// `parity surgeon insert`: insert one node into an ONNX model between chosen tensors, replacing
// the subgraph that produced its outputs (Polygraphy's surgeon insert).
#include <algorithm>
#include <map>

#include "args/model_args.h"
#include "args/model_save_args.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/onnx/passes.h"

namespace parity::cli {
namespace {

class SurgeonInsertCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"surgeon", "insert"}; }
  std::string description() const override {
    return "[EXPERIMENTAL] Insert a single node into an ONNX model with the specified inputs and outputs; any "
           "existing subgraph between them is replaced";
  }
  void add_options(CLI::App& app) override {
    model_.add_to(app);
    const char* group = "Inserted Node";
    app.add_option("--inputs", inputs_, "Names of the new node's input tensors, in order")->required()->group(group);
    app.add_option("--outputs", outputs_,
                   "Names of the new node's output tensors, in order. An output that is also an input gets a new "
                   "tensor")
        ->required()
        ->group(group);
    app.add_option("--op", op_, "The ONNX op of the new node")->required()->group(group);
    app.add_option("--name", name_, "Name of the new node")->group(group);
    app.add_option("--domain", domain_, "Domain of the new node's op (default: the ONNX domain)")->group(group);
    app.add_option("--attrs", attrs_,
                   "Attributes: name=value. A decimal point makes a float, quotes a string, [a,b] a list; "
                   "e.g. --attrs axis=1 alpha=0.5 mode='linear' perm=[0,2,1]")
        ->group(group);
    app.add_option("-o,--output", output_, "Path to save the model")->required()->group("ONNX Model Saving");
    save_.add_to(app);
  }

  int run() override {
    onnx::InsertNodeOptions options;
    options.inputs = inputs_;
    options.outputs = outputs_;
    options.op = op_;
    options.name = name_;
    options.domain = domain_;
    for (const auto& a : attrs_) {
      auto eq = a.find('=');
      if (eq == std::string::npos)
        raise<InvalidInputError>("--attrs: cannot parse '{}': expected name=value", a);
      options.attributes.push_back(onnx::parse_attribute(a.substr(0, eq), a.substr(eq + 1)));
    }
    // Shape inference runs once the node is in; the shapes the file declares are read before it.
    const bool infer_shapes = model_.shape_inference();
    model_.disable_shape_inference();
    onnx::Model model = model_.load();
    auto declared_shapes = declared_output_shapes(model->graph());
    onnx::insert_node(*model, options);
    // The new op may change shapes: graph outputs take the shapes shape inference derives again, and
    // keep the shape the model file declares where it derives none (an output downstream of an op it does
    // not know), as Polygraphy keeps every declared output shape.
    for (auto& output : *model->mutable_graph()->mutable_output())
      if (output.type().has_tensor_type()) output.mutable_type()->mutable_tensor_type()->clear_shape();
    if (infer_shapes) {
      onnx::clear_value_info(*model->mutable_graph());
      auto result = onnx::infer_shapes(*model);
      if (!result.ok)
        log::warning("ONNX shape inference failed on the model with the inserted node; check the node's inputs and "
                     "attributes.\nNote: error was: {}", result.error);
    }
    for (auto& output : *model->mutable_graph()->mutable_output()) {
      auto declared = declared_shapes.find(output.name());
      if (declared != declared_shapes.end() && output.type().has_tensor_type() &&
          !output.type().tensor_type().has_shape())
        *output.mutable_type()->mutable_tensor_type()->mutable_shape() = declared->second;
    }
    log::info("Inserted node '{}' ({}); saving ONNX model to: {}", name_, op_, output_);
    onnx::save_model(model, output_, save_.options());
    return 0;
  }

 private:
  // The shapes the model declares for its graph outputs, by name. An output that is also one of the
  // node's inputs is left out: the node makes a new tensor for it, which (as in Polygraphy) has no
  // shape until shape inference derives one.
  std::map<std::string, ::onnx::TensorShapeProto> declared_output_shapes(const ::onnx::GraphProto& graph) const {
    std::map<std::string, ::onnx::TensorShapeProto> shapes;
    for (const auto& output : graph.output()) {
      bool replaced = std::find(inputs_.begin(), inputs_.end(), output.name()) != inputs_.end() &&
                      std::find(outputs_.begin(), outputs_.end(), output.name()) != outputs_.end();
      if (!replaced && output.type().has_tensor_type() && output.type().tensor_type().has_shape())
        shapes.emplace(output.name(), output.type().tensor_type().shape());
    }
    return shapes;
  }

  ModelArgs model_;
  ModelSaveArgs save_;
  std::vector<std::string> inputs_, outputs_, attrs_;
  std::string op_, name_, domain_, output_;
};

PARITY_REGISTER_COMMAND(SurgeonInsertCommand);

}  // namespace
}  // namespace parity::cli

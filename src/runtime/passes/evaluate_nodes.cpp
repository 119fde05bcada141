#include "evaluate_nodes.h"

#include <unordered_set>

#include "parity/onnx/graph_order.h"
#include "parity/runtime/ref/interpreter.h"

namespace parity::runtime::detail {

ValueTable evaluate_nodes(const onnx::Model& owner, const std::vector<const ::onnx::NodeProto*>& nodes,
                          const ConstantTable& constants, const ValueTable& known) {
  auto proto = std::make_shared<::onnx::ModelProto>();
  proto->set_ir_version(owner->ir_version());
  *proto->mutable_opset_import() = owner->opset_import();
  *proto->mutable_functions() = owner->functions();
  ::onnx::GraphProto& g = *proto->mutable_graph();
  g.set_name("evaluated nodes");
  std::unordered_set<std::string> produced, added;
  for (const auto* n : nodes) {
    *g.add_node() = *n;
    for (const auto& o : n->output())
      if (!o.empty() && produced.insert(o).second) g.add_output()->set_name(o);
  }
  NamedValues feed;
  for (const auto* n : nodes)
    for (const auto& r : onnx::node_reads(*n)) {
      if (produced.count(r) || !added.insert(r).second) continue;
      if (auto k = known.find(r); k != known.end()) {
        g.add_input()->set_name(r);
        feed.emplace_back(r, k->second);
      } else if (auto c = constants.find(r); c != constants.end()) {
        *g.add_initializer() = *c->second;
      }
    }
  Interpreter interpreter(onnx::Model{proto, owner.path, owner.base_dir}, InterpreterOptions{});
  ValueTable values;
  for (auto& [name, value] : interpreter.run(feed)) values[name] = std::move(value);
  return values;
}

}  // namespace parity::runtime::detail

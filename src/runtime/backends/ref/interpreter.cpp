#include "parity/runtime/ref/interpreter.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <onnx/defs/schema.h>

#include "parity/core/error.h"
#include "parity/core/interrupt.h"
#include "parity/core/logger.h"
#include "parity/onnx/graph_order.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::runtime {
namespace {

using ::onnx::FunctionProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ops::Value;

using Opsets = std::map<std::string, int64_t>;

std::string canonical_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

std::string node_label(const NodeProto& node) {
  std::string op = node.domain().empty() ? node.op_type() : node.domain() + "." + node.op_type();
  return node.name().empty() ? fmt::format("node <unnamed> ({})", op) : fmt::format("node '{}' ({})", node.name(), op);
}

// Bytes owned by the model's protobuf, kept alive by a reference to the model.
class ProtoBytes final : public Storage {
 public:
  ProtoBytes(std::shared_ptr<const ::onnx::ModelProto> owner, const std::string& bytes)
      : owner_(std::move(owner)), bytes_(bytes) {}
  std::byte* data() override { return reinterpret_cast<std::byte*>(const_cast<char*>(bytes_.data())); }
  std::size_t size() const override { return bytes_.size(); }

 private:
  std::shared_ptr<const ::onnx::ModelProto> owner_;
  const std::string& bytes_;
};

// Execution plan of one graph: topological order, what each node reads, how often each value
// is read (to free it after its last reader), and the initializers as zero-copy tensors.
struct GraphPlan {
  std::vector<int> order;
  std::vector<std::vector<std::string>> reads;  // explicit + implicit (subgraph) inputs per node
  std::unordered_map<std::string, int> read_count;
  NamedValues initializers;
  std::unordered_set<std::string> outputs;
};

GraphPlan make_plan(const GraphProto& graph, const std::shared_ptr<const ::onnx::ModelProto>& owner,
                    const std::filesystem::path& base_dir, int64_t element_limit) {
  GraphPlan plan;
  const onnx::NodeDescriber describe = [&](int index) { return node_label(graph.node(index)); };
  const auto producers = onnx::unique_producers(graph, describe);
  plan.reads.reserve(static_cast<std::size_t>(graph.node_size()));
  for (const auto& node : graph.node()) {
    plan.reads.push_back(onnx::node_reads(node));
    for (const auto& r : plan.reads.back()) ++plan.read_count[r];
  }
  plan.order = onnx::topological_order(graph, plan.reads, producers, {.describe_node = describe});
  for (const auto& t : graph.initializer()) {
    Tensor tensor;
    if (t.has_raw_data() && !onnx::uses_external_data(t) && t.data_type() != ::onnx::TensorProto::STRING) {
      onnx::validate_tensor_data(t, base_dir);
      DType dtype = dtype_from_onnx(t.data_type());
      tensor = Tensor::borrow(dtype, Shape(t.dims().begin(), t.dims().end()),
                              std::make_shared<ProtoBytes>(owner, t.raw_data()));
    } else {
      tensor = onnx::tensor_from_proto(t, base_dir, element_limit);
    }
    plan.initializers.emplace_back(t.name(), Value::of(std::move(tensor)));
  }
  for (const auto& s : graph.sparse_initializer()) {
    (void)s;
    raise<UnsupportedError>("sparse initializer '{}' is not supported by the reference runner yet", s.values().name());
  }
  for (const auto& o : graph.output()) plan.outputs.insert(o.name());
  return plan;
}

struct Scope {
  const Scope* parent = nullptr;
  std::unordered_map<std::string, Value> values;
  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->values.find(name);
      if (it != s->values.end()) return &it->second;
    }
    return nullptr;
  }
};

::onnx::TypeProto type_of(const Value& v) {
  ::onnx::TypeProto type;
  if (v.is_tensor()) {
    auto* t = type.mutable_tensor_type();
    t->set_elem_type(static_cast<int32_t>(v.tensor().dtype()));
    auto* shape = t->mutable_shape();
    for (int64_t d : v.tensor().shape()) shape->add_dim()->set_dim_value(d);
  } else if (v.is_sequence()) {
    type.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
        static_cast<int32_t>(v.sequence_dtype()));
  }
  return type;
}

}  // namespace

struct Interpreter::Impl {
  onnx::Model model;
  InterpreterOptions options;
  Opsets model_opsets;
  std::map<std::pair<std::string, std::string>, const FunctionProto*> local_functions;
  std::unordered_map<const GraphProto*, std::unique_ptr<GraphPlan>> plans;
  std::unordered_map<std::string, std::unique_ptr<GraphProto>> expansions;  // cache of function bodies
  std::vector<std::unique_ptr<FunctionProto>> built_functions;
  std::vector<std::string> produced_names;

  const GraphPlan& plan_for(const GraphProto& graph) {
    auto& slot = plans[&graph];
    if (!slot) {
      slot = std::make_unique<GraphPlan>(
          make_plan(graph, model.proto, model.base_dir, options.limits.max_elements));
    }
    return *slot;
  }

  // The function body for a node without a kernel, as a graph whose inputs are the function's
  // formal inputs (omitted optional inputs already blanked out) with attribute references resolved,
  // and the opsets that body uses. nullptr when the op has no function body.
  const GraphProto* expansion_for(const NodeProto& node, int64_t opset, const std::vector<const Value*>& inputs,
                                  Opsets& body_opsets) {
    const std::string domain = canonical_domain(node.domain());
    std::string key = fmt::format("{}:{}", static_cast<const void*>(&node), opset);
    for (const auto* v : inputs)
      key += v && v->is_tensor() ? fmt::format(":{}", static_cast<int>(v->tensor().dtype())) : std::string(":-");
    if (auto it = expansions.find(key); it != expansions.end()) {
      body_opsets = function_opsets[it->second.get()];
      return it->second.get();
    }
    const FunctionProto* function = nullptr;
    const ::onnx::OpSchema* schema = nullptr;
    auto local = local_functions.find({domain, node.op_type()});
    if (local != local_functions.end()) {
      function = local->second;
    } else {
      schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), domain);
      if (!schema) return nullptr;
      if (schema->HasContextDependentFunction()) {
        std::vector<::onnx::TypeProto> types;
        for (const auto* v : inputs) types.push_back(v ? type_of(*v) : ::onnx::TypeProto());
        auto built = std::make_unique<FunctionProto>();
        ::onnx::FunctionBodyBuildContextImpl context(node, types);
        bool built_body = false;
        try {
          built_body = schema->BuildContextDependentFunction(context, *built, static_cast<int>(opset));
        } catch (const std::bad_alloc&) {
          throw;
        } catch (const std::exception& error) {
          // ONNX's builders parse text made from the node (names from its graph attributes
          // included): a malformed node surfaces as their exception (std::logic_error from the
          // parser, ValidationError...). The caller prepends the node.
          raise<InvalidInputError>("ONNX could not build the function body of {} (opset {}) for this node: {}",
                                   node.op_type(), opset, error.what());
        }
        if (built_body) {
          function = built.get();
          built_functions.push_back(std::move(built));
        }
      }
      if (!function && schema->HasFunction()) function = schema->GetFunction(static_cast<int>(opset));
      if (!function) return nullptr;
    }
    auto graph = std::make_unique<GraphProto>();
    graph->set_name(fmt::format("function body of {}", node.op_type()));
    std::unordered_set<std::string> omitted;
    for (int i = 0; i < function->input_size(); ++i) {
      bool given = i < node.input_size() && !node.input(i).empty();
      if (given) graph->add_input()->set_name(function->input(i));
      else omitted.insert(function->input(i));
    }
    for (const auto& o : function->output()) graph->add_output()->set_name(o);
    for (const auto& body_node : function->node()) {
      NodeProto* copy = graph->add_node();
      *copy = body_node;
      resolve_function_node(*copy, node, *function, schema, omitted);
    }
    auto& opsets = function_opsets[graph.get()];
    opsets = model_opsets;
    for (const auto& o : function->opset_import()) opsets[canonical_domain(o.domain())] = o.version();
    body_opsets = opsets;
    const GraphProto* result = graph.get();
    expansions[key] = std::move(graph);
    return result;
  }
  std::unordered_map<const GraphProto*, Opsets> function_opsets;

  // Replaces attribute references (ref_attr_name) by the calling node's attribute, else the
  // function's or schema's default, else drops it; blanks out reads of omitted optional inputs.
  // Recurses into subgraphs.
  static void resolve_function_node(NodeProto& node, const NodeProto& caller, const FunctionProto& function,
                                    const ::onnx::OpSchema* schema,
                                    const std::unordered_set<std::string>& omitted) {
    for (int i = 0; i < node.input_size(); ++i)
      if (omitted.count(node.input(i))) node.set_input(i, "");
    auto* attributes = node.mutable_attribute();
    for (int i = 0; i < attributes->size();) {
      auto* a = attributes->Mutable(i);
      if (!a->ref_attr_name().empty()) {
        const ::onnx::AttributeProto* source = nullptr;
        for (const auto& c : caller.attribute())
          if (c.name() == a->ref_attr_name()) source = &c;
        if (!source)
          for (const auto& d : function.attribute_proto())
            if (d.name() == a->ref_attr_name()) source = &d;
        if (!source && schema) {
          auto it = schema->attributes().find(a->ref_attr_name());
          if (it != schema->attributes().end() && it->second.default_value.has_type())
            source = &it->second.default_value;
        }
        if (!source) {
          attributes->DeleteSubrange(i, 1);
          continue;
        }
        std::string name = a->name();
        *a = *source;
        a->set_name(name);
      }
      if (a->has_g())
        for (auto& n : *a->mutable_g()->mutable_node()) resolve_function_node(n, caller, function, schema, omitted);
      for (auto& g : *a->mutable_graphs())
        for (auto& n : *g.mutable_node()) resolve_function_node(n, caller, function, schema, omitted);
      ++i;
    }
  }

  // Runs the nodes of `graph` in `scope`. `keep` lists values not to free; `produced` (optional)
  // receives every produced tensor's name in order; `callback` streams tensors.
  void run_nodes(const GraphProto& graph, const GraphPlan& plan, Scope& scope, const Opsets& opsets, int depth,
                 const std::unordered_set<std::string>& keep, bool keep_all, const TensorCallback* callback,
                 std::vector<std::string>* produced) {
    std::unordered_map<std::string, int> remaining = plan.read_count;
    for (int index : plan.order) {
      const NodeProto& node = graph.node(index);
      if (interrupt_requested())
        raise<InterruptedError>("{}: interrupted before this node ran", node_label(node));
      std::vector<Value> outputs = run_node(node, scope, opsets, depth);
      for (int o = 0; o < node.output_size(); ++o) {
        const std::string& name = node.output(o);
        if (name.empty()) continue;
        Value& v = outputs[static_cast<std::size_t>(o)];
        if (v.is_none())
          raise<InternalError>("{}: the kernel did not produce output {} ('{}')", node_label(node), o, name);
        if (callback && v.is_tensor())
          (*callback)(ProducedTensor{name, v.tensor(), node.name(), node.op_type(), false});
        if (produced) produced->push_back(name);
        scope.values[name] = std::move(v);
      }
      if (keep_all) continue;
      for (const auto& r : plan.reads[static_cast<std::size_t>(index)]) {
        auto it = remaining.find(r);
        if (it == remaining.end() || --it->second > 0) continue;
        if (keep.count(r) || plan.outputs.count(r)) continue;
        scope.values.erase(r);  // only values owned by this scope; outer ones stay
      }
      // Outputs nobody reads (and nobody asked for) are dropped at once.
      for (const auto& name : node.output())
        if (!name.empty() && !plan.read_count.count(name) && !keep.count(name) && !plan.outputs.count(name))
          scope.values.erase(name);
    }
  }

  std::vector<Value> run_node(const NodeProto& node, Scope& scope, const Opsets& opsets, int depth) {
    const std::string domain = canonical_domain(node.domain());
    auto opset_it = opsets.find(domain);
    if (opset_it == opsets.end())
      raise<InvalidInputError>("{}: the model imports no opset for domain '{}'", node_label(node),
                               domain.empty() ? "ai.onnx" : domain);
    int64_t opset = opset_it->second;
    std::vector<const Value*> inputs;
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string& name = node.input(i);
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      const Value* v = scope.find(name);
      if (!v)
        raise<InvalidInputError>("{}: input '{}' is not a graph input, an initializer, nor produced by an earlier node",
                                 node_label(node), name);
      inputs.push_back(v);
    }
    try {
      bool force_expansion = std::find(options.expand_ops.begin(), options.expand_ops.end(), node.op_type()) !=
                             options.expand_ops.end();
      ops::KernelFn kernel = force_expansion ? nullptr : ops::find_kernel(domain, node.op_type(), opset);
      if (kernel) {
        ops::KernelContext ctx(node, opset, inputs, options.fp64, options.limits,
                               [this, &scope, &opsets, depth](const GraphProto& g, std::vector<Value> in) {
                                 return run_subgraph(g, std::move(in), scope, opsets, depth + 1);
                               });
        kernel(ctx);
        return ctx.take_outputs();
      }
      Opsets body_opsets;
      if (const GraphProto* body = expansion_for(node, opset, inputs, body_opsets)) {
        if (depth >= options.limits.max_subgraph_depth)
          raise<ResourceLimitError>("function bodies nested {} deep", depth);
        Scope inner;  // a function body sees only its own inputs, never the caller's scope
        int bound = 0;
        for (std::size_t i = 0; i < inputs.size(); ++i)
          if (inputs[i] && bound < body->input_size()) inner.values[body->input(bound++).name()] = *inputs[i];
        const GraphPlan& plan = plan_for(*body);
        run_nodes(*body, plan, inner, body_opsets, depth + 1, {}, false, nullptr, nullptr);
        std::vector<Value> outputs(static_cast<std::size_t>(node.output_size()));
        for (int o = 0; o < node.output_size() && o < body->output_size(); ++o) {
          if (node.output(o).empty()) continue;
          const Value* v = inner.find(body->output(o).name());
          if (!v)
            raise<InternalError>("function body of {} did not produce '{}'", node.op_type(), body->output(o).name());
          outputs[static_cast<std::size_t>(o)] = *v;
        }
        return outputs;
      }
    } catch (Error& e) {
      if (std::string(e.what()).find(node_label(node)) == std::string::npos) e.add_context(node_label(node));
      throw;
    } catch (const std::bad_alloc&) {
      raise<ResourceLimitError>("{}: out of memory", node_label(node));
    }
    raise<UnsupportedError>("{}: operator {} (domain '{}', opset {}) is not implemented by the reference runner",
                            node_label(node), node.op_type(), domain.empty() ? "ai.onnx" : domain, opset);
  }

  std::vector<Value> run_subgraph(const GraphProto& graph, std::vector<Value> inputs, const Scope& parent,
                                  const Opsets& opsets, int depth) {
    if (depth > options.limits.max_subgraph_depth)
      raise<ResourceLimitError>("subgraphs nested {} deep, over the limit of {}", depth,
                                options.limits.max_subgraph_depth);
    if (static_cast<int>(inputs.size()) > graph.input_size())
      raise<InvalidInputError>("subgraph '{}' takes {} inputs, {} given", graph.name(), graph.input_size(),
                               inputs.size());
    const GraphPlan& plan = plan_for(graph);
    Scope scope;
    scope.parent = &parent;
    for (const auto& [name, value] : plan.initializers) scope.values[name] = value;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      scope.values[graph.input(static_cast<int>(i)).name()] = std::move(inputs[i]);
    run_nodes(graph, plan, scope, opsets, depth, {}, false, nullptr, nullptr);
    std::vector<Value> outputs;
    for (const auto& o : graph.output()) {
      const Value* v = scope.find(o.name());
      if (!v) raise<InvalidInputError>("subgraph '{}' output '{}' was not produced", graph.name(), o.name());
      outputs.push_back(*v);
    }
    return outputs;
  }
};

Interpreter::Interpreter(onnx::Model model, InterpreterOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->model = std::move(model);
  impl_->options = options;
  for (const auto& o : impl_->model->opset_import())
    impl_->model_opsets[canonical_domain(o.domain())] = o.version();
  for (const auto& f : impl_->model->functions())
    impl_->local_functions[{canonical_domain(f.domain()), f.name()}] = &f;
  // Validates the graph (cycles, duplicate producers) and prepares initializers up front.
  onnx::for_each_graph(*impl_->model.proto, [&](const GraphProto& g, int) { impl_->plan_for(g); },
                       options.limits.max_subgraph_depth);
}

Interpreter::~Interpreter() = default;

const onnx::Model& Interpreter::model() const { return impl_->model; }

TensorMetadata Interpreter::input_metadata() const { return onnx::graph_inputs(impl_->model->graph()); }

std::vector<std::string> Interpreter::produced_tensor_names() const {
  const auto& graph = impl_->model->graph();
  const GraphPlan& plan = impl_->plan_for(graph);
  std::vector<std::string> names;
  for (int index : plan.order)
    for (const auto& o : graph.node(index).output())
      if (!o.empty()) names.push_back(o);
  return names;
}

NamedValues Interpreter::run(const NamedValues& feed, const IntermediateOutputs& intermediates,
                             const TensorCallback* callback) {
  const GraphProto& graph = impl_->model->graph();
  const GraphPlan& plan = impl_->plan_for(graph);
  Scope scope;
  for (const auto& [name, value] : plan.initializers) scope.values[name] = value;
  for (const auto& [name, value] : feed) scope.values[name] = value;
  std::unordered_set<std::string> keep;
  bool keep_all = intermediates.mode == IntermediateOutputs::Mode::kAll;
  if (intermediates.mode == IntermediateOutputs::Mode::kList) {
    std::unordered_set<std::string> known;
    for (const auto& name : produced_tensor_names()) known.insert(name);
    for (const auto& name : intermediates.names) {
      if (!known.count(name) && !scope.values.count(name))
        raise<InvalidInputError>("requested tensor '{}' is not produced by any node of the graph", name);
      keep.insert(name);
    }
  }
  std::vector<std::string> produced;
  impl_->run_nodes(graph, plan, scope, impl_->model_opsets, 0, keep, keep_all, callback, &produced);
  NamedValues results;
  std::unordered_set<std::string> emitted;
  for (const auto& o : graph.output()) {
    const Value* v = scope.find(o.name());
    if (!v) raise<InvalidInputError>("graph output '{}' was not produced", o.name());
    results.emplace_back(o.name(), *v);
    emitted.insert(o.name());
  }
  const std::vector<std::string>& extra = keep_all ? produced : intermediates.names;
  for (const auto& name : extra) {
    if (emitted.count(name)) continue;
    if (const Value* v = scope.find(name)) {
      results.emplace_back(name, *v);
      emitted.insert(name);
    }
  }
  return results;
}

}  // namespace parity::runtime

// SequenceMap: applies the body to each element of the input sequence (plus the matching
// elements of further sequence inputs, or whole tensor inputs); each output is a sequence.
#include "slicing.h"

namespace parity::ops {
namespace {

void sequence_map_kernel(KernelContext& ctx) {
  const ::onnx::GraphProto* body = ctx.attr_graph("body");
  if (!body) ctx.fail("attribute 'body' (a graph) is missing");
  const auto& first = ctx.input_value(0).sequence();
  std::vector<std::vector<Tensor>> results(ctx.num_outputs());
  for (std::size_t i = 0; i < first.size(); ++i) {
    std::vector<Value> inputs{Value::of(first[i])};
    for (std::size_t k = 1; k < ctx.num_inputs(); ++k) {
      const Value& extra = ctx.input_value(k);
      if (extra.is_sequence()) {
        if (extra.sequence().size() != first.size())
          ctx.fail("input {} has {} elements, input 0 has {}", k, extra.sequence().size(), first.size());
        inputs.push_back(Value::of(extra.sequence()[i]));
      } else {
        inputs.push_back(extra);
      }
    }
    std::vector<Value> outs = ctx.run_subgraph(*body, std::move(inputs));
    for (std::size_t o = 0; o < results.size(); ++o) results[o].push_back(outs[o].tensor());
  }
  for (std::size_t o = 0; o < results.size(); ++o) {
    const auto& type = body->output(static_cast<int>(o)).type().tensor_type();
    DType dtype = results[o].empty() ? dtype_from_onnx(type.elem_type()) : results[o][0].dtype();
    ctx.set_output(o, Value::sequence(std::move(results[o]), dtype));
  }
}

}  // namespace

PARITY_KERNEL("", "SequenceMap", 17, sequence_map_kernel);

}  // namespace parity::ops

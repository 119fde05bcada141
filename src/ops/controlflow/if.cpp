// If: runs then_branch or else_branch (subgraphs seeing the outer scope).
#include "slicing.h"

namespace parity::ops {
namespace {

void if_kernel(KernelContext& ctx) {
  bool condition = controlflow::read_condition(ctx.input(0), ctx, "the condition");
  const char* branch_name = condition ? "then_branch" : "else_branch";
  const ::onnx::GraphProto* branch = ctx.attr_graph(branch_name);
  if (!branch) ctx.fail("attribute '{}' (a graph) is missing", branch_name);
  std::vector<Value> outputs = ctx.run_subgraph(*branch, {});
  if (outputs.size() != ctx.num_outputs())
    ctx.fail("{} produced {} outputs, the node has {}", branch_name, outputs.size(), ctx.num_outputs());
  for (std::size_t i = 0; i < outputs.size(); ++i) ctx.set_output(i, std::move(outputs[i]));
}

}  // namespace

PARITY_KERNEL("", "If", 1, if_kernel);

}  // namespace parity::ops

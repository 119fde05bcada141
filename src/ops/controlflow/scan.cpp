// Scan (opset 9+: state, scan inputs with per-input axes and directions; opset 8: batched with
// optional sequence_lens).
#include "parity/ops/broadcast.h"
#include "slicing.h"

namespace parity::ops {
namespace {

struct ScanSpec {
  std::size_t state_count, scan_in_count, scan_out_count;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

// One scan over the given states and scan inputs (no batch axis); returns final states and
// stacked scan outputs.
std::vector<Value> run_scan(KernelContext& ctx, const ::onnx::GraphProto& body, const ScanSpec& spec,
                            std::vector<Value> states, const std::vector<Tensor>& scan_inputs, int64_t length_limit) {
  int64_t length = -1;
  for (std::size_t k = 0; k < scan_inputs.size(); ++k) {
    if (scan_inputs[k].rank() == 0) ctx.fail("scan input {} is a scalar; scan inputs need an axis to scan", k);
    int64_t axis = normalize_axis(spec.in_axes[k], scan_inputs[k].rank(), ctx);
    int64_t n = scan_inputs[k].shape()[axis];
    if (length >= 0 && n != length) ctx.fail("scan inputs have different lengths ({} and {})", length, n);
    length = n;
  }
  if (length < 0) length = 0;
  if (length_limit >= 0) length = std::min(length, length_limit);
  std::vector<std::vector<Tensor>> outs(spec.scan_out_count);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Value> inputs = states;
    for (std::size_t k = 0; k < scan_inputs.size(); ++k) {
      int64_t axis = normalize_axis(spec.in_axes[k], scan_inputs[k].rank(), ctx);
      int64_t index = spec.in_dirs[k] ? length - 1 - t : t;
      inputs.push_back(Value::of(controlflow::take_along(scan_inputs[k], axis, index)));
    }
    std::vector<Value> results = ctx.run_subgraph(body, std::move(inputs));
    for (std::size_t s = 0; s < spec.state_count; ++s) states[s] = std::move(results[s]);
    for (std::size_t k = 0; k < spec.scan_out_count; ++k) outs[k].push_back(results[spec.state_count + k].tensor());
  }
  std::vector<Value> final_values = std::move(states);
  for (std::size_t k = 0; k < spec.scan_out_count; ++k) {
    auto& parts = outs[k];
    if (spec.out_dirs[k]) std::reverse(parts.begin(), parts.end());
    if (parts.empty()) {
      const auto& type = body.output(static_cast<int>(spec.state_count + k)).type().tensor_type();
      Shape shape{0};
      for (const auto& d : type.shape().dim()) shape.push_back(d.has_dim_value() ? d.dim_value() : 0);
      final_values.push_back(Value::of(Tensor::zeros(dtype_from_onnx(type.elem_type()), shape)));
      continue;
    }
    int64_t rank = parts[0].rank() + 1;
    int64_t axis = normalize_axis(spec.out_axes[k], rank, ctx);
    final_values.push_back(Value::of(controlflow::stack_along(parts, axis, parts[0].dtype(), parts[0].shape())));
  }
  return final_values;
}

ScanSpec make_spec(KernelContext& ctx, const ::onnx::GraphProto& body, std::size_t first_input) {
  ScanSpec spec;
  int64_t num_scan_inputs = ctx.attr_int("num_scan_inputs");
  std::size_t data_inputs = ctx.num_inputs() > first_input ? ctx.num_inputs() - first_input : 0;
  if (num_scan_inputs < 0 || static_cast<uint64_t>(num_scan_inputs) > data_inputs)
    ctx.fail("num_scan_inputs {} is not between 0 and the {} inputs", num_scan_inputs, data_inputs);
  spec.scan_in_count = static_cast<std::size_t>(num_scan_inputs);
  spec.state_count = data_inputs - spec.scan_in_count;
  // The body returns the states, then the scan outputs: it cannot return fewer than the states.
  if (static_cast<std::size_t>(body.output_size()) < spec.state_count)
    ctx.fail("the body has {} outputs, fewer than the {} state variables ({} inputs, num_scan_inputs {})",
             body.output_size(), spec.state_count, data_inputs, num_scan_inputs);
  spec.scan_out_count = static_cast<std::size_t>(body.output_size()) - spec.state_count;
  if (ctx.num_outputs() > spec.state_count + spec.scan_out_count)
    ctx.fail("the node has {} outputs, the body gives {} ({} state variables, {} scan outputs)", ctx.num_outputs(),
             spec.state_count + spec.scan_out_count, spec.state_count, spec.scan_out_count);
  auto list = [&](const char* name, std::size_t n) {
    auto v = ctx.attr_ints(name, std::vector<int64_t>{});
    if (v.empty()) v.assign(n, 0);
    if (v.size() != n) ctx.fail("attribute '{}' has {} values, expected {}", name, v.size(), n);
    return v;
  };
  spec.in_axes = list("scan_input_axes", spec.scan_in_count);
  spec.in_dirs = ctx.has_attribute("scan_input_directions") ? list("scan_input_directions", spec.scan_in_count)
                                                            : list("directions", spec.scan_in_count);
  spec.out_axes = list("scan_output_axes", spec.scan_out_count);
  spec.out_dirs = list("scan_output_directions", spec.scan_out_count);
  return spec;
}

void scan9_kernel(KernelContext& ctx) {
  const ::onnx::GraphProto* body = ctx.attr_graph("body");
  if (!body) ctx.fail("attribute 'body' (a graph) is missing");
  ScanSpec spec = make_spec(ctx, *body, 0);
  std::vector<Value> states;
  for (std::size_t i = 0; i < spec.state_count; ++i) states.push_back(ctx.input_value(i));
  std::vector<Tensor> scan_inputs;
  for (std::size_t i = 0; i < spec.scan_in_count; ++i) scan_inputs.push_back(ctx.input(spec.state_count + i));
  auto outputs = run_scan(ctx, *body, spec, std::move(states), scan_inputs, -1);
  for (std::size_t i = 0; i < outputs.size(); ++i) ctx.set_output(i, std::move(outputs[i]));
}

// Opset 8: input 0 is optional sequence_lens; every other input has a leading batch axis; scan
// inputs are scanned along axis 1 (axis 0 after removing the batch).
void scan8_kernel(KernelContext& ctx) {
  const ::onnx::GraphProto* body = ctx.attr_graph("body");
  if (!body) ctx.fail("attribute 'body' (a graph) is missing");
  ScanSpec spec = make_spec(ctx, *body, 1);
  if (ctx.num_inputs() < 2) ctx.fail("needs at least one input besides sequence_lens");
  const Tensor& first = ctx.input(1);
  if (first.rank() == 0) ctx.fail("inputs need a leading batch axis (opset 8), input 1 is a scalar");
  int64_t batch = first.shape()[0];
  if (batch == 0) ctx.fail("the batch is empty");
  std::vector<std::vector<Value>> per_batch;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Value> states;
    for (std::size_t i = 0; i < spec.state_count; ++i)
      states.push_back(Value::of(controlflow::take_along(ctx.input(1 + i), 0, b)));
    std::vector<Tensor> scan_inputs;
    for (std::size_t i = 0; i < spec.scan_in_count; ++i)
      scan_inputs.push_back(controlflow::take_along(ctx.input(1 + spec.state_count + i), 0, b));
    int64_t limit = -1;
    if (ctx.has_input(0)) {
      auto lengths = read_int_list(ctx.input(0), ctx);
      if (static_cast<int64_t>(lengths.size()) != batch)
        ctx.fail("sequence_lens has {} values for a batch of {}", lengths.size(), batch);
      limit = lengths[static_cast<std::size_t>(b)];
    }
    per_batch.push_back(run_scan(ctx, *body, spec, std::move(states), scan_inputs, limit));
  }
  for (std::size_t i = 0; i < spec.state_count + spec.scan_out_count; ++i) {
    std::vector<Tensor> parts;
    for (auto& outs : per_batch) parts.push_back(outs[i].tensor());
    ctx.set_output(i, controlflow::stack_along(parts, 0, parts[0].dtype(), parts[0].shape()));
  }
}

}  // namespace

PARITY_KERNEL("", "Scan", 8, scan8_kernel);
PARITY_KERNEL("", "Scan", 9, scan9_kernel);

}  // namespace parity::ops

// Loop: body(iteration, condition, carried...) -> (condition, carried..., scan outputs...).
// Scan outputs are stacked along a new first axis. Trip counts are bounded by the runner's limit.
#include <chrono>

#include "parity/core/logger.h"
#include "parity/core/tensor.h"
#include "slicing.h"

namespace parity::ops {
namespace {

Tensor scalar_int64(int64_t v) {
  Tensor t = Tensor::zeros(DType::kInt64, {});
  t.mutable_data<int64_t>()[0] = v;
  return t;
}

Tensor scalar_bool(bool v) {
  Tensor t = Tensor::zeros(DType::kBool, {});
  t.mutable_data<uint8_t>()[0] = v;
  return t;
}

void loop_kernel(KernelContext& ctx) {
  const ::onnx::GraphProto* body = ctx.attr_graph("body");
  if (!body) ctx.fail("attribute 'body' (a graph) is missing");
  std::optional<int64_t> trip_count;
  if (ctx.has_input(0)) {
    const Tensor& m = ctx.input(0);
    if (m.size() != 1 || m.dtype() != DType::kInt64) ctx.fail("trip count M must be a one-element int64 tensor");
    trip_count = m.data<int64_t>()[0];
  }
  bool condition = true;
  if (ctx.has_input(1)) condition = controlflow::read_condition(ctx.input(1), ctx, "the loop condition");
  const std::size_t carried_count = ctx.num_inputs() > 2 ? ctx.num_inputs() - 2 : 0;
  std::vector<Value> carried;
  for (std::size_t i = 0; i < carried_count; ++i) carried.push_back(ctx.input_value(i + 2));
  const std::size_t body_outputs = static_cast<std::size_t>(body->output_size());
  if (body_outputs < 1 + carried_count)
    ctx.fail("body has {} outputs, needs at least {}", body_outputs, 1 + carried_count);
  const std::size_t scan_count = body_outputs - 1 - carried_count;
  std::vector<std::vector<Tensor>> scans(scan_count);

  const int64_t limit = ctx.limits().max_loop_iterations;
  // A long loop says how far it is, every 10 s (the clock is read every 1024 iterations).
  using Clock = std::chrono::steady_clock;
  auto last_report = Clock::now();
  int64_t iteration = 0;
  while (condition && (!trip_count || iteration < *trip_count)) {
    if (iteration >= limit)
      throw ResourceLimitError(ctx.label() + fmt::format(": the loop ran {} iterations, the limit (set with "
                                                         "--ref-max-loop-iterations, or RefRunner's "
                                                         "max_loop_iterations in Python) is {}",
                                                         iteration, limit));
    if (iteration % 1024 == 1023 && Clock::now() - last_report >= std::chrono::seconds(10)) {
      last_report = Clock::now();
      log::info("{}: Loop iteration {}{} (the limit is {}: --ref-max-loop-iterations)", ctx.label(), iteration + 1,
                trip_count ? fmt::format(" of {}", *trip_count) : std::string(), limit);
    }
    std::vector<Value> inputs;
    inputs.push_back(Value::of(scalar_int64(iteration)));
    inputs.push_back(Value::of(scalar_bool(condition)));
    for (auto& v : carried) inputs.push_back(v);
    std::vector<Value> outputs = ctx.run_subgraph(*body, std::move(inputs));
    condition = controlflow::read_condition(outputs[0].tensor(), ctx, "the body's condition output");
    for (std::size_t i = 0; i < carried_count; ++i) carried[i] = std::move(outputs[1 + i]);
    for (std::size_t i = 0; i < scan_count; ++i) scans[i].push_back(outputs[1 + carried_count + i].tensor());
    ++iteration;
  }
  for (std::size_t i = 0; i < carried_count; ++i) ctx.set_output(i, std::move(carried[i]));
  for (std::size_t i = 0; i < scan_count; ++i) {
    if (!ctx.output_requested(carried_count + i)) continue;
    if (scans[i].empty()) {
      const auto& type = body->output(static_cast<int>(1 + carried_count + i)).type().tensor_type();
      DType dtype = type.elem_type() ? dtype_from_onnx(type.elem_type()) : DType::kFloat32;
      Shape shape{0};
      for (const auto& d : type.shape().dim()) shape.push_back(d.has_dim_value() ? d.dim_value() : 0);
      ctx.allocate_output(carried_count + i, dtype, shape);
      continue;
    }
    ctx.set_output(carried_count + i,
                   controlflow::stack_along(scans[i], 0, scans[i][0].dtype(), scans[i][0].shape()));
  }
}

}  // namespace

PARITY_KERNEL("", "Loop", 1, loop_kernel);

}  // namespace parity::ops

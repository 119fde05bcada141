// TorchRunner::infer_concurrently: performance mode's `--requests N` on the PyTorch runner. The worker
// runs N requests at once, each a thread with a copy of its feed and output buffers of its own
// (_torch_model.py's infer_concurrently); on a CUDA device each thread has a torch.cuda.Stream of its
// own and its feed and outputs are in pinned host memory, on the CPU the threads share torch's
// intra-op thread pool.
#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/runtime/python_worker.h"
#include "parity/runtime/torch/torch_runner.h"

namespace parity::runtime {

ConcurrentInference TorchRunner::infer_concurrently(const std::vector<NamedTensors>& feeds,
                                                    const ConcurrencyRequest& request) {
  if (!worker_) raise<InternalError>("{}: infer_concurrently() before activation", name());
  ConcurrentInference result;
  // Every feed's tensors in the order of the input metadata (as infer() sends one), named
  // "<feed index>/<input name>".
  NamedTensors tensors;
  for (std::size_t i = 0; i < feeds.size(); ++i)
    for (const auto& [input, info] : inputs_)
      for (const auto& entry : feeds[i])
        if (entry.first == input) tensors.emplace_back(fmt::format("{}/{}", i, input), entry.second);
  const int requests = request.requests > 0 ? request.requests : 1;
  const nlohmann::json arguments = {{"requests", requests},
                                    {"count", request.count},
                                    {"seconds", request.seconds ? nlohmann::json(*request.seconds) : nlohmann::json()},
                                    {"feeds", feeds.size()}};
  PythonReply reply;
  try {
    reply = worker_->call("infer_concurrently", arguments, tensors);
  } catch (const PythonCommandError& error) {
    log::verbose("{}", error.traceback());
    throw;
  }
  result.requests = reply.result.at("requests").get<int>();
  result.latencies = reply.result.at("latencies").get<std::vector<double>>();
  result.wall_seconds = reply.result.at("wall_seconds").get<double>();
  const std::string device = reply.result.at("device").get<std::string>();
  result.how = device.starts_with("cuda")
                   ? fmt::format("{} concurrent request(s) on {}, each a thread with a CUDA stream of its own",
                                 result.requests, device)
                   : fmt::format("{} concurrent request(s) on the CPU, each a thread of its own, sharing torch's {} "
                                 "intra-op thread(s)",
                                 result.requests, reply.result.at("intra_op_threads").get<int>());
  if (request.requests <= 0) result.how += " ('auto': one)";
  return result;
}

}  // namespace parity::runtime

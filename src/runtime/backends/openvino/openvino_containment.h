// OpenVINO's calls on a model Parity cannot check first, run where a crash inside OpenVINO is
// contained: in a child of a fork server (core/fork_server.h) that start_containment_server forks as
// soon as the backend is loaded, before this process uses OpenVINO (a child forked later from a
// process whose OpenVINO CPU plugin has started its task executor would wait for threads it does
// not have). A child killed by a signal is reported as one error naming the model, the signal and
// the first node of the main graph whose prefix of the graph crashes the same call (found by
// running the call on prefixes in children, about log2(N) of them).
//
// - The runner's first compile of a model runs in a child first; only when the child's compile
//   ended (or OpenVINO refused the model with an exception, which the caller's own compile then
//   reports) does the caller compile it in its own process. The child is kept, its model compiled,
//   for the runner's first inference: ContainedModel::infer sends it the real feeds, it infers, and
//   only then does the caller infer in its own process. Later inferences (other data) run in the
//   process only: a crash that depends on data the first inference did not have is not contained
//   (the runner contains its next inference again, compiling anew, only after a contained crash).
// - OpenVINO's query_model (which nodes the device supports) runs in a child only; its answer
//   comes back.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "openvino_backend.h"
#include "parity/core/fork_server.h"

namespace parity::runtime {

// Whether OpenVINO's calls run contained: true unless PARITY_OPENVINO_IN_PROCESS is "1".
bool openvino_calls_contained();

// Starts this process's containment server, once, when openvino_calls_contained(); called by
// load_openvino_backend right after loading `backend`.
void start_containment_server(openvino::Backend& backend);

// A child that compiled a model and waits, the model compiled, for the first inference's feeds.
// Destroying it ends the child.
class ContainedModel {
 public:
  ContainedModel(ForkServer::Child child, openvino::CompileRequest request, std::string model_label);

  // Infers `inputs` in the child. Returns when the child's inference ended, by its outputs or by
  // OpenVINO's exception (the caller's own inference meets it again). Throws InvalidInputError when
  // the child was killed by a signal: "<model_label>: OpenVINO crashed inferring it (signal 11
  // (SIGSEGV), in a child process) at node 'n' (GatherND): ...", the node found by compiling and
  // inferring prefixes of `model()`'s main graph with the same inputs; InterruptedError when Ctrl-C
  // ended it. Once: the child ends after it.
  void infer(const std::vector<openvino::InputBuffer>& inputs, const std::function<::onnx::ModelProto()>& model);

 private:
  std::optional<ForkServer::Child> child_;
  openvino::CompileRequest request_;  // without its model bytes (a prefix's are made for a crash)
  std::string model_label_;
};

// Compiles `request` (the serialized `model`) in a child of the containment server and keeps the
// child for the first inference. nullptr when no server was started (calls not contained) or when
// OpenVINO refused the model in the child. Throws InvalidInputError when the child was killed by a
// signal: "<model_label>: OpenVINO crashed compiling it (signal 8 (SIGFPE), in a child process) at
// node 'n' (Slice): ...", or that no prefix of the nodes crashes it; InterruptedError when Ctrl-C
// ended it.
std::unique_ptr<ContainedModel> compile_in_child(const openvino::CompileRequest& request,
                                                 const ::onnx::ModelProto& model, const std::string& model_label);

// OpenVINO's query_model for `request` (the serialized `model`) in a child of the containment
// server: its answer; nullopt when no server was started. Throws openvino::BackendFailure when
// OpenVINO threw, Error when the child was killed by a signal ("<model_label>: OpenVINO
// crashed asking the device which nodes it supports (signal ...) at node ..."), InterruptedError
// when Ctrl-C ended it.
std::optional<openvino::QueryResult> query_in_child(const openvino::QueryRequest& request,
                                                    const ::onnx::ModelProto& model, const std::string& model_label);

}  // namespace parity::runtime

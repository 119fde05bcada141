// OpenVINO's compile of a model Parity cannot check first, run where a crash inside OpenVINO is
// contained: a child process compiles the request first; only when the child's compile ended (or
// OpenVINO refused the model with an exception, which the caller's own compile then reports) does
// the caller compile it in its own process. A child killed by a signal is reported as one error
// naming the model, the signal and the first node of the main graph whose prefix of the graph
// crashes OpenVINO's compile (found by compiling prefixes in children, about log2(N) of them).
//
// The children are forked by a compile server (core/fork_server.h) that start_compile_server forks
// as soon as the backend is loaded, before this process uses OpenVINO: a child forked later from a
// process whose OpenVINO CPU plugin has started its task executor would wait for threads it does
// not have.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "openvino_backend.h"

namespace parity::runtime {

// Whether OpenVINO's compile runs contained: true unless PARITY_OPENVINO_IN_PROCESS is "1".
bool openvino_compile_contained();

// Starts this process's compile server, once, when openvino_compile_contained(); called by
// load_openvino_backend right after loading `backend`.
void start_compile_server(openvino::Backend& backend);

// Compiles `request` (the serialized `model`) in a child of the compile server: true when it ended,
// by a result or by OpenVINO's exception; false when no server was started (compiles not contained).
// Throws InvalidInputError when the child was killed by a signal: "<model_label>: OpenVINO crashed
// compiling it (signal 8 (SIGFPE), in a child process) at node 'n' (Slice): ...", or that no prefix
// of the nodes crashes it; InterruptedError when Ctrl-C ended it.
bool compile_in_child(const openvino::CompileRequest& request, const ::onnx::ModelProto& model,
                      const std::string& model_label);

}  // namespace parity::runtime

// Polygraphy's Python hooks, run in a Python interpreter ($PARITY_PYTHON, else `python3` on PATH)
// with numpy; a data loader's feeds cross as .npy bytes through a pipe, the comparison's arrays as .npy
// files in a temporary folder, removed afterwards.
//   --data-loader-script file.py[:func]: the function (default `load_data`) returns an iterable of
//     {input name: array} dicts (numpy arrays, torch tensors, or anything numpy.asarray takes).
//   --compare-func-script file.py[:func]: the function (default `compare_outputs`) is called with
//     two iteration results (dicts of output name -> numpy array with a `runner_name` attribute)
//     and returns {output name: result}; bool(result) is the verdict, as in Polygraphy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "parity/compare/compare_func.h"
#include "parity/core/array_io.h"
#include "parity/core/feed_stream.h"

namespace parity::cli {

struct ScriptSpec {
  std::string path;
  std::string function = "load_data";
};

// "file.py:func" or "file.py"; the part after the last ':' is the function when it is a Python
// identifier (so paths holding ':' still work).
ScriptSpec parse_script_spec(const std::string& spec, const std::string& default_function);

// Starts the script and returns its feeds as it yields them (a pipe from its process: the script runs
// ahead of the reader by at most the pipe's size). The stream's next() throws what the function below
// throws, at the feed where it happens.
std::unique_ptr<FeedStream> data_loader_script_stream(const ScriptSpec& script);

// Runs the script and returns its feeds. Throws InvalidInputError with the script's own error (the
// end of its traceback) when it fails, when it yields something other than dicts, or when no
// Python can be started.
std::vector<NamedTensors> run_data_loader_script(const ScriptSpec& script);

// A comparison function that calls the script once per pair of iterations. The outputs it
// returns are the outputs compared; one it does not return is not compared.
compare::CompareFunc compare_func_script(const ScriptSpec& script);

}  // namespace parity::cli

#include "args/backend_args.h"

#include "args/onnxrt_args.h"
#include "args/openvino_args.h"
#include "args/ref_args.h"
#include "args/torch_args.h"

namespace parity::cli {

void BackendArgs::add_script_loaders(GeneratedScript&, const std::string&, bool, int,
                                     std::vector<std::string>&) const {}

std::vector<std::unique_ptr<BackendArgs>> make_backend_args() {
  std::vector<std::unique_ptr<BackendArgs>> groups;
  groups.push_back(std::make_unique<RefArgs>());
  groups.push_back(std::make_unique<OnnxrtArgs>());
  groups.push_back(std::make_unique<OpenvinoArgs>());
  groups.push_back(std::make_unique<TorchArgs>());
  return groups;
}

}  // namespace parity::cli

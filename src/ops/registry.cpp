#include <map>
#include <mutex>
#include <tuple>

#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

std::vector<KernelRegistration>& registry() {
  static std::vector<KernelRegistration> kernels;
  return kernels;
}

}  // namespace

void register_kernel(KernelRegistration registration) {
  if (registration.domain == "ai.onnx") registration.domain.clear();
  for (const auto& k : registry())
    if (k.domain == registration.domain && k.op_type == registration.op_type &&
        k.since_version == registration.since_version)
      throw InternalError(fmt::format("kernel {}:{} since {} registered twice", registration.domain,
                                      registration.op_type, registration.since_version));
  registry().push_back(std::move(registration));
}

KernelFn find_kernel(const std::string& domain, const std::string& op_type, int64_t opset) {
  const std::string& d = domain == "ai.onnx" ? std::string() : domain;
  const KernelRegistration* best = nullptr;
  for (const auto& k : registry()) {
    if (k.op_type != op_type || k.domain != d || k.since_version > opset) continue;
    if (!best || k.since_version > best->since_version) best = &k;
  }
  return best ? best->fn : nullptr;
}

std::vector<KernelRegistration> registered_kernels() { return registry(); }

}  // namespace parity::ops

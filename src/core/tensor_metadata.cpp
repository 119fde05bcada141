#include "parity/core/tensor_metadata.h"

#include <fmt/format.h>

namespace parity {

std::string Dim::to_string() const {
  if (value) return std::to_string(*value);
  if (!symbol.empty()) return fmt::format("'{}'", symbol);
  return "None";
}

std::string TensorInfo::to_string() const {
  std::string dtype_text = dtype == DType::kUndefined ? "None" : std::string(dtype_name(dtype));
  std::string shape_text = "None";
  if (shape) {
    std::vector<std::string> dims;
    for (const auto& d : *shape) dims.push_back(d.to_string());
    shape_text = dims.size() == 1 ? fmt::format("({},)", dims[0]) : fmt::format("({})", fmt::join(dims, ", "));
  }
  return fmt::format("[dtype={}, shape={}]", dtype_text, shape_text);
}

TensorMetadata& TensorMetadata::add(std::string name, DType dtype, std::optional<std::vector<Dim>> shape) {
  return add(std::move(name), TensorInfo{dtype, std::move(shape)});
}

TensorMetadata& TensorMetadata::add(std::string name, TensorInfo info) {
  auto [it, inserted] = index_.try_emplace(name, entries_.size());
  if (!inserted) {
    entries_[it->second].second = std::move(info);
    return *this;
  }
  entries_.emplace_back(std::move(name), std::move(info));
  return *this;
}

const TensorInfo* TensorMetadata::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

std::string TensorMetadata::to_string() const {
  std::string out = "{";
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (i) out += ",\n ";
    out += entries_[i].first + " " + entries_[i].second.to_string();
  }
  return out + "}";
}

}  // namespace parity

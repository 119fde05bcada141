// Names, dtypes and shapes of a model's (or runner's) inputs and outputs, in order. A dim is a
// number, a symbolic name ("batch") or unknown; it may carry min/max bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parity/core/dtype.h"

namespace parity {

struct Dim {
  std::optional<int64_t> value;   // set for a fixed dim
  std::string symbol;             // set for a named dynamic dim
  std::optional<int64_t> min, max;

  static Dim fixed(int64_t v) { Dim d; d.value = v; return d; }
  static Dim named(std::string s) { Dim d; d.symbol = std::move(s); return d; }
  static Dim unknown() { return Dim{}; }
  bool is_fixed() const { return value.has_value(); }
  bool operator==(const Dim&) const = default;
  // "3", "'batch'", "None" (Python-style, as Polygraphy prints shapes)
  std::string to_string() const;
};

struct TensorInfo {
  DType dtype = DType::kUndefined;
  std::optional<std::vector<Dim>> shape;  // nullopt: rank unknown
  bool operator==(const TensorInfo&) const = default;
  // "[dtype=float32, shape=(1, 'N', 224)]"
  std::string to_string() const;
};

class TensorMetadata {
 public:
  using Entry = std::pair<std::string, TensorInfo>;

  // Adds or replaces `name`, keeping the first insertion position. add() and find() take constant
  // time (a name index beside the ordered entries): "mark all" builds metadata of every tensor.
  TensorMetadata& add(std::string name, DType dtype, std::optional<std::vector<Dim>> shape);
  TensorMetadata& add(std::string name, TensorInfo info);

  const TensorInfo* find(const std::string& name) const;
  bool contains(const std::string& name) const { return find(name) != nullptr; }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  const Entry& operator[](std::size_t i) const { return entries_[i]; }

  // Polygraphy's layout: "{x [dtype=float32, shape=(1, 3)],\n y [dtype=int64, shape=()]}"
  std::string to_string() const;

 private:
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;  // name -> position in entries_
};

}  // namespace parity

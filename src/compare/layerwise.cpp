#include "parity/compare/layerwise.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/logger.h"
#include "parity/compare/layerwise_review.h"
#include "parity/compare/layerwise_torch_modules.h"
#include "parity/onnx/torch_module.h"

namespace parity::compare {
namespace {

std::string spill_key(int64_t iteration, const std::string& name) { return fmt::format("{}\n{}", iteration, name); }

constexpr uint64_t kAlign = 64;

std::string number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return fmt::format("{:.5g}", value);
}

nlohmann::ordered_json json_number(double value) {
  if (std::isfinite(value)) return value;
  return number(value);
}

}  // namespace

// ---- TensorSpill ----

// Memory for held tensors, carved out of chunks that are mapped at once and asked for huge pages:
// the first runner's tensors all live at the same time, so each would otherwise be fresh memory
// faulted in 4 KiB pages one by one (hundreds of thousands of faults for a detection model),
// which costs more than the file's writes it replaces. A chunk is unmapped when the last tensor
// in it is dropped.
class TensorSpill::HeldChunk final : public Storage {
 public:
  explicit HeldChunk(std::size_t size) : size_(size) {
    void* data = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED)
      raise<ResourceLimitError>("out of memory reserving {} bytes for the layerwise comparison's held tensors: {}",
                                size, std::strerror(errno));
    data_ = static_cast<std::byte*>(data);
#ifdef MADV_HUGEPAGE
    ::madvise(data_, size, MADV_HUGEPAGE);  // advice only: without huge pages the chunk still works
#endif
  }
  ~HeldChunk() override { ::munmap(data_, size_); }
  std::byte* data() override { return data_; }
  std::size_t size() const override { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

namespace {
constexpr uint64_t kChunkBytes = uint64_t{64} << 20;
constexpr uint64_t kHugePage = uint64_t{2} << 20;
}  // namespace

Tensor TensorSpill::hold(const TensorView& tensor) {
  uint64_t bytes = tensor.byte_size();
  if (bytes == 0) return Tensor::uninitialized(tensor.dtype(), tensor.shape());  // no chunk for nothing
  if (!chunk_ || chunk_->size() - chunk_used_ < bytes) {
    uint64_t size = std::max(kChunkBytes, (bytes + kHugePage - 1) / kHugePage * kHugePage);
    chunk_ = std::make_shared<HeldChunk>(static_cast<std::size_t>(size));
    chunk_used_ = 0;
  }
  std::size_t offset = static_cast<std::size_t>(chunk_used_);
  std::memcpy(chunk_->data() + offset, tensor.raw(), static_cast<std::size_t>(bytes));
  chunk_used_ = (chunk_used_ + bytes + kAlign - 1) / kAlign * kAlign;
  return Tensor::borrow(tensor.dtype(), tensor.shape(), chunk_, offset);
}

TensorSpill::TensorSpill(const std::filesystem::path& directory, uint64_t memory_budget)
    : directory_(directory), memory_budget_(memory_budget) {}

TensorSpill::~TensorSpill() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorSpill::open_file() {
  std::filesystem::path dir = directory_;
  if (dir.empty()) {
    std::error_code ec;
    dir = std::filesystem::temp_directory_path(ec);
    if (ec) dir = "/tmp";
  }
  std::string pattern = (dir / "parity-layerwise-XXXXXX").string();
  fd_ = ::mkstemp(pattern.data());
  if (fd_ < 0)
    raise<FileError>("cannot create the layerwise spill file in {}: {}", dir.string(), std::strerror(errno));
  ::unlink(pattern.c_str());  // the data live as long as the descriptor, and no longer
}

void TensorSpill::write(Record& record, const TensorView& tensor) {
  if (fd_ < 0) open_file();
  record.offset = (end_ + kAlign - 1) / kAlign * kAlign;
  const char* data = static_cast<const char*>(tensor.raw());
  uint64_t done = 0;
  while (done < record.bytes) {
    ssize_t n = ::pwrite(fd_, data + done, static_cast<std::size_t>(std::min<uint64_t>(record.bytes - done, 1u << 30)),
                         static_cast<off_t>(record.offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      raise<FileError>("cannot write tensor '{}' ({} bytes) to the layerwise spill file: {}", record.name,
                       record.bytes, std::strerror(errno));
    }
    done += static_cast<uint64_t>(n);
  }
  end_ = record.offset + record.bytes;
}

void TensorSpill::append(int64_t iteration, const std::string& name, const TensorView& tensor,
                         const std::string& node, const std::string& op) {
  add(iteration, name, tensor, nullptr, node, op);
}

void TensorSpill::append_shared(int64_t iteration, const std::string& name, const Tensor& tensor,
                                const std::string& node, const std::string& op) {
  add(iteration, name, tensor.view(), &tensor, node, op);
}

void TensorSpill::add(int64_t iteration, const std::string& name, const TensorView& tensor, const Tensor* shared,
                      const std::string& node, const std::string& op) {
  if (tensor.dtype() == DType::kString)
    raise<UnsupportedError>("tensor '{}' is a string tensor; layerwise comparison handles numeric tensors only", name);
  Record record;
  record.iteration = iteration;
  record.name = name;
  record.node = node;
  record.op = op;
  record.dtype = tensor.dtype();
  record.shape = tensor.shape();
  record.bytes = tensor.byte_size();
  record.order = records_.size();
  auto [slot, added] = index_.try_emplace(spill_key(iteration, name), records_.size());
  if (!added) {  // the replaced record is never read again
    std::size_t replaced = slot->second;
    if (!held_[replaced].empty_handle()) held_bytes_ -= records_[replaced].bytes;
    held_[replaced] = Tensor();
    slot->second = records_.size();
  }
  Tensor held;
  // held_bytes_ never exceeds the budget; a budget of 0 sends even empty tensors to the file.
  if (memory_budget_ > 0 && record.bytes <= memory_budget_ - held_bytes_) {
    held = shared && record.bytes > 0 ? *shared : hold(tensor);
    record.held = true;
    held_bytes_ += record.bytes;
  } else {
    write(record, tensor);
  }
  records_.push_back(std::move(record));
  held_.push_back(std::move(held));
}

const TensorSpill::Record* TensorSpill::find(int64_t iteration, const std::string& name) const {
  auto it = index_.find(spill_key(iteration, name));
  return it == index_.end() ? nullptr : &records_[it->second];
}

Tensor TensorSpill::read(const Record& record) const {
  if (record.held) {
    const Tensor& held = held_.at(record.order);
    if (held.empty_handle())
      raise<InternalError>("tensor '{}' of iteration {} is no longer held by the layerwise spill (taken or replaced)",
                           record.name, record.iteration);
    return held;
  }
  // Every byte is read over, so the tensor needs no zeroing first.
  Tensor tensor = Tensor::uninitialized(record.dtype, record.shape);
  char* data = static_cast<char*>(tensor.mutable_raw());
  uint64_t done = 0;
  while (done < record.bytes) {
    ssize_t n = ::pread(fd_, data + done, static_cast<std::size_t>(std::min<uint64_t>(record.bytes - done, 1u << 30)),
                        static_cast<off_t>(record.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      raise<FileError>("cannot read tensor '{}' back from the layerwise spill file: {}", record.name,
                       n < 0 ? std::strerror(errno) : "unexpected end of file");
    done += static_cast<uint64_t>(n);
  }
  return tensor;
}

Tensor TensorSpill::take(const Record& record) {
  Tensor tensor = read(record);
  if (record.held) {
    held_.at(record.order) = Tensor();
    held_bytes_ -= record.bytes;
  }
  return tensor;
}

// ---- results ----

namespace {

template <typename T>
LayerwiseEntry::Energies sum_energies(const TensorView& a, const TensorView& b) {
  LayerwiseEntry::Energies e;
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  for (int64_t i = 0, n = a.size(); i < n; ++i) {
    const double u = x[i], v = y[i];
    e.first += u * u;
    e.second += v * v;
    e.error += (u - v) * (u - v);
  }
  return e;
}

}  // namespace

std::optional<LayerwiseEntry::Energies> energies(const TensorView& first, const TensorView& second) {
  if (first.dtype() != second.dtype() || first.shape() != second.shape()) return std::nullopt;
  if (first.dtype() == DType::kFloat32) return sum_energies<float>(first, second);
  if (first.dtype() == DType::kFloat64) return sum_energies<double>(first, second);
  return std::nullopt;
}

double LayerwiseEntry::sqnr_db(bool reference_is_first) const {
  if (!energies) return std::nan("");
  const double signal = reference_is_first ? energies->first : energies->second;
  if (energies->error == 0) return signal == 0 ? std::nan("") : std::numeric_limits<double>::infinity();
  return 10 * std::log10(signal / energies->error);
}

double LayerwiseEntry::max_abs_error() const {
  if (infinities_equal_errors) return infinities_equal_errors->max_abs;
  return comparison.simple ? comparison.simple->max_absdiff : std::nan("");
}

double LayerwiseEntry::max_rel_error() const {
  if (infinities_equal_errors) return infinities_equal_errors->max_rel;
  return comparison.simple ? comparison.simple->max_reldiff : std::nan("");
}

double LayerwiseEntry::excess() const {
  const auto& c = comparison;
  if (c.passed) return 0;
  if (!c.simple || !c.compared) return std::numeric_limits<double>::infinity();
  const auto& m = *c.simple;
  auto ratio = [](double required, double tolerance) {
    if (std::isnan(required)) return std::numeric_limits<double>::infinity();
    if (tolerance <= 0) return required > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    return required / tolerance;
  };
  if (infinities_equal_errors)
    return std::min(ratio(infinities_equal_errors->max_abs, m.atol), ratio(infinities_equal_errors->max_rel, m.rtol));
  return std::min(ratio(m.required_atol, m.atol), ratio(m.required_rtol, m.rtol));
}

bool LayerwiseResult::passed() const {
  return std::all_of(entries.begin(), entries.end(), [](const auto& e) { return e.comparison.passed; });
}

const LayerwiseEntry* LayerwiseResult::first_divergence() const {
  const LayerwiseEntry* first = nullptr;
  for (const auto& e : entries)
    if (!e.comparison.passed && e.not_a_divergence.empty() &&
        (!first || std::pair(e.iteration, e.order) < std::pair(first->iteration, first->order)))
      first = &e;
  return first;
}

std::vector<const LayerwiseEntry*> LayerwiseResult::worst(std::size_t count) const {
  std::vector<const LayerwiseEntry*> all;
  for (const auto& e : entries)
    if (e.comparison.passed || e.not_a_divergence.empty()) all.push_back(&e);
  auto abs_error = [](const LayerwiseEntry* e) {
    if (!e->comparison.simple) return 0.0;
    double v = e->max_abs_error();
    return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
  };
  std::stable_sort(all.begin(), all.end(), [&](const LayerwiseEntry* a, const LayerwiseEntry* b) {
    double ea = a->excess(), eb = b->excess();
    if (ea != eb) return ea > eb;
    return abs_error(a) > abs_error(b);
  });
  if (all.size() > count) all.resize(count);
  return all;
}

PairResult LayerwiseResult::as_pair() const {
  PairResult pair;
  pair.runner0 = runner0;
  pair.runner1 = runner1;
  std::map<int64_t, std::size_t> slot;
  for (const auto& e : entries) {
    auto [it, inserted] = slot.emplace(e.iteration, pair.iterations.size());
    if (inserted) pair.iterations.emplace_back();
    pair.iterations[it->second].outputs.push_back(e.comparison);
  }
  return pair;
}

void compare_layer(LayerwiseResult& result, std::size_t order, int64_t iteration, const std::string& tensor,
                   const std::string& node, const std::string& op, const TensorView& out0, const TensorView& out1,
                   const SimpleOutputParams& params) {
  LayerwiseEntry entry;
  entry.order = order;
  entry.iteration = iteration;
  entry.tensor = tensor;
  entry.node = node;
  entry.op = op;
  log::start("Comparing Output: '{}' (dtype={}, shape={}) with '{}' (dtype={}, shape={}) | produced by {}", tensor,
             dtype_name(out0.dtype()), shape_to_string(out0.shape()), tensor, dtype_name(out1.dtype()),
             shape_to_string(out1.shape()), node.empty() && op.empty() ? std::string("no node") :
                                                                          fmt::format("node '{}' [Op: {}]", node, op));
  Logger::Indent indent;
  try {
    entry.comparison = compare_simple_output(result.runner0, tensor, out0, result.runner1, tensor, out1, params);
  } catch (const UnsupportedError& error) {
    // String or complex tensors have no numeric error: skipped, the others are still compared.
    log::warning("Skipping tensor '{}': {}", tensor, error.message());
    result.skipped.push_back(tensor);
    return;
  }
  review_layer(entry, out0, out1, params.infinities_compare_equal);
  entry.energies = energies(out0, out1);
  result.entries.push_back(std::move(entry));
}

LayerwiseResult layerwise_from_pair(const PairResult& pair,
                                    const std::function<TensorProducer(const std::string&)>& producer) {
  LayerwiseResult result;
  result.runner0 = pair.runner0;
  result.runner1 = pair.runner1;
  std::size_t unknown = 0;
  for (std::size_t i = 0; i < pair.iterations.size(); ++i) {
    for (const auto& comparison : pair.iterations[i].outputs) {
      LayerwiseEntry entry;
      TensorProducer p = producer(comparison.output0);
      entry.order = p.order == SIZE_MAX ? std::numeric_limits<std::size_t>::max() / 2 + unknown++ : p.order;
      entry.iteration = static_cast<int64_t>(i);
      entry.tensor = comparison.output0;
      entry.node = p.node;
      entry.op = p.op;
      entry.comparison = comparison;
      result.entries.push_back(std::move(entry));
    }
  }
  return result;
}

void mark_qdq_only(LayerwiseResult& result, const RunnerResults& first, const RunnerResults& second,
                   const std::function<TensorProducer(const std::string&)>& producer) {
  auto mark = [&](const RunnerResults& run, const RunnerResults& other, int index) {
    for (std::size_t i = 0; i < run.iterations.size() && i < other.iterations.size(); ++i)
      for (const auto& [name, tensor] : run.iterations[i].outputs) {
        const std::string op = producer(name).op;
        if ((op == "QuantizeLinear" || op == "DequantizeLinear") && !other.iterations[i].find(name)) {
          if (i == 0) result.qdq_only.push_back(name);
          result.quantized_run = index;
        }
      }
  };
  mark(first, second, 0);
  mark(second, first, 1);
}

namespace {

std::string describe_node(const LayerwiseEntry& e) {
  if (e.node.empty() && e.op.empty()) return "a graph input or initializer";
  return fmt::format("node '{}' [Op: {}]", e.node, e.op);
}

// " (module m.encoder.layer.0.attention.self.query: Linear)" after the node, or "".
std::string describe_module(const LayerwiseEntry& e) {
  return e.module.empty() ? std::string() : fmt::format(" (module {})", e.module);
}

std::string describe_error(const LayerwiseEntry& e) {
  const auto& c = e.comparison;
  if (!c.simple || !c.compared) return c.failure.empty() ? std::string("not compared") : c.failure;
  const auto& m = *c.simple;
  return fmt::format("max abs error={}, max rel error={} | {} of {} element(s) beyond tolerance (atol={}, rtol={})",
                     number(e.max_abs_error()), number(e.max_rel_error()), m.mismatch_count, m.element_count,
                     number(m.atol), number(m.rtol));
}

// The Q/DQ tensors left out, then every compared tensor's SQNR against the float run, in order.
void log_qdq_sqnr(const LayerwiseResult& result) {
  const bool first_is_reference = *result.quantized_run == 1;
  log::info("{} Q/DQ tensor(s) of {} (the int8 run) are left out: each stands for the float tensor its "
            "QuantizeLinear reads, compared under its own name (listed with -v)",
            result.qdq_only.size(), *result.quantized_run == 0 ? result.runner0 : result.runner1);
  log::verbose("    {}", fmt::join(result.qdq_only, ", "));
  std::vector<const LayerwiseEntry*> ordered;
  for (const auto& e : result.entries) ordered.push_back(&e);
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) {
    return std::pair(a->iteration, a->order) < std::pair(b->iteration, b->order);
  });
  std::string table = fmt::format("SQNR per tensor (10 log10(sum ref^2 / sum (ref - int8)^2), ref = {}):\n",
                                  first_is_reference ? result.runner0 : result.runner1);
  table += fmt::format("{:>5} | {:>9} | {:>10} | {:<32} | {}", "order", "iteration", "SQNR (dB)", "tensor",
                       "node [op]");
  for (const auto* e : ordered)
    table += fmt::format("\n{:>5} | {:>9} | {:>10} | {:<32} | {}",
                         e->order >= std::numeric_limits<std::size_t>::max() / 2 ? std::string("?")
                                                                                 : std::to_string(e->order),
                         e->iteration, number(e->sqnr_db(first_is_reference)), e->tensor,
                         e->node.empty() && e->op.empty() ? std::string("-") : fmt::format("{} [{}]", e->node, e->op));
  log::info("{}", table);
}

}  // namespace

void name_torch_modules(std::vector<LayerwiseResult>& results, const ::onnx::GraphProto& graph) {
  const auto modules = onnx::torch_modules(graph);
  if (modules.empty()) return;
  for (auto& result : results)
    for (auto& entry : result.entries)
      if (auto it = modules.find(entry.node); it != modules.end()) entry.module = it->second;
}

void log_layerwise_summary(const LayerwiseResult& result, std::size_t worst_count) {
  log::info("Layerwise Summary | {} vs. {} | {} tensor(s) compared", result.runner0, result.runner1,
            result.entries.size());
  Logger::Indent indent;
  if (result.torch_modules) log_torch_modules(*result.torch_modules);
  auto log_missing = [&](const std::vector<std::string>& tensors, const std::string& of, const std::string& by) {
    if (tensors.empty()) return;
    // A PyTorch runner produces its paired modules' outputs only: the other tensors are expected to be missing.
    if (result.torch_modules && result.torch_modules->runner.find(by) != std::string::npos) {
      log::info("{} tensor(s) of {} are no paired module's output, so {} does not produce them (listed with -v)",
                tensors.size(), of, by);
      log::verbose("    {}", fmt::join(tensors, ", "));
      return;
    }
    log::warning("{} tensor(s) of {} were not produced by {}: {}", tensors.size(), of, by, fmt::join(tensors, ", "));
  };
  log_missing(result.only_in_runner0, result.runner0, result.runner1);
  log_missing(result.only_in_runner1, result.runner1, result.runner0);
  if (result.quantized_run) log_qdq_sqnr(result);
  std::size_t not_divergences = 0;
  for (const auto& e : result.entries)
    if (!e.comparison.passed && !e.not_a_divergence.empty()) {
      if (not_divergences++ == 0) log::warning("Failing, but no divergence (not ranked below):");
      log::warning("    tensor '{}' produced by {}{}: {}", e.tensor, describe_node(e), describe_module(e),
                   e.not_a_divergence);
    }
  const LayerwiseEntry* first = result.first_divergence();
  if (!first) {
    if (not_divergences == 0) log::info("PASSED | Every tensor is within tolerance");
    else log::info("No tensor diverges beyond tolerance: the run fails only through the {} tensor(s) above",
                   not_divergences);
    return;
  }
  if (const LayerwiseEntry* module = first_diverging_module(result)) {
    const auto& names = module->module_outputs;
    log::error("First diverging module: {}{} | its output is tensor '{}'{} | {}", names.front(),
               names.size() > 1 ? fmt::format(" (also the output of {})",
                                              fmt::join(names.begin() + 1, names.end(), ", "))
                                : std::string(),
               module->tensor, module->iteration ? fmt::format(" | iteration {}", module->iteration) : "",
               describe_error(*module));
  }
  log::error("First divergence (topological order): tensor '{}' produced by {}{}{} | {}", first->tensor,
             describe_node(*first), describe_module(*first),
             first->iteration ? fmt::format(" | iteration {}", first->iteration) : "", describe_error(*first));
  if (!first->engine_layer.empty()) log::error("    written by {}", first->engine_layer);
  std::size_t failing = std::count_if(result.entries.begin(), result.entries.end(),
                                      [](const auto& e) { return !e.comparison.passed; });
  auto worst = result.worst(worst_count);
  std::string table = fmt::format("{} of {} tensor(s) exceed tolerance. Worst {} by error:\n", failing,
                                  result.entries.size(), worst.size());
  const bool modules = std::any_of(worst.begin(), worst.end(), [](const auto* e) { return !e->module.empty(); });
  table += fmt::format("{:>5} | {:<32} | {:<40} | {:>11} | {:>11} | {:>10}", "order", "tensor", "node [op]",
                       "max abs err", "max rel err", "x tolerance");
  if (modules) table += " | module";
  for (const auto* e : worst) {
    std::string node = e->node.empty() && e->op.empty() ? "-" : fmt::format("{} [{}]", e->node, e->op);
    double abs_err = e->max_abs_error();
    double rel_err = e->max_rel_error();
    table += fmt::format("\n{:>5} | {:<32} | {:<40} | {:>11} | {:>11} | {:>10}",
                         e->order >= std::numeric_limits<std::size_t>::max() / 2 ? std::string("?")
                                                                                 : std::to_string(e->order),
                         e->tensor, node, number(abs_err), number(rel_err),
                         e->comparison.passed ? std::string("ok") : number(e->excess()));
    if (modules) table += " | " + (e->module.empty() ? std::string("-") : e->module);
  }
  log::info("{}", table);
}

nlohmann::ordered_json to_json(const LayerwiseResult& result, std::size_t worst_count) {
  const bool first_is_reference = result.quantized_run.value_or(1) == 1;
  auto entry_json = [first_is_reference](const LayerwiseEntry& e) {
    nlohmann::ordered_json j;
    j["tensor"] = e.tensor;
    j["node"] = e.node;
    j["op"] = e.op;
    j["order"] = e.order >= std::numeric_limits<std::size_t>::max() / 2 ? nlohmann::ordered_json(nullptr)
                                                                        : nlohmann::ordered_json(e.order);
    j["iteration"] = e.iteration;
    j["passed"] = e.comparison.passed;
    j["excess"] = json_number(e.excess());
    if (e.comparison.simple) {
      j["max_absdiff"] = json_number(e.max_abs_error());
      j["max_reldiff"] = json_number(e.max_rel_error());
      j["mismatch_count"] = e.comparison.simple->mismatch_count;
      j["element_count"] = e.comparison.simple->element_count;
    }
    if (e.energies) j["sqnr_db"] = json_number(e.sqnr_db(first_is_reference));
    if (!e.comparison.failure.empty()) j["failure"] = e.comparison.failure;
    if (!e.engine_layer.empty()) j["engine_layer"] = e.engine_layer;
    if (!e.module.empty()) j["module"] = e.module;
    if (!e.module_outputs.empty()) j["module_outputs"] = e.module_outputs;
    return j;
  };
  nlohmann::ordered_json j;
  j["runner0"] = result.runner0;
  j["runner1"] = result.runner1;
  j["passed"] = result.passed();
  j["compared"] = result.entries.size();
  j["failing"] = std::count_if(result.entries.begin(), result.entries.end(),
                               [](const auto& e) { return !e.comparison.passed; });
  const LayerwiseEntry* first = result.first_divergence();
  j["first_divergence"] = first ? entry_json(*first) : nlohmann::ordered_json(nullptr);
  if (result.torch_modules) {
    const LayerwiseEntry* module = first_diverging_module(result);
    j["first_diverging_module"] = module ? entry_json(*module) : nlohmann::ordered_json(nullptr);
    j["torch_modules"] = to_json(*result.torch_modules);
  }
  j["worst"] = nlohmann::ordered_json::array();
  for (const auto* e : result.worst(worst_count)) j["worst"].push_back(entry_json(*e));
  // Each compared tensor's engine layer, where the caller gave them (--ov-outputs mark fused).
  auto has_engine_layer = [](const LayerwiseEntry& e) { return !e.engine_layer.empty(); };
  if (std::any_of(result.entries.begin(), result.entries.end(), has_engine_layer)) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::object();
    for (const auto& e : result.entries)
      if (!e.engine_layer.empty()) layers[e.tensor] = e.engine_layer;
    j["engine_layers"] = std::move(layers);
  }
  j["not_divergences"] = nlohmann::ordered_json::array();
  for (const auto& e : result.entries)
    if (!e.comparison.passed && !e.not_a_divergence.empty())
      j["not_divergences"].push_back({{"tensor", e.tensor}, {"node", e.node}, {"op", e.op}, {"reason", e.not_a_divergence}});
  j["only_in_runner0"] = result.only_in_runner0;
  j["only_in_runner1"] = result.only_in_runner1;
  j["skipped"] = result.skipped;
  if (result.quantized_run) {
    j["quantized_run"] = *result.quantized_run == 0 ? result.runner0 : result.runner1;
    j["qdq_left_out"] = result.qdq_only;
    j["sqnr_db"] = nlohmann::ordered_json::array();
    for (const auto& e : result.entries)
      j["sqnr_db"].push_back({{"tensor", e.tensor}, {"iteration", e.iteration}, {"node", e.node}, {"op", e.op},
                              {"sqnr_db", json_number(e.sqnr_db(first_is_reference))}});
  }
  j["spilled_bytes"] = result.spilled_bytes;
  return j;
}

}  // namespace parity::compare

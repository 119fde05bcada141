// Seeded mutation fuzzing of load + run: node-case models from ../shared/onnx-tests are mutated
// (raw bytes, attributes, input shapes and values) and fed to the loader and the reference
// interpreter. Every outcome must be a result or a clean rejection, which is one of Parity's own
// errors (parity::Error and its subclasses, naming the file, node or tensor at fault): any other
// exception (std::out_of_range from a container, a protobuf or ONNX exception...) is a finding, and
// the test fails naming the case and the seed. No crash, no sanitizer report (run under the asan
// preset in CI). PARITY_FUZZ_ITERATIONS sets the count (default 4000), PARITY_FUZZ_SEED the seed;
// PARITY_FUZZ_TRACE prints each case before running it.
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <typeinfo>

#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/runtime/ref/interpreter.h"

namespace parity {
namespace {

namespace fs = std::filesystem;

struct Seed {
  fs::path dir;
  std::string bytes;
  std::vector<::onnx::TensorProto> inputs;
};

std::vector<Seed> load_seeds() {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(fs::path(PARITY_SHARED_DIR) / "onnx-tests/node"))
    dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::vector<Seed> seeds;
  for (const auto& dir : dirs) {
    Seed s{dir, read_file(dir / "model.onnx"), {}};
    bool tensors_only = true;
    for (int k = 0;; ++k) {
      fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb");
      if (!fs::exists(p)) break;
      ::onnx::TensorProto t;
      if (!t.ParseFromString(read_file(p)) || (t.dims_size() == 0 && !t.has_raw_data() && t.data_type() == 0)) {
        tensors_only = false;
        break;
      }
      s.inputs.push_back(std::move(t));
    }
    if (tensors_only) seeds.push_back(std::move(s));
  }
  return seeds;
}

int64_t pick(std::mt19937_64& rng, std::initializer_list<int64_t> values) {
  auto it = values.begin();
  std::advance(it, static_cast<long>(rng() % values.size()));
  return *it;
}

void mutate_bytes(std::string& bytes, std::mt19937_64& rng) {
  if (bytes.empty()) return;
  int count = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < count && !bytes.empty(); ++i) {
    std::size_t at = rng() % bytes.size();
    switch (rng() % 5) {
      case 0: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
      case 1: bytes[at] = static_cast<char>(rng()); break;
      case 2: bytes.resize(at); break;
      case 3: bytes.insert(at, bytes.substr(rng() % bytes.size(), rng() % 16)); break;
      default: bytes[at] = static_cast<char>(pick(rng, {0, 0x7f, 0x80, 0xff})); break;
    }
  }
}

void mutate_model(::onnx::ModelProto& model, std::mt19937_64& rng) {
  auto* graph = model.mutable_graph();
  if (graph->node_size() == 0) return;
  auto* node = graph->mutable_node(static_cast<int>(rng() % graph->node_size()));
  switch (rng() % 4) {
    case 0:
    case 1:
      if (node->attribute_size() > 0) {
        auto* a = node->mutable_attribute(static_cast<int>(rng() % node->attribute_size()));
        // Out-of-range axes, negative and zero sizes; no astronomically large counts, which would
        // only make a correct kernel loop for hours (the element limit bounds allocations).
        int64_t v = pick(rng, {-65, -7, -3, -2, -1, 0, 1, 2, 3, 7, 65});
        if (a->has_i()) a->set_i(v);
        if (a->ints_size() > 0) a->set_ints(static_cast<int>(rng() % a->ints_size()), v);
        if (a->has_f()) a->set_f(static_cast<float>(v));
      }
      break;
    case 2:
      if (node->input_size() > 0) node->set_input(static_cast<int>(rng() % node->input_size()), "");
      break;
    default:
      if (node->input_size() > 1) {
        int a = static_cast<int>(rng() % node->input_size()), b = static_cast<int>(rng() % node->input_size());
        std::string tmp = node->input(a);
        node->set_input(a, node->input(b));
        node->set_input(b, tmp);
      }
  }
}

// A tensor of the same dtype with a random small shape and random bytes (random indices, sizes...).
Tensor random_tensor_like(const Tensor& like, std::mt19937_64& rng) {
  Shape shape;
  int64_t rank = static_cast<int64_t>(rng() % 5);
  for (int64_t i = 0; i < rank; ++i) shape.push_back(static_cast<int64_t>(rng() % 5));
  Tensor t = Tensor::zeros(like.dtype(), shape);
  if (like.dtype() == DType::kString) return t;
  auto* bytes = static_cast<unsigned char*>(t.mutable_raw());
  for (std::size_t i = 0; i < t.byte_size(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  if (like.dtype() == DType::kBool)
    for (std::size_t i = 0; i < t.byte_size(); ++i) bytes[i] &= 1;
  return t;
}

// The type of the exception being handled, demangled ("std::out_of_range").
std::string current_exception_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (!type) return "unknown";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type->name();
}

TEST(Fuzz, MutatedModelsAndInputsNeverCrash) {
  const char* env_iterations = std::getenv("PARITY_FUZZ_ITERATIONS");
  const char* env_seed = std::getenv("PARITY_FUZZ_SEED");
  const bool trace = std::getenv("PARITY_FUZZ_TRACE") != nullptr;  // print each case before running it
  const int iterations = env_iterations ? std::atoi(env_iterations) : 4000;
  const unsigned long long fuzz_seed = env_seed ? std::strtoull(env_seed, nullptr, 10) : 20261121;
  std::mt19937_64 rng(fuzz_seed);
  auto seeds = load_seeds();
  ASSERT_GT(seeds.size(), 1000u);
  int loaded = 0, ran = 0, rejected = 0, findings = 0;
  for (int i = 0; i < iterations; ++i) {
    const Seed& seed = seeds[rng() % seeds.size()];
    std::string bytes = seed.bytes;
    int kind = static_cast<int>(rng() % 3);
    if (kind == 0) mutate_bytes(bytes, rng);
    SCOPED_TRACE(seed.dir.filename().string() + " iteration " + std::to_string(i));
    if (trace) std::fprintf(stderr, "fuzz %d kind %d %s\n", i, kind, seed.dir.filename().c_str());
    try {
      onnx::Model model = onnx::load_model_from_bytes(bytes, seed.dir);
      if (kind == 1) mutate_model(*model.proto, rng);
      ++loaded;
      runtime::InterpreterOptions options;
      options.limits.max_elements = 1 << 20;
      options.limits.max_loop_iterations = 1000;
      options.limits.max_subgraph_depth = 16;
      runtime::Interpreter interpreter(model, options);
      auto metadata = interpreter.input_metadata();
      runtime::NamedValues feed;
      for (std::size_t k = 0; k < metadata.size() && k < seed.inputs.size(); ++k) {
        Tensor t = onnx::tensor_from_proto(seed.inputs[k], seed.dir);
        if (kind == 2 && rng() % 2 == 0) t = random_tensor_like(t, rng);
        feed.emplace_back(metadata[k].first, ops::Value::of(std::move(t)));
      }
      interpreter.run(feed);
      ++ran;
    } catch (const Error&) {
      ++rejected;  // one of Parity's errors is the correct outcome for a broken model or input
    } catch (...) {
      // Anything else escaped the loader or a kernel without being turned into a Parity error.
      std::string what = "(not a std::exception)";
      try {
        throw;
      } catch (const std::exception& error) {
        what = error.what();
      } catch (...) {
      }
      ++findings;
      ADD_FAILURE() << "foreign exception " << current_exception_type() << ": " << what << "\n  case: iteration " << i
                    << " of PARITY_FUZZ_SEED=" << fuzz_seed << ", mutation kind " << kind << " ("
                    << (kind == 0 ? "model bytes" : kind == 1 ? "model attributes/inputs" : "input tensors")
                    << "), seed model " << seed.dir.filename().string();
    }
  }
  RecordProperty("loaded", loaded);
  RecordProperty("ran", ran);
  RecordProperty("rejected", rejected);
  RecordProperty("findings", findings);
  EXPECT_GT(ran, 0) << "no mutated case ran to completion: the fuzzer exercises nothing";
  EXPECT_GT(rejected, 0) << "no mutation was rejected: the mutations do nothing";
}

}  // namespace
}  // namespace parity

// Polygraphy's default data loader. See data_loader.h.
#include "parity/runtime/data_loader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "parity/core/allocation_limit.h"
#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/core/shape.h"
#include "parity/runtime/torch_random_generator.h"

namespace parity::runtime {

// ---------------------------------------------------------------------------------------------
// DataLoader helpers

namespace {

// Keeps `x * scale` from being fused with the following addition into one FMA (numpy rounds
// the product and the sum separately).
inline double opaque(double x) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(x));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(x));
#else
  volatile double v = x;
  x = v;
#endif
  return x;
}

// Python's fnmatch.fnmatchcase on POSIX: '*', '?', '[seq]', '[!seq]'; a '[' without a closing
// ']' is literal. Byte-wise.
bool fnmatch(std::string_view name, std::string_view pattern) {
  // Returns the length of a bracket expression starting at pattern[i] == '[', or 0 if it has no
  // closing ']' (then '[' is literal).
  auto class_length = [&](std::size_t i) -> std::size_t {
    std::size_t j = i + 1;
    if (j < pattern.size() && pattern[j] == '!') ++j;
    if (j < pattern.size() && pattern[j] == ']') ++j;
    while (j < pattern.size() && pattern[j] != ']') ++j;
    return j < pattern.size() ? j - i + 1 : 0;
  };
  auto class_matches = [&](std::size_t i, std::size_t length, char c) {
    std::string_view body = pattern.substr(i + 1, length - 2);
    bool negate = false;
    if (!body.empty() && body[0] == '!') {
      negate = true;
      body.remove_prefix(1);
      if (body.empty()) return true;  // "[!]" matches any character
    }
    bool found = false;
    for (std::size_t k = 0; k < body.size(); ++k) {
      if (k + 2 < body.size() && body[k + 1] == '-') {
        if (body[k] <= c && c <= body[k + 2]) found = true;
        k += 2;
      } else if (body[k] == c) {
        found = true;
      }
    }
    return found != negate;
  };
  // Iterative matcher with backtracking to the last '*'.
  std::size_t n = 0, p = 0;
  std::optional<std::size_t> star_p;
  std::size_t star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size()) {
      const char pc = pattern[p];
      if (pc == '*') {
        star_p = ++p;
        star_n = n;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++n;
        continue;
      }
      if (pc == '[') {
        const std::size_t length = class_length(p);
        if (length > 0) {
          if (class_matches(p, length, name[n])) {
            p += length;
            ++n;
            continue;
          }
        } else if (name[n] == '[') {
          ++p;
          ++n;
          continue;
        }
      } else if (pc == name[n]) {
        ++p;
        ++n;
        continue;
      }
    }
    if (!star_p) return false;
    p = *star_p;
    n = ++star_n;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool has_wildcard(std::string_view name) {
  return name.find_first_of("*?[]!") != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Polygraphy's find_str_in_iterable without the index fallback.
std::optional<std::string> close_match(const std::string& name,
                                       const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (n == name) return n;
  const std::string low = lower(name);
  for (const auto& n : names) {
    const std::string other = lower(n);
    if (other.find(low) != std::string::npos || low.find(other) != std::string::npos) return n;
  }
  return std::nullopt;
}

// Python's repr of a float: "0.0", "1.5", "inf", "1e+16".
std::string py_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string int_list(const std::vector<int64_t>& values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

std::string dim_list(const std::vector<Dim>& dims) {
  std::vector<std::string> parts;
  for (const Dim& d : dims) parts.push_back(d.to_string());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

bool dim_is_dynamic(const Dim& d) { return !d.value.has_value() || *d.value < 0; }

bool shape_is_dynamic(const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d < 0) return true;
  return false;
}

// Polygraphy's is_valid_shape_override: same rank, every static dim equal.
bool valid_override(const std::vector<int64_t>& user, const std::vector<Dim>& shape) {
  if (user.size() != shape.size()) return false;
  for (std::size_t i = 0; i < user.size(); ++i)
    if (!dim_is_dynamic(shape[i]) && *shape[i].value != user[i]) return false;
  return true;
}

bool is_integer_dtype(DType dtype) {
  switch (dtype) {
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool is_float_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: case DType::kFloat64: case DType::kFloat16: case DType::kBFloat16:
    case DType::kUndefined:  // Polygraphy: astype(None) gives float64
      return true;
    default:
      return false;
  }
}

std::string dtype_label(DType dtype) {
  return dtype == DType::kUndefined ? std::string("None") : std::string(dtype_name(dtype));
}

// --- value generation -------------------------------------------------------------------------

template <typename T>
const char* dtype_name_of() {
  if constexpr (std::is_same_v<T, int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, int16_t>) return "int16";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  else return "uint64";
}

void fill_floats(NumpyRandomState& state, Tensor& tensor, double fmin, double fmax) {
  // Polygraphy's special handling of infinite bounds (keeps two infinities from making NaN).
  double scale = fmax - fmin;
  double shift = fmin;
  if (std::isinf(fmin)) {
    scale = fmin;
    shift = 0.0;
  }
  if (std::isinf(fmax)) scale = fmax;
  const int64_t n = tensor.size();
  auto sample = [&]() { return opaque(state.random_sample() * scale) + shift; };
  switch (tensor.dtype()) {
    case DType::kFloat32: {
      float* out = tensor.mutable_data<float>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(sample());
      break;
    }
    case DType::kUndefined:
    case DType::kFloat64: {
      double* out = tensor.mutable_data<double>();
      for (int64_t i = 0; i < n; ++i) out[i] = sample();
      break;
    }
    case DType::kFloat16: {
      uint16_t* out = tensor.mutable_data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = double_to_float16_bits(sample());
      break;
    }
    case DType::kBFloat16: {
      uint16_t* out = tensor.mutable_data<uint16_t>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = float_to_bfloat16_bits(static_cast<float>(sample()));
      break;
    }
    default:
      raise<InternalError>("fill_floats: unexpected dtype {}", dtype_name(tensor.dtype()));
  }
}

// Python's int(x) for the range bound of `name`, checked against T's bounds like numpy's randint.
template <typename T>
T integer_bound(double x, const std::string& name, const char* which) {
  if (std::isnan(x) || std::isinf(x)) {
    raise<InvalidInputError>(
        "Input tensor: {} | The value range's {} ({}) cannot be converted to an integer for "
        "dtype {}",
        name, which, py_float(x), dtype_name_of<T>());
  }
  const double t = std::trunc(x);
  // Powers of two are exact in double: T's range is [lo, hi_excl).
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi_excl = std::ldexp(1.0, std::numeric_limits<T>::digits);
  if (t < lo || t >= hi_excl) {
    raise<InvalidInputError>(
        "Input tensor: {} | The value range's {} ({}) is out of bounds for dtype {}", name,
        which, fmt::format("{}", t), dtype_name_of<T>());
  }
  return static_cast<T>(t);
}

// The random source of one iteration: numpy's RandomState, or torch's generator.
struct RandomSource {
  std::optional<NumpyRandomState> numpy;
  std::optional<TorchRandomGenerator> torch;
};

template <typename T>
void fill_integers(RandomSource& source, Tensor& tensor, double vmin, double vmax, const std::string& name) {
  const T low = integer_bound<T>(vmin, name, "min");
  const T high = integer_bound<T>(vmax, name, "max");
  if (low > high) {
    raise<InvalidInputError>(
        "Input tensor: {} | The value range's min ({}) is greater than its max ({}) after "
        "conversion to {}",
        name, low, high, dtype_name_of<T>());
  }
  if (source.numpy) {
    source.numpy->randint_inclusive<T>(low, high, tensor.mutable_span<T>());
    return;
  }
  // torch.randint(low, high + 1, ...) takes Python ints that torch holds as int64.
  if (static_cast<uint64_t>(high) >= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    raise<InvalidInputError>("Input tensor: {} | The value range's max ({}) is out of bounds for torch.randint", name,
                             high);
  source.torch->randint(tensor, static_cast<int64_t>(low), static_cast<int64_t>(high) + 1);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// DataLoader

struct DataLoader::LogState {
  std::mutex mutex;
  std::set<std::string> seen;
  // Logs `message` at `severity` the first time it is seen by this loader.
  void once(Severity severity, const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!seen.insert(message).second) return;
    }
    log::at(severity, "{}", message);
  }
};

DataLoader::DataLoader(DataLoaderOptions options)
    : options_(std::move(options)), log_state_(std::make_shared<LogState>()) {
  if (options_.iterations < 0) {
    raise<InvalidInputError>("The data loader's iteration count must not be negative (got {})",
                             options_.iterations);
  }
  if (options_.backend_module != "numpy" && options_.backend_module != "torch") {
    raise<InvalidInputError>("Invalid `data_loader_backend_module`. Note: got: {} but valid modules are: ['numpy', "
                             "'torch']",
                             options_.backend_module);
  }
  for (const auto& [key, range] : options_.val_ranges) {
    if (range.first > range.second) {
      raise<InvalidInputError>(
          "{} | Invalid value range [{}, {}]: min is greater than max",
          key.empty() ? std::string("Default value range") : "Input tensor: " + key,
          py_float(range.first), py_float(range.second));
    }
  }
}

std::vector<NamedTensors> DataLoader::generate_all(const TensorMetadata& metadata) const {
  std::vector<NamedTensors> feeds;
  feeds.reserve(static_cast<std::size_t>(options_.iterations));
  for (int i = 0; i < options_.iterations; ++i) feeds.push_back(generate(metadata, i));
  return feeds;
}

NamedTensors DataLoader::generate(const TensorMetadata& metadata, int iteration) const {
  if (iteration < 0 || iteration >= options_.iterations) {
    raise<InvalidInputError>("Data loader iteration {} is out of range: it supplies {} iteration(s)",
                             iteration, options_.iterations);
  }
  const uint64_t seed = uint64_t{options_.seed} + static_cast<uint64_t>(iteration);
  const bool use_torch = options_.backend_module == "torch";
  if (!use_torch && seed > 0xffffffffull) {
    raise<InvalidInputError>(
        "The data loader seed for iteration {} ({} + {} = {}) exceeds 2**32 - 1, the largest "
        "seed numpy's RandomState accepts",
        iteration, options_.seed, iteration, seed);
  }
  log::verbose("Generating data using numpy seed: {}", seed);
  RandomSource source;
  if (use_torch)
    source.torch.emplace(seed);
  else
    source.numpy.emplace(static_cast<uint32_t>(seed));

  std::vector<std::string> names;
  for (const auto& [name, info] : metadata) names.push_back(name);

  // --input-shapes as a dict: first position, last value for duplicate keys.
  std::vector<std::string> shape_keys;
  std::map<std::string, std::vector<int64_t>> shape_values;
  for (const auto& [key, shape] : options_.input_shapes) {
    if (!shape_values.count(key)) shape_keys.push_back(key);
    shape_values[key] = shape;
  }
  // Polygraphy's match_keys: every key is tried against every input; a later key wins.
  std::map<std::string, std::string> input_to_key;
  for (const auto& key : shape_keys) {
    bool matched = false;
    for (const auto& name : names) {
      if (fnmatch(name, key)) {
        input_to_key[name] = key;
        matched = true;
      }
    }
    if (matched) continue;
    if (has_wildcard(key)) {
      log_state_->once(Severity::kWarning,
                       fmt::format("Input tensor wildcard: {} | Metadata was provided, but none of "
                                   "the matched inputs exist in one or more runners.",
                                   key));
    } else {
      std::string message = fmt::format(
          "Input tensor: {} | Metadata was provided, but the input does not exist in one or more "
          "runners.",
          key);
      if (auto match = close_match(key, names)) message += fmt::format("\nMaybe you meant to set: {}?", *match);
      log_state_->once(Severity::kWarning, message);
    }
  }

  // --val-range as a dict (exact names; "" is the default).
  const bool range_is_dict = !options_.val_ranges.empty();
  std::map<std::string, std::pair<double, double>> ranges;
  for (const auto& [key, range] : options_.val_ranges) ranges[key] = range;
  auto range_for = [&](const std::string& name) -> std::pair<double, double> {
    if (auto it = ranges.find(name); it != ranges.end()) return it->second;
    if (auto it = ranges.find(""); it != ranges.end()) return it->second;
    return {0.0, 1.0};
  };

  NamedTensors feed;
  for (const auto& [name, info] : metadata) {
    const DType dtype = info.dtype;
    const bool generable = is_float_dtype(dtype) || is_integer_dtype(dtype) || dtype == DType::kBool;
    if (!generable) {
      raise<InvalidInputError>(
          "Input tensor: {} | The default data loader cannot generate data of type {}; please "
          "provide the inputs with --load-inputs or a data loader script",
          name, dtype_label(dtype));
    }

    // The user's shape, if one applies.
    const std::vector<int64_t>* user_shape = nullptr;
    std::string user_key;
    if (auto it = input_to_key.find(name); it != input_to_key.end()) {
      user_key = it->second;
      user_shape = &shape_values.at(user_key);
    }
    // The shape-tensor special case (exact names only, as in Polygraphy).
    bool shape_tensor = false;
    if (auto exact = shape_values.find(name); exact != shape_values.end() && info.shape &&
                                              info.shape->size() == 1 &&
                                              !dim_is_dynamic((*info.shape)[0]) &&
                                              (is_integer_dtype(dtype) || dtype == DType::kUndefined)) {
      const auto& values = exact->second;
      shape_tensor = !shape_is_dynamic(values) &&
                     static_cast<int64_t>(values.size()) == *(*info.shape)[0].value;
    }

    std::optional<Shape> concrete;  // set when a user shape is used
    if (user_shape) {
      const std::string runner_shape = info.shape ? dim_list(*info.shape) : std::string("None");
      if (shape_is_dynamic(*user_shape)) {
        log_state_->once(Severity::kWarning,
                         fmt::format("Input tensor: {} [shape={}] | Provided input shape: {} is "
                                     "dynamic.\nDynamic shapes cannot be used to generate "
                                     "inference data. Will use default shape instead.\nTo avoid "
                                     "this, please provide a fixed shape to the data loader. ",
                                     name, runner_shape, int_list(*user_shape)));
      } else if (!info.shape || valid_override(*user_shape, *info.shape) || shape_tensor) {
        concrete = *user_shape;
      } else if (has_wildcard(user_key) && user_key != name) {
        log_state_->once(Severity::kWarning,
                         fmt::format("Input tensor: {} [shape={}] | Cannot use provided custom "
                                     "shape: {} to override tensor shape. Will use default shape "
                                     "instead.",
                                     name, runner_shape, int_list(*user_shape)));
      } else {
        raise<InvalidInputError>(
            "Input tensor: {} [shape={}] | Cannot override its shape with {}: {}", name,
            runner_shape, int_list(*user_shape),
            user_shape->size() != info.shape->size()
                ? fmt::format("the rank differs ({} vs. {})", user_shape->size(), info.shape->size())
                : std::string("a static dimension differs"));
      }
    }

    Shape shape;
    if (concrete) {
      shape = *concrete;
    } else {
      if (!info.shape) {
        raise<InvalidInputError>(
            "Input tensor: {} | Its rank is unknown, so the data loader cannot choose a shape; "
            "please provide one with --input-shapes",
            name);
      }
      bool dynamic = false;
      for (const Dim& d : *info.shape) {
        if (!dim_is_dynamic(d)) {
          shape.push_back(*d.value);
        } else {
          dynamic = true;
          shape.push_back(d.min ? *d.min : d.max ? *d.max : 1);
        }
      }
      if (dynamic) {
        log_state_->once(Severity::kWarning,
                         fmt::format("Input tensor: {} [shape={}] | Will generate data of shape: "
                                     "{}.\nIf this is incorrect, please provide a custom data "
                                     "loader.",
                                     name, dim_list(*info.shape), int_list(shape)));
      }
    }

    // An undefined dtype: numpy's astype(None) gives float64; torch's dtype=None, its default float32.
    const DType out_dtype = dtype == DType::kUndefined
                                ? (shape_tensor ? DType::kInt64 : (use_torch ? DType::kFloat32 : DType::kFloat64))
                                : dtype;
    if (!shape_tensor)
      check_tensor_allocation(out_dtype, checked_element_count(shape),
                              fmt::format("Input tensor: {} [shape={}]", name, int_list(shape)));
    Tensor tensor = Tensor::zeros(out_dtype, shape_tensor ? Shape{static_cast<int64_t>(shape.size())}
                                                          : shape);

    if (shape_tensor) {
      // np.array(shape, dtype=dtype): the values must fit the dtype.
      auto store = [&]<typename T>(T*) {
        T* out = tensor.mutable_data<T>();
        for (std::size_t i = 0; i < shape.size(); ++i) {
          const int64_t v = shape[i];
          if (static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
            raise<InvalidInputError>(
                "Input tensor: {} | Shape-tensor value {} is out of bounds for {}", name, v,
                dtype_name(out_dtype));
          }
          out[i] = static_cast<T>(v);
        }
      };
      switch (out_dtype) {
        case DType::kInt8: store(static_cast<int8_t*>(nullptr)); break;
        case DType::kInt16: store(static_cast<int16_t*>(nullptr)); break;
        case DType::kInt32: store(static_cast<int32_t*>(nullptr)); break;
        case DType::kInt64: store(static_cast<int64_t*>(nullptr)); break;
        case DType::kUInt8: store(static_cast<uint8_t*>(nullptr)); break;
        case DType::kUInt16: store(static_cast<uint16_t*>(nullptr)); break;
        case DType::kUInt32: store(static_cast<uint32_t*>(nullptr)); break;
        case DType::kUInt64: store(static_cast<uint64_t*>(nullptr)); break;
        default: raise<InternalError>("shape tensor with dtype {}", dtype_name(out_dtype));
      }
      log_state_->once(Severity::kInfo,
                       fmt::format("Assuming {} is a shape tensor. Setting input values to: {}. If "
                                   "these values are not correct, please set it correctly in "
                                   "'input_metadata' or by providing --input-shapes",
                                   name, int_list(shape)));
      feed.emplace_back(name, std::move(tensor));
      continue;
    }

    const auto [vmin, vmax] = range_for(name);
    if (dtype == DType::kBool) {
      const bool low = vmin != 0.0;  // Python's bool(x); bool(nan) is True
      const bool high = vmax != 0.0;
      log_state_->once(Severity::kVerbose,
                       fmt::format("Input tensor: {} | Generating input data in range: [{}, {}]",
                                   name, low ? "True" : "False", high ? "True" : "False"));
      if (low > high) {
        raise<InvalidInputError>(
            "Input tensor: {} | The value range [{}, {}] becomes [True, False] as bool: min is "
            "greater than max",
            name, py_float(vmin), py_float(vmax));
      }
      if (use_torch) {
        // Polygraphy calls torch.randint(False, True + 1, ...), which torch rejects (a bool is no
        // int there): no values to match, so refuse like Polygraphy.
        raise<InvalidInputError>(
            "Input tensor: {} | The torch data loader backend cannot generate bool data (Polygraphy's "
            "torch.randint(False, True + 1, ...) fails with a TypeError); please use "
            "--data-loader-backend-module numpy or provide the inputs with --load-inputs or a data loader script",
            name);
      }
      source.numpy->randint_inclusive<bool>(low, high, tensor.mutable_span<bool>());
    } else if (is_integer_dtype(dtype)) {
      if (!std::isnan(vmin) && !std::isnan(vmax) && !std::isinf(vmin) && !std::isinf(vmax)) {
        log_state_->once(Severity::kVerbose,
                         fmt::format("Input tensor: {} | Generating input data in range: [{}, {}]",
                                     name, std::trunc(vmin), std::trunc(vmax)));
      }
      switch (dtype) {
        case DType::kInt8: fill_integers<int8_t>(source, tensor, vmin, vmax, name); break;
        case DType::kInt16: fill_integers<int16_t>(source, tensor, vmin, vmax, name); break;
        case DType::kInt32: fill_integers<int32_t>(source, tensor, vmin, vmax, name); break;
        case DType::kInt64: fill_integers<int64_t>(source, tensor, vmin, vmax, name); break;
        case DType::kUInt8: fill_integers<uint8_t>(source, tensor, vmin, vmax, name); break;
        case DType::kUInt16: fill_integers<uint16_t>(source, tensor, vmin, vmax, name); break;
        case DType::kUInt32: fill_integers<uint32_t>(source, tensor, vmin, vmax, name); break;
        case DType::kUInt64: fill_integers<uint64_t>(source, tensor, vmin, vmax, name); break;
        default: raise<InternalError>("fill_integers: dtype {}", dtype_name(dtype));
      }
    } else {
      log_state_->once(Severity::kVerbose,
                       fmt::format("Input tensor: {} | Generating input data in range: [{}, {}]",
                                   name, py_float(vmin), py_float(vmax)));
      if (use_torch) {
        // Polygraphy's torch.rand ignores the value range: always [0, 1).
        if (!options_.val_ranges.empty())
          log_state_->once(Severity::kWarning,
                           fmt::format("Input tensor: {} | The torch data loader backend ignores --val-range for "
                                       "floating-point inputs (as Polygraphy does): values are in [0, 1)",
                                       name));
        source.torch->rand(tensor);
      } else {
        fill_floats(*source.numpy, tensor, vmin, vmax);
      }
    }
    feed.emplace_back(name, std::move(tensor));
  }

  // Unused --val-range keys (only when a per-input dict was given).
  if (range_is_dict) {
    std::set<std::string> extra;
    for (const auto& [key, range] : ranges) {
      if (key.empty()) continue;
      if (std::find(names.begin(), names.end(), key) == names.end()) extra.insert(key);
    }
    if (!extra.empty()) {
      std::vector<std::string> quoted;
      for (const auto& e : extra) quoted.push_back("'" + e + "'");
      std::vector<std::string> inputs;
      for (const auto& n : names) inputs.push_back("'" + n + "'");
      inputs.push_back("''");
      log_state_->once(Severity::kWarning,
                       fmt::format("Extra items in val_range: {{{}}}.\nNote: items requested were: "
                                   "{{{}}}",
                                   fmt::join(quoted, ", "), fmt::join(inputs, ", ")));
    }
  }
  return feed;
}

}  // namespace parity::runtime

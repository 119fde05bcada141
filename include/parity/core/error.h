// Parity's exception hierarchy. Every error says what was expected, what was found and where
// (file, node, tensor); context is prepended as the error propagates ("model.onnx: node 'conv1':
// ..."). The CLI catches parity::Error at main and prints one line.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace parity {

class Error : public std::exception {
 public:
  explicit Error(std::string message) : message_(printable(std::move(message))), full_(message_) {}

  // Prepends "where: " to the message (e.g. the file or node being processed).
  Error& add_context(const std::string& where) {
    full_ = printable(where) + ": " + full_;
    return *this;
  }
  const char* what() const noexcept override { return full_.c_str(); }
  const std::string& message() const { return message_; }

 private:
  // The text with a NUL byte (a model's names may hold one) written as \0: what() is read as a C
  // string, which would end the message there.
  static std::string printable(std::string text);

  std::string message_;
  std::string full_;
};

// Bad input from the user: a corrupt model, a malformed file, an invalid argument.
class InvalidInputError : public Error {
  using Error::Error;
};
// A file that cannot be opened, read or written.
class FileError : public Error {
  using Error::Error;
};
// Valid input that Parity does not support (an op, a dtype, a version).
class UnsupportedError : public Error {
  using Error::Error;
};
// A request that would exceed a resource limit (elements, memory, trip count, recursion depth).
class ResourceLimitError : public Error {
  using Error::Error;
};
// A broken invariant inside Parity itself.
class InternalError : public Error {
  using Error::Error;
};

// Throws E with a fmt-formatted message.
template <typename E = Error, typename... Args>
[[noreturn]] void raise(fmt::format_string<Args...> format, Args&&... args) {
  throw E(fmt::format(format, std::forward<Args>(args)...));
}

// Runs fn; a parity::Error escaping it gets `where` prepended to its message.
template <typename Fn>
decltype(auto) with_context(const std::string& where, Fn&& fn) {
  try {
    return fn();
  } catch (Error& error) {
    error.add_context(where);
    throw;
  }
}

}  // namespace parity

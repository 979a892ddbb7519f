// Result<T>: a value or a typed error with a human message, for control paths
// (config, CLI, files, sockets). The fast path never returns Result: it counts
// and drops.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ofan {

enum class ErrorCode {
  kInvalidArgument,  // a value the caller gave is out of range or malformed
  kNotFound,         // a named thing does not exist
  kIo,               // the OS refused (file, socket)
  kUnsupported,      // valid but not implemented for this combination
  kInfeasible,       // e.g. a failure set that disconnects a flow
  kInternal,
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

inline Error MakeError(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

// The most common error: a value the caller gave, named in the message.
inline Error InvalidArgument(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : err_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

}  // namespace ofan

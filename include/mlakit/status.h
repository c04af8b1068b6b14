// Status: how every host entry point of mlakit reports failure. Never exit(), abort() or a
// device trap for bad user input: the message names the argument, the expected and the actual.
#pragma once

#include <string>
#include <utility>

namespace mlakit {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // the caller passed something outside the contract
  kUnsupported,      // valid, but no kernel/tiling handles it (arch, shape, tiling)
  kNotFound,         // unknown kernel key, suite, file
  kIoError,          // file missing, truncated, not what it claims to be
  kDeviceError,      // a CUDA call failed
  kInternal,         // a bug in mlakit
};

const char* code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status invalid_argument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status unsupported(std::string m) { return {Code::kUnsupported, std::move(m)}; }
  static Status not_found(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status io_error(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status device_error(std::string m) { return {Code::kDeviceError, std::move(m)}; }
  static Status internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: sparse_indices: expected int32, got float32"
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

}  // namespace mlakit

#define MLAKIT_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::mlakit::Status mlakit_status_ = (expr);         \
    if (!mlakit_status_.is_ok()) return mlakit_status_; \
  } while (0)

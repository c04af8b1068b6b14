#include "mlakit/status.h"

namespace mlakit {

const char* code_name(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kUnsupported: return "unsupported";
    case Code::kNotFound: return "not found";
    case Code::kIoError: return "i/o error";
    case Code::kDeviceError: return "device error";
    case Code::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(code_name(code_)) + ": " + message_;
}

}  // namespace mlakit

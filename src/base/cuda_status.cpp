#include "base/cuda_status.h"

#include <string>

namespace mlakit {

Status cuda_status(cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return Status::ok();
  return Status::device_error(std::string(what) + ": " + cudaGetErrorString(error));
}

}  // namespace mlakit

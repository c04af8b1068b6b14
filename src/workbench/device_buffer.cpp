#include "workbench/device_buffer.h"

#include <algorithm>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"

namespace mlakit {

DeviceBuffer::~DeviceBuffer() { release(); }

Status DeviceBuffer::reserve(size_t bytes, const std::string& what, size_t zero_bytes) {
  if (bytes <= bytes_) return Status::ok();
  release();
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMalloc(&ptr_, bytes), what));
  bytes_ = bytes;
  return cuda_status(cudaMemset(ptr_, 0, std::min(bytes, zero_bytes)), what + " (zero-fill)");
}

void DeviceBuffer::release() {
  if (ptr_) cudaFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Status DeviceBuffer::upload_bytes(const void* host, size_t bytes, const std::string& what) {
  MLAKIT_RETURN_IF_ERROR(reserve(bytes, what));
  return cuda_status(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), what);
}

}  // namespace mlakit

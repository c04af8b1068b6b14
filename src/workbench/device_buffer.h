// A device allocation that grows on demand and frees itself: the workbench's inputs, outputs and
// workspaces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mlakit/status.h"

namespace mlakit {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least `bytes`; the first `zero_bytes` of a new allocation are zero-filled (all of it by
  // default), the rest is left as cudaMalloc gives it; the old contents are not kept. A workspace
  // zeroes only its counters, so that compute-sanitizer's initcheck sees a kernel that reads a
  // partial it never wrote. `what` names it in errors.
  Status reserve(size_t bytes, const std::string& what, size_t zero_bytes = SIZE_MAX);
  // reserve, then a synchronous copy of `host`.
  template <class T>
  Status upload(const std::vector<T>& host, const std::string& what) {
    return upload_bytes(host.data(), host.size() * sizeof(T), what);
  }
  // Frees the allocation (data() null, bytes() 0).
  void release();
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  Status upload_bytes(const void* host, size_t bytes, const std::string& what);
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace mlakit

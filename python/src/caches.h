// What the binding keeps between calls so that a call costs a lookup, not an allocation:
// workspaces per (op, device, stream); the plans are plan_cache.h's. New tensors
// (outputs, workspaces) come from the inputs' own framework: its DLPack allocator when it
// publishes the exchange API, else the Python allocator mlakit's torch integration registers.
//
// Workspaces and CUDA graphs: a call enqueued while its stream is being captured gets a fresh
// workspace that is released right after the launch is recorded. With PyTorch that memory comes
// from the graph's private pool, so the graph owns it: replays never share a workspace with eager
// calls or with other graphs, and no cached workspace can be freed under a recorded graph. The
// pool lends that memory to other nodes of the graph (and of graphs sharing the pool) between
// replays, so the part a kernel reads before writing, its 4 KB of arrival counters, lives apart:
// a region of graph_counters(), zero when handed out and held by the graph until it is destroyed.
//
// All state is touched with the GIL held (the binding never releases it). A registered Python
// allocator may let other threads run in the middle of a call, so callers hold what they use
// through shared pointers, and the workspace table is searched again after an allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>

#include <cuda_runtime_api.h>

#include "tensor_arg.h"

namespace mlakit::python {

// Whose workspace: each op keeps its own per (device, stream), so that one op's partial results
// never land where another op's kernel keeps its counters.
enum class WorkspaceOp { kDsa, kMla };

// A device buffer and what keeps it alive: a managed DLPack tensor (exchange route) or a Python
// tensor (registered allocator).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // A uint8 buffer of `bytes` on cuda:`device`. Raises RuntimeError when no allocator is known.
  static DeviceBuffer allocate(const dl::ExchangeApi* api, size_t bytes, int device);

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  void reset();

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  dl::ManagedTensorVersioned* managed_ = nullptr;
  nb::object owner_;
};

// A new tensor of `shape` and `dtype` on cuda:`device`, as a Python object of the inputs'
// framework. `name` is the argument it stands for (error messages). `data`, when not null,
// receives its data pointer (taken from the allocation, not by reading the tensor back).
nb::object new_tensor(const dl::ExchangeApi* api, std::initializer_list<int64_t> shape,
                      dl::DataType dtype, int device, const char* name, void** data = nullptr);

// The workspace of `op` for one call of `bytes` on (device, stream); the caller holds it until
// the launch is enqueued. Outside a capture, the cached buffer of that triple (grown when too
// small; past a few triples the least recently used is dropped); while `capturing`, a fresh
// buffer that nothing else holds, whose counter region the graph zeroes on every replay unless
// the call's counters live elsewhere (`separate_counters`: graph_counters()). Null when `bytes` is 0.
std::shared_ptr<DeviceBuffer> workspace_for(WorkspaceOp op, const dl::ExchangeApi* api, int device,
                                            cudaStream_t stream, size_t bytes, bool capturing,
                                            bool separate_counters = false);

// For a call being captured on `stream` (cuda:`device` current): a 4 KB region of zeros that the
// graph being captured holds (a CUDA user object) until it is destroyed, then taken back for
// another capture (every call leaves its counters zero). Null when it cannot be had (the call
// then zeroes its workspace's counters inside the graph). Regions come from 256 KB device slabs
// that live as long as the process.
uint32_t* graph_counters(int device, cudaStream_t stream);

// Python callable (shape: tuple, dtype: str, device: int) -> tensor, used when the inputs'
// type publishes no DLPack allocator. None clears it.
void set_python_allocator(nb::handle allocator);

// Drops every cached workspace and plan (mlakit.empty_cache(), and at interpreter exit).
void release_caches();

struct CacheStats {
  size_t plans = 0;
  size_t workspaces = 0;
  size_t workspace_bytes = 0;
};
CacheStats cache_stats();

}  // namespace mlakit::python

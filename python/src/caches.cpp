#include "caches.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "call_args.h"
#include "kernels/common/workspace.h"
#include "plan_cache.h"
#include "py_errors.h"

namespace mlakit::python {
namespace {

// ---- allocation ------------------------------------------------------------------------------

nb::object& python_allocator() {
  static auto* allocator = new nb::object();
  return *allocator;
}

struct AllocError {
  std::string text;
};
void set_alloc_error(void* ctx, const char* kind, const char* message) {
  static_cast<AllocError*>(ctx)->text = std::string(kind) + ": " + message;
}

dl::ManagedTensorVersioned* exchange_allocate(const dl::ExchangeApi* api,
                                              std::initializer_list<int64_t> shape,
                                              dl::DataType dtype, int device, const char* name) {
  int64_t dims[4] = {};
  int ndim = 0;
  for (int64_t d : shape) dims[ndim++] = d;
  dl::Tensor prototype{};
  prototype.device = {dl::kCUDA, device};
  prototype.ndim = ndim;
  prototype.dtype = dtype;
  prototype.shape = dims;
  dl::ManagedTensorVersioned* managed = nullptr;
  AllocError error;
  if (api->managed_tensor_allocator(&prototype, &managed, &error, set_alloc_error) != 0 ||
      managed == nullptr) {
    if (error.text.empty()) error.text = take_python_error();
    PyErr_Clear();
    raise(PyExc_RuntimeError, std::string(name) + ": allocation on cuda:" + std::to_string(device) +
                                  " failed: " + error.text);
  }
  return managed;
}

const char* python_dtype_name(dl::DataType dtype) {
  if (dtype.code == dl::kBfloat) return "bfloat16";
  if (dtype.code == dl::kFloat) return "float32";
  if (dtype.code == dl::kInt) return "int32";
  return "uint8";
}

nb::object python_allocate(std::initializer_list<int64_t> shape, dl::DataType dtype, int device,
                           const char* name) {
  nb::object& allocator = python_allocator();
  if (!allocator.is_valid() || allocator.is_none())
    raise(PyExc_RuntimeError,
          std::string(name) + ": no allocator for the inputs' framework: it publishes no DLPack "
                              "exchange API, and none is registered (mlakit._C.set_allocator; "
                              "mlakit registers PyTorch's when torch imports)");
  nb::object dims = nb::steal(PyTuple_New(Py_ssize_t(shape.size())));
  Py_ssize_t i = 0;
  for (int64_t d : shape) PyTuple_SET_ITEM(dims.ptr(), i++, PyLong_FromLongLong(d));
  return allocator(dims, python_dtype_name(dtype), device);
}

// ---- workspaces ------------------------------------------------------------------------------

struct WorkspaceSlot {
  WorkspaceOp op;
  int device;
  cudaStream_t stream;
  std::shared_ptr<DeviceBuffer> buffer;
  uint64_t last_use;
};

// Streams that run calls are few; past this many the least recently used triple's buffer is freed
// (stream-ordered on its own stream, so in-flight work on it is safe).
constexpr size_t kMaxWorkspaces = 8;
// Growth granularity: a T that creeps upward reallocates once per 2 MiB, not once per token.
constexpr size_t kWorkspaceQuantum = size_t(2) << 20;

std::vector<WorkspaceSlot>& workspaces() {
  static auto* slots = new std::vector<WorkspaceSlot>();
  return *slots;
}
uint64_t g_use_clock = 0;

WorkspaceSlot* find_slot(WorkspaceOp op, int device, cudaStream_t stream) {
  for (WorkspaceSlot& s : workspaces())
    if (s.op == op && s.device == device && s.stream == stream) return &s;
  return nullptr;
}

size_t round_up(size_t bytes) {
  return (bytes + kWorkspaceQuantum - 1) / kWorkspaceQuantum * kWorkspaceQuantum;
}

}  // namespace

std::vector<AnyPlanCache*>& plan_caches() {
  static auto* caches = new std::vector<AnyPlanCache*>();
  return *caches;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    managed_ = std::exchange(other.managed_, nullptr);
    owner_ = std::move(other.owner_);
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (managed_ != nullptr && managed_->deleter != nullptr) managed_->deleter(managed_);
  managed_ = nullptr;
  owner_.reset();
  data_ = nullptr;
  bytes_ = 0;
}

DeviceBuffer DeviceBuffer::allocate(const dl::ExchangeApi* api, size_t bytes, int device) {
  DeviceBuffer b;
  b.bytes_ = bytes;
  if (api != nullptr && api->managed_tensor_allocator != nullptr) {
    b.managed_ = exchange_allocate(api, {int64_t(bytes)}, kUInt8, device, "workspace");
    b.data_ = static_cast<char*>(b.managed_->dl_tensor.data) + b.managed_->dl_tensor.byte_offset;
    return b;
  }
  b.owner_ = python_allocate({int64_t(bytes)}, kUInt8, device, "workspace");
  TensorArg view;
  std::string why;
  if (!view.import(b.owner_, &why))
    raise(PyExc_RuntimeError, "workspace: the registered allocator returned no tensor " + why);
  b.data_ = view.data();
  return b;
}

nb::object new_tensor(const dl::ExchangeApi* api, std::initializer_list<int64_t> shape,
                      dl::DataType dtype, int device, const char* name, void** data) {
  if (api == nullptr || api->managed_tensor_allocator == nullptr ||
      api->managed_tensor_to_py_object_no_sync == nullptr) {
    nb::object tensor = python_allocate(shape, dtype, device, name);
    if (data != nullptr) {
      TensorArg view;
      import_tensor(view, name, tensor);
      *data = view.data();
    }
    return tensor;
  }
  dl::ManagedTensorVersioned* managed = exchange_allocate(api, shape, dtype, device, name);
  // The storage outlives the conversion below, which hands it to the Python tensor.
  if (data != nullptr)
    *data = static_cast<char*>(managed->dl_tensor.data) + managed->dl_tensor.byte_offset;
  void* object = nullptr;
  // The conversion takes ownership of `managed`, also when it fails.
  if (api->managed_tensor_to_py_object_no_sync(managed, &object) != 0 || object == nullptr)
    raise(PyExc_RuntimeError, std::string(name) + ": " + take_python_error());
  return nb::steal(static_cast<PyObject*>(object));
}

std::shared_ptr<DeviceBuffer> workspace_for(WorkspaceOp op, const dl::ExchangeApi* api, int device,
                                            cudaStream_t stream, size_t bytes, bool capturing,
                                            bool separate_counters) {
  if (bytes == 0) return nullptr;
  // Workspaces start zeroed (stream-ordered): the contract of dsa_run and mla_run. Inside a
  // capture only the counter region matters, the one part a kernel reads before writing it
  // (kernels/common/workspace.h): with counters elsewhere nothing is zeroed, else the graph zeroes
  // those 4 KB on every replay (the pool may lend the memory to other nodes in between).
  const auto zeroed = [stream](std::shared_ptr<DeviceBuffer> b, size_t zero_bytes) {
    if (cudaError_t e = cudaMemsetAsync(b->data(), 0, std::min(zero_bytes, b->bytes()), stream); e != cudaSuccess) {
      cudaGetLastError();
      raise(PyExc_RuntimeError, std::string("workspace: cudaMemsetAsync: ") + cudaGetErrorString(e));
    }
    return b;
  };
  if (capturing) {
    auto buffer = std::make_shared<DeviceBuffer>(DeviceBuffer::allocate(api, bytes, device));
    return separate_counters ? buffer : zeroed(buffer, workspace::kCounterBytes);
  }
  const uint64_t now = ++g_use_clock;
  if (WorkspaceSlot* slot = find_slot(op, device, stream)) {
    slot->last_use = now;
    if (slot->buffer->bytes() >= bytes) return slot->buffer;
    // Too small: drop it first, so the caching allocator may hand its memory back, grown.
    // Freeing is stream-ordered on this stream: calls already enqueued keep their memory.
    slot->buffer = std::make_shared<DeviceBuffer>();
  }
  auto fresh = zeroed(std::make_shared<DeviceBuffer>(DeviceBuffer::allocate(api, round_up(bytes), device)), SIZE_MAX);
  // The allocation may have run Python (and other threads): look the slot up again.
  if (WorkspaceSlot* slot = find_slot(op, device, stream)) {
    if (slot->buffer->bytes() < fresh->bytes()) slot->buffer = fresh;
    slot->last_use = now;
    return slot->buffer;
  }
  auto& slots = workspaces();
  if (slots.size() >= kMaxWorkspaces) {
    size_t oldest = 0;
    for (size_t i = 1; i < slots.size(); ++i)
      if (slots[i].last_use < slots[oldest].last_use) oldest = i;
    slots.erase(slots.begin() + std::ptrdiff_t(oldest));
  }
  slots.push_back(WorkspaceSlot{op, device, stream, fresh, now});
  return fresh;
}

namespace {

// graph_counters' regions: 4 KB of a 256 KB slab each. The free lists are touched by user-object
// destructors too, which CUDA runs on its own threads (no GIL, no CUDA calls there): a mutex.
constexpr size_t kSlabBytes = 256 * 1024;
struct CounterRegion {
  int device;
  uint32_t* data;
};
std::mutex& counter_mutex() {
  static std::mutex m;
  return m;
}
std::map<int, std::vector<uint32_t*>>& free_counters() {
  static auto* lists = new std::map<int, std::vector<uint32_t*>>;  // never destroyed: destructors may run late
  return *lists;
}
void give_back_counters(void* region) {
  auto* r = static_cast<CounterRegion*>(region);
  {
    std::lock_guard<std::mutex> lock(counter_mutex());
    free_counters()[r->device].push_back(r->data);
  }
  delete r;
}

// A zeroed slab on the current device, made in the middle of a capture: relaxed capture mode for
// this thread (cudaMalloc and a synchronization are not work of the graph), zeroed on a stream of
// its own. Null on any failure.
char* new_counter_slab() {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  void* slab = nullptr;
  cudaStream_t side = nullptr;
  bool ok = cudaMalloc(&slab, kSlabBytes) == cudaSuccess;
  ok = ok && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) == cudaSuccess;
  ok = ok && cudaMemsetAsync(slab, 0, kSlabBytes, side) == cudaSuccess;
  ok = ok && cudaStreamSynchronize(side) == cudaSuccess;
  if (side != nullptr) cudaStreamDestroy(side);
  if (!ok && slab != nullptr) cudaFree(slab);
  cudaGetLastError();
  cudaThreadExchangeStreamCaptureMode(&mode);
  return ok ? static_cast<char*>(slab) : nullptr;
}

uint32_t* take_counters(int device) {
  {
    std::lock_guard<std::mutex> lock(counter_mutex());
    auto& list = free_counters()[device];
    if (!list.empty()) {
      uint32_t* region = list.back();
      list.pop_back();
      return region;
    }
  }
  char* slab = new_counter_slab();
  if (slab == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(counter_mutex());
  auto& list = free_counters()[device];
  for (size_t at = workspace::kCounterBytes; at < kSlabBytes; at += workspace::kCounterBytes)
    list.push_back(reinterpret_cast<uint32_t*>(slab + at));
  return reinterpret_cast<uint32_t*>(slab);
}

}  // namespace

uint32_t* graph_counters(int device, cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  if (cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph) != cudaSuccess ||
      status != cudaStreamCaptureStatusActive || graph == nullptr) {
    cudaGetLastError();
    return nullptr;
  }
  uint32_t* data = take_counters(device);
  if (data == nullptr) return nullptr;
  auto* region = new CounterRegion{device, data};
  cudaUserObject_t object = nullptr;
  if (cudaUserObjectCreate(&object, region, give_back_counters, 1, cudaUserObjectNoDestructorSync) != cudaSuccess) {
    cudaGetLastError();
    give_back_counters(region);
    return nullptr;
  }
  // The graph takes the one reference: the region returns when the graph and every executable
  // graph made from it are destroyed, after their launches have finished.
  if (cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove) != cudaSuccess) {
    cudaGetLastError();
    cudaUserObjectRelease(object, 1);  // runs give_back_counters
    return nullptr;
  }
  return data;
}

void set_python_allocator(nb::handle allocator) {
  python_allocator() = nb::borrow(allocator);
}

void release_caches() {
  workspaces().clear();
  for (AnyPlanCache* plans : plan_caches()) plans->clear();
}

CacheStats cache_stats() {
  CacheStats s;
  for (const AnyPlanCache* plans : plan_caches()) s.plans += plans->size();
  s.workspaces = workspaces().size();
  for (const WorkspaceSlot& slot : workspaces()) s.workspace_bytes += slot.buffer->bytes();
  return s;
}

}  // namespace mlakit::python

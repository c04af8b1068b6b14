#include "caches.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "py_errors.h"

namespace mlakit::python {
namespace {

// ---- plans ------------------------------------------------------------------------------------

// Shapes in a process are few (T varies by batch); past this many something generates shapes
// without bound, and forgetting them all is cheaper than tracking recency.
constexpr size_t kMaxPlans = 4096;

// Plans per device, keyed by the problem (its == and std::hash cover every field). Heap objects
// that are never destroyed: at process exit nothing is left to free into a framework or a CUDA
// context that may already be gone (the atexit hook empties them earlier).
using PlanMap = std::unordered_map<DsaProblem, std::shared_ptr<const DsaPlan>>;
std::vector<PlanMap>& plans() {
  static auto* maps = new std::vector<PlanMap>();
  return *maps;
}
size_t plan_count() {
  size_t n = 0;
  for (const PlanMap& m : plans()) n += m.size();
  return n;
}
// The previous call's plan: most loops repeat one shape.
struct LastPlan {
  DsaProblem problem;
  int device = -1;
  std::shared_ptr<const DsaPlan> plan;
};
LastPlan& last_plan() {
  static auto* last = new LastPlan();
  return *last;
}

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
  int device;
  cudaStream_t stream;
  std::shared_ptr<DeviceBuffer> buffer;
  uint64_t last_use;
};

// Streams that run calls are few; past this many the least recently used pair's buffer is freed
// (stream-ordered on its own stream, so in-flight work on it is safe).
constexpr size_t kMaxWorkspaces = 8;
// Growth granularity: a T that creeps upward reallocates once per 2 MiB, not once per token.
constexpr size_t kWorkspaceQuantum = size_t(2) << 20;

std::vector<WorkspaceSlot>& workspaces() {
  static auto* slots = new std::vector<WorkspaceSlot>();
  return *slots;
}
uint64_t g_use_clock = 0;

WorkspaceSlot* find_slot(int device, cudaStream_t stream) {
  for (WorkspaceSlot& s : workspaces())
    if (s.device == device && s.stream == stream) return &s;
  return nullptr;
}

size_t round_up(size_t bytes) {
  return (bytes + kWorkspaceQuantum - 1) / kWorkspaceQuantum * kWorkspaceQuantum;
}

}  // namespace

std::shared_ptr<const DsaPlan> cached_plan(const DsaProblem& p, int device) {
  LastPlan& last = last_plan();
  if (last.plan && last.device == device && last.problem == p) return last.plan;
  if (device < 0) raise(PyExc_ValueError, "device: expected a CUDA device index, got " + std::to_string(device));
  if (size_t(device) >= plans().size()) plans().resize(size_t(device) + 1);
  PlanMap& map = plans()[size_t(device)];
  auto it = map.find(p);
  if (it == map.end()) {
    DsaPlanOptions options;
    options.device = device;
    auto plan = std::make_shared<DsaPlan>();
    if (Status s = dsa_plan(p, options, plan.get()); !s) raise_status(s);
    if (plan_count() >= kMaxPlans)
      for (PlanMap& m : plans()) m.clear();
    it = map.emplace(p, std::move(plan)).first;
  }
  last = LastPlan{p, device, it->second};
  return last.plan;
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
  constexpr dl::DataType kU8{dl::kUInt, 8, 1};
  DeviceBuffer b;
  b.bytes_ = bytes;
  if (api != nullptr && api->managed_tensor_allocator != nullptr) {
    b.managed_ = exchange_allocate(api, {int64_t(bytes)}, kU8, device, "workspace");
    b.data_ = static_cast<char*>(b.managed_->dl_tensor.data) + b.managed_->dl_tensor.byte_offset;
    return b;
  }
  b.owner_ = python_allocate({int64_t(bytes)}, kU8, device, "workspace");
  TensorArg view;
  std::string why;
  if (!view.import(b.owner_, &why))
    raise(PyExc_RuntimeError, "workspace: the registered allocator returned no tensor " + why);
  b.data_ = view.data();
  return b;
}

nb::object new_tensor(const dl::ExchangeApi* api, std::initializer_list<int64_t> shape,
                      dl::DataType dtype, int device, const char* name) {
  if (api == nullptr || api->managed_tensor_allocator == nullptr ||
      api->managed_tensor_to_py_object_no_sync == nullptr)
    return python_allocate(shape, dtype, device, name);
  dl::ManagedTensorVersioned* managed = exchange_allocate(api, shape, dtype, device, name);
  void* object = nullptr;
  // The conversion takes ownership of `managed`, also when it fails.
  if (api->managed_tensor_to_py_object_no_sync(managed, &object) != 0 || object == nullptr)
    raise(PyExc_RuntimeError, std::string(name) + ": " + take_python_error());
  return nb::steal(static_cast<PyObject*>(object));
}

std::shared_ptr<DeviceBuffer> workspace_for(const dl::ExchangeApi* api, int device,
                                            cudaStream_t stream, size_t bytes, bool capturing) {
  if (bytes == 0) return nullptr;
  // Workspaces start zeroed (stream-ordered, so also inside a capture, where the graph then zeroes
  // its own workspace on every replay): dsa_run's contract.
  const auto zeroed = [stream](std::shared_ptr<DeviceBuffer> b) {
    if (cudaError_t e = cudaMemsetAsync(b->data(), 0, b->bytes(), stream); e != cudaSuccess) {
      cudaGetLastError();
      raise(PyExc_RuntimeError, std::string("workspace: cudaMemsetAsync: ") + cudaGetErrorString(e));
    }
    return b;
  };
  if (capturing) return zeroed(std::make_shared<DeviceBuffer>(DeviceBuffer::allocate(api, bytes, device)));
  const uint64_t now = ++g_use_clock;
  if (WorkspaceSlot* slot = find_slot(device, stream)) {
    slot->last_use = now;
    if (slot->buffer->bytes() >= bytes) return slot->buffer;
    // Too small: drop it first, so the caching allocator may hand its memory back, grown.
    // Freeing is stream-ordered on this stream: calls already enqueued keep their memory.
    slot->buffer = std::make_shared<DeviceBuffer>();
  }
  auto fresh = zeroed(std::make_shared<DeviceBuffer>(DeviceBuffer::allocate(api, round_up(bytes), device)));
  // The allocation may have run Python (and other threads): look the slot up again.
  if (WorkspaceSlot* slot = find_slot(device, stream)) {
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
  slots.push_back(WorkspaceSlot{device, stream, fresh, now});
  return fresh;
}

void set_python_allocator(nb::handle allocator) {
  python_allocator() = nb::borrow(allocator);
}

void release_caches() {
  workspaces().clear();
  plans().clear();
  last_plan() = LastPlan{};
}

CacheStats cache_stats() {
  CacheStats s;
  s.plans = plan_count();
  s.workspaces = workspaces().size();
  for (const WorkspaceSlot& slot : workspaces()) s.workspace_bytes += slot.buffer->bytes();
  return s;
}

}  // namespace mlakit::python

// The one call path of every op's Python entry point: the op's argument checks, its problem, the
// cached plan, the stream, the outputs the caller left None, the workspace and the launch, each
// failure raised as the documented Python exception (py_errors.h). An op brings only what is its
// own, as a call type that holds its arguments once they are read:
//
//   struct XCall {
//     using Problem = ...;                        // what the plan is made of
//     static constexpr WorkspaceOp kWorkspace;    // whose workspace the launch takes
//     nb::handle lead;   // the argument whose framework gives the stream and allocates outputs
//     int device;        // set by check()
//     void check();                               // every argument check, in the contract's order
//     Problem problem() const;                    // raises for extents the C++ API cannot take
//     static bool empty(const Problem&);          // nothing to launch: outputs only
//     static auto plan(const Problem&, int device);     // cached_plan (plan_cache.h), or any
//                                                       // pointer-like ->workspace_bytes()
//     auto outputs(const NewTensors&);            // what the call returns (output_of per output)
//     // counters: null, or the split rows' counters apart from the workspace (a captured call's)
//     Status run(const Plan&, void* workspace, size_t bytes, uint32_t* counters, cudaStream_t) const;
//   };
//
// A new op adds its call type, an entry point that reads the arguments and calls run_op, its
// m.def in module.cpp and, when it takes a workspace, its WorkspaceOp (caches.h).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "call_args.h"
#include "caches.h"
#include "py_errors.h"
#include "tensor_arg.h"

namespace mlakit::python {

// Where the outputs the caller left None come from: the inputs' framework, on the call's device.
// Their data pointers are taken only when the call launches.
struct NewTensors {
  const dl::ExchangeApi* api;
  int device;
  bool launching;
};

// The object the call returns for output `o`: the caller's tensor, or a new one of `shape`.
inline nb::object output_of(OutputArg& o, const NewTensors& n, std::initializer_list<int64_t> shape,
                            dl::DataType dtype, const char* name) {
  if (o.given) return nb::borrow(o.obj);
  return new_tensor(n.api, shape, dtype, n.device, name, n.launching ? &o.data : nullptr);
}

template <class Call>
auto run_op(Call& call, nb::handle stream_obj) {
  call.check();
  const typename Call::Problem problem = call.problem();
  NewTensors fresh{exchange_api_of(Py_TYPE(call.lead.ptr())), call.device, false};
  if (Call::empty(problem)) return call.outputs(fresh);

  DeviceGuard guard(call.device);
  // Held until the launch is enqueued: an allocation below may run Python that empties the cache.
  const auto plan = Call::plan(problem, call.device);
  const cudaStream_t stream = resolve_stream(stream_obj, fresh.api, call.device);
  fresh.launching = true;
  auto result = call.outputs(fresh);
  const size_t workspace_bytes = plan->workspace_bytes();
  // Captured: counters that outlive the graph's pool memory, so that no replay zeroes them.
  const bool capturing = workspace_bytes > 0 && is_capturing(stream);
  uint32_t* counters = capturing ? graph_counters(call.device, stream) : nullptr;
  const std::shared_ptr<DeviceBuffer> workspace =
      workspace_bytes == 0 ? nullptr
                           : workspace_for(Call::kWorkspace, fresh.api, call.device, stream,
                                           workspace_bytes, capturing, counters != nullptr);
  if (Status s = call.run(*plan, workspace ? workspace->data() : nullptr,
                          workspace ? workspace->bytes() : 0, counters, stream);
      !s)
    raise_status(s);
  return result;
}

// The checked modes (check_indices, mla_check_inputs) read results back, synchronizing the
// stream, which a capture forbids: `check(stream)` runs on cuda:`device` outside a capture.
// `entry` names the entry point and `subject` what to check before the capture instead.
template <class Check>
void run_synchronizing(const char* entry, const char* subject, int device, nb::handle lead,
                       nb::handle stream_obj, Check check) {
  DeviceGuard guard(device);
  const cudaStream_t stream =
      resolve_stream(stream_obj, exchange_api_of(Py_TYPE(lead.ptr())), device);
  if (is_capturing(stream))
    raise(PyExc_RuntimeError, std::string(entry) + " synchronizes its stream, which is being "
                              "captured into a CUDA graph; check the " + subject +
                              " before the capture");
  if (Status s = check(stream); !s) raise_status(s);
}

// plan_info and mla_plan_info: what a call of the plan's shape runs.
template <class Plan>
nb::dict plan_dict(const Plan& plan) {
  nb::dict d;
  d["problem"] = plan.problem().to_string();
  d["kernel_key"] = plan.kernel_key();
  d["tiling"] = plan.tiling();
  d["workspace_bytes"] = plan.workspace_bytes();
  return d;
}

}  // namespace mlakit::python

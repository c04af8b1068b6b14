// Verification, the same steps for every op: poison every output with NaN bytes (0xFF is NaN in
// bf16 and fp32, so an element the kernel does not write fails) and every SM's shared memory with
// non-finite patterns (a masked weight times a row nobody wrote fails), run, download, compare
// each output with the op's comparator, run again under another shared-memory pattern, and check
// that the two runs are bitwise equal.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "mlakit/status.h"
#include "reference/compare.h"
#include "workbench/timer.h"

namespace mlakit {

struct OutputCheck {
  std::string name;      // "output", "lse"
  CompareReport report;  // the op's comparator against its reference (contest rule for DSA)
};

struct VerifyResult {
  std::string workload;
  std::vector<OutputCheck> outputs;  // in the op's order
  bool deterministic = true;         // two runs bitwise equal
  bool ok() const;
  // The report of the output named `name`; null when the op has none.
  const CompareReport* find(const std::string& name) const;
  // "ok", "NONDETERMINISTIC" (every output passes but the runs differ) or "FAIL".
  std::string verdict() const;
  // One line per problem ("output: FAILED 3 of ...", "two runs differ bitwise"); empty when ok.
  std::vector<std::string> problems() const;
};

// One output of a call: where it lives, its size, and how a host copy compares with the reference.
struct CallOutput {
  std::string name;
  void* data = nullptr;
  size_t bytes = 0;
  std::function<CompareReport(const void* host_copy)> compare;
};

// Where outputs live, as the verifier sees them: CUDA device memory (DeviceOutputs), or host
// memory for ops whose test "kernel" runs on the CPU.
class OutputMemory {
 public:
  virtual ~OutputMemory() = default;
  virtual Status poison(const CallOutput& output) = 0;                    // every byte 0xFF
  // Before run `run` (0 or 1): whatever scratch a kernel could read without writing it first
  // (shared memory) filled with a non-finite pattern of that run.
  virtual Status poison_scratch(int run) { (void)run; return Status::ok(); }
  virtual Status download(const CallOutput& output, void* host) = 0;      // output.bytes
  virtual Status finish(const std::string& what) = 0;  // the call and the copies are done
};

// A call's workspace as verification sees it: `bytes` at `data`, of which the first
// `kept_bytes` (the counters every kernel leaves zero) must be left alone.
struct ScratchWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
  size_t kept_bytes = 0;
};

class DeviceOutputs final : public OutputMemory {
 public:
  explicit DeviceOutputs(cudaStream_t stream, ScratchWorkspace workspace = {})
      : stream_(stream), workspace_(workspace) {}
  Status poison(const CallOutput& output) override;
  // Both runs: every SM's shared memory, bf16 NaN/-inf then e4m3 NaN. Run 1: the workspace past
  // its kept bytes too (0xFF), so that a kernel reading a partial it did not write in this call
  // gives another result than run 0 (which reads what earlier calls left, or memory never written:
  // what compute-sanitizer's initcheck reports).
  Status poison_scratch(int run) override;
  Status download(const CallOutput& output, void* host) override;
  Status finish(const std::string& what) override;

 private:
  cudaStream_t stream_;
  ScratchWorkspace workspace_;
};

// The steps above; `call` is run twice on `stream`. `what` names the call in errors (the key).
Status verify_call(const GpuCall& call, cudaStream_t stream, const std::vector<CallOutput>& outputs,
                   OutputMemory& memory, const std::string& what, VerifyResult* result);

}  // namespace mlakit

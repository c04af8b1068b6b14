#include "workbench/verify.h"

#include "base/cuda_status.h"
#include "kernels/workbench/poison_shared.h"

namespace mlakit {

bool VerifyResult::ok() const {
  for (const OutputCheck& o : outputs)
    if (!o.report.ok()) return false;
  return deterministic;
}

const CompareReport* VerifyResult::find(const std::string& name) const {
  for (const OutputCheck& o : outputs)
    if (o.name == name) return &o.report;
  return nullptr;
}

std::string VerifyResult::verdict() const {
  if (ok()) return "ok";
  for (const OutputCheck& o : outputs)
    if (!o.report.ok()) return "FAIL";
  return "NONDETERMINISTIC";
}

std::vector<std::string> VerifyResult::problems() const {
  std::vector<std::string> lines;
  for (const OutputCheck& o : outputs)
    if (!o.report.ok()) lines.push_back(o.name + ": " + o.report.summary());
  if (!deterministic) lines.push_back("two runs differ bitwise");
  return lines;
}

Status DeviceOutputs::poison(const CallOutput& output) {
  return cuda_status(cudaMemsetAsync(output.data, 0xFF, output.bytes, stream_), "poison " + output.name);
}

Status DeviceOutputs::poison_scratch(int run) {
  const uint32_t pattern = run % 2 == 0 ? kernels::kPoisonBf16 : kernels::kPoisonE4m3;
  MLAKIT_RETURN_IF_ERROR(cuda_status(kernels::launch_poison_shared(pattern, false, stream_), "poison shared memory"));
  if (run % 2 == 0 || workspace_.data == nullptr || workspace_.bytes <= workspace_.kept_bytes) return Status::ok();
  return cuda_status(cudaMemsetAsync(static_cast<char*>(workspace_.data) + workspace_.kept_bytes, 0xFF,
                                     workspace_.bytes - workspace_.kept_bytes, stream_),
                     "poison the workspace");
}

Status DeviceOutputs::download(const CallOutput& output, void* host) {
  return cuda_status(cudaMemcpyAsync(host, output.data, output.bytes, cudaMemcpyDeviceToHost, stream_),
                     output.name + " download");
}

Status DeviceOutputs::finish(const std::string& what) {
  return cuda_status(cudaStreamSynchronize(stream_), what);
}

Status verify_call(const GpuCall& call, cudaStream_t stream, const std::vector<CallOutput>& outputs,
                   OutputMemory& memory, const std::string& what, VerifyResult* result) {
  std::vector<std::vector<unsigned char>> runs[2];
  for (int r = 0; r < 2; ++r) {
    auto& run = runs[r];
    for (const CallOutput& o : outputs) MLAKIT_RETURN_IF_ERROR(memory.poison(o));
    MLAKIT_RETURN_IF_ERROR(memory.poison_scratch(r));
    MLAKIT_RETURN_IF_ERROR(call(stream));
    for (const CallOutput& o : outputs) {
      run.emplace_back(o.bytes);
      MLAKIT_RETURN_IF_ERROR(memory.download(o, run.back().data()));
    }
    MLAKIT_RETURN_IF_ERROR(memory.finish(what));
  }
  result->outputs.clear();
  result->deterministic = true;
  for (size_t k = 0; k < outputs.size(); ++k) {
    result->outputs.push_back({outputs[k].name, outputs[k].compare(runs[0][k].data())});
    result->deterministic &= runs[0][k] == runs[1][k];
  }
  return Status::ok();
}

}  // namespace mlakit

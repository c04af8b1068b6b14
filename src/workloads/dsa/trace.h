// The FlashInfer-Trace reader for DSA sparse attention (docs/trace-format.md): given a dataset
// folder laid out as
//   definitions/**/<definition>.json      axes (const / var), inputs, outputs, reference
//   workloads/**/<definition>.jsonl       one {"definition", "workload": {uuid, axes, inputs}} per line
//   blob/**/*.safetensors                 tensors referenced by inputs of type "safetensors"
// it builds a DsaSuite: one DsaWorkload per JSONL line, with T and num_pages from the line's axes,
// heads / head dims / page_size / topk from the definition's constant axes, sparse_indices from
// the referenced safetensors file (or synthesized top-k picks for type "random") and sm_scale from
// a "scalar" input. q and the caches are never read: the workbench synthesizes them (randn bf16).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlakit/status.h"
#include "workloads/dsa/suites.h"

namespace mlakit {

inline constexpr const char* kDsaDefinitionPs64 = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64";
inline constexpr const char* kDsaDefinitionPs1 = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps1";

struct DsaTraceOptions {
  std::string definition = kDsaDefinitionPs64;  // the definition's "name"
  uint64_t seed = 0;  // for sparse_indices of type "random"
};

// Reads every workload of options.definition. Workloads are named "trace-00", "trace-01", ... in
// file order and keep the dataset's uuid. Errors name the file, the line and the field, e.g.
// "workloads/dsa_paged/x.jsonl: line 3: workload.axes: missing key \"num_pages\"", and a Git LFS
// pointer in place of a safetensors file says to run `git lfs pull`.
Status load_dsa_trace(const std::string& dataset_dir, const DsaTraceOptions& options, DsaSuite* out);

// Names of the definitions under dataset_dir/definitions whose op is DSA sparse attention
// (their name starts with "dsa_sparse_attention"), sorted.
Status list_dsa_trace_definitions(const std::string& dataset_dir, std::vector<std::string>* names);

}  // namespace mlakit

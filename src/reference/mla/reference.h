// The MLA decode CPU reference: exactly the contract of include/mlakit/mla.h, accumulated in fp64,
// and the checked mode's verdict on cache_seqlens and block_table (the host half of
// mla_check_inputs).
#pragma once

#include <cstdint>
#include <vector>

#include "mlakit/mla.h"

namespace mlakit {

struct MlaReferenceOutput {
  std::vector<double> output;  // [b, s_q, h, ckv]; 0 for a query that sees no row
  std::vector<double> lse;     // [b, s_q, h], base 2; -inf for a query that sees no row
};

// `inputs` are MlaTensors over host memory (bf16 as raw bits), read with the same strides a kernel
// gets (0 = contiguous); output, lse and the workspace are not used. Rows of a page id outside
// [0, num_pages) are zeros and are never read; rows past a request's n_b are never read (they may
// hold NaN). Multithreaded over (request, query, group of heads) (num_threads = 0: hardware
// concurrency); each unit is computed by one thread in a fixed order, so the result does not
// depend on num_threads. Fails (invalid_argument) on an invalid problem or a null input pointer.
Status mla_reference(const MlaProblem& problem, const MlaTensors& inputs, MlaReferenceOutput* out,
                     int num_threads = 0);

// Ok when every cache_seqlens[b] is in [0, max_pages * page_size] and every page id among the
// first ceil(n_b / page_size) entries of block_table row b is in [0, num_pages); else
// invalid_argument naming the first bad value, its position and how many there are:
// "cache_seqlens[3] = 5000: expected a length in [0, 4096] (max_pages * page_size); 2 bad values
// in all". `block_table_stride_b` 0 = max_pages. `num_bad` (optional) receives the count.
Status mla_check_inputs_host(const MlaProblem& problem, const int32_t* block_table, int64_t block_table_stride_b,
                             const int32_t* cache_seqlens, int64_t* num_bad = nullptr);

// The arguments' checks of both halves of mla_check_inputs (the device one copies the tensors
// here first): a valid problem, both pointers set, a block_table row stride (`*stride`, 0 read as
// max_pages) of at least max_pages.
Status mla_check_inputs_args(const MlaProblem& problem, const int32_t* block_table, int64_t block_table_stride_b,
                             const int32_t* cache_seqlens, int64_t* stride);

}  // namespace mlakit

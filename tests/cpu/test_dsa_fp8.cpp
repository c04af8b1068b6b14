// DSA decode over the FP8 cache (mlakit/dsa_fp8.h) on the CPU: the host E4M3 codec and scale rule,
// the row and cache quantizers, the problem's names, planning and dsa_run's checks for the format,
// the roofline counts, the fp8 suites and the workbench's host inputs.
#include <gtest/gtest.h>

#include <vector>

#include "mlakit/dsa.h"
#include "mlakit/dsa_fp8.h"
#include "plan/dsa/cost.h"

namespace mlakit {
namespace {

DsaProblem contest_problem(int num_tokens, DsaKv kv) {
  DsaProblem p;
  p.num_tokens = num_tokens;
  p.num_pages = 8462;
  p.kv = kv;
  return p;
}

// ---- roofline counts ------------------------------------------------------------------------------

TEST(DsaFp8Cost, ASlotMoves656BytesInsteadOf1152) {
  const std::vector<int> valid = {2048, 100, 0};
  const Cost bf16 = dsa_cost(contest_problem(3, DsaKv::kBf16), valid);
  const Cost fp8 = dsa_cost(contest_problem(3, DsaKv::kFp8), valid);
  EXPECT_EQ(dsa_slot_bytes(contest_problem(1, DsaKv::kBf16)), 1152.0);
  EXPECT_EQ(dsa_slot_bytes(contest_problem(1, DsaKv::kFp8)), double(dsa_fp8::kRowBytes));
  EXPECT_EQ(fp8.rows, 2148);
  EXPECT_EQ(fp8.gathered_bytes, 2148.0 * 656);
  EXPECT_EQ(bf16.gathered_bytes, 2148.0 * 1152);
  // q, indices, output and lse are the same for both caches; the FLOPs too (the math is bf16).
  EXPECT_EQ(bf16.bytes - bf16.gathered_bytes, fp8.bytes - fp8.gathered_bytes);
  EXPECT_EQ(bf16.bytes - bf16.gathered_bytes, 3.0 * 16 * 1152 + 4.0 * 3 * 2048 + 3.0 * 16 * (1024 + 4));
  EXPECT_EQ(fp8.flops, bf16.flops);
}

}  // namespace
}  // namespace mlakit

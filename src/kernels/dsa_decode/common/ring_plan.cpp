#include "kernels/dsa_decode/common/ring_plan.h"

#include <algorithm>

#include "kernels/dsa_decode/common/row_ring.h"
#include "kernels/dsa_decode/common/workspace.h"

namespace mlakit::dsa_ring {

Status check_problem(const std::string& variant, const DsaProblem& p, int max_topk, const std::vector<int>& heads) {
  if (std::find(heads.begin(), heads.end(), p.num_heads) == heads.end())
    return Status::unsupported(variant + " runs " + or_list(heads) + " heads; got num_heads=" +
                               std::to_string(p.num_heads));
  if (p.head_dim_ckv != kDimV || p.head_dim_kpe != kDimR)
    return Status::unsupported(variant + " needs ckv 512 and kpe 64; got ckv=" + std::to_string(p.head_dim_ckv) +
                               " kpe=" + std::to_string(p.head_dim_kpe));
  if (p.topk > max_topk)
    return Status::unsupported(variant + " reads rows of at most " + std::to_string(max_topk) +
                               " indices (each CTA compacts its whole row); got topk=" + std::to_string(p.topk));
  return Status::ok();
}

std::string heads_note(const DsaProblem& p, int cta_heads) {
  const int groups = head_groups(p, cta_heads);
  return groups > 1 ? ", " + std::to_string(groups) + " CTAs of " + std::to_string(cta_heads) + " heads per split"
                    : std::string();
}

std::string counted_blocks_shortfall(const DsaProblem& p, const RingTiling& t) {
  if (t.num_splits <= 1 || head_blocks(p) <= dsa_workspace::kMaxCountedTokens) return std::string();
  return "split rows count their CTAs in the workspace's counter region, which holds " +
                       std::to_string(dsa_workspace::kMaxCountedTokens) + " blocks of " + std::to_string(kCtaHeads) +
                       " heads; got T=" + std::to_string(p.num_tokens) + " x " + std::to_string(head_groups(p)) +
                       " (use num_splits = 1)";
}

std::string split_shortfall(const DsaProblem& p, const RingTiling& t, const DeviceFacts& dev, int max_splits,
                            bool co_resident, int ctas_per_sm, int groups) {
  if (t.num_splits < 1 || t.num_splits > max_splits)
    return "num_splits (CTAs per row) must be in [1, " + std::to_string(max_splits) + "]; got " +
                         std::to_string(t.num_splits);
  if (t.block_n < kStageRows || t.block_n % kStageRows != 0)
    return "block_n (least slots per split) must be a positive multiple of " +
                         std::to_string(kStageRows) + "; got " + std::to_string(t.block_n);
  const long long ctas = (long long)t.num_splits * p.num_tokens * groups;
  const long long fit = (long long)(dev.num_sms > 0 ? dev.num_sms : 0) * ctas_per_sm;
  if (co_resident && t.num_splits > 1 && ctas > fit)
    return "the CTAs of a split row wait for each other, so all " + std::to_string(ctas) + " (" +
                         std::to_string(t.num_splits) + " x T=" + std::to_string(p.num_tokens) +
                         (groups > 1 ? " x " + std::to_string(groups) + " head groups" : std::string()) +
                         ") must be resident at once; " + dev.describe() + " holds " + std::to_string(fit);
  return std::string();
}

int default_splits(const DsaProblem& p, const DeviceFacts& dev, int max_splits, int min_rows, int groups) {
  const int sms = dev.num_sms > 0 ? dev.num_sms : 132;
  const int usable = std::max(1, split_row(p.topk, max_splits, std::max(min_rows, 1)).splits);
  int s = 1;
  while (s * 2 <= max_splits && s < usable && (long long)s * 2 * p.num_tokens * groups <= sms) s *= 2;
  return s;
}

std::string or_list(const std::vector<int>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i)
    s += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + std::to_string(values[i]);
  return s;
}

}  // namespace mlakit::dsa_ring

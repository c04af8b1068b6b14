// A plan: one problem bound to one registered kernel, one tiling and a workspace size, for one
// device. Valid by construction: its fields are private and only the op's planning function
// (dsa_plan, ...) fills them, after the arch gate and the tiling check; the op's run function
// (dsa_run, ...) trusts it and re-checks only that the current device is the planned one.
// A default-constructed plan is empty; running it is an error.
#pragma once

#include <cstddef>
#include <string>

namespace mlakit {

template <class Problem>
struct Planner;  // src/runtime/planner.h: the only code that fills a plan

// A planned tiling's values as its variant parsed them from the tiling's name: the variant's own
// tiling struct, copied (opaque to everything but that variant, which alone reads it back).
struct TilingValues {
  alignas(8) unsigned char bytes[64] = {};
};

template <class Problem>
class Plan {
 public:
  Plan() = default;

  bool empty() const { return kernel_ == nullptr; }
  const Problem& problem() const { return problem_; }
  const std::string& kernel_key() const { return kernel_key_; }  // "dsa_decode.v1_splitk.bf16"
  // The tiling's stable name in its variant's grammar ("s16n64x2m4"): what --tiling, the tune
  // cache and bench records carry.
  const std::string& tiling() const { return tiling_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  // The CUDA device it was planned for; -1 when it was planned for device facts alone (a dry
  // plan: validated against a known chip without a GPU, never runnable).
  int device() const { return device_; }
  const std::string& device_name() const { return device_name_; }  // "NVIDIA H200"

 private:
  friend struct Planner<Problem>;

  Problem problem_{};
  std::string kernel_key_;
  std::string tiling_;
  TilingValues values_;
  size_t workspace_bytes_ = 0;
  int device_ = -1;
  std::string device_name_;
  const void* kernel_ = nullptr;  // the registry entry (an internal type)
};

}  // namespace mlakit

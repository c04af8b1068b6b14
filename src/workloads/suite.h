// What every suite generator of src/workloads does first.
#pragma once

#include <string>
#include <utility>

namespace mlakit {

// Starts `suite` (a DsaSuite or an MlaSuite) afresh: its name, its one-paragraph description, no
// workloads yet.
template <class Suite>
void start_suite(Suite* suite, std::string name, std::string description) {
  suite->name = std::move(name);
  suite->description = std::move(description);
  suite->workloads.clear();
}

}  // namespace mlakit

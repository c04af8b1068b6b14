// The op table: one line per op (its workbench traits live in workbench/<op>/bench.h).
#include "workbench/dsa/bench.h"
#include "workbench/mla/bench.h"
#include "workbench/op_bench.h"

namespace mlakit {

const std::vector<const OpBench*>& op_benches() {
  static const std::vector<const OpBench*> table = {
      &dsa_bench(),
      &mla_bench(),
  };
  return table;
}

const OpBench* find_op_bench(const std::string& name) {
  for (const OpBench* op : op_benches())
    if (op->name() == name) return op;
  return nullptr;
}

const OpBench* op_bench_of_suite(const std::string& suite) {
  for (const OpBench* op : op_benches())
    for (const std::string& s : op->suite_names())
      if (s == suite) return op;
  return nullptr;
}

std::string op_names() {
  std::string names;
  for (const OpBench* op : op_benches()) names += " " + op->name();
  return names;
}

std::string suite_names_of_all_ops() {
  std::string names;
  for (const OpBench* op : op_benches())
    for (const std::string& s : op->suite_names()) names += " " + s;
  return names;
}

}  // namespace mlakit

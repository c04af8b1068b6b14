// The op table: one line per op (its workbench traits live in workbench/<op>/bench.h).
#include <algorithm>
#include <map>

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
  for (const OpBench* op : op_benches()) {
    if (!names.empty()) names += ';';
    names += suite_summary(*op);
  }
  return names;
}

std::vector<const ShapeOption*> flavour_options(const OpBench& op) {
  std::vector<const ShapeOption*> options;
  for (const ShapeOption& s : op.shape_options())
    if (s.flavours_suites) options.push_back(&s);
  return options;
}

namespace {

// "16|32|64|128", "bf16|fp8": the values `option` flavours suites with, the default first.
std::string alternatives(const ShapeOption& option) {
  std::string out;
  for (const long long v : flavour_values(option)) {
    if (!out.empty()) out += '|';
    out += option.choices.empty() ? std::to_string(v) : option.choices[size_t(v)];
  }
  return out;
}

}  // namespace

Status check_suite_request(const OpBench& op, const SuiteRequest& request) {
  const std::vector<std::string> names = op.suite_names();
  if (std::find(names.begin(), names.end(), request.name) == names.end()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    return Status::not_found("unknown suite '" + request.name + "'; " + op.name() + " suites: " + known);
  }
  const std::vector<const ShapeOption*> options = flavour_options(op);
  for (const auto& [name, value] : request.flavours) {
    const auto o = std::find_if(options.begin(), options.end(), [&](const ShapeOption* x) { return x->name == name; });
    if (o == options.end())
      return Status::invalid_argument("--" + name + ": not an option of " + op.name() + " suites");
    const std::vector<long long> values = flavour_values(**o);
    if (std::find(values.begin(), values.end(), value) == values.end())
      return Status::invalid_argument("--" + name + ": " + op.name() + " suites come in " + alternatives(**o) +
                                      ", got " + std::to_string(value));
  }
  return Status::ok();
}

std::vector<long long> flavour_values(const ShapeOption& option) {
  if (option.choices.empty()) return option.suite_values;
  std::vector<long long> values;
  for (size_t i = 0; i < option.choices.size(); ++i) values.push_back((long long)i);
  return values;
}

std::vector<SuiteRequest> every_suite_request(const OpBench& op) {
  std::vector<SuiteRequest> requests;
  for (const std::string& name : op.suite_names()) requests.push_back({name, {}});
  for (const ShapeOption* o : flavour_options(op)) {
    std::vector<SuiteRequest> more;
    for (const long long v : flavour_values(*o))
      for (const SuiteRequest& r : requests) {
        SuiteRequest f = r;
        f.flavours[o->name] = v;
        more.push_back(std::move(f));
      }
    requests = std::move(more);
  }
  return requests;
}

std::string suite_label(const OpBench& op, const SuiteRequest& request) {
  std::string label = request.name;
  for (const ShapeOption* o : flavour_options(op)) {
    const auto v = request.flavours.find(o->name);
    if (v == request.flavours.end()) continue;
    const bool choice = !o->choices.empty() && v->second >= 0 && v->second < (long long)o->choices.size();
    if (choice && v->second == 0) continue;  // the default format says nothing
    label += " --" + o->name + " " + (choice ? o->choices[size_t(v->second)] : std::to_string(v->second));
  }
  return label;
}

std::string suite_summary(const OpBench& op) {
  std::string out;
  for (const std::string& s : op.suite_names()) out += " " + s;
  std::string options;
  for (const ShapeOption* o : flavour_options(op)) {
    options += options.empty() ? " (" : ", ";
    options += "--" + o->name + " " + alternatives(*o);
  }
  return options.empty() ? out : out + options + ")";
}

}  // namespace mlakit

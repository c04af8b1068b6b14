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

std::string plain_flavour(const ShapeOption& option) {
  return option.choices.empty() ? std::to_string(option.fallback) : option.choices.front();
}

std::string flavour_suffix(const ShapeOption& option, const std::string& value) {
  if (value == plain_flavour(option)) return std::string();
  std::string part = "-";
  part += option.flavour_prefix;
  part += value;
  return part;
}

bool is_whole_number(const std::string& v) {
  return !v.empty() && v.size() < 10 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

namespace {

// Strips `option`'s part from the end of `name`, setting `value`; false when there is none.
bool strip_flavour(const ShapeOption& option, std::string* name, std::string* value) {
  const size_t dash = name->rfind('-');
  if (dash == std::string::npos || dash == 0) return false;
  const std::string part = name->substr(dash + 1);
  if (part.compare(0, option.flavour_prefix.size(), option.flavour_prefix) != 0) return false;
  const std::string v = part.substr(option.flavour_prefix.size());
  const bool known = option.choices.empty()
                         ? is_whole_number(v)
                         : std::find(option.choices.begin() + 1, option.choices.end(), v) != option.choices.end();
  if (!known) return false;
  *value = v;
  name->resize(dash);
  return true;
}

}  // namespace

std::string split_flavours(const OpBench& op, const std::string& suite, std::map<std::string, std::string>* values) {
  std::string base = suite;
  const std::vector<const ShapeOption*> options = flavour_options(op);
  for (auto it = options.rbegin(); it != options.rend(); ++it) {
    std::string value;
    if (strip_flavour(**it, &base, &value) && values != nullptr) (*values)[(*it)->name] = value;
  }
  return base;
}

std::string suite_summary(const OpBench& op) {
  std::vector<std::string> plain;
  std::map<std::string, std::vector<std::string>> parts;  // option -> the parts seen, in order
  for (const std::string& s : op.suite_names()) {
    std::map<std::string, std::string> values;
    const std::string base = split_flavours(op, s, &values);
    if (std::find(plain.begin(), plain.end(), base) == plain.end()) plain.push_back(base);
    for (const ShapeOption* o : flavour_options(op)) {
      const auto v = values.find(o->name);
      if (v == values.end()) continue;
      std::vector<std::string>& seen = parts[o->name];
      const std::string part = flavour_suffix(*o, v->second);
      if (std::find(seen.begin(), seen.end(), part) == seen.end()) seen.push_back(part);
    }
  }
  std::string out;
  for (const std::string& p : plain) {
    out += ' ';
    out += p;
  }
  std::string flavours;
  for (const ShapeOption* o : flavour_options(op)) {
    const auto seen = parts.find(o->name);
    if (seen == parts.end()) continue;
    std::string alternatives;
    for (const std::string& part : seen->second) {
      if (!alternatives.empty()) alternatives += '|';
      alternatives += part;
    }
    if (!flavours.empty()) flavours += ", then ";
    flavours += alternatives;
    flavours += " (--";
    flavours += o->name;
    flavours += ')';
  }
  if (!flavours.empty()) {
    out += ", each also ";
    out += flavours;
  }
  return out;
}

}  // namespace mlakit

#include "common.h"

#include <cstdio>
#include <utility>
#include <vector>

#include "runtime/registry.h"

namespace mlakit::cli {

bool select_op(Args& args, const std::string& positional, const std::string& kernel_key, const std::string& suite,
               Selection* out) {
  *out = Selection{};
  const OpBench* suite_op = suite.empty() ? nullptr : op_bench_of_suite(suite);
  if (!suite.empty() && suite_op == nullptr) {
    std::string hint;  // a name with a flavour in it ("dsa-edge-h64-fp8"): the flavours are options
    for (const OpBench* op : op_benches())
      for (const std::string& known : op->suite_names())
        if (suite.rfind(known + "-", 0) == 0 && !flavour_options(*op).empty()) {
          hint = "; a suite's flavours are options: --suite " + known;
          for (const ShapeOption* o : flavour_options(*op)) hint += " --" + o->name + " ...";
        }
    args.error("--suite " + suite + ": no such suite (known:" + suite_names_of_all_ops() + ")" + hint);
    return false;
  }
  const OpBench* named_op = positional.empty() ? nullptr : find_op_bench(positional);
  if (!positional.empty() && !named_op && !kernel_key.empty()) {
    args.error("'" + positional + "' and --kernel " + kernel_key + ": name the kernel once");
    return false;
  }
  const std::string key = !kernel_key.empty() ? kernel_key : named_op ? "" : positional;
  if (!key.empty()) {
    out->kernel = find_kernel(key);
    if (out->kernel == nullptr) {
      args.error("kernel '" + key + "' is not registered (known:" + kernel_keys() + "; ops:" + op_names() + ")");
      return false;
    }
    const OpBench* kernel_op = find_op_bench(out->kernel->info().op);
    if (kernel_op == nullptr) {
      args.error("kernel '" + key + "': the workbench has no op '" + out->kernel->info().op + "'");
      return false;
    }
    if (named_op && named_op != kernel_op) {
      args.error("kernel '" + key + "' is a " + kernel_op->name() + " kernel, not " + named_op->name());
      return false;
    }
    named_op = kernel_op;
  }
  if (named_op && suite_op && named_op != suite_op) {
    args.error("suite '" + suite + "' is a " + suite_op->name() + " suite, not " + named_op->name());
    return false;
  }
  out->op = named_op ? named_op : suite_op ? suite_op : op_benches().front();
  return true;
}

void declare_suite_choices(Args& args, std::map<std::string, std::string>* values) {
  for (const OpBench* op : op_benches())
    for (const ShapeOption& s : op->shape_options()) {
      if (!s.flavours_suites || values->count(s.name)) continue;
      if (s.choices.empty()) args.text("--" + s.name, &(*values)[s.name]);  // an integer axis: checked when picked
      else args.choice("--" + s.name, &(*values)[s.name], s.choices);
    }
}

namespace {

// The op's option `name` that flavours suites; null when it has none.
const ShapeOption* suite_choice(const OpBench& op, const std::string& name) {
  for (const ShapeOption& s : op.shape_options())
    if (s.name == name && s.flavours_suites) return &s;
  return nullptr;
}

// " dsa_decode": the ops whose suites option `name` flavours.
std::string ops_with_choice(const std::string& name) {
  std::string ops;
  for (const OpBench* op : op_benches())
    if (suite_choice(*op, name)) ops += " " + op->name();
  return ops;
}

}  // namespace

bool suite_request(Args& args, const OpBench& op, const std::string& suite,
                   const std::map<std::string, std::string>& values, bool trace, SuiteRequest* out) {
  out->name = suite.empty() && !op.suite_names().empty() ? op.suite_names().front() : suite;
  out->flavours.clear();
  for (const auto& [name, value] : values) {
    if (!args.given("--" + name)) continue;
    const ShapeOption* option = suite_choice(op, name);
    if (option == nullptr) {
      args.error("--" + name + ": not an option of " + op.name() + " suites (ops whose suites take --" + name + ":" +
                 ops_with_choice(name) + ")");
      return false;
    }
    if (trace) {
      args.error("--" + name + " " + value + ": a trace's workloads keep the format they are read in; give --suite");
      return false;
    }
    long long v = 0;
    if (!option->choices.empty()) {
      v = std::find(option->choices.begin(), option->choices.end(), value) - option->choices.begin();
    } else if (value.empty() || value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos) {
      args.error("--" + name + ": expected a whole number, got '" + value + "'");
      return false;
    } else {
      v = std::stoll(value);
    }
    out->flavours[name] = v;
  }
  if (trace) return true;
  if (const Status s = check_suite_request(op, *out); !s.is_ok()) {
    args.error((s.code() == Code::kNotFound ? "--suite: " : "") + s.message());
    return false;
  }
  return true;
}

Status dry_target(const KernelEntry& kernel, PlanTarget* target) {
  DeviceFacts preferred;
  if (find_known_device(kDryPlanDevice, &preferred).is_ok() && plan_target(kernel, preferred, target).is_ok())
    return Status::ok();
  for (const DeviceFacts& facts : known_devices())
    if (plan_target(kernel, facts, target).is_ok()) return Status::ok();
  return Status::unsupported(kernel.info().key + ": no known chip runs its arch " + kernel.info().arch.describe());
}

int fail(const std::string& message, int exit_code) {
  std::fflush(stdout);  // what was printed before the error stays before it in a shared log
  std::fprintf(stderr, "mlakit: %s\n", message.c_str());
  return exit_code;
}

}  // namespace mlakit::cli

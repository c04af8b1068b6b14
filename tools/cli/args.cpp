// Args: one command's command line through CLI11, with mlakit's messages and exit code.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "cli.h"

namespace mlakit::cli {
namespace {

// "--x" -> "x"; "-x" -> "x".
std::string bare(const std::string& name) {
  const size_t first = name.find_first_not_of('-');
  return first == std::string::npos ? "" : name.substr(first);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// A value that starts with "--" is an option the user meant, not a value: `--tiling --check`.
std::string not_an_option(const std::string& value) {
  return value.rfind("--", 0) == 0 && value.size() > 2 ? "needs a value, got the option '" + value + "'" : "";
}

// The checks run on each value (CLI11 names the option before the message).
CLI::Validator value_check() {
  return CLI::Validator([](std::string& v) { return not_an_option(v); }, "VALUE");
}

CLI::Validator integer_check(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        if (std::string e = not_an_option(v); !e.empty()) return e;
        errno = 0;
        char* end = nullptr;
        const long long x = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || errno != 0) return "expected an integer, got '" + v + "'";
        if (x < lo || x > hi)
          return "expected a value in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v;
        v = std::to_string(x);  // CLI11 converts with base 0: "010" would be 8
        return "";
      },
      "INT");
}

CLI::Validator choice_check(const std::vector<std::string>& choices) {
  return CLI::Validator(
      [choices](std::string& v) -> std::string {
        if (std::string e = not_an_option(v); !e.empty()) return e;
        if (std::find(choices.begin(), choices.end(), v) != choices.end()) return "";
        std::string list;
        for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
        return "expected one of " + list + ", got '" + v + "'";
      },
      "CHOICE");
}

// CLI11's messages for what can only be found while parsing, in mlakit's words.
std::string parse_error_message(const CLI::ParseError& e) {
  const std::string what = e.what();
  const std::string name = what.substr(0, what.find(':'));
  if (what.find(" required ") != std::string::npos && what.find(" missing") != std::string::npos)
    return "option " + name + " needs a value";
  return what;
}

}  // namespace

Args::Args(std::string command, std::vector<std::string> argv)
    : command_(std::move(command)), argv_(std::move(argv)), app_(std::make_unique<CLI::App>("mlakit " + command_)) {
  app_->set_help_flag();  // our usage texts, not CLI11's
  app_->allow_extras(true);  // unknown arguments are collected and reported by report_extras()
  app_->add_flag("-h,--help", help_);
}

Args::~Args() = default;

void Args::positional(const std::string& name, std::string* out) {
  app_->add_option(name, *out);
  has_positional_ = true;
}

void Args::flag(const std::string& name, bool* out) {
  app_->add_flag(name, *out)->disable_flag_override();
  names_.push_back(name);
  flags_.push_back(name);
}

// CLI11 keeps every occurrence of an option among its results (count()), whatever the policy:
// reject_repeats() names a repeat from them. TakeLast only decides what `out` receives.
void Args::text(const std::string& name, std::string* out) {
  app_->add_option(name, *out)->check(value_check())->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  names_.push_back(name);
  single_.push_back(name);
}

void Args::integer(const std::string& name, long long* out, long long lo, long long hi) {
  app_->add_option(name, *out)->transform(integer_check(lo, hi))->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  names_.push_back(name);
  single_.push_back(name);
}

void Args::choice(const std::string& name, std::string* out, const std::vector<std::string>& choices) {
  app_->add_option(name, *out)->check(choice_check(choices))->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  names_.push_back(name);
  single_.push_back(name);
}

bool Args::given(const std::string& name) const {
  const CLI::Option* o = app_->get_option_no_throw(name);
  return o != nullptr && o->count() > 0;
}

// --check=0 used to turn checking on: a flag given a value is refused, whatever the value.
void Args::reject_flag_values() {
  for (const std::string& a : argv_) {
    if (a == "--") break;
    const size_t eq = a.find('=');
    if (eq == std::string::npos) continue;
    if (std::find(flags_.begin(), flags_.end(), a.substr(0, eq)) != flags_.end())
      errors_.push_back(a.substr(0, eq) + " takes no value, got '" + a + "'");
  }
}

// `bench --suite dsa-contest --suite dsa-edge` ran dsa-edge: a single-value option given twice is
// an error that names it and the values, whatever they are.
void Args::reject_repeats() {
  for (const std::string& name : single_) {
    const CLI::Option* o = app_->get_option_no_throw(name);
    if (o == nullptr || o->count() < 2) continue;
    std::string values;
    for (const std::string& v : o->results()) values += (values.empty() ? "'" : ", '") + v + "'";
    errors_.push_back(name + " given " + std::to_string(o->count()) + " times (" + values + "); give it once");
  }
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& names) {
  const std::string key = bare(word.substr(0, word.find('=')));
  std::string best;
  size_t best_distance = 3;  // at most two edits away
  for (const std::string& n : names) {
    const size_t d = edit_distance(key, bare(n));
    if (d < best_distance) {
      best = n;
      best_distance = d;
    }
  }
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

std::string Args::suggest(const std::string& unknown) const { return did_you_mean(unknown, names_); }

RootLine parse_root(const std::vector<std::string>& argv) {
  RootLine line;
  CLI::App root{"mlakit"};
  root.set_help_flag();
  root.add_flag("-h,--help", line.help)->disable_flag_override();
  root.add_flag("--version", line.version)->disable_flag_override();
  root.prefix_command();  // the first positional (the command) and everything after it stay unparsed
  try {
    root.parse(std::vector<std::string>(argv.rbegin(), argv.rend()));  // CLI11 reads from the back
  } catch (const CLI::ParseError& e) {
    line.error = e.what();
    return line;
  }
  line.rest = root.remaining();
  if (!line.rest.empty() && line.rest[0].rfind("-", 0) == 0)
    line.error = "unknown option " + line.rest[0] + did_you_mean(line.rest[0], {"--help", "--version"});
  return line;
}

// Unknown options first: each one changes how the arguments after it read.
void Args::report_extras() {
  std::vector<std::string> extras = app_->remaining();
  // CLI11 keeps the end-of-options marker among the extras; it is no mistake.
  extras.erase(std::remove(extras.begin(), extras.end(), "--"), extras.end());
  std::stable_partition(extras.begin(), extras.end(), [](const std::string& a) { return a.rfind("-", 0) == 0; });
  for (const std::string& a : extras) {
    if (a.rfind("-", 0) == 0)
      errors_.push_back("unknown option " + a.substr(0, a.find('=')) + suggest(a));
    else
      errors_.push_back("unexpected argument '" + a + "'" +
                        (has_positional_ ? " (at most one op or kernel key)" : ""));
  }
}

bool Args::parse() {
  reject_flag_values();
  std::string parse_error;
  try {
    app_->parse(std::vector<std::string>(argv_.rbegin(), argv_.rend()));  // CLI11 reads from the back
  } catch (const CLI::ParseError& e) {
    parse_error = parse_error_message(e);
  }
  if (help_) return false;
  std::vector<std::string> flag_errors = std::move(errors_);
  errors_.clear();
  report_extras();
  errors_.insert(errors_.end(), flag_errors.begin(), flag_errors.end());
  reject_repeats();
  // A flag given a value also fails inside CLI11; reject_flag_values() says it better.
  if (!parse_error.empty() && parse_error.find("flag override") == std::string::npos) errors_.push_back(parse_error);
  return errors_.empty();
}

int Args::finish(const std::string& usage) const {
  if (help_) {
    std::printf("%s\n", usage.c_str());
    return kExitOk;
  }
  std::fflush(stdout);  // what was printed before the errors stays before them in a shared log
  for (const auto& e : errors_) std::fprintf(stderr, "mlakit: %s\n", e.c_str());
  std::fprintf(stderr, "\n%s\n", usage.c_str());
  return kExitUsage;
}

}  // namespace mlakit::cli

// The header-only libraries the host code uses (CLI11, nlohmann/json, nvml.h) compile with the
// project's C++ standard and warnings, and do what the code relies on. Prints the versions.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <nvml.h>

int main() {
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) {
      std::printf("FAILED: %s\n", what);
      ++failures;
    }
  };

  // CLI11: an unknown option is an error, not silently ignored.
  CLI::App app{"check"};
  int t = 0;
  app.add_option("--t", t, "tokens");
  const char* good[] = {"mlakit", "--t", "8"};
  app.parse(3, good);
  check(t == 8, "CLI11 parses --t 8");
  bool rejected = false;
  const char* bad[] = {"mlakit", "--tt", "8"};
  try {
    app.parse(3, bad);
  } catch (const CLI::ParseError&) {
    rejected = true;
  }
  check(rejected, "CLI11 rejects the unknown option --tt");

  // nlohmann/json: round trip of a bench-like record.
  const nlohmann::json record = {{"workload", "contest-00"}, {"median_us", 12.5}, {"T", 1}};
  const nlohmann::json back = nlohmann::json::parse(record.dump());
  check(back == record, "nlohmann/json round trip");

  // nvml.h: declarations only (the library is dlopen'ed at run time), the clock-event
  // reasons included.
  check(NVML_SUCCESS == 0, "nvml.h declares nvmlReturn_t");
  const unsigned long long reasons =
      nvmlClocksEventReasonSwThermalSlowdown | nvmlClocksThrottleReasonHwPowerBrakeSlowdown;
  check(reasons != 0, "nvml.h declares the clock-event reasons");

  std::printf("CLI11 %s, nlohmann/json %d.%d.%d, nvml.h API %d\n", CLI11_VERSION,
              NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR, NLOHMANN_JSON_VERSION_PATCH,
              NVML_API_VERSION);
  return failures == 0 ? 0 : 1;
}

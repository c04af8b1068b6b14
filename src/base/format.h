// Numbers as reports, tables and messages print them: one family, so a figure reads the same in the
// CLI, the tuner's log, a validation message and a CSV file.
#pragma once

#include <cstddef>
#include <string>

namespace mlakit {

// Fixed point: format_fixed(12.3456, 2) = "12.35". "" for NaN and infinities (an empty CSV cell).
std::string format_fixed(double x, int decimals);
// Scientific: format_sci(0.015625, 1) = "1.6e-02". "" for NaN and infinities.
std::string format_sci(double x, int digits);
// A duration in microseconds: "12.35 us".
std::string format_us(double us);
// A size in KiB with one decimal: format_kb(232448) = "227.0 KB" (how smem limits are quoted).
std::string format_kb(size_t bytes);
// A size in the largest binary unit below it, one decimal: format_bytes(7.3 * 2^30) = "7.3 GB",
// format_bytes(512) = "512 B" (KB, MB, GB, TB are 2^10, 2^20, 2^30, 2^40 bytes, as format_kb).
std::string format_bytes(double bytes);

}  // namespace mlakit

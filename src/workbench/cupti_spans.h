// CUPTI activity tracing for the timer: which device activities (kernels, memsets, copies) each
// timed call ran, and the span each call covered on the GPU.
//
// Windows: the timer enqueues call i between cupti_window_push(i + 1) and cupti_window_pop(),
// which push/pop an external correlation id on the calling thread. With the runtime and driver
// API activity kinds on, CUPTI emits one external-correlation record (window id -> API
// correlation id) for every API call made in the window; a device activity belongs to window w
// when its correlation id (that of the API call that launched it) maps to w. The L2 flush and
// the busy-wait are launched outside every window, so they never count.
// Fallback grouping, used only when CUPTI emitted no external-correlation record at all: stream
// order. Activities sorted by start; each busy-wait marker kernel opens the next window and
// every non-marker activity after it belongs to that window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlakit/status.h"

namespace mlakit {

enum class ActivityMarker { kNone, kL2Flush, kBusyWait };

struct ActivityRecord {
  uint64_t start_ns = 0, end_ns = 0;  // CUPTI timestamps (0 = not recorded)
  uint32_t correlation_id = 0;        // of the API call that launched it
  ActivityMarker marker = ActivityMarker::kNone;
};

struct CorrelationRecord {
  uint32_t correlation_id = 0;
  uint64_t window_id = 0;  // 1..num_windows
};

struct WindowSpans {
  std::vector<double> spans_us;  // per window: last end - first start
  std::vector<int> activities;   // per window: device activities counted
  bool by_stream_order = false;  // the fallback grouping was used
};

// Pure grouping (no CUPTI calls): fails naming the window when a window has no device activity
// or a counted activity has no timestamps.
Status group_window_spans(const std::vector<ActivityRecord>& activities,
                          const std::vector<CorrelationRecord>& correlations, int num_windows,
                          WindowSpans* out);

// --- the CUPTI session (only one at a time per process; the timer serializes) -------------------
// Registers the buffer callbacks (once per process), clears collected records and enables the
// activity kinds. kUnsupported when built without CUPTI; kDeviceError naming the CUPTI call.
Status cupti_begin();
Status cupti_window_push(uint64_t window_id);
Status cupti_window_pop();
// Disables the activity kinds and flushes every buffer (call after synchronizing the stream),
// then groups into `num_windows` windows.
Status cupti_end(int num_windows, WindowSpans* out);
// Disables the activity kinds and drops collected records (error paths).
void cupti_abort();
// Ok when this build has CUPTI; else the reason.
Status cupti_built();

}  // namespace mlakit

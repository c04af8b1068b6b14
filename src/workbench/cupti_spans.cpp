// CUPTI activity tracing for the timer (see cupti_spans.h for the window design).
#include "workbench/cupti_spans.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "kernels/workbench/timing_kernels.h"

#if defined(MLAKIT_HAVE_CUPTI)
#include <cupti.h>
#endif

namespace mlakit {

Status group_window_spans(const std::vector<ActivityRecord>& activities,
                          const std::vector<CorrelationRecord>& correlations, int num_windows,
                          WindowSpans* out) {
  *out = WindowSpans{};
  if (num_windows <= 0)
    return Status::invalid_argument("num_windows: expected > 0, got " + std::to_string(num_windows));
  std::vector<uint64_t> first(num_windows, UINT64_MAX), last(num_windows, 0);
  std::vector<int> count(num_windows, 0);
  auto add = [&](int w, const ActivityRecord& a) -> Status {
    if (a.start_ns == 0 || a.end_ns == 0 || a.end_ns < a.start_ns)
      return Status::device_error("CUPTI returned an activity of call " + std::to_string(w) +
                                  " without valid timestamps (start " +
                                  std::to_string(a.start_ns) + ", end " +
                                  std::to_string(a.end_ns) + ")");
    first[w] = std::min(first[w], a.start_ns);
    last[w] = std::max(last[w], a.end_ns);
    ++count[w];
    return Status::ok();
  };

  if (!correlations.empty()) {
    std::map<uint32_t, int> window_of;  // API correlation id -> window index
    for (const CorrelationRecord& c : correlations)
      if (c.window_id >= 1 && c.window_id <= uint64_t(num_windows))
        window_of[c.correlation_id] = int(c.window_id - 1);
    for (const ActivityRecord& a : activities) {
      if (a.marker != ActivityMarker::kNone) continue;
      auto it = window_of.find(a.correlation_id);
      if (it != window_of.end()) MLAKIT_RETURN_IF_ERROR(add(it->second, a));
    }
  } else {
    out->by_stream_order = true;
    std::vector<const ActivityRecord*> sorted;
    for (const ActivityRecord& a : activities) sorted.push_back(&a);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const ActivityRecord* x, const ActivityRecord* y) {
                       return x->start_ns < y->start_ns;
                     });
    int window = -1;
    for (const ActivityRecord* a : sorted) {
      if (a->marker == ActivityMarker::kBusyWait) {
        ++window;
        if (window >= num_windows)
          return Status::device_error("CUPTI shows more busy-wait markers than the " +
                                      std::to_string(num_windows) + " timed calls");
        continue;
      }
      if (a->marker != ActivityMarker::kNone || window < 0) continue;
      MLAKIT_RETURN_IF_ERROR(add(window, *a));
    }
  }
  for (int w = 0; w < num_windows; ++w) {
    if (count[w] == 0)
      return Status::device_error("CUPTI recorded no device activity for timed call " +
                                  std::to_string(w) + std::string(out->by_stream_order
                                                                      ? " (grouped by stream order)"
                                                                      : " (grouped by correlation id)"));
    out->spans_us.push_back(double(last[w] - first[w]) * 1e-3);
    out->activities.push_back(count[w]);
  }
  return Status::ok();
}

#if defined(MLAKIT_HAVE_CUPTI)
namespace {

// Records collected by the buffer-completed callback (which CUPTI may call on its own thread).
struct Collected {
  std::mutex mutex;
  std::vector<ActivityRecord> activities;
  std::vector<CorrelationRecord> correlations;
  size_t dropped = 0;
};
Collected& collected() {
  static Collected c;
  return c;
}

// 8 MiB per buffer: one record is ~100-200 bytes, a timed pass makes a few thousand.
constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kRecordAlignment = 8;

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,               CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,               CUPTI_ACTIVITY_KIND_MEMSET,
};

std::string cupti_error(const char* what, CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return std::string(what) + " failed: " + (s ? s : "CUPTI error " + std::to_string(int(r)));
}

ActivityMarker marker_of(const char* kernel_name) {
  if (!kernel_name) return ActivityMarker::kNone;
  if (std::strcmp(kernel_name, kernels::kL2FlushKernelName) == 0) return ActivityMarker::kL2Flush;
  if (std::strcmp(kernel_name, kernels::kBusyWaitKernelName) == 0) return ActivityMarker::kBusyWait;
  return ActivityMarker::kNone;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t,
                               size_t valid_size) {
  std::vector<ActivityRecord> acts;
  std::vector<CorrelationRecord> corrs;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        acts.push_back({k->start, k->end, k->correlationId, marker_of(k->name)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        acts.push_back({m->start, m->end, m->correlationId, ActivityMarker::kNone});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        acts.push_back({m->start, m->end, m->correlationId, ActivityMarker::kNone});
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          corrs.push_back({e->correlationId, e->externalId});
        break;
      }
      default:
        break;  // API records: only needed for CUPTI to emit the external correlations
    }
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped);
  std::free(buffer);
  Collected& c = collected();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.activities.insert(c.activities.end(), acts.begin(), acts.end());
  c.correlations.insert(c.correlations.end(), corrs.begin(), corrs.end());
  c.dropped += dropped;
}

Status register_once() {
  static Status registered = [] {
    const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    return r == CUPTI_SUCCESS ? Status::ok()
                              : Status::device_error(cupti_error("cuptiActivityRegisterCallbacks", r));
  }();
  return registered;
}

void disable_all() {
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
}

void clear_collected() {
  Collected& c = collected();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.activities.clear();
  c.correlations.clear();
  c.dropped = 0;
}

}  // namespace

Status cupti_built() { return Status::ok(); }

Status cupti_begin() {
  MLAKIT_RETURN_IF_ERROR(register_once());
  // Drain whatever an earlier session left behind, then start clean.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  clear_collected();
  for (CUpti_ActivityKind k : kKinds) {
    const CUptiResult r = cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) {
      disable_all();
      return Status::device_error(cupti_error(
          ("cuptiActivityEnable(kind " + std::to_string(int(k)) + ")").c_str(), r));
    }
  }
  return Status::ok();
}

Status cupti_window_push(uint64_t window_id) {
  const CUptiResult r =
      cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, window_id);
  return r == CUPTI_SUCCESS
             ? Status::ok()
             : Status::device_error(cupti_error("cuptiActivityPushExternalCorrelationId", r));
}

Status cupti_window_pop() {
  uint64_t last = 0;
  const CUptiResult r =
      cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  return r == CUPTI_SUCCESS
             ? Status::ok()
             : Status::device_error(cupti_error("cuptiActivityPopExternalCorrelationId", r));
}

Status cupti_end(int num_windows, WindowSpans* out) {
  disable_all();
  // Completed buffers first; the forced flush then hands over partly filled ones (every record
  // is complete by now: the caller synchronized the stream).
  CUptiResult r = cuptiActivityFlushAll(0);
  if (r == CUPTI_SUCCESS) r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) {
    clear_collected();
    return Status::device_error(cupti_error("cuptiActivityFlushAll", r));
  }
  std::vector<ActivityRecord> acts;
  std::vector<CorrelationRecord> corrs;
  size_t dropped = 0;
  {
    Collected& c = collected();
    std::lock_guard<std::mutex> lock(c.mutex);
    acts.swap(c.activities);
    corrs.swap(c.correlations);
    dropped = c.dropped;
    c.dropped = 0;
  }
  if (dropped > 0)
    return Status::device_error("CUPTI dropped " + std::to_string(dropped) +
                                " activity records (buffers full)");
  return group_window_spans(acts, corrs, num_windows, out);
}

void cupti_abort() {
  disable_all();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  clear_collected();
}

#else  // !MLAKIT_HAVE_CUPTI

Status cupti_built() {
  return Status::unsupported("mlakit was built without CUPTI (CUDA::cupti not found)");
}
Status cupti_begin() { return cupti_built(); }
Status cupti_window_push(uint64_t) { return cupti_built(); }
Status cupti_window_pop() { return cupti_built(); }
Status cupti_end(int, WindowSpans*) { return cupti_built(); }
void cupti_abort() {}

#endif

}  // namespace mlakit

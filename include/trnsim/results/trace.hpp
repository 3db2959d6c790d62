// Chrome / Perfetto timelines (the JSON "Trace Event Format" that chrome://tracing and
// ui.perfetto.dev open): one process per rank, one thread per lane, complete ("X") events in
// microseconds.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/results/output_files.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::results {

struct TraceSlice {
    std::int64_t process = 0; ///< a rank
    std::int32_t thread = 0;  ///< a lane (index into TraceData::threads)
    SimTime start;
    Duration duration;
    std::uint32_t name = 0;   ///< index into TraceData::names
};

struct TraceData {
    std::string process_label = "rank"; ///< processes are named "<label> <process>"
    std::vector<std::string> threads;   ///< lane names ("compute", ...)
    std::vector<std::string> names;
    std::vector<TraceSlice> slices;
    std::string title;                  ///< stored in the file's metadata
};

/// Writes the timeline under the temporary name of `path` and returns it complete, to be
/// committed (output_files.hpp). Throws std::runtime_error when it cannot be written (the
/// temporary is then removed).
PendingFile stage_chrome_trace(const std::string& path, const TraceData& trace);

/// stage_chrome_trace, then commit.
void write_chrome_trace(const std::string& path, const TraceData& trace);

} // namespace trnsim::results

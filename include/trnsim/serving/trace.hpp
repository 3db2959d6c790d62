// The Azure LLM inference trace reader (Azure Public Dataset, "AzureLLMInferenceTrace" 2023;
// the project ships both traces in data/azure-llm-inference-2023/ with their attribution).
//
// Format: a CSV file with the header `TIMESTAMP,ContextTokens,GeneratedTokens` and one row per
// request in arrival order: the invocation time `YYYY-MM-DD HH:MM:SS.fffffff` (UTC, 1 to 9
// fraction digits, or none), the prompt tokens and the generated tokens (non-negative
// integers). Lines may end in LF or CRLF; the last line may lack its newline.
//
// Arrival times are made relative to the first row and divided by the speed-up: a speed-up of
// 2 replays the trace at twice its rate. Token counts of 0 are kept as read (the request
// source raises them to its minimum of 1).
//
// Errors are InputError with the key path `workload.requests.arrival.trace` and a message that
// starts with `FILE:LINE:` (the 1-based line of the file; line 1 is the header; `FILE:` alone
// for a file that cannot be opened or read): an empty file, a wrong header, a row with too few
// or too many columns, an empty, non-numeric, negative or too large token count, a malformed
// timestamp (bad digits, separators or calendar values), a timestamp earlier than the row
// before, and a file with no rows. A speed-up that is not a positive finite number is an
// InputError at `workload.requests.arrival.speedup`.
//
// Speed: the file is read in one piece and parsed with pointer scans (no stream per field):
// the 19,365-row conversation trace parses in about a millisecond.
#pragma once

#include "trnsim/core/units.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::serving {

inline constexpr const char* kTraceKey = "workload.requests.arrival.trace";

struct AzureTrace {
    std::string file;                     ///< as given (for messages)
    std::vector<Duration> arrival; ///< after the first row's, divided by the speed-up
    std::vector<std::int64_t> input_tokens;
    std::vector<std::int64_t> output_tokens;
    /// Arrival of the last row (ns after the first); 0 for one row.
    std::int64_t span_ns() const { return arrival.empty() ? 0 : arrival.back().ns(); }
    std::size_t size() const { return arrival.size(); }
};

/// Reads and parses `path`.
AzureTrace read_azure_trace(const std::string& path, double speedup = 1.0);

/// Parses trace text; `name` stands for the file in messages.
AzureTrace parse_azure_trace(std::string_view text, const std::string& name,
                             double speedup = 1.0);

} // namespace trnsim::serving

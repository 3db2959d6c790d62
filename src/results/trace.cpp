#include "trnsim/results/trace.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <stdexcept>

namespace trnsim::results {

PendingFile stage_chrome_trace(const std::string& path, const TraceData& trace) {
    using nlohmann::json;
    json events = json::array();
    std::set<std::int64_t> processes;
    for (const TraceSlice& s : trace.slices) {
        processes.insert(s.process);
    }
    // Metadata events name the processes and threads and keep their order.
    for (const std::int64_t p : processes) {
        events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", p},
                          {"args", {{"name", trace.process_label + " " + std::to_string(p)}}}});
        events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", p},
                          {"args", {{"sort_index", p}}}});
        for (std::size_t t = 0; t < trace.threads.size(); ++t) {
            events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", p}, {"tid", t},
                              {"args", {{"name", trace.threads[t]}}}});
            events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", p}, {"tid", t},
                              {"args", {{"sort_index", t}}}});
        }
    }
    for (const TraceSlice& s : trace.slices) {
        if (s.name >= trace.names.size()) {
            throw std::invalid_argument("trace: a slice names no known event");
        }
        events.push_back({{"ph", "X"},
                          {"name", trace.names[s.name]},
                          {"pid", s.process},
                          {"tid", s.thread},
                          {"ts", static_cast<double>(s.start.ns()) / 1e3},
                          {"dur", static_cast<double>(s.duration.ns()) / 1e3}});
    }
    json doc = {{"traceEvents", std::move(events)},
                {"displayTimeUnit", "ms"},
                {"otherData", {{"title", trace.title}}}};

    PendingFile pending(path);
    {
        std::ofstream out(pending.temporary());
        if (!out) {
            throw std::runtime_error("cannot write trace file '" + path + "'");
        }
        out << doc.dump() << "\n";
        out.flush();
        if (!out) {
            throw std::runtime_error("cannot write trace file '" + path + "'");
        }
    }
    pending.complete();
    return pending;
}

void write_chrome_trace(const std::string& path, const TraceData& trace) {
    stage_chrome_trace(path, trace).commit();
}

} // namespace trnsim::results

// The `fleet:` form's job trace (docs/fleet.md, "A job trace"): one submitted job a line.
#include "csv_lines.hpp"
#include "fleet_load_parts.hpp"

#include "trnsim/config/units.hpp"
#include "trnsim/core/error.hpp"

#include <map>

namespace trnsim::config::detail {

namespace {

constexpr std::int64_t kMaxTraceSteps = std::int64_t{1} << 40; // as workload.steps

} // namespace

std::vector<FleetTraceJob> read_job_trace(const std::filesystem::path& file,
                                          const std::string& text,
                                          const std::vector<FleetJobClass>& classes) {
    const std::string key = "fleet.trace";
    const std::string name = file.string();
    std::map<std::string, std::size_t> class_index;
    std::string class_list;
    for (std::size_t c = 0; c < classes.size(); ++c) {
        class_index[classes[c].name] = c;
        class_list += (class_list.empty() ? "" : ", ") + classes[c].name;
    }
    enum Column { submit, job_class, steps, duration, priority };
    const std::map<std::string, Column> known = {{"submit", submit},
                                                 {"class", job_class},
                                                 {"steps", steps},
                                                 {"duration", duration},
                                                 {"priority", priority}};
    std::vector<Column> columns;
    std::vector<FleetTraceJob> jobs;
    for (const CsvLine& l : csv_lines(text)) {
        const int number = l.number;
        const auto& fields = l.fields;
        const auto at = [&](int column) { return SourceLocation{name, number, column}; };
        if (columns.empty()) {
            bool has_submit = false, has_class = false;
            for (const auto& [field, column] : fields) {
                const auto k = known.find(field);
                if (k == known.end()) {
                    throw InputError(key, "unknown column " + quote_visible(field) +
                                              " (expected submit, class, steps, duration, priority)",
                                     at(column));
                }
                if (std::find(columns.begin(), columns.end(), k->second) != columns.end()) {
                    throw InputError(key, "column " + field + " appears twice", at(column));
                }
                has_submit = has_submit || k->second == submit;
                has_class = has_class || k->second == job_class;
                columns.push_back(k->second);
            }
            if (!has_submit || !has_class) {
                throw InputError(key, "the header line must name the submit and class columns",
                                 at(1));
            }
            continue;
        }
        if (fields.size() != columns.size()) {
            throw InputError(key, "expected " + std::to_string(columns.size()) +
                                      " fields as the header names, got " +
                                      std::to_string(fields.size()),
                             at(1));
        }
        FleetTraceJob j;
        j.line = number;
        for (std::size_t i = 0; i < fields.size(); ++i) {
            const auto& [value, column] = fields[i];
            try {
                switch (columns[i]) {
                case submit:
                    j.submit = parse_duration(value);
                    if (j.submit < Duration::zero()) {
                        throw InputError(key, "a submission time cannot be negative",
                                         at(column));
                    }
                    if (!jobs.empty() && j.submit < jobs.back().submit) {
                        throw InputError(key, "submission times must not decrease (the line "
                                              "before submits later)",
                                         at(column));
                    }
                    break;
                case job_class: {
                    const auto c = class_index.find(value);
                    if (c == class_index.end()) {
                        throw InputError(key, quote_visible(value) + " is not a job class (" +
                                                  class_list + ")",
                                         at(column));
                    }
                    j.job_class = c->second;
                    break;
                }
                case steps:
                    if (!value.empty()) {
                        j.steps = parse_count(value);
                        if (j.steps < 1 || j.steps > kMaxTraceSteps) {
                            throw InputError(key, "a job runs 1 to 2^40 steps", at(column));
                        }
                    }
                    break;
                case duration:
                    if (!value.empty()) {
                        j.duration = parse_duration(value);
                        if (j.duration <= Duration::zero()) {
                            throw InputError(key, "a job's duration must be positive",
                                             at(column));
                        }
                    }
                    break;
                case priority:
                    if (!value.empty()) {
                        const std::int64_t p = parse_count(value);
                        if (p < 0 || p > kMaxPriority) {
                            throw InputError(key, "a priority is 0 to " +
                                                      std::to_string(kMaxPriority),
                                             at(column));
                        }
                        j.priority = static_cast<int>(p);
                    }
                    break;
                }
            } catch (const UnitError& e) {
                throw InputError(key, e.what(), at(column));
            }
        }
        if (j.steps > 0 && j.duration > Duration::zero()) {
            throw InputError(key, "a job's length is its steps or its duration, not both",
                             at(1));
        }
        jobs.push_back(j);
    }
    if (columns.empty()) {
        throw InputError(key, "the job trace has no header line (submit,class[,steps]"
                              "[,duration][,priority])",
                         SourceLocation{name, 1, 1});
    }
    return jobs;
}

} // namespace trnsim::config::detail

// The results file of a `tenants:` scenario (docs/results-schema.md, "Tenants"): /summary
// with one row per tenant, and under /tenants/<name>/ each tenant's own file as its workload
// alone would write it (its /summary, its tables, its resolved scenario).
#include "trnsim/report/run_results.hpp"

#include <string>
#include <utility>

namespace trnsim::report {

results::ResultsFile tenants_results(const config::ScenarioSpec& spec,
                                     const sim::TenantsRun& run, const Writer& writer) {
    results::ResultsFile f;
    f.meta = meta(spec, writer);
    add_warnings(f, spec);
    results::Table& s = f.summary;
    s.add_string("tenant", 64);
    s.add_string("workload", 16);
    s.add_string("unit", 16);
    s.add_int("first");
    s.add_int("domains");
    s.add_int("engine_events");
    const std::string unit = spec.cluster.domain_name();
    for (const sim::TenantRun& t : run.tenants) {
        const config::ScenarioSpec& ts = *t.spec;
        const char* kind = std::holds_alternative<sim::TrainingRun>(t.outcome) ? "training"
                                                                               : "inference";
        std::vector<results::Table::Value> row;
        row.emplace_back(std::in_place_type<std::string>, t.name);
        row.emplace_back(std::in_place_type<std::string>, kind);
        row.emplace_back(std::in_place_type<std::string>, unit);
        row.emplace_back(std::in_place_type<std::int64_t>, t.allocation.first);
        row.emplace_back(std::in_place_type<std::int64_t>, t.allocation.domains);
        row.emplace_back(std::in_place_type<std::int64_t>,
                         static_cast<std::int64_t>(t.engine_events));
        s.add_row(row);

        results::ResultsFile own =
            std::holds_alternative<sim::TrainingRun>(t.outcome)
                ? run_results(ts, std::get<sim::TrainingRun>(t.outcome), writer)
                : serving_results(ts, std::get<sim::ServingScenarioRun>(t.outcome), writer);
        const std::string root = "/tenants/" + t.name;
        f.tables.emplace_back(root + "/summary", std::move(own.summary));
        for (auto& [path, table] : own.tables) {
            f.tables.emplace_back(root + path, std::move(table));
        }
        for (auto& [path, text] : own.texts) {
            if (path != "/meta/warnings") { // the scenario's /meta/warnings has them all
                f.texts.emplace_back(root + path, std::move(text));
            }
        }
        f.texts.emplace_back(root + "/scenario", ts.resolved_yaml);
    }
    return f;
}

} // namespace trnsim::report

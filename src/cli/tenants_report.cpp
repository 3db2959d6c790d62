#include "tenants_report.hpp"

#include "report.hpp"
#include "serving_report.hpp"

#include "trnsim/core/format.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <iomanip>
#include <sstream>

namespace trnsim::cli {

namespace {

std::string allocation_text(const config::ScenarioSpec& spec, const cluster::Allocation& a) {
    const char* unit = spec.cluster.counts_ultraservers() ? "UltraServer" : "instance";
    std::string s = fmt::integer(a.domains) + " " + unit + (a.domains == 1 ? "" : "s") + " (" +
                    std::to_string(a.first);
    if (a.domains > 1) {
        s += " to " + std::to_string(a.end() - 1);
    }
    return s + " of " + fmt::integer(spec.cluster.domains()) + ")";
}

} // namespace

void print_tenants_header(std::ostream& out, const config::ScenarioSpec& spec) {
    out << "trnsim: " << spec.name << " (" << spec.source_file << "): "
        << spec.tenants.size() << " tenants on "
        << fmt::integer(spec.cluster.domains())
        << (spec.cluster.counts_ultraservers() ? " UltraServers" : " instances") << " of "
        << spec.hardware.chip.name << "\n";
    for (const config::TenantSpec& t : spec.tenants) {
        out << "  tenant     " << t.name << ": " << to_string(t.scenario->workload_type)
            << " on " << allocation_text(spec, t.allocation) << "\n";
    }
}

void print_tenants(std::ostream& out, const config::ScenarioSpec& spec,
                   const sim::TenantsRun& run) {
    print_tenants_header(out, spec);
    std::ostringstream engine;
    engine << fmt::integer(static_cast<std::int64_t>(run.events)) << " events in "
           << fmt::integer(static_cast<std::int64_t>(run.windows)) << " windows on "
           << run.threads << (run.threads == 1 ? " thread" : " threads") << ", "
           << std::fixed << std::setprecision(2) << run.wall.seconds() << " s";
    out << "  engine     one for all tenants: " << engine.str() << "\n";
    for (const sim::TenantRun& t : run.tenants) {
        out << "\n";
        if (const auto* training = std::get_if<sim::TrainingRun>(&t.outcome)) {
            print_run(out, *t.spec, *training);
        } else {
            out << "trnsim: " << t.spec->name << " (" << t.spec->source_file << ")\n";
            print_serving(out, *t.spec, std::get<sim::ServingScenarioRun>(t.outcome));
        }
    }
}

} // namespace trnsim::cli

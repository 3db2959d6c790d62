#include "reliability_report.hpp"

#include "trnsim/core/format.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace trnsim::cli {

namespace {

using reliability::Estimate;
using reliability::RunSummary;

void line(std::ostream& out, const std::string& label, const std::string& text) {
    out << "  " << label << std::string(label.size() < 11 ? 11 - label.size() : 1, ' ') << text
        << "\n";
}

/// "12.3 h +- 0.4 h" with replications, "12.3 h" without.
template <class F>
std::string with_ci(const Estimate& e, F format) {
    if (!std::isfinite(e.mean)) {
        return "never";
    }
    return e.n > 1 ? format(e.mean) + " +- " + format(e.half_width) : format(e.mean);
}

std::string seconds_ci(const Estimate& e) {
    return with_ci(e, [](double v) { return fmt::seconds(v); });
}

std::string count_ci(const Estimate& e) {
    return with_ci(e, [](double v) { return fmt::fixed(v, v < 100 ? 1 : 0); });
}

std::string components_text(const reliability::RunFacts& f) {
    std::string text;
    for (reliability::ComponentClass c : reliability::kAllClasses) {
        const std::int64_t n = f.components[static_cast<std::size_t>(c)];
        if (n > 0) {
            text += (text.empty() ? "" : ", ") + fmt::integer(n) + " " + reliability::to_string(c);
        }
    }
    return text.empty() ? "none" : text;
}

/// Why the checkpoint interval is what it is, as the summary's parenthesis.
std::string interval_reason(const reliability::RunFacts& f) {
    using reliability::IntervalReason;
    const std::string daly = "Daly's optimum " + fmt::seconds(f.checkpoint_daly.seconds()) +
                             " for a stall of " + fmt::seconds(f.checkpoint_stall.seconds());
    switch (f.checkpoint_interval_reason) {
    case IntervalReason::fixed:
        return "";
    case IntervalReason::daly:
        return " (auto: " + daly + ")";
    case IntervalReason::no_failures:
        return " (auto: nothing interrupts the job)";
    case IntervalReason::one_step:
        return f.checkpoint_daly.seconds() > 0 ? " (auto: " + daly + ", raised to one step)"
                                       : " (raised to one step)";
    case IntervalReason::copy_bound:
        return std::string(f.checkpoint_daly.seconds() > 0 ? " (auto: " + daly + ", raised"
                                                           : " (raised") +
               " to the background copy: a snapshot waits for the previous one's copy)";
    }
    return "";
}

} // namespace

void print_reliability(std::ostream& out, const config::ScenarioSpec& spec,
                       const sim::TrainingRun& run) {
    const RunSummary& r = *run.reliability;
    const auto& f = r.facts;
    const auto& rs = spec.reliability;
    const std::string domain = f.instances_per_domain > 1 ? "UltraServer" : "instance";
    std::string source = rs.preset.empty() ? "failure processes"
                                           : "preset " + rs.preset + " (rates of a GPU cluster)";
    line(out, "failures", source + ": " + components_text(f) + " with processes");
    line(out, "", "job MTBF " +
                      (f.job_failure_rate > 0 ? fmt::seconds(1.0 / f.job_failure_rate)
                                              : std::string("infinite")) +
                      " (everything that stops the job); " + fmt::integer(f.spare_domains) +
                      " spare " + domain + (f.spare_domains == 1 ? "" : "s") + "; recovery " +
                      reliability::to_string(rs.recovery.scope) + ": detect " +
                      fmt::duration(rs.recovery.detection) + ", restart " +
                      fmt::duration(rs.recovery.restart));
    std::string ckpt = std::string(reliability::to_string(rs.checkpoint.mode)) + ", " +
                       fmt::bytes(f.checkpoint_size) + ": stall " +
                       fmt::seconds(f.checkpoint_stall.seconds());
    if (f.checkpoint_background.seconds() > 0) {
        ckpt += rs.checkpoint.mode == reliability::CheckpointMode::async ? " + upload "
                                                                         : " + peer copy ";
        ckpt += fmt::seconds(f.checkpoint_background.seconds());
    }
    ckpt += "; every " +
            (std::isfinite(f.checkpoint_interval.seconds())
                 ? fmt::seconds(f.checkpoint_interval.seconds())
                 : std::string("never")) +
            interval_reason(f) + "; restore " + fmt::seconds(f.restore.seconds());
    line(out, "checkpoint", ckpt);
    const int n = static_cast<int>(r.replications.size());
    std::string how = spec.simulation.duration == Duration::zero()
                          ? "until done"
                          : fmt::duration(spec.simulation.duration);
    how += ", " + std::to_string(n) + " replication" + (n == 1 ? "" : "s") +
           (n > 1 ? " (mean +- 95% interval)" : "");
    line(out, "run", how + ": wall " + seconds_ci(r.estimate("wall_time_s")) + "; ETTR " +
                         with_ci(r.estimate("ettr"), [](double v) { return fmt::percent(v); }) +
                         "; goodput " +
                         with_ci(r.estimate("goodput"), [](double v) { return fmt::count(v); }) +
                         " tokens/s");
    // Interruptions by cause, largest first.
    std::vector<std::size_t> order(r.processes.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return r.mean_interruptions_by_process[a] > r.mean_interruptions_by_process[b];
    });
    std::string causes;
    for (std::size_t i : order) {
        if (r.mean_interruptions_by_process[i] > 0) {
            causes += (causes.empty() ? "" : ", ") + r.processes[i].cause + " " +
                      fmt::fixed(r.mean_interruptions_by_process[i], 1);
        }
    }
    line(out, "interrupts", count_ci(r.estimate("interruptions")) + " of " +
                                count_ci(r.estimate("failures")) + " failures" +
                                (causes.empty() ? "" : ": " + causes));
    line(out, "lost", "work " + seconds_ci(r.estimate("lost_work_s")) + "; downtime " +
                          seconds_ci(r.estimate("downtime_s")) + "; checkpoint stalls " +
                          seconds_ci(r.estimate("checkpoint_overhead_s")));
    const Estimate& done = r.estimate("done");
    if (done.mean < 1.0) {
        line(out, "", fmt::percent(done.mean) + " of the replications finished within the run" +
                          (std::isfinite(run.time_to_train.seconds())
                               ? "; time to train projected from the ETTR"
                               : ""));
    }
    line(out, "", "without failures: " + fmt::seconds(run.ideal_time_to_train.seconds()) +
                      "; engine: " + fmt::integer(f.entities) + " entities, " +
                      fmt::integer(static_cast<std::int64_t>(r.engine_events)) + " events in " +
                      fmt::seconds(r.seconds));
}

} // namespace trnsim::cli

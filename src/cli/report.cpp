#include "report.hpp"

#include "reliability_report.hpp"

#include "trnsim/core/format.hpp"
#include "trnsim/network/collective_spec.hpp"
#include "trnsim/report/run_results.hpp"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <iomanip>
#include <map>
#include <stdexcept>

namespace trnsim::cli {

namespace {

std::string grouped(std::int64_t v) { return fmt::integer(v); }

std::string pad(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string lpad(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

void line(std::ostream& out, const std::string& label, const std::string& text) {
    out << "  " << pad(label, 11) << text << "\n";
}

std::string cluster_text(const config::ScenarioSpec& spec, const workload::Plan& plan) {
    const auto& c = plan.cluster;
    const auto& chip = spec.hardware.chip;
    std::string s;
    if (c.ultraserver_domains()) {
        s += grouped(c.ultraservers()) + " UltraServer" + (c.ultraservers() > 1 ? "s" : "") +
             " = ";
    }
    s += grouped(c.instances()) + " x " + chip.instance.name + " = " + grouped(c.chips()) + " " +
         chip.name + " chips; " + grouped(plan.ranks) + " ranks (LNC=" +
         std::to_string(plan.lnc) + ")";
    return s;
}

bool stages_even(const workload::Plan& plan) {
    return std::all_of(plan.stages.begin(), plan.stages.end(), [&](const auto& st) {
        return st.layers() == plan.stages.front().layers();
    });
}

/// The layers of each stage, runs of equal counts shortened: "7, 8 x14, 7".
std::string stage_layers_text(const workload::Plan& plan) {
    std::string s;
    for (std::size_t i = 0; i < plan.stages.size();) {
        std::size_t j = i;
        while (j < plan.stages.size() && plan.stages[j].layers() == plan.stages[i].layers()) {
            ++j;
        }
        s += (s.empty() ? "" : ", ") + std::to_string(plan.stages[i].layers());
        if (j - i > 1) {
            s += " x" + std::to_string(j - i);
        }
        i = j;
    }
    return s;
}

} // namespace

void print_plan(std::ostream& out, const config::ScenarioSpec& spec, const workload::Plan& plan) {
    const auto& t = plan.training;
    const auto& m = t.model;
    const auto& par = t.parallelism;
    out << "trnsim: " << spec.name << " (" << spec.source_file << ")\n";
    line(out, "cluster", cluster_text(spec, plan));
    std::string model = m.name + ": " + fmt::count(static_cast<double>(plan.stats.total)) +
                        " parameters";
    if (m.is_moe()) {
        model += " (" + fmt::count(static_cast<double>(plan.stats.active)) + " active)";
    }
    model += ", " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) +
             ", " + compute::to_string(t.precision);
    line(out, "model", model);
    std::string batch = grouped(t.global_batch) + " sequences x " + grouped(t.sequence_length) +
                        " tokens = " + fmt::count(static_cast<double>(plan.tokens_per_step)) +
                        " tokens per step; ";
    batch += t.steps > 0 ? grouped(plan.steps) + " steps"
                         : fmt::count(static_cast<double>(t.tokens)) + " tokens = " +
                               grouped(plan.steps) + " steps";
    line(out, "batch", batch);
    std::string p = "tp " + std::to_string(plan.tp);
    if (plan.cp > 1) {
        p += ", cp " + std::to_string(plan.cp);
    }
    p += ", pp " + std::to_string(plan.pp);
    if (!stages_even(plan)) {
        p += " (layers " + stage_layers_text(plan) + ")";
    }
    p += ", dp " + std::to_string(plan.dp);
    if (plan.ep > 1) {
        p += ", ep " + std::to_string(plan.ep);
    }
    p += "; zero " + std::to_string(par.zero) + "; " + workload::to_string(par.schedule);
    if (plan.virtual_stages > 1) {
        p += " x" + std::to_string(plan.virtual_stages);
    }
    p += "; " + grouped(plan.microbatches) + " microbatches of " +
         std::to_string(par.microbatch) + "; recompute " + workload::to_string(par.recompute);
    line(out, "plan", p);
    std::string groups;
    for (auto g : {workload::CommGroup::tp, workload::CommGroup::cp, workload::CommGroup::dp,
                   workload::CommGroup::ep, workload::CommGroup::pp}) {
        if (plan.group_size(g) <= 1) {
            continue;
        }
        groups += (groups.empty() ? "" : " | ") + std::string(workload::to_string(g)) + ": " +
                  plan.group_shape(g).describe();
    }
    if (!groups.empty()) {
        line(out, "groups", groups);
    }
    const auto& b = plan.memory.worst;
    line(out, "memory",
         fmt::bytes(b.total()) + " of " + fmt::bytes(plan.memory.capacity_per_rank) +
             " HBM per rank (stage " + std::to_string(plan.memory.worst_stage) +
             (stages_even(plan) ? std::string()
                                : ", " + std::to_string(
                                             plan.stages[static_cast<std::size_t>(
                                                             plan.memory.worst_stage)]
                                                 .layers()) +
                                      " layers") +
             "): weights " +
             fmt::bytes(b.weights) + ", gradients " + fmt::bytes(b.gradients) + ", optimizer " +
             fmt::bytes(b.optimizer) + ", activations " + fmt::bytes(b.activations) +
             ", buffers " + fmt::bytes(b.buffers) + ", reserve " + fmt::bytes(b.reserve));
    for (const auto& w : plan.warnings) {
        line(out, "warning", w);
    }
}

void print_run(std::ostream& out, const config::ScenarioSpec& spec, const sim::TrainingRun& run) {
    const auto& e = run.step;
    print_plan(out, spec, run.plan);
    std::string step =
        fmt::seconds(e.step_time.seconds()) + " = pipeline " + fmt::seconds(e.pipeline.seconds());
    if (run.plan.pp > 1) {
        step +=
            " (bubble " + fmt::seconds(e.bubble.seconds()) + ", " + fmt::percent(e.bubble_fraction);
        if (!stages_even(run.plan)) {
            // Uneven stages: the slowest one paces the pipeline (analytic model).
            const auto i = static_cast<std::size_t>(e.slowest_stage);
            step += "; slowest stage " + std::to_string(e.slowest_stage) + ", " +
                    std::to_string(run.plan.stages[i].layers()) + " layers, " +
                    fmt::seconds(e.stage_forward[i].seconds() + e.stage_backward[i].seconds()) +
                    " per microbatch";
        }
        step += ")";
    }
    if (e.grad_sync_exposed.seconds() > 0.0) {
        step += " + gradient sync " + fmt::seconds(e.grad_sync_exposed.seconds());
    }
    step += " + optimizer " + fmt::seconds(e.optimizer.seconds());
    if (e.param_gather.seconds() > 0.0) {
        step += " + parameter gather " + fmt::seconds(e.param_gather.seconds());
    }
    line(out, "fidelity",
         run.step_sim
             ? std::string("step: simulated on the event engine; calibrated kernel costs, ") +
                   (spec.simulation.tp_collectives == config::TpCollectiveMode::flows
                        ? "pipeline, TP, context-, data- and expert-parallel traffic as flows ("
                        : "TP collectives in closed form, pipeline, context-, data- and "
                          "expert-parallel traffic as flows (") +
                   config::to_string(spec.simulation.step_entities) + " entities)"
             : std::string("analytic: closed form; calibrated kernel costs, uncongested "
                           "collectives"));
    line(out, "step", step);
    if (run.step_sim) {
        const auto& st = run.step_sim->stats;
        line(out, "simulated",
             grouped(static_cast<std::int64_t>(st.entities)) + " entities (" +
                 config::to_string(spec.simulation.step_entities) +
                 ") in " + grouped(st.partitions) + " partitions; " +
                 grouped(static_cast<std::int64_t>(st.events)) + " events, " +
                 grouped(static_cast<std::int64_t>(st.windows)) + " windows, " +
                 grouped(static_cast<std::int64_t>(st.flows)) + " flows, " +
                 grouped(static_cast<std::int64_t>(st.fabric_collectives)) +
                 " collectives between replicas; " + fmt::seconds(run.step_sim_wall.seconds()) +
                 " wall on " + std::to_string(st.threads) + " thread" +
                 (st.threads > 1 ? "s" : ""));
        if (const auto slow = report::slowest_entity(*run.step_sim)) {
            char speed[32];
            std::snprintf(speed, sizeof speed, "%.2f", slow->speed);
            char times[32];
            std::snprintf(times, sizeof times, "%.3fx", slow->slowdown);
            const std::string ranks =
                slow->ranks > 1 ? "ranks " + std::to_string(slow->first_rank) + "-" +
                                      std::to_string(slow->first_rank + slow->ranks - 1)
                                : "rank " + std::to_string(slow->first_rank);
            line(out, "slowest",
                 "stage " + std::to_string(slow->stage) + ", replica " +
                     std::to_string(slow->replica) + " (" + ranks + ", speed " + speed +
                     "): kernels " + times + " the median of its stage");
        }
    }
    line(out, "",
         "microbatch on stage " + std::to_string(e.slowest_stage) + ": forward " +
             fmt::seconds(e.forward.seconds()) + ", backward " +
             fmt::seconds(e.backward.seconds()) + "; exposed communication " +
             fmt::seconds(e.exposed_comm.seconds()) + " per step");
    line(out, "throughput", fmt::count(e.tokens_per_s) + " tokens/s; MFU " + fmt::percent(e.mfu) +
                                ", HFU " + fmt::percent(e.hfu) + ", MBU " + fmt::percent(e.mbu));
    if (std::isfinite(run.time_to_train.seconds()) && std::isfinite(run.instance_hours)) {
        line(out, "training",
             grouped(run.plan.steps) + " steps in " + fmt::seconds(run.time_to_train.seconds()) +
                 "; " + grouped(static_cast<std::int64_t>(run.instance_hours)) +
                 " instance-hours x " + fmt::money(spec.cost.instance_hour) + " (" +
                 spec.cost.origin + ") = " + fmt::money(Money::usd(run.cost_usd)));
    } else {
        // No replication made progress to project from (ETTR 0): no time, hours or cost.
        line(out, "training",
             grouped(run.plan.steps) + " steps: not done; the job makes no progress within the "
                                       "run (failures stop it faster than it recovers), so it "
                                       "has no time to train or cost");
    }
    if (run.reliability) {
        print_reliability(out, spec, run);
    }
    out << "  time per step on stage " << e.slowest_stage << " (top ops):\n";
    const std::size_t shown = std::min<std::size_t>(8, e.breakdown.size());
    for (std::size_t i = 0; i < shown; ++i) {
        const auto& op = e.breakdown[i];
        out << "    " << pad(op.name, 30) << lpad(fmt::seconds(op.seconds), 10) << "  "
            << lpad(fmt::percent(op.seconds / e.step_time.seconds()), 6)
            << (op.collective ? "  (collective)" : "") << "\n";
    }
}

void print_collective_header(std::ostream& out, const sim::CollectiveBenchSpec& spec) {
    const std::string cluster =
        spec.cluster.counts_ultraservers()
            ? fmt::integer(spec.cluster.ultraservers) + " UltraServer" +
                  (spec.cluster.ultraservers > 1 ? "s" : "")
            : fmt::integer(spec.cluster.instances) + " instance" +
                  (spec.cluster.instances > 1 ? "s" : "");
    out << "trnsim collective: " << network::to_string(spec.op) << " on " << cluster << " of "
        << spec.chip.name << " (fabric " << spec.fabric.name << "), "
        << (spec.ranks > 0 ? fmt::integer(spec.ranks) : std::string("all")) << " ranks, LNC="
        << (spec.lnc > 0 ? spec.lnc : spec.chip.lnc_default) << "\n";
    char line[160];
    std::snprintf(line, sizeof line, "%14s  %-34s %7s %12s %12s %12s\n", "size(B)", "algorithm",
                  "phases", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    out << line;
}

void print_collective_row(std::ostream& out, const sim::CollectiveRow& row) {
    char line[200];
    std::snprintf(line, sizeof line, "%14.0f  %-34s %7zu %12.2f %12.3f %12.3f\n", row.bytes,
                  row.algorithm.c_str(), row.phases, row.seconds * 1e6, row.algbw / 1e9,
                  row.busbw / 1e9);
    out << line << std::flush;
}

} // namespace trnsim::cli

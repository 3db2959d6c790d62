#include "trnsim/reliability/expectation.hpp"

#include "trnsim/reliability/theory.hpp"

#include "run_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::reliability {

namespace {

/// sum over n >= spares of P(n; mean) (n + 1 - spares) / (n + 1), the expected wait in units
/// of the mean repair time. The Poisson terms are summed until they vanish.
double wait_factor(double mean, std::int64_t spares) {
    if (!(mean > 0.0)) {
        return spares == 0 ? 1.0 : 0.0; // nothing else in repair: wait only without spares
    }
    // The terms below n = spares are zero: start there, with log P(s) = -m + s ln m - ln s!.
    const double s = static_cast<double>(spares);
    double log_p = -mean + s * std::log(mean) - std::lgamma(s + 1.0);
    double sum = 0.0;
    const double last = std::max(mean + 40.0 * std::sqrt(mean) + 50.0, s + 50.0);
    for (double n = s; n <= last; n += 1.0) {
        sum += std::exp(log_p) * (n + 1.0 - s) / (n + 1.0);
        log_p += std::log(mean) - std::log(n + 1.0);
    }
    return sum;
}

} // namespace

Expectation expect(const RunInput& input) {
    validate(input);
    const detail::Setup setup(input);
    const Layout& layout = setup.layout;
    Expectation x;
    x.facts = setup.facts();
    const RunFacts& f = x.facts;
    const std::int64_t jobs = layout.job_domains();
    const std::int64_t spares = layout.spare_domains();

    // Repairs of domains: their rate over the whole cluster and the job's share of them.
    const RepairSpec& rep = input.spec.repair;
    x.repair_mean = Seconds::of(
        rep.manual_fraction * rep.manual.seconds() +
        (1.0 - rep.manual_fraction) *
            (rep.automatic.seconds() + rep.auto_escalation * rep.manual.seconds()));
    double repairs_per_s = 0.0;   // domains sent to repair, whole cluster
    double job_replacing = 0.0;   // job interruptions that replace domains
    const auto& procs = setup.failures.processes();
    for (std::size_t i = 0; i < procs.size(); ++i) {
        const double r = procs[i].population_rate();
        if (setup.impact[i] == Impact::replace_domain) {
            const double per_domain = r * static_cast<double>(layout.per_domain(procs[i].cls));
            repairs_per_s += per_domain * static_cast<double>(jobs + spares);
            job_replacing += per_domain * static_cast<double>(jobs);
        } else if (setup.impact[i] == Impact::power) {
            const double domains = static_cast<double>(layout.domains_per_power());
            repairs_per_s += r * static_cast<double>(layout.power_domains()) * domains;
            job_replacing +=
                r * std::ceil(static_cast<double>(jobs) / domains);
        }
    }
    x.domains_in_repair = repairs_per_s * x.repair_mean.seconds();
    x.spare_wait = Seconds::of(x.repair_mean.seconds() * wait_factor(x.domains_in_repair, spares));
    x.replace_share = f.job_failure_rate > 0.0 ? job_replacing / f.job_failure_rate : 0.0;

    const RecoverySpec& rec = input.spec.recovery;
    const double tau = f.checkpoint_interval.seconds();
    const double delta = f.checkpoint_stall.seconds();
    x.restart = Seconds::of(
        rec.detection.seconds() + rec.restart.seconds() + f.restore.seconds() +
        x.replace_share * x.spare_wait.seconds() +
        (std::isfinite(tau) ? std::min(f.checkpoint_background.seconds(), tau) : 0.0));
    const double work = f.work.seconds();
    if (!(f.job_failure_rate > 0.0)) {
        x.ettr = std::isfinite(tau) ? tau / (tau + delta) : 1.0;
    } else {
        const double mtbf = 1.0 / f.job_failure_rate;
        // Without periodic checkpoints the whole job is one segment.
        x.ettr = std::isfinite(tau) ? theory::expected_ettr(tau, delta, x.restart.seconds(), mtbf)
                                    : work / theory::expected_wall_time(work, work, 0.0,
                                                                       x.restart.seconds(), mtbf);
    }
    x.time_to_train =
        Seconds::of(x.ettr > 0.0 ? work / x.ettr : std::numeric_limits<double>::infinity());
    x.goodput = x.ettr * static_cast<double>(input.job.tokens_per_step) / input.job.step.seconds();
    x.cost_usd = static_cast<double>((jobs + spares) * f.instances_per_domain) *
                 x.time_to_train.seconds() / units::kSecondsPerHour * input.job.instance_hour_usd;
    return x;
}

} // namespace trnsim::reliability

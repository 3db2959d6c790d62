#include "trnsim/reliability/theory.hpp"

#include <cmath>
#include <limits>

namespace trnsim::reliability::theory {

double young_interval(double delta, double mtbf) { return std::sqrt(2.0 * delta * mtbf); }

double daly_interval(double delta, double mtbf) {
    if (delta >= 2.0 * mtbf) {
        return mtbf;
    }
    const double x = delta / (2.0 * mtbf);
    return std::sqrt(2.0 * delta * mtbf) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - delta;
}

double lambert_w0(double x) {
    constexpr double kMinusInvE = -0.36787944117144233;
    if (x <= kMinusInvE) {
        return -1.0;
    }
    // Start near the branch point with its series, elsewhere with log1p; Halley converges in a
    // few steps from either.
    double w = x < -0.25 ? -1.0 + std::sqrt(2.0 * (1.0 + std::exp(1.0) * x)) : std::log1p(x);
    for (int i = 0; i < 64; ++i) {
        const double e = std::exp(w);
        const double f = w * e - x;
        const double step = f / (e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        w -= step;
        if (std::fabs(step) <= 1e-15 * (1.0 + std::fabs(w))) {
            break;
        }
    }
    return w;
}

double optimal_interval(double delta, double mtbf) {
    // d/dtau [(e^{(tau+delta)/M} - 1) / tau] = 0  <=>  (1 - x) e^{x} = e^{-delta/M} with
    // x = tau/M; with z = x - 1 this is z e^z = -e^{-(1 + delta/M)}, so x = 1 + W0(...).
    return mtbf * (1.0 + lambert_w0(-std::exp(-(1.0 + delta / mtbf))));
}

double expected_wall_time(double work, double tau, double delta, double restart, double mtbf) {
    return mtbf * std::exp(restart / mtbf) * std::expm1((tau + delta) / mtbf) * work / tau;
}

double expected_ettr(double tau, double delta, double restart, double mtbf) {
    return 1.0 / expected_wall_time(1.0, tau, delta, restart, mtbf);
}

double meta_ettr(double interval, double write, double restart, double mtbf) {
    return (1.0 - (restart + interval / 2.0) / mtbf) / (1.0 + write / interval);
}

} // namespace trnsim::reliability::theory

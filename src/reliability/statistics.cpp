#include "trnsim/reliability/statistics.hpp"

#include <cmath>
#include <stdexcept>

namespace trnsim::reliability {

double student_t_two_sided(double t, int dof) {
    if (dof < 1) {
        throw std::invalid_argument("student_t_two_sided: dof >= 1");
    }
    constexpr double kPi = 3.14159265358979323846;
    const double theta = std::atan(std::fabs(t) / std::sqrt(static_cast<double>(dof)));
    const double c = std::cos(theta);
    const double s = std::sin(theta);
    if (dof % 2 == 1) {
        // A(t|v) = 2/pi [theta + sin(theta) (cos + 2/3 cos^3 + ... + (2 4 .. (v-3))/(1 3 .. (v-2)) cos^(v-2))]
        double sum = 0.0;
        double term = c;
        for (int k = 1; k <= dof - 2; k += 2) {
            sum += term;
            term *= c * c * static_cast<double>(k + 1) / static_cast<double>(k + 2);
        }
        return 2.0 / kPi * (theta + s * sum);
    }
    // A(t|v) = sin(theta) [1 + 1/2 cos^2 + (1 3)/(2 4) cos^4 + ... + (1 3 .. (v-3))/(2 4 .. (v-2)) cos^(v-2)]
    double sum = 0.0;
    double term = 1.0;
    for (int k = 0; k <= dof - 2; k += 2) {
        sum += term;
        term *= c * c * static_cast<double>(k + 1) / static_cast<double>(k + 2);
    }
    return s * sum;
}

double student_t_975(int dof) {
    double lo = 0.0;
    double hi = 1.0;
    while (student_t_two_sided(hi, dof) < 0.95) {
        hi *= 2.0;
    }
    for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; ++i) {
        const double mid = 0.5 * (lo + hi);
        (student_t_two_sided(mid, dof) < 0.95 ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

Estimate estimate(const std::vector<double>& values) {
    Estimate e;
    e.n = static_cast<int>(values.size());
    if (values.empty()) {
        return e;
    }
    double sum = 0.0;
    for (double v : values) {
        sum += v;
    }
    e.mean = sum / static_cast<double>(e.n);
    if (e.n < 2) {
        return e;
    }
    double squares = 0.0;
    for (double v : values) {
        squares += (v - e.mean) * (v - e.mean);
    }
    e.sd = std::sqrt(squares / static_cast<double>(e.n - 1));
    e.half_width = student_t_975(e.n - 1) * e.sd / std::sqrt(static_cast<double>(e.n));
    return e;
}

} // namespace trnsim::reliability

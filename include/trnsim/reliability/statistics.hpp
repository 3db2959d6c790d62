// Mean and 95% confidence interval of a metric over independent replications.
//
// The interval is the Student t interval mean +- t_{0.975, n-1} s / sqrt(n), with s the sample
// standard deviation. The t quantile is computed exactly: the two-sided probability
// P(|T| < t) of Student's t with an integer number of degrees of freedom has a closed form as a
// finite trigonometric sum (Abramowitz and Stegun 26.7.3 and 26.7.4), inverted by bisection.
#pragma once

#include <vector>

namespace trnsim::reliability {

struct Estimate {
    double mean = 0.0;
    double half_width = 0.0; ///< of the 95% interval; 0 for a single replication
    double sd = 0.0;         ///< sample standard deviation (n - 1 in the denominator)
    int n = 0;
};

/// Mean and 95% interval of `values` (non-finite values are not allowed).
Estimate estimate(const std::vector<double>& values);

/// P(|T| < t) for Student's t with `dof` >= 1 degrees of freedom.
double student_t_two_sided(double t, int dof);

/// The t with P(|T| < t) = 0.95, i.e. the 0.975 quantile.
double student_t_975(int dof);

} // namespace trnsim::reliability

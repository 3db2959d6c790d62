// Counter-based random streams.
//
// Every random draw of a run is a pure function of (run seed, stream kind, entity id, block
// index): the Philox4x32-10 generator of Random123 (Salmon et al., SC'11) maps a 128-bit
// counter and a 64-bit key to 128 random bits. trnsim uses
//
//     key     = (entity id, stream kind)
//     counter = (block index low, block index high, seed low, seed high)
//
// so an entity's draws never depend on other entities, on partitioning, on thread count or on
// the order in which entities are handled: adding an entity or repartitioning shifts nothing.
// A model keeps, per entity, how many blocks it has used (a 32- or 64-bit counter) and rebuilds
// its stream from that. Stream kinds separate independent purposes of one entity (failure
// times, routing choices, speed factors); each module defines its own kinds (StreamKind).
//
// The distribution transforms are written here (std:: distributions differ between standard
// libraries): uniform, exponential, normal (Box-Muller), lognormal, Weibull, Poisson (Knuth's
// product method below a mean of 12, Hormann's PTRS transformed rejection above) and
// geometric. Each call consumes a fixed number of 32-bit words except Poisson (rejection).
#pragma once

#include <Random123/philox.h>

#include <array>
#include <cmath>
#include <cstdint>

namespace trnsim::engine {

using StreamKind = std::uint32_t;

/// 128 random bits for (seed, kind, entity, block).
inline std::array<std::uint32_t, 4> philox_block(std::uint64_t seed, StreamKind kind,
                                                 std::uint32_t entity, std::uint64_t block) {
    using G = r123::Philox4x32;
    const G::ctr_type ctr = {{static_cast<std::uint32_t>(block),
                              static_cast<std::uint32_t>(block >> 32),
                              static_cast<std::uint32_t>(seed),
                              static_cast<std::uint32_t>(seed >> 32)}};
    const G::key_type key = {{entity, kind}};
    const G::ctr_type r = G()(ctr, key);
    return {r[0], r[1], r[2], r[3]};
}

/// A uniform double in [0, 1) from 53 random bits.
inline double uniform01(std::uint32_t hi, std::uint32_t lo) {
    const std::uint64_t bits = (std::uint64_t{hi} << 21) ^ (std::uint64_t{lo} >> 11);
    return static_cast<double>(bits & ((std::uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

/// A uniform integer in [0, n) from 32 random bits (multiply-shift; bias below n / 2^32).
inline std::uint32_t uniform_below(std::uint32_t bits, std::uint32_t n) {
    return static_cast<std::uint32_t>((std::uint64_t{bits} * n) >> 32);
}

/// Exponential with the given mean from a uniform u in [0, 1).
inline double exponential_from(double u, double mean) { return -mean * std::log1p(-u); }

/// A sequential stream of one (seed, kind, entity).
class RandomStream {
public:
    RandomStream(std::uint64_t seed, StreamKind kind, std::uint32_t entity,
                 std::uint64_t first_block = 0)
        : seed_(seed), kind_(kind), entity_(entity), block_(first_block) {}

    /// Blocks consumed so far (a block is four 32-bit words; a partly used block counts).
    std::uint64_t blocks_used() const { return block_; }

    std::uint32_t next_u32() {
        if (pos_ == 4) {
            words_ = philox_block(seed_, kind_, entity_, block_++);
            pos_ = 0;
        }
        return words_[pos_++];
    }

    std::uint64_t next_u64() {
        const std::uint64_t hi = next_u32();
        return (hi << 32) | next_u32();
    }

    /// [0, 1)
    double uniform() {
        const std::uint32_t hi = next_u32();
        return uniform01(hi, next_u32());
    }
    /// [a, b)
    double uniform(double a, double b) { return a + (b - a) * uniform(); }

    double exponential(double mean) { return exponential_from(uniform(), mean); }

    /// Box-Muller: one normal from two uniforms (the second variate is not kept, so every call
    /// consumes the same words).
    double normal(double mean = 0.0, double sd = 1.0) {
        const double u1 = 1.0 - uniform(); // (0, 1]
        const double u2 = uniform();
        constexpr double kTwoPi = 6.283185307179586476925286766559;
        return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
    }

    /// exp(N(mu, sigma)): mu and sigma of the underlying normal.
    double lognormal(double mu, double sigma) { return std::exp(normal(mu, sigma)); }

    /// Weibull with shape k and scale lambda: lambda (-ln(1 - u))^(1/k).
    double weibull(double shape, double scale) {
        return scale * std::pow(-std::log1p(-uniform()), 1.0 / shape);
    }

    /// Number of failures before the first success, success probability p in (0, 1].
    std::uint64_t geometric(double p) {
        if (p >= 1.0) {
            (void)uniform();
            return 0;
        }
        const double u = 1.0 - uniform(); // (0, 1]
        return static_cast<std::uint64_t>(std::floor(std::log(u) / std::log1p(-p)));
    }

    std::uint64_t poisson(double mean) {
        if (mean <= 0.0) {
            return 0;
        }
        if (mean < 12.0) {
            // Knuth: count uniforms until their product falls below e^-mean.
            const double limit = std::exp(-mean);
            std::uint64_t k = 0;
            double product = uniform();
            while (product > limit) {
                ++k;
                product *= uniform();
            }
            return k;
        }
        // PTRS, W. Hormann, "The transformed rejection method for generating Poisson random
        // variables", Insurance: Mathematics and Economics 12 (1993).
        const double smu = std::sqrt(mean);
        const double b = 0.931 + 2.53 * smu;
        const double a = -0.059 + 0.02483 * b;
        const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
        const double vr = 0.9277 - 3.6224 / (b - 2.0);
        const double log_mean = std::log(mean);
        while (true) {
            const double u = uniform() - 0.5;
            const double v = uniform();
            const double us = 0.5 - std::fabs(u);
            const double k = std::floor((2.0 * a / us + b) * u + mean + 0.43);
            if (us >= 0.07 && v <= vr) {
                return static_cast<std::uint64_t>(k);
            }
            if (k < 0.0 || (us < 0.013 && v > us)) {
                continue;
            }
            if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <=
                -mean + k * log_mean - std::lgamma(k + 1.0)) {
                return static_cast<std::uint64_t>(k);
            }
        }
    }

private:
    std::uint64_t seed_;
    StreamKind kind_;
    std::uint32_t entity_;
    std::uint64_t block_;
    std::array<std::uint32_t, 4> words_{};
    int pos_ = 4;
};

} // namespace trnsim::engine

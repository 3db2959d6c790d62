// Progress of a long command on stderr: a redrawn bar with the ETA on a terminal, a plain line
// now and then otherwise (logs, CI), nothing when quiet.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace trnsim::cli {

class Progress {
public:
    /// `total` units of work, `already` of them done before this session (resumed), shown
    /// as "what" ("runs"). On a terminal the bar is redrawn at most every 0.2 s; otherwise a
    /// line is printed every 10% of the work (at most every 5 s), at least every 30 s, and
    /// at the end.
    Progress(std::int64_t total, std::int64_t already, std::string what, bool quiet,
             std::FILE* out = stderr);

    /// One more unit done.
    void tick();
    /// Ends the display (the last state on its own line).
    void finish();

    std::int64_t done() const { return done_; }
    double elapsed_s() const;

private:
    void draw(bool final);

    std::int64_t total_, already_, done_;
    std::string what_;
    bool quiet_, terminal_;
    std::FILE* out_;
    std::chrono::steady_clock::time_point start_, last_draw_;
    std::int64_t last_line_done_ = 0;
};

/// "1h02m", "3m05s", "42s", "0.8s".
std::string clock_text(double seconds);

} // namespace trnsim::cli

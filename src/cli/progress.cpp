#include "progress.hpp"

#include <unistd.h>

#include <cmath>

namespace trnsim::cli {

std::string clock_text(double s) {
    char buf[32];
    if (!std::isfinite(s) || s < 0.0) {
        return "?";
    }
    if (s < 10.0) {
        std::snprintf(buf, sizeof buf, "%.1fs", s);
    } else if (s < 60.0) {
        std::snprintf(buf, sizeof buf, "%.0fs", s);
    } else if (s < 3600.0) {
        const int m = static_cast<int>(s / 60.0);
        std::snprintf(buf, sizeof buf, "%dm%02ds", m, static_cast<int>(s - 60.0 * m));
    } else {
        const int h = static_cast<int>(s / 3600.0);
        std::snprintf(buf, sizeof buf, "%dh%02dm", h, static_cast<int>((s - 3600.0 * h) / 60.0));
    }
    return buf;
}

Progress::Progress(std::int64_t total, std::int64_t already, std::string what, bool quiet,
                   std::FILE* out)
    : total_(total), already_(already), done_(already), what_(std::move(what)), quiet_(quiet),
      terminal_(::isatty(::fileno(out)) == 1), out_(out),
      start_(std::chrono::steady_clock::now()), last_draw_(start_), last_line_done_(already) {
    if (!quiet_ && !terminal_) {
        std::fprintf(out_, "trnsim: %lld %s to do%s\n", static_cast<long long>(total_ - already_),
                     what_.c_str(),
                     already_ > 0 ? (" (" + std::to_string(already_) + " already done)").c_str()
                                  : "");
        std::fflush(out_);
    }
}

double Progress::elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::tick() {
    ++done_;
    if (quiet_) {
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    const double since = std::chrono::duration<double>(now - last_draw_).count();
    if (terminal_) {
        if (since >= 0.2 || done_ == total_) {
            draw(false);
            last_draw_ = now;
        }
        return;
    }
    // Every 10% of the work, at most every 5 s; at least every 30 s; and at the end.
    const std::int64_t step = std::max<std::int64_t>(1, total_ / 10);
    if ((done_ - last_line_done_ >= step && since >= 5.0) || since >= 30.0 || done_ == total_) {
        draw(false);
        last_draw_ = now;
        last_line_done_ = done_;
    }
}

void Progress::finish() {
    if (quiet_) {
        return;
    }
    if (terminal_) {
        draw(true);
        std::fputc('\n', out_);
    }
    std::fflush(out_);
}

void Progress::draw(bool final) {
    const double elapsed = elapsed_s();
    const std::int64_t session = done_ - already_;
    const std::int64_t left = total_ - done_;
    const double eta = session > 0 ? elapsed / static_cast<double>(session) *
                                         static_cast<double>(left)
                                   : NAN;
    const double fraction =
        total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
    if (terminal_) {
        constexpr int kWidth = 30;
        const int filled = static_cast<int>(fraction * kWidth);
        std::string bar(static_cast<std::size_t>(filled), '=');
        if (filled < kWidth) {
            bar += '>';
            bar += std::string(static_cast<std::size_t>(kWidth - filled - 1), ' ');
        }
        std::fprintf(out_, "\r  [%s] %lld/%lld %s %3.0f%%  %s elapsed%s%s   ", bar.c_str(),
                     static_cast<long long>(done_), static_cast<long long>(total_), what_.c_str(),
                     100.0 * fraction, clock_text(elapsed).c_str(),
                     final || left == 0 ? "" : ", ETA ",
                     final || left == 0 ? "" : clock_text(eta).c_str());
    } else {
        std::fprintf(out_, "trnsim: %lld/%lld %s (%.0f%%), %s elapsed%s%s\n",
                     static_cast<long long>(done_), static_cast<long long>(total_), what_.c_str(),
                     100.0 * fraction, clock_text(elapsed).c_str(), left == 0 ? "" : ", ETA ",
                     left == 0 ? "" : clock_text(eta).c_str());
    }
    std::fflush(out_);
}

} // namespace trnsim::cli

// trnsim: the command-line entry point. Dispatches to a subcommand and maps errors to exit
// codes: 0 success, 2 bad input (scenario, preset or command line), 1 internal error.
#include "commands.hpp"

#include "trnsim/core/error.hpp"

#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

constexpr const char* kUsage =
    "usage: trnsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO.yaml        simulate a scenario, print its summary, write HDF5 results\n"
    "  validate FILE.yaml       check a scenario (and print it with every default resolved),\n"
    "                           or every point of a sweep, or the search space of a plan\n"
    "  batch SWEEP.yaml         run every point of a sweep (x replicates) into one HDF5 file\n"
    "  plan PLAN.yaml           search cluster size, parallelism, checkpoints and spares\n"
    "  describe chip|model|topology|schema [NAME]\n"
    "                           show what a preset contains, or every scenario key\n"
    "  calibrate --chip NAME    fit the analytic kernel model to the detailed core model\n"
    "  kernel CLASS SHAPE       cost one kernel with both models (trnsim kernel --help)\n"
    "  collective [options]     time a collective on the simulated fabric, per message size\n"
    "  compare A.h5 B.h5        two results files' summaries side by side, and where their\n"
    "                           scenarios differ\n"
    "\n"
    "options:\n"
    "  --help, -h               this help; `trnsim <command> --help` for a command's options\n"
    "  --version                print the version\n"
    "\n"
    "exit codes: 0 success, 2 bad input, 1 internal error\n";

int dispatch(const std::vector<std::string>& argv) {
    using namespace trnsim::cli;
    if (argv.empty()) {
        std::cerr << kUsage;
        return 2;
    }
    const std::string& cmd = argv[0];
    const std::vector<std::string> rest(argv.begin() + 1, argv.end());
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
        std::cout << kUsage;
        return 0;
    }
    if (cmd == "--version") {
        std::cout << version_line() << "\n";
        return 0;
    }
    if (cmd == "run") {
        return cmd_run(rest);
    }
    if (cmd == "validate") {
        return cmd_validate(rest);
    }
    if (cmd == "describe") {
        return cmd_describe(rest);
    }
    if (cmd == "calibrate") {
        return cmd_calibrate(rest);
    }
    if (cmd == "kernel") {
        return cmd_kernel(rest);
    }
    if (cmd == "collective") {
        return cmd_collective(rest);
    }
    if (cmd == "batch") {
        return cmd_batch(rest);
    }
    if (cmd == "plan") {
        return cmd_plan(rest);
    }
    if (cmd == "compare") {
        return cmd_compare(rest);
    }
    throw trnsim::UsageError("unknown command '" + cmd + "'\n" + kUsage);
}

} // namespace

int main(int argc, char** argv) {
    std::ios::sync_with_stdio(false);
    const std::vector<std::string> args(argv + 1, argv + argc);
    try {
        return dispatch(args);
    } catch (const trnsim::InputError& e) {
        std::cerr << e.what() << "\n";
        return 2;
    } catch (const trnsim::UsageError& e) {
        std::cerr << "trnsim: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "trnsim: internal error: " << e.what() << "\n";
        return 1;
    }
}

#include "options.hpp"

#include "trnsim/core/error.hpp"

namespace po = boost::program_options;

namespace trnsim::cli {

po::variables_map parse_options(const std::vector<std::string>& args,
                                const po::options_description& visible,
                                const po::positional_options_description& positional,
                                const po::options_description& hidden, const std::string& usage) {
    po::options_description all;
    all.add(visible).add(hidden);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        throw UsageError(std::string(e.what()) + "\nusage: " + usage);
    }
    return vm;
}

} // namespace trnsim::cli

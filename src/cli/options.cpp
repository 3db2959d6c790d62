#include "options.hpp"

#include "trnsim/core/error.hpp"

#include <charconv>

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

std::int64_t integer_flag(const po::variables_map& vm, const std::string& name, std::int64_t lo,
                          std::int64_t hi, std::int64_t absent) {
    if (!vm.count(name)) {
        return absent;
    }
    const std::string text = vm[name].as<std::string>();
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    const auto res = std::from_chars(text.data(), end, v);
    if (text.empty() || res.ec != std::errc() || res.ptr != end || v < lo || v > hi) {
        throw UsageError("--" + name + ": expected a whole number from " + std::to_string(lo) +
                         " to " + std::to_string(hi) + ", got '" + text + "'");
    }
    return v;
}

} // namespace trnsim::cli

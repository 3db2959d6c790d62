// Command-line options of a subcommand, parsed the same way by every subcommand.
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace trnsim::cli {

/// Parses a subcommand's arguments against the options its --help shows (`visible`), the
/// `hidden` ones and the `positional` names. A malformed command line is a UsageError (exit 2)
/// that ends with "usage: USAGE". Printing the help stays with the subcommand.
boost::program_options::variables_map
parse_options(const std::vector<std::string>& args,
              const boost::program_options::options_description& visible,
              const boost::program_options::positional_options_description& positional = {},
              const boost::program_options::options_description& hidden = {},
              const std::string& usage = "");

/// An integer flag declared as text (po::value<std::string>()) and read strictly: a plain
/// decimal number from `lo` to `hi`, else a UsageError naming the flag ("--ultraservers:
/// expected a whole number from 1 to 65536, got '-1'"). `absent` when the flag is not given.
/// (Read as an integer type by Boost, -1 slipped through as "not given" and 2^62 overflowed
/// into the chip count.)
std::int64_t integer_flag(const boost::program_options::variables_map& vm,
                          const std::string& name, std::int64_t lo, std::int64_t hi,
                          std::int64_t absent);

} // namespace trnsim::cli

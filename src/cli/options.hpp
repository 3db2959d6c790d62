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

} // namespace trnsim::cli

# trnsim_add_module(NAME SOURCES a.cpp b.cpp [PUBLIC_DEPS trnsim::core ...] [PRIVATE_DEPS ...])
#
# One static library per module, named trnsim_<NAME> with the alias trnsim::<NAME>. Public headers
# live in include/trnsim/<NAME>/, sources (and private headers) in src/<NAME>/. Sources are listed
# explicitly; no globbing.
function(trnsim_add_module name)
    cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
    add_library(trnsim_${name} STATIC ${ARG_SOURCES})
    add_library(trnsim::${name} ALIAS trnsim_${name})
    target_include_directories(trnsim_${name}
        PUBLIC ${PROJECT_SOURCE_DIR}/include
        PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(trnsim_${name}
        PUBLIC ${ARG_PUBLIC_DEPS}
        PRIVATE trnsim_warnings ${ARG_PRIVATE_DEPS})
endfunction()

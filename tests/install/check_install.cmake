# Installs the build into a scratch prefix and runs the installed binary from an empty
# directory: describe finds the chip preset under <prefix>/share/trnsim, and a serving scenario
# naming a shipped trace by its relative name runs. Called by ctest (install.prefix) with
# -DBUILD=<build dir> -DSOURCE=<source dir>.
set(prefix "${BUILD}/install-test/prefix")
set(work "${BUILD}/install-test/work")
file(REMOVE_RECURSE "${BUILD}/install-test")
file(MAKE_DIRECTORY "${work}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD}" --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
execute_process(COMMAND "${prefix}/bin/trnsim" describe chip inf2
                WORKING_DIRECTORY "${work}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "file +${prefix}/share/trnsim/topologies/chips/inf2.yaml")
    message(FATAL_ERROR "installed describe: exit ${rc}\n${out}\n${err}")
endif()
file(WRITE "${work}/s.yaml" "hardware: {chip: inf2}\ncluster: {instances: 1}\nworkload:\n  type: inference\n  model: llama3-8b\n  serving: {tp: 8, max_batch: 4, max_context: 4096}\n  requests: {input_tokens: trace, output_tokens: trace, arrival: {trace: azure-llm-inference-2023/conv.csv}, count: 20}\n  slo: {ttft: 1s, tpot: 50ms}\n")
execute_process(COMMAND "${prefix}/bin/trnsim" run s.yaml -q -o r.h5
                WORKING_DIRECTORY "${work}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS "${work}/r.h5")
    message(FATAL_ERROR "installed run: exit ${rc}\n${err}")
endif()
file(REMOVE_RECURSE "${BUILD}/install-test")
message(STATUS "installed binary found its presets and traces under ${prefix}/share/trnsim")

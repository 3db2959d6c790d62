# Every dependency comes from a Debian 12 package. A missing one stops the configure step with
# the name of the package to install (./run.sh and ./test.sh install them all).

function(trnsim_require found what package)
    if(NOT ${found})
        message(FATAL_ERROR
            "trnsim needs ${what}, which was not found.\n"
            "Install the Debian package: sudo apt-get install ${package}\n"
            "(./run.sh and ./test.sh install every dependency when run as root.)")
    endif()
endfunction()

find_package(Boost 1.74 QUIET COMPONENTS program_options)
trnsim_require(Boost_FOUND "Boost.Program_options" libboost-program-options-dev)
find_path(TRNSIM_BOOST_GRAPH_INCLUDE boost/graph/adjacency_list.hpp HINTS ${Boost_INCLUDE_DIRS})
trnsim_require(TRNSIM_BOOST_GRAPH_INCLUDE "Boost.Graph headers" libboost-graph-dev)

find_package(yaml-cpp QUIET)
trnsim_require(yaml-cpp_FOUND "yaml-cpp" libyaml-cpp-dev)

find_package(HDF5 QUIET COMPONENTS C)
trnsim_require(HDF5_FOUND "the HDF5 C library" libhdf5-dev)
# FindHDF5 sets variables, not always an imported target: wrap them in one.
if(NOT TARGET trnsim_hdf5)
    add_library(trnsim_hdf5 INTERFACE)
    target_include_directories(trnsim_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
    target_link_libraries(trnsim_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
    target_compile_definitions(trnsim_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} ${HDF5_DEFINITIONS})
endif()

# zlib: results files deflate their long tables' chunks side by side (HDF5 itself links it).
find_package(ZLIB QUIET)
trnsim_require(ZLIB_FOUND "zlib" zlib1g-dev)

find_path(TRNSIM_RANDOM123_INCLUDE Random123/philox.h)
trnsim_require(TRNSIM_RANDOM123_INCLUDE "Random123 (counter-based random numbers)" librandom123-dev)

find_package(Eigen3 3.3 QUIET NO_MODULE)
trnsim_require(Eigen3_FOUND "Eigen 3 (least-squares fits of the kernel cost model)" libeigen3-dev)

find_package(nlohmann_json 3 QUIET)
trnsim_require(nlohmann_json_FOUND "nlohmann/json (Chrome/Perfetto trace export)" nlohmann-json3-dev)

find_package(OpenMP QUIET COMPONENTS CXX)
trnsim_require(OpenMP_CXX_FOUND "OpenMP for C++" "g++ (libgomp1)")

# MPI spreads `trnsim batch` over processes (mpirun -np N). Optional: without it trnsim runs
# sweeps on one machine's threads.
find_package(MPI QUIET COMPONENTS C)
option(TRNSIM_WITH_MPI "Build trnsim batch with MPI (Open MPI from Debian)" ${MPI_C_FOUND})
if(TRNSIM_WITH_MPI)
    trnsim_require(MPI_C_FOUND "MPI (TRNSIM_WITH_MPI=ON)" "libopenmpi-dev openmpi-bin")
endif()

# The Python module (python/): Debian's pybind11 against Debian's python3 (the interpreter
# that sees python3-pandas), never another python3 earlier on PATH.
if(TRNSIM_WITH_PYTHON)
    if(EXISTS /usr/bin/python3)
        set(PYTHON_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python for the trnsim module")
    endif()
    find_package(pybind11 CONFIG QUIET)
    trnsim_require(pybind11_FOUND "pybind11 (the Python module; -DTRNSIM_WITH_PYTHON=OFF skips it)"
                   "pybind11-dev python3-dev")
endif()

if(TRNSIM_BUILD_TESTS)
    find_package(GTest QUIET)
    trnsim_require(GTest_FOUND "GoogleTest" libgtest-dev)
endif()

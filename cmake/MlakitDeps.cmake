# Third-party inputs from .deps/ (filled by scripts/bootstrap.sh; docs/building.md).
#
# MLAKIT_BOOTSTRAP (default ON): when the CUTLASS headers (or, with tests, the GoogleTest
# sources) are missing, configure runs scripts/bootstrap.sh for exactly those parts. That is
# what makes `pip install .` and `python -m build` work on a fresh clone where PyPI (and, for
# GoogleTest, Debian) is reachable. Without a registry it fails with the bootstrap's one-line
# hint; -DMLAKIT_BOOTSTRAP=OFF turns the download off (then the check below says what to do).

option(MLAKIT_BOOTSTRAP "Run scripts/bootstrap.sh at configure time for missing .deps/ parts" ON)

set(MLAKIT_DEPS ${PROJECT_SOURCE_DIR}/.deps)
set(MLAKIT_CUTLASS_INCLUDE ${MLAKIT_DEPS}/cutlass/include)

set(_mlakit_missing)
if(NOT EXISTS ${MLAKIT_CUTLASS_INCLUDE}/cute/tensor.hpp)
  list(APPEND _mlakit_missing cutlass)
endif()
if(MLAKIT_BUILD_TESTS AND NOT EXISTS ${MLAKIT_DEPS}/googletest/CMakeLists.txt)
  list(APPEND _mlakit_missing googletest)
endif()
if(_mlakit_missing AND MLAKIT_BOOTSTRAP)
  message(STATUS "mlakit: .deps/ lacks ${_mlakit_missing}; running scripts/bootstrap.sh ${_mlakit_missing}")
  execute_process(
    COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/bootstrap.sh ${_mlakit_missing}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    RESULT_VARIABLE _mlakit_bootstrap_rc)
  if(NOT _mlakit_bootstrap_rc EQUAL 0)
    message(FATAL_ERROR "mlakit: scripts/bootstrap.sh ${_mlakit_missing} failed (see its message "
                        "above). Run it where PyPI is reachable and copy .deps/ along with the tree.")
  endif()
endif()
if(NOT EXISTS ${MLAKIT_CUTLASS_INCLUDE}/cute/tensor.hpp)
  message(FATAL_ERROR "CUTLASS/CuTe headers missing in ${MLAKIT_CUTLASS_INCLUDE}. "
                      "Run 'make deps' (needs PyPI) or copy a filled .deps/ along with the tree.")
endif()
if(MLAKIT_BUILD_TESTS AND NOT EXISTS ${MLAKIT_DEPS}/googletest/CMakeLists.txt)
  message(FATAL_ERROR "GoogleTest sources missing in ${MLAKIT_DEPS}/googletest. Run 'make deps' "
                      "(needs Debian's googletest) or configure with -DMLAKIT_BUILD_TESTS=OFF.")
endif()

# Header-only libraries the host code moves to next (CLI11 for the CLI, nlohmann/json for the
# JSON reader/writer, nvml.h for the NVML loader, which keeps its dlopen). Fetched and pinned by
# scripts/bootstrap.sh; no target links them yet, so a missing one is only reported.
#   MLAKIT_CLI11_INCLUDE / mlakit::cli11
#   MLAKIT_JSON_INCLUDE  / mlakit::nlohmann_json
#   MLAKIT_NVML_INCLUDE  / mlakit::nvml_headers
function(mlakit_header_library target var dir probe)
  set(${var} ${dir} PARENT_SCOPE)
  if(EXISTS ${dir}/${probe})
    if(NOT TARGET ${target})
      string(REPLACE "::" "_" _name ${target})
      add_library(${_name} INTERFACE)
      target_include_directories(${_name} SYSTEM INTERFACE $<BUILD_INTERFACE:${dir}>)
      add_library(${target} ALIAS ${_name})
    endif()
  else()
    message(STATUS "mlakit: ${dir}/${probe} not found (not used yet; 'make deps' fetches it)")
  endif()
endfunction()
mlakit_header_library(mlakit::cli11 MLAKIT_CLI11_INCLUDE ${MLAKIT_DEPS}/cli11/include CLI/CLI.hpp)
mlakit_header_library(mlakit::nlohmann_json MLAKIT_JSON_INCLUDE ${MLAKIT_DEPS}/nlohmann_json/include nlohmann/json.hpp)
mlakit_header_library(mlakit::nvml_headers MLAKIT_NVML_INCLUDE ${MLAKIT_DEPS}/nvml/include nvml.h)

# Third-party inputs from .deps/ (filled by scripts/bootstrap.sh; docs/building.md): the CUTLASS
# headers (device code), nlohmann/json (every JSON file), nvml.h (the NVML loader's declarations),
# CLI11 (the CLI's arguments) and, with tests, the GoogleTest sources.
#
# MLAKIT_BOOTSTRAP (default ON): when a part is missing, configure runs scripts/bootstrap.sh for
# exactly those parts. That is what makes `pip install .` and `python -m build` work on a fresh
# clone where PyPI and a Debian mirror are reachable. Without a registry it fails with the
# bootstrap's one-line hint; -DMLAKIT_BOOTSTRAP=OFF turns the download off (then the check below
# says what to do).

option(MLAKIT_BOOTSTRAP "Run scripts/bootstrap.sh at configure time for missing .deps/ parts" ON)

set(MLAKIT_DEPS ${PROJECT_SOURCE_DIR}/.deps)
set(MLAKIT_CUTLASS_INCLUDE ${MLAKIT_DEPS}/cutlass/include)

set(MLAKIT_CLI11_INCLUDE ${MLAKIT_DEPS}/cli11/include)
set(MLAKIT_JSON_INCLUDE ${MLAKIT_DEPS}/nlohmann_json/include)
set(MLAKIT_NVML_INCLUDE ${MLAKIT_DEPS}/nvml/include)

# Each part: the file that proves it is there.
set(_mlakit_probe_cutlass ${MLAKIT_CUTLASS_INCLUDE}/cute/tensor.hpp)
set(_mlakit_probe_googletest ${MLAKIT_DEPS}/googletest/CMakeLists.txt)
set(_mlakit_probe_cli11 ${MLAKIT_CLI11_INCLUDE}/CLI/CLI.hpp)
set(_mlakit_probe_nlohmann_json ${MLAKIT_JSON_INCLUDE}/nlohmann/json.hpp)
set(_mlakit_probe_nvml ${MLAKIT_NVML_INCLUDE}/nvml.h)
set(_mlakit_parts cutlass nlohmann_json nvml cli11)
if(MLAKIT_BUILD_TESTS)
  list(APPEND _mlakit_parts googletest)
endif()

set(_mlakit_missing)
foreach(part ${_mlakit_parts})
  if(NOT EXISTS ${_mlakit_probe_${part}})
    list(APPEND _mlakit_missing ${part})
  endif()
endforeach()
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
foreach(part ${_mlakit_parts})
  if(NOT EXISTS ${_mlakit_probe_${part}})
    if(part STREQUAL "googletest")
      message(FATAL_ERROR "GoogleTest sources missing in ${MLAKIT_DEPS}/googletest. Run 'make deps' "
                          "(needs Debian's googletest) or configure with -DMLAKIT_BUILD_TESTS=OFF.")
    endif()
    message(FATAL_ERROR "${part} missing in .deps/ (${_mlakit_probe_${part}} not found). Run 'make deps' "
                        "(needs PyPI and a Debian mirror) or copy a filled .deps/ along with the tree.")
  endif()
endforeach()

# The header-only libraries (pinned by scripts/bootstrap.sh): CLI11 for the CLI's arguments,
# nlohmann/json for every JSON file, nvml.h for the NVML loader (which keeps its dlopen).
function(mlakit_header_library target dir)
  if(NOT TARGET ${target})
    string(REPLACE "::" "_" _name ${target})
    add_library(${_name} INTERFACE)
    target_include_directories(${_name} SYSTEM INTERFACE $<BUILD_INTERFACE:${dir}>)
    add_library(${target} ALIAS ${_name})
  endif()
endfunction()
mlakit_header_library(mlakit::cli11 ${MLAKIT_CLI11_INCLUDE})
mlakit_header_library(mlakit::nlohmann_json ${MLAKIT_JSON_INCLUDE})
mlakit_header_library(mlakit::nvml_headers ${MLAKIT_NVML_INCLUDE})

# Third-party inputs (docs/building.md): the CUTLASS headers (device code), nlohmann/json (every
# JSON file), nvml.h (the NVML loader's declarations), CLI11 (the CLI's arguments) and, with tests,
# the GoogleTest sources. Each is looked for in .deps/ (scripts/bootstrap.sh, `make deps`) first.
#
# `make` and a bare cmake configure (MLAKIT_BOOTSTRAP, default ON): a part .deps/ lacks is
# fetched by scripts/bootstrap.sh for exactly those parts; -DMLAKIT_BOOTSTRAP=OFF makes it an error
# that says what to do.
# `pip install .`, `python -m build`, `uv pip install .` (SKBUILD): nothing is downloaded inside the
# build. The parts the extension needs come from the build requirements of pyproject.toml, installed
# in the build's Python environment (nvidia-cutlass, nlohmann-json, nvidia-nvml-dev; nanobind in
# python/CMakeLists.txt); CLI11 and GoogleTest are not needed there.

option(MLAKIT_BOOTSTRAP "Run scripts/bootstrap.sh at configure time for missing .deps/ parts" ON)

set(MLAKIT_DEPS ${PROJECT_SOURCE_DIR}/.deps)

# Each part: its include folder under .deps/, the file that proves it is there, and (for the parts
# a wheel build needs) where its build requirement's wheel puts that folder in site-packages.
set(_mlakit_dir_cutlass ${MLAKIT_DEPS}/cutlass/include)
set(_mlakit_dir_nlohmann_json ${MLAKIT_DEPS}/nlohmann_json/include)
set(_mlakit_dir_nvml ${MLAKIT_DEPS}/nvml/include)
set(_mlakit_dir_cli11 ${MLAKIT_DEPS}/cli11/include)
set(_mlakit_dir_googletest ${MLAKIT_DEPS}/googletest)
set(_mlakit_probe_cutlass cute/tensor.hpp)
set(_mlakit_probe_nlohmann_json nlohmann/json.hpp)
set(_mlakit_probe_nvml nvml.h)
set(_mlakit_probe_cli11 CLI/CLI.hpp)
set(_mlakit_probe_googletest CMakeLists.txt)
set(_mlakit_wheel_cutlass "cutlass_library/source/include|nvidia-cutlass")
set(_mlakit_wheel_nlohmann_json "nlohmann_json/include|nlohmann-json")
set(_mlakit_wheel_nvml "nvidia/cu13/include|nvidia-nvml-dev")

set(_mlakit_parts cutlass nlohmann_json nvml)
if(NOT SKBUILD)
  list(APPEND _mlakit_parts cli11)
  if(MLAKIT_BUILD_TESTS)
    list(APPEND _mlakit_parts googletest)
  endif()
endif()

set(_mlakit_missing)
foreach(part ${_mlakit_parts})
  if(NOT EXISTS ${_mlakit_dir_${part}}/${_mlakit_probe_${part}})
    list(APPEND _mlakit_missing ${part})
  endif()
endforeach()

if(_mlakit_missing AND SKBUILD)
  # The build requirements, in the interpreter scikit-build-core builds for.
  foreach(part ${_mlakit_missing})
    string(REPLACE "|" ";" _wheel "${_mlakit_wheel_${part}}")
    list(GET _wheel 0 _rel)
    list(GET _wheel 1 _requirement)
    execute_process(
      COMMAND ${Python_EXECUTABLE} -c
              "import os, sys; print(next((os.path.join(p, sys.argv[1]) for p in sys.path if p and os.path.isfile(os.path.join(p, sys.argv[1], sys.argv[2]))), ''))"
              ${_rel} ${_mlakit_probe_${part}}
      OUTPUT_VARIABLE _found OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT _found)
      message(FATAL_ERROR "mlakit: ${_mlakit_probe_${part}} not found: neither in .deps/ nor in the build "
                          "environment (${Python_EXECUTABLE}), where the build requirement ${_requirement} of "
                          "pyproject.toml puts it. With --no-build-isolation, install pyproject.toml's "
                          "[build-system] requires first, or run 'make deps'.")
    endif()
    set(_mlakit_dir_${part} ${_found})
    message(STATUS "mlakit: ${part} from the build requirement ${_requirement} (${_found})")
  endforeach()
  set(_mlakit_missing)
endif()

if(_mlakit_missing AND MLAKIT_BOOTSTRAP)
  message(STATUS "mlakit: .deps/ lacks ${_mlakit_missing}; running scripts/bootstrap.sh ${_mlakit_missing}")
  execute_process(
    COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/bootstrap.sh ${_mlakit_missing}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    RESULT_VARIABLE _mlakit_bootstrap_rc)
  if(NOT _mlakit_bootstrap_rc EQUAL 0)
    message(FATAL_ERROR "mlakit: scripts/bootstrap.sh ${_mlakit_missing} failed (see its message "
                        "above). Run it where PyPI and a Debian mirror are reachable and copy .deps/ "
                        "along with the tree.")
  endif()
endif()
foreach(part ${_mlakit_parts})
  if(NOT EXISTS ${_mlakit_dir_${part}}/${_mlakit_probe_${part}})
    if(part STREQUAL "googletest")
      message(FATAL_ERROR "GoogleTest sources missing in ${MLAKIT_DEPS}/googletest. Run 'make deps' "
                          "(needs a Debian mirror) or configure with -DMLAKIT_BUILD_TESTS=OFF.")
    endif()
    message(FATAL_ERROR "${part} missing in .deps/ (${_mlakit_dir_${part}}/${_mlakit_probe_${part}} not "
                        "found). Run 'make deps' (needs PyPI and a Debian mirror) or copy a filled .deps/ "
                        "along with the tree.")
  endif()
endforeach()

set(MLAKIT_CUTLASS_INCLUDE ${_mlakit_dir_cutlass})
set(MLAKIT_JSON_INCLUDE ${_mlakit_dir_nlohmann_json})
set(MLAKIT_NVML_INCLUDE ${_mlakit_dir_nvml})
set(MLAKIT_CLI11_INCLUDE ${_mlakit_dir_cli11})

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

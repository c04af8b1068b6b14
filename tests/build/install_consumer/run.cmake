# ctest install_consumer: install the build tree into a fresh prefix, configure and build the
# consumer project against it, run it. Arguments (-D): MLAKIT_BUILD_DIR, CONSUMER_SOURCE_DIR,
# WORK_DIR, GENERATOR, CUDA_COMPILER, EXPECTED_VERSION.
set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

step("cmake --install" ${CMAKE_COMMAND} --install ${MLAKIT_BUILD_DIR} --prefix ${prefix} --component dev)
foreach(f lib/libmlakit_core.a lib/libmlakit_kernels.a lib/libmlakit_runtime.a include/mlakit/dsa.h include/mlakit/version.h
          lib/cmake/mlakit/mlakitConfig.cmake lib/cmake/mlakit/mlakitConfigVersion.cmake
          lib/cmake/mlakit/mlakitTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install_consumer: ${prefix}/${f} was not installed")
  endif()
endforeach()
step("cmake --install --component cli" ${CMAKE_COMMAND} --install ${MLAKIT_BUILD_DIR} --prefix ${prefix} --component cli)
if(NOT EXISTS ${prefix}/bin/mlakit)
  message(FATAL_ERROR "install_consumer: ${prefix}/bin/mlakit was not installed")
endif()

# The CUDA compiler's toolkit is the one the library was built with; the consumer finds its
# runtime through find_dependency(CUDAToolkit).
get_filename_component(cuda_bin ${CUDA_COMPILER} DIRECTORY)
get_filename_component(cuda_root ${cuda_bin} DIRECTORY)
step("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${build} -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${prefix} -DCUDAToolkit_ROOT=${cuda_root})
step("build the consumer" ${CMAKE_COMMAND} --build ${build})
step("run the consumer" ${build}/consumer)
message(STATUS "${step_output}")
if(NOT step_output MATCHES "mlakit ${EXPECTED_VERSION}:")
  message(FATAL_ERROR "install_consumer: expected 'mlakit ${EXPECTED_VERSION}:' in: ${step_output}")
endif()

# cmake -P script behind the probe.package test: configure, build and run the
# consumer project against the build tree, then against an install prefix.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "probe.package: `${cmd}` failed (${rc}):\n${out}")
  endif()
endfunction()

set(common -G "${DEVCOPY_GENERATOR}" -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${DEVCOPY_CXX_COMPILER} -DTorch_DIR=${DEVCOPY_TORCH_DIR})
if(DEVCOPY_CUDA_COMPILER)
  list(APPEND common -DCMAKE_CUDA_COMPILER=${DEVCOPY_CUDA_COMPILER})
endif()
if(DEVCOPY_CUDA_HOST_COMPILER)
  list(APPEND common -DCMAKE_CUDA_HOST_COMPILER=${DEVCOPY_CUDA_HOST_COMPILER})
endif()

file(REMOVE_RECURSE ${DEVCOPY_WORK_DIR})

# 1. the build tree
run(${CMAKE_COMMAND} -S ${DEVCOPY_CONSUMER_SOURCE} -B ${DEVCOPY_WORK_DIR}/from-build
    ${common} -Ddevcopy_DIR=${DEVCOPY_BUILD_DIR})
run(${CMAKE_COMMAND} --build ${DEVCOPY_WORK_DIR}/from-build)
run(${DEVCOPY_WORK_DIR}/from-build/consumer)
message(STATUS "probe.package: find_package(devcopy) from the build tree works")

# 2. an install prefix (only the probe's component)
run(${CMAKE_COMMAND} --install ${DEVCOPY_BUILD_DIR} --prefix ${DEVCOPY_WORK_DIR}/prefix
    --component devcopy_probe)
run(${CMAKE_COMMAND} -S ${DEVCOPY_CONSUMER_SOURCE} -B ${DEVCOPY_WORK_DIR}/from-prefix
    ${common} -DCMAKE_PREFIX_PATH=${DEVCOPY_WORK_DIR}/prefix)
file(STRINGS ${DEVCOPY_WORK_DIR}/from-prefix/CMakeCache.txt found REGEX "^devcopy_DIR:")
if(NOT found MATCHES "${DEVCOPY_WORK_DIR}/prefix/")
  message(FATAL_ERROR "probe.package: the prefix build found devcopy elsewhere: ${found}")
endif()
run(${CMAKE_COMMAND} --build ${DEVCOPY_WORK_DIR}/from-prefix)
run(${DEVCOPY_WORK_DIR}/from-prefix/consumer)
message(STATUS "probe.package: find_package(devcopy) from an install prefix works")

# Fails the build when the extension SO does not load the shared libstdc++
# (a static copy beside torch's shared one crashes at the first number
# written to a stream). cmake -DSO=... -DREADELF=... -P check_runtime.cmake
execute_process(COMMAND ${READELF} -d ${SO} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  return()  # not ELF, or readelf failed: nothing to say
endif()
if(NOT dynamic MATCHES "NEEDED[^\n]*libstdc\\+\\+\\.so")
  message(FATAL_ERROR "devcopy: ${SO} does not load the shared libstdc++ (linked statically?): "
                      "it would run a second C++ runtime beside torch's (a static archive, -static-libstdc++?)")
endif()

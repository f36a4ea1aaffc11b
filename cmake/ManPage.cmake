# One man page from the berth command's help (help2man), called by
# cmake/Packaging.cmake:
#   cmake -DHELP2MAN=... -DBERTH=... -DCMD=berth|serve|... -DVERSION=... -DOUT=... -P ManPage.cmake
get_filename_component(dir ${OUT} DIRECTORY)
if(CMD STREQUAL "berth")
  set(program ${BERTH})
  set(name "scheduler for AI GPU fleets: simulator, service and client")
else()
  # help2man runs PROGRAM --help: a wrapper named berth-CMD runs "berth CMD --help".
  set(program ${dir}/bin/berth-${CMD})
  file(MAKE_DIRECTORY ${dir}/bin)
  file(WRITE ${program} "#!/bin/sh\nexec \"${BERTH}\" ${CMD} \"$@\"\n")
  file(CHMOD ${program} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  set(name "berth ${CMD}")
endif()
execute_process(COMMAND ${HELP2MAN} --no-info --section=1 --version-string=${VERSION} --name=${name} ${program}
                OUTPUT_FILE ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "help2man failed for ${CMD}: ${err}")
endif()

# Writes a man page from its template: @VAR@ from the configuration, and
# in hugezero(7) the options generated from the option table.
# cmake -DIN=template -DOUT=page -DGEN=options_doc -DVARS=file -P man.cmake
include(${VARS})
execute_process(COMMAND ${GEN} man OUTPUT_VARIABLE HZ_OPTIONS RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "options_doc man failed: ${rc}")
endif()
string(STRIP "${HZ_OPTIONS}" HZ_OPTIONS)
configure_file(${IN} ${OUT} @ONLY)

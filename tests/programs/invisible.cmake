# The library invisible to the program (programs/invisible.sh): every
# tests/programs/invisible/NAME.c is a case, built into invisible_NAME
# (-fno-builtin: the compiler keeps every malloc, memset and calloc as
# written). Included from tests/CMakeLists.txt where P names
# tests/programs and the target hugezero exists; every case goes to one
# directory, the script's second argument.
set(HZ_INVISIBLE_DIR ${CMAKE_BINARY_DIR}/invisible)
file(GLOB HZ_INVISIBLE_CASES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/invisible/*.c)
foreach(src ${HZ_INVISIBLE_CASES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(invisible_${name} ${src})
  target_compile_options(invisible_${name} PRIVATE -fno-builtin)
  target_link_libraries(invisible_${name} Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(invisible_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${HZ_INVISIBLE_DIR})
endforeach()
add_test(NAME invisible COMMAND ${P}/invisible.sh $<TARGET_FILE:hugezero> ${HZ_INVISIBLE_DIR})
# Alone: its helpers need a core no other test takes, and its real-time
# spinners hold every CPU for a few seconds. 77: every case skipped (not
# root, one CPU).
set_tests_properties(invisible PROPERTIES TIMEOUT 240 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)

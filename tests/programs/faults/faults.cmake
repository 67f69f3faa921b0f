# Fault injection (programs/faults/faults.sh): the shim that fails some of
# an allocator's calls to the OS, and the shadow-checked workload run under
# it. Included from tests/CMakeLists.txt where P names tests/programs and
# the target hugezero exists; both go to one directory, the script's
# second argument.
set(HZ_FAULTS_DIR ${CMAKE_BINARY_DIR}/faults)
set(HZ_FAULTS_SRC ${CMAKE_CURRENT_LIST_DIR})
add_library(faultshim SHARED ${HZ_FAULTS_SRC}/faultshim.c)
target_compile_options(faultshim PRIVATE -fno-builtin -U_FORTIFY_SOURCE -fno-stack-protector)
target_link_libraries(faultshim ${CMAKE_DL_LIBS})
add_executable(faultload ${HZ_FAULTS_SRC}/faultload.c)
target_compile_options(faultload PRIVATE -fno-builtin)
target_link_libraries(faultload Threads::Threads)
set_target_properties(faultshim faultload PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${HZ_FAULTS_DIR} LIBRARY_OUTPUT_DIRECTORY ${HZ_FAULTS_DIR})
add_test(NAME faults COMMAND ${P}/faults/faults.sh $<TARGET_FILE:hugezero> ${HZ_FAULTS_DIR})
set_tests_properties(faults PROPERTIES TIMEOUT 300)

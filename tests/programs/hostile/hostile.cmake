# Hostile cases under glibc, jemalloc, mimalloc, tcmalloc and hugezero
# side by side (programs/hostile.sh). Included from tests/CMakeLists.txt
# where P names tests/programs and the target hugezero exists; every
# binary goes to one directory, the script's second argument.
set(HZ_HOSTILE_DIR ${CMAKE_BINARY_DIR}/hostile)
set(HZ_HOSTILE_SRC ${CMAKE_CURRENT_LIST_DIR})
add_executable(hostile ${HZ_HOSTILE_SRC}/hostile.c)
target_link_libraries(hostile Threads::Threads)
add_executable(hostile_cxx ${HZ_HOSTILE_SRC}/hostile_cxx.cc)
target_compile_options(hostile_cxx PRIVATE -fsized-deallocation)
add_library(atfork_alloc SHARED ${HZ_HOSTILE_SRC}/atfork_alloc.c)
target_link_libraries(atfork_alloc Threads::Threads)
add_executable(atfork_main ${HZ_HOSTILE_SRC}/atfork_run.c)
target_link_libraries(atfork_main atfork_alloc Threads::Threads)
add_executable(atfork_dlopen ${HZ_HOSTILE_SRC}/atfork_run.c)
target_compile_definitions(atfork_dlopen PRIVATE ATFORK_DLOPEN)
target_link_libraries(atfork_dlopen Threads::Threads ${CMAKE_DL_LIBS})
foreach(t hostile hostile_cxx atfork_alloc atfork_main atfork_dlopen)
  target_compile_options(${t} PRIVATE -fno-builtin)
  set_target_properties(${t} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${HZ_HOSTILE_DIR} LIBRARY_OUTPUT_DIRECTORY ${HZ_HOSTILE_DIR})
endforeach()
add_test(NAME hostile COMMAND ${P}/hostile.sh $<TARGET_FILE:hugezero> ${HZ_HOSTILE_DIR})
set_tests_properties(hostile PROPERTIES TIMEOUT 600)

# Installation (GNUInstallDirs), the CMake package, pkg-config, man pages
# and the Debian package (CPack), included by CMakeLists.txt where the
# library is built. A package of one binary package, as a user installs it
# (apt install ./hugezero_VERSION_ARCH.deb), with Depends from
# dpkg-shlibdeps.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(HZ_PKG ${CMAKE_CURRENT_SOURCE_DIR}/scripts/package)
set(HZ_FULL_LIBDIR ${CMAKE_INSTALL_FULL_LIBDIR})
set(HZ_FULL_INCLUDEDIR ${CMAKE_INSTALL_FULL_INCLUDEDIR})
set(HZ_FULL_LIB ${CMAKE_INSTALL_FULL_LIBDIR}/libhugezero.so.${PROJECT_VERSION_MAJOR})

# libhugezero.so.MAJOR (the SONAME) -> .so.VERSION, and the .so for -l.
set_target_properties(hugezero PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  EXPORT_NAME hugezero)
set_target_properties(hugezero_static PROPERTIES EXPORT_NAME static)
foreach(t hugezero hugezero_static)
  target_include_directories(${t} INTERFACE $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
install(TARGETS hugezero hugezero_static EXPORT hugezero-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/hugezero.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT hugezero-targets NAMESPACE hugezero:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hugezero)
configure_package_config_file(${HZ_PKG}/hugezero-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/hugezero-config.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hugezero)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/hugezero-config-version.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hugezero-config.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/hugezero-config-version.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hugezero)
# Relocatable, as the CMake package is: the prefix from the file's own
# place, so that cmake --install --prefix DIR gives a working file.
file(RELATIVE_PATH HZ_PREFIX_FROM_PC ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${HZ_PKG}/hugezero.pc.in ${CMAKE_CURRENT_BINARY_DIR}/hugezero.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hugezero.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The command: the script with the version and the paths, relative to its
# bin/, of the library and of hzcli/ (in the data directory) written in.
file(RELATIVE_PATH HZ_LIB_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${HZ_FULL_LIB})
file(RELATIVE_PATH HZ_CLI_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_DATADIR}/hugezero)
configure_file(scripts/hugezero ${CMAKE_CURRENT_BINARY_DIR}/installed/hugezero @ONLY)
install(PROGRAMS ${CMAKE_CURRENT_BINARY_DIR}/installed/hugezero DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY scripts/hzcli DESTINATION ${CMAKE_INSTALL_DATADIR}/hugezero
  FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)

# The man pages: hugezero(1), and hugezero(7) with every option from the
# option table (options_doc), as the README's reference is.
set(HZ_MAN_VARS ${CMAKE_CURRENT_BINARY_DIR}/man/vars.cmake)
file(WRITE ${HZ_MAN_VARS} "set(PROJECT_VERSION ${PROJECT_VERSION})\nset(HZ_FULL_LIB ${HZ_FULL_LIB})\n"
  "set(HZ_FULL_LIBDIR ${HZ_FULL_LIBDIR})\n")
foreach(page hugezero.1 hugezero.7)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/man/${page})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${HZ_PKG}/${page}.in -DOUT=${out} -DGEN=$<TARGET_FILE:options_doc>
      -DVARS=${HZ_MAN_VARS} -P ${HZ_PKG}/man.cmake
    DEPENDS ${HZ_PKG}/${page}.in ${HZ_PKG}/man.cmake options_doc
    COMMENT "Writing the man page ${page}")
  list(APPEND HZ_MAN_PAGES ${out})
  string(REGEX REPLACE ".*\\." "" section ${page})
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(man ALL DEPENDS ${HZ_MAN_PAGES})

# The Debian package (scripts/package.sh).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hugezero)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hugezero developers <hugezero@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "memset, calloc and the malloc family for zeroed memory on Linux")
set(CPACK_PACKAGE_DESCRIPTION "A drop-in replacement, loaded with LD_PRELOAD or linked, that clears
large memset and calloc with multi-page kernels, keeps large blocks in hugepage
arenas that know which pages are zero, and counts what it does. Includes the
hugezero command, the header, the static archive, pkg-config and CMake files.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The command is Python (its chart and statistics need nothing else).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE)
include(CPack)

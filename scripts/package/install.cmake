# Installation (GNUInstallDirs), the CMake package, pkg-config, man pages
# and the Debian packages (CPack), included by CMakeLists.txt where the
# library is built. Three components, packaged as Debian splits jemalloc
# and mimalloc: lib (libhugezero0, the shared library), dev
# (libhugezero-dev: the archive, the header, pkg-config, the CMake
# package) and cli (hugezero: the command, the Prometheus rules, the man
# pages hugezero(1) and hugezero(7), the options' reference, beside the
# command that sets them).
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
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(FILES include/hugezero.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT hugezero-targets NAMESPACE hugezero:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hugezero
  COMPONENT dev)
configure_package_config_file(${HZ_PKG}/hugezero-config.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/hugezero-config.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hugezero)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/hugezero-config-version.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hugezero-config.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/hugezero-config-version.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hugezero
  COMPONENT dev)
# Relocatable, as the CMake package is: the prefix from the file's own
# place, so that cmake --install --prefix DIR gives a working file.
file(RELATIVE_PATH HZ_PREFIX_FROM_PC ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${HZ_PKG}/hugezero.pc.in ${CMAKE_CURRENT_BINARY_DIR}/hugezero.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hugezero.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# The command: the script with the version and the paths, relative to its
# bin/, of the library and of hzcli/ (in the data directory) written in.
file(RELATIVE_PATH HZ_LIB_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${HZ_FULL_LIB})
file(RELATIVE_PATH HZ_CLI_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_DATADIR}/hugezero)
configure_file(scripts/hugezero ${CMAKE_CURRENT_BINARY_DIR}/installed/hugezero @ONLY)
install(PROGRAMS ${CMAKE_CURRENT_BINARY_DIR}/installed/hugezero DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT cli)
install(DIRECTORY scripts/hzcli DESTINATION ${CMAKE_INSTALL_DATADIR}/hugezero COMPONENT cli
  FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)

# The man pages: hugezero(1), and hugezero(7) with every option from the
# option table (options_doc), as the README's reference is.
set(HZ_MAN_VARS ${CMAKE_CURRENT_BINARY_DIR}/man/vars.cmake)
file(WRITE ${HZ_MAN_VARS} "set(PROJECT_VERSION ${PROJECT_VERSION})\nset(HZ_FULL_LIB ${HZ_FULL_LIB})\n"
  "set(HZ_FULL_LIBDIR ${HZ_FULL_LIBDIR})\n")
foreach(page hugezero.1 hugezero.7)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/man/${page})
  # Compressed, as Debian installs manual pages (gzip -9n: reproducible).
  add_custom_command(OUTPUT ${out} ${out}.gz
    COMMAND ${CMAKE_COMMAND} -DIN=${HZ_PKG}/${page}.in -DOUT=${out} -DGEN=$<TARGET_FILE:options_doc>
      -DVARS=${HZ_MAN_VARS} -P ${HZ_PKG}/man.cmake
    COMMAND gzip -9nf -k ${out}
    DEPENDS ${HZ_PKG}/${page}.in ${HZ_PKG}/man.cmake options_doc
    COMMENT "Writing the man page ${page}")
  list(APPEND HZ_MAN_PAGES ${out} ${out}.gz)
  string(REGEX REPLACE ".*\\." "" section ${page})
  install(FILES ${out}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section} COMPONENT cli)
endforeach()
add_custom_target(man ALL DEPENDS ${HZ_MAN_PAGES})

# Each package's copyright (DEP-5: hugezero's MIT, the embedded
# jemalloc's BSD-2-Clause) and changelog, where Debian keeps them.
configure_file(${HZ_PKG}/changelog.in ${CMAKE_CURRENT_BINARY_DIR}/changelog @ONLY)
execute_process(COMMAND gzip -9n -c ${CMAKE_CURRENT_BINARY_DIR}/changelog
  OUTPUT_FILE ${CMAKE_CURRENT_BINARY_DIR}/changelog.gz)
foreach(pair lib:libhugezero0 dev:libhugezero-dev cli:hugezero)
  string(REPLACE ":" ";" cp ${pair})
  list(GET cp 0 component)
  list(GET cp 1 package)
  install(FILES ${HZ_PKG}/copyright DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/changelog.gz DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package}
    RENAME changelog.gz COMPONENT ${component})
endforeach()

# The Debian packages (scripts/package.sh), Depends from dpkg-shlibdeps.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hugezero)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hugezero developers <hugezero@example.org>")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev cli)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libhugezero0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# The dynamic linker's cache through dpkg's trigger, as Debian's libraries do.
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${HZ_PKG}/triggers)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_LIB_DESCRIPTION "memset and the malloc family for zeroed memory on Linux
A drop-in replacement, loaded with LD_PRELOAD or linked, that clears large
memset and calloc with multi-page kernels, keeps large blocks in hugepage
arenas that know which pages are zero, and counts what it does.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libhugezero-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libhugezero0 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION "memset and the malloc family for zeroed memory (development files)
The header, the static archive (its jemalloc inside), the pkg-config file
and the CMake package of libhugezero0.")
set(CPACK_DEBIAN_CLI_PACKAGE_NAME hugezero)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "libhugezero0 (= ${PROJECT_VERSION}), python3, time")
# hugezero compare runs the others where they are installed
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS "libjemalloc2, libmimalloc2.0, libtcmalloc-minimal4")
set(CPACK_DEBIAN_CLI_DESCRIPTION "run programs under libhugezero0 and read its reports
The hugezero command: runs a program with the library preloaded, its A/B
arms and reports; compares a program under each allocator installed;
merges, compares and charts reports; runs the workload
suites; writes the Prometheus rules for a fleet. Its manual pages:
hugezero(1), and hugezero(7), the library's options.")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE)
include(CPack)

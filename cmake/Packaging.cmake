# Install rules and the Debian package (CPack's DEB generator):
#   cmake --install build/release --prefix /usr          (or)
#   scripts/package.sh                                    -> build/package/berth_<version>_<arch>.deb
# Layout: /usr/bin/berth; /usr/share/berth (the accelerator catalog, examples);
# /usr/share/doc/berth (README, docs); /usr/share/man/man1 (from the CLI's help,
# when help2man is installed); /lib/systemd/system/berth.service; /etc/berth
# (berth.env, cluster.yaml: conffiles). The binary finds its catalog under
# ../share/berth wherever it is installed (apps/berth/install_paths.h).
include(GNUInstallDirs)

install(TARGETS berth RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/data/accelerators.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/berth)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/berth/examples
        USE_SOURCE_PERMISSIONS)  # examples/launch holds programs a job runs
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/berth.service DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/berth.env ${PROJECT_SOURCE_DIR}/deploy/systemd/cluster.yaml
        DESTINATION /etc/berth)

# Man pages from the CLI's own help (Debian's help2man), one per command.
find_program(BERTH_HELP2MAN help2man)
if(BERTH_HELP2MAN)
  set(man_pages)
  set(man_dir ${CMAKE_CURRENT_BINARY_DIR}/man)
  foreach(cmd berth serve simulate submit status cancel queues nodes)
    if(cmd STREQUAL "berth")
      set(page ${man_dir}/berth.1)
    else()
      set(page ${man_dir}/berth-${cmd}.1)
    endif()
    add_custom_command(OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
      COMMAND ${CMAKE_COMMAND} -DHELP2MAN=${BERTH_HELP2MAN} -DBERTH=$<TARGET_FILE:berth> -DCMD=${cmd}
              -DVERSION=${PROJECT_VERSION} -DOUT=${page} -P ${PROJECT_SOURCE_DIR}/cmake/ManPage.cmake
      DEPENDS berth ${PROJECT_SOURCE_DIR}/cmake/ManPage.cmake
      COMMENT "Man page ${page}")
    list(APPEND man_pages ${page})
  endforeach()
  add_custom_target(berth_man ALL DEPENDS ${man_pages})
  install(FILES ${man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME berth)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Berth")
set(CPACK_PACKAGE_CONTACT "Berth maintainers <berth@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Scheduler for AI GPU fleets: trace simulator, scheduling service, Kubernetes scheduler")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # dpkg-shlibdeps computes the library dependencies
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/package)
include(CPack)

# The Debian packages, built by CPack's DEB generator from the install rules. Included last by
# the top-level CMakeLists.txt, so the install components of every directory are known
# (scripts/build-deb.sh configures a tree with CMAKE_INSTALL_PREFIX=/usr and runs cpack).
# Why CPack and not debian/ + dpkg-buildpackage, the GPU flavour and the lintian warnings:
# packaging/README.md.

# One package per install component. `runtime` is every install rule of the programs; `dev` is
# the hook for the consumer library (headers, static library, CMake package config): rules
# that install with COMPONENT dev make rocecap-dev appear. An install rule without a component
# would land in "Unspecified", which no package carries: refused here.
get_cmake_property(rocecap_components COMPONENTS)
if("Unspecified" IN_LIST rocecap_components)
  message(FATAL_ERROR "an install() rule has no COMPONENT (runtime or dev): "
                      "it would be in no package (cmake/RocecapPackaging.cmake)")
endif()
set(CPACK_COMPONENTS_ALL ${rocecap_components})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rocecap)
set(CPACK_PACKAGE_VENDOR "rocecap")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${ROCECAP_DEB_MAINTAINER}")
# The maintainer scripts keep their 0755, control files 0644, whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Native package: the version is rocecap's own (no Debian revision).
set(CPACK_DEBIAN_PACKAGE_VERSION ${PROJECT_VERSION})

# ---- rocecap (component runtime) ----------------------------------------------------------
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME rocecap)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION science)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_PRIORITY optional)
# Shared libraries from dpkg-shlibdeps; the account and directories from the postinst's
# systemd-sysusers and systemd-tmpfiles (virtual packages that systemd provides).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "systemd-sysusers, systemd-tmpfiles")
# rocecap quicklook draws with numpy and matplotlib; a capture host without them still captures.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "python3, python3-numpy, python3-matplotlib")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "tshark, prometheus")
# Extended description lines stay under 80 columns (lintian).
if(ROCECAP_HAVE_CUDA)
  string(CONCAT rocecap_flavour
         "This build has GPU payload memory: the CUDA ${CUDAToolkit_VERSION} runtime is\n"
         "linked into rocecapd and the NVIDIA driver is loaded at run time where there is\n"
         "one, so the package depends on nothing from CUDA. Without a GPU the payload\n"
         "stays in host memory.")
else()
  set(rocecap_flavour "This build has host payload memory only (built without CUDA).")
endif()
string(CONCAT CPACK_DEBIAN_RUNTIME_DESCRIPTION
       "capture daemon for CODIF/VDIF multicast streams of radio observatories\n"
       "rocecapd joins the UDP multicast groups of an observing run (CODIF, VDIF\n"
       "or plain UDP, one source address per antenna), keeps every antenna's stream\n"
       "in its own ring in time order, writes time-aligned raw files with fill\n"
       "frames for lost frames, header-only and pcap files, and counts every packet\n"
       "it did not write, with the reason, in the run's manifest. Backends:\n"
       "libibverbs raw packet queues on RDMA NICs, AF_PACKET rings, capture file\n"
       "replay. Prometheus metrics, one systemd unit per run (rocecapd@<run>).\n"
       "\n"
       "rocecap generates, inspects, verifies, recovers and triggers captures, and\n"
       "draws quick-look pictures of a run. Also: manual pages, Wireshark\n"
       "dissectors for CODIF and VDIF, a Grafana dashboard, Prometheus alert rules.\n"
       "\n"
       "${rocecap_flavour}")
# conffiles: the example run file is the operator's to edit (dpkg keeps their changes).
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/conffiles "${CMAKE_INSTALL_FULL_SYSCONFDIR}/rocecap/example.yaml\n")
set(rocecap_debian ${PROJECT_SOURCE_DIR}/packaging/debian)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${rocecap_debian}/postinst ${rocecap_debian}/prerm ${rocecap_debian}/postrm
    ${CMAKE_CURRENT_BINARY_DIR}/conffiles)

# ---- rocecap-dev (component dev: the consumer library, when it is installed) --------------
# Every Debian package carries its own copyright and changelog (lintian errors otherwise).
if("dev" IN_LIST rocecap_components)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/copyright ${PROJECT_BINARY_DIR}/packaging/changelog.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/rocecap-dev COMPONENT dev)
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_NAME rocecap-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "rocecap (= ${PROJECT_VERSION})")
string(CONCAT CPACK_DEBIAN_DEV_DESCRIPTION
       "rocecap consumer library: headers, static library and CMake package config\n"
       "For programs that read what rocecapd captures (its rings and files): the C++\n"
       "headers, the static library and the CMake package configuration, so that\n"
       "find_package(rocecap) finds them.")

include(CPack)

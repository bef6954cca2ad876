# SPDX-License-Identifier: LGPL-2.1-or-later
# Installed configuration, policy, man pages, systemd units, shell completion,
# and the Debian package (cpack -G DEB). Included from the top-level
# CMakeLists.txt after the targets.
#
# Layout (prefix /usr):
#   sbin/iverd  bin/iverctl  lib*/libiver.so.0*  include/iver/  lib*/pkgconfig/iver.pc
#   share/man/man{1,5,8}/  share/bash-completion/completions/iverctl
#   <systemdsystemunitdir>/iverd.{service,socket}  <sysusersdir>/iverd.conf
#   /etc/iverd/iverd.conf  /etc/iverd/policy.d/50-default.policy
# Other prefixes P keep everything below P: P/etc/iverd/, P/lib/systemd/system/,
# P/lib/sysusers.d/ (cmake/paths.cmake: IVER_SYSCONFDIR, IVER_ETCDIR).
#
# iverd reads IVER_SYSCONFDIR/iverd/iverd.conf, iverd.policy, then policy.d/*.policy
# (IVER_CONF_FILE, IVER_POLICY_FILE, IVER_POLICY_DROPIN_DIR), the sysconfdir
# it was configured for. The default policy is a drop-in
# (50-default.policy) because the first matching rule wins: local exceptions go
# in iverd.policy or an earlier drop-in (10-local.policy) and are read first.
# An existing file is never overwritten by `cmake --install`; in the .deb both
# are dpkg conffiles.

find_package(PkgConfig QUIET)

function(_iver_systemd_dir var pcvar fallback doc)
  if(NOT DEFINED CACHE{${var}} OR "${${var}}" STREQUAL "")
    set(_dir "")
    if(NOT IVER_SYSTEM_PREFIX)
      # a prefixed install keeps its units below the prefix (relative)
      string(REGEX REPLACE "^/(usr/)?" "" _dir "${fallback}")
    elseif(PKG_CONFIG_FOUND)
      pkg_get_variable(_dir systemd ${pcvar})
    endif()
    if(_dir STREQUAL "")
      set(_dir "${fallback}")
    endif()
    set(${var} "${_dir}" CACHE PATH "${doc}" FORCE)
  endif()
endfunction()

_iver_systemd_dir(IVER_SYSTEMD_UNITDIR systemdsystemunitdir "/lib/systemd/system"
  "Where systemd system units are installed (default: pkg-config systemd systemdsystemunitdir)")
_iver_systemd_dir(IVER_SYSUSERSDIR sysusersdir "/usr/lib/sysusers.d"
  "Where sysusers.d fragments are installed (default: pkg-config systemd sysusersdir)")
_iver_systemd_dir(IVER_TMPFILESDIR tmpfilesdir "/usr/lib/tmpfiles.d"
  "Where tmpfiles.d fragments are installed (default: pkg-config systemd tmpfilesdir; iverd ships none)")

# IVER_ETCDIR: cmake/paths.cmake (relative to the prefix, or absolute for /usr)
# Destinations relative to the prefix are resolved at install time, so that
# `cmake --install --prefix P` follows P.
function(_iver_abs_code var dir)
  if(IS_ABSOLUTE "${dir}")
    set(${var} "${dir}" PARENT_SCOPE)
  else()
    set(${var} "\${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
_iver_abs_code(_iver_unitdir_code "${IVER_SYSTEMD_UNITDIR}")
_iver_abs_code(_iver_etcdir_code "${IVER_ETCDIR}")
set(IVER_BASH_COMPLETIONSDIR "${CMAKE_INSTALL_DATADIR}/bash-completion/completions"
    CACHE STRING "Where bash completions are installed (relative: below the prefix)")

# ---- units: ExecStart=/ExecReload= follow the prefix given at install time ----
# The sources name /usr/sbin/iverd and /usr/bin/iverctl; the install step
# rewrites them for `cmake --install --prefix P` (or cpack's /usr).
# Every systemd/*.service, *.socket, *.timer, *.path (iverd.service, iverd.socket,
# iverd-prometheus.service/.timer, …).
set(_iver_units_in "${PROJECT_SOURCE_DIR}/systemd")
set(_iver_units_out "${PROJECT_BINARY_DIR}/systemd-install")
file(GLOB _iver_units CONFIGURE_DEPENDS RELATIVE "${_iver_units_in}"
     "${_iver_units_in}/*.service" "${_iver_units_in}/*.socket" "${_iver_units_in}/*.timer" "${_iver_units_in}/*.path")
list(SORT _iver_units)
set(_iver_units_built "")
foreach(_u IN LISTS _iver_units)
  list(APPEND _iver_units_built "\"${_iver_units_out}/${_u}\"")
endforeach()
list(JOIN _iver_units_built " " _iver_units_built)
install(CODE "
  set(_pfx \"\${CMAKE_INSTALL_PREFIX}\")
  string(REGEX REPLACE \"/+$\" \"\" _pfx \"\${_pfx}\")
  if(IS_ABSOLUTE \"${CMAKE_INSTALL_SBINDIR}\")
    set(_sbin \"${CMAKE_INSTALL_SBINDIR}\")
  else()
    set(_sbin \"\${_pfx}/${CMAKE_INSTALL_SBINDIR}\")
  endif()
  if(IS_ABSOLUTE \"${CMAKE_INSTALL_BINDIR}\")
    set(_bin \"${CMAKE_INSTALL_BINDIR}\")
  else()
    set(_bin \"\${_pfx}/${CMAKE_INSTALL_BINDIR}\")
  endif()
  file(MAKE_DIRECTORY \"${_iver_units_out}\")
  foreach(_u ${_iver_units})
    file(READ \"${_iver_units_in}/\${_u}\" _t)
    string(REPLACE \"/usr/sbin/iverd\" \"\${_sbin}/iverd\" _t \"\${_t}\")
    string(REPLACE \"/usr/bin/iverctl\" \"\${_bin}/iverctl\" _t \"\${_t}\")
    file(WRITE \"${_iver_units_out}/\${_u}\" \"\${_t}\")
  endforeach()
  file(INSTALL DESTINATION \"${_iver_unitdir_code}\" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
       FILES ${_iver_units_built})
")
install(FILES systemd/iverd.sysusers DESTINATION "${IVER_SYSUSERSDIR}" RENAME iverd.conf)
if(EXISTS "${PROJECT_SOURCE_DIR}/systemd/iverd.tmpfiles")
  install(FILES systemd/iverd.tmpfiles DESTINATION "${IVER_TMPFILESDIR}" RENAME iverd.conf)
endif()

# ---- IVER_ETCDIR: configuration and default policy, never overwritten ----
install(DIRECTORY DESTINATION "${IVER_ETCDIR}/policy.d")
install(CODE "
  foreach(_pair \"${PROJECT_SOURCE_DIR}/etc/iverd.conf|iverd.conf\" \"${PROJECT_SOURCE_DIR}/policy/iverd.policy|policy.d/50-default.policy\")
    string(REPLACE \"|\" \";\" _pair \"\${_pair}\")
    list(GET _pair 0 _src)
    list(GET _pair 1 _name)
    set(_dst \"\$ENV{DESTDIR}${_iver_etcdir_code}/\${_name}\")
    if(EXISTS \"\${_dst}\" OR IS_SYMLINK \"\${_dst}\")
      file(READ \"\${_dst}\" _old)
      file(READ \"\${_src}\" _new)
      if(_old STREQUAL _new)
        message(STATUS \"Up-to-date: \${_dst}\")
      else()
        message(STATUS \"Keeping: \${_dst} (changed locally; the shipped version is \${_src})\")
      endif()
      list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"${_iver_etcdir_code}/\${_name}\")
    else()
      file(INSTALL DESTINATION \"${_iver_etcdir_code}\" TYPE FILE PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
           FILES \"\${_src}\" RENAME \"\${_name}\")
    endif()
  endforeach()
")

# ---- man pages: man/*.1 *.5 *.8 (globbed again at build time) ----
file(GLOB _iver_man CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/man/*.[158]")
foreach(_page IN LISTS _iver_man)
  string(REGEX MATCH "[0-9]$" _sec "${_page}")
  install(FILES "${_page}" DESTINATION "${CMAKE_INSTALL_MANDIR}/man${_sec}")
endforeach()

# ---- shell completion ----
install(FILES shell-completion/bash/iverctl DESTINATION "${IVER_BASH_COMPLETIONSDIR}")

# ---- Debian package: cpack -G DEB (from the build directory) ----
# Configure with -DCMAKE_INSTALL_PREFIX=/usr for a Debian layout: GNUInstallDirs
# then puts the library into lib/<multiarch> (lib/x86_64-linux-gnu).
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "iverd: cpack -G DEB packages for /usr; configure the packaging build with "
                 "-DCMAKE_INSTALL_PREFIX=/usr (lib/<multiarch>, iver.pc with prefix=/usr)")
endif()
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "iverd")
set(CPACK_PACKAGE_VENDOR "iverd")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "iverd maintainers <iverd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "integrity measurement daemon that re-hashes only what changed")
set(CPACK_PACKAGE_DESCRIPTION "iverd measures the files its policy names, keeps a cache keyed by file
identity and change cookie, re-hashes a file only when its version changes,
appends every new measurement to an IMA-format list and extends it into a
TPM PCR. iverctl queries the daemon, produces and verifies quotes.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
# Absolute destinations (/etc/iverd, the unit directory) go through DESTDIR.
set(CPACK_SET_DESTDIR OFF)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://localhost/iverd")
# Runtime libraries (package names checked with dpkg -S on Debian 12).
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "libc6 (>= 2.34), libssl3 (>= 3.0.0), libtss2-esys-3.0.2-0 (>= 3.2.1), libtss2-mu0 (>= 3.2.1), libtss2-tctildr0 (>= 3.2.1), libtss2-rc0 (>= 3.2.1), libsystemd0 (>= 252), libaudit1 (>= 1:3.0), libkeyutils1 (>= 1.6), libjson-c5 (>= 0.15), libarchive13 (>= 3.6.0), zlib1g (>= 1:1.2.11)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "auditd, tpm2-tools")
set(_iver_deb "${PROJECT_BINARY_DIR}/debian-control")
file(MAKE_DIRECTORY "${_iver_deb}")
file(WRITE "${_iver_deb}/conffiles" "${IVER_ETCDIR}/iverd.conf\n${IVER_ETCDIR}/policy.d/50-default.policy\n")
file(WRITE "${_iver_deb}/postinst" "#!/bin/sh
# iverd postinst: create the iverd-stats group and make systemd see the units,
# only when systemd runs the system (not in a chroot or image build, where
# systemd-sysusers.service creates the group at the first boot).
set -e
if [ \"\$1\" = configure ] && [ -z \"\${DPKG_ROOT:-}\" ] && [ -d /run/systemd/system ] &&
   [ \"\$(cat /proc/1/comm 2>/dev/null)\" = systemd ]; then
    systemd-sysusers iverd.conf || true
    systemctl daemon-reload || true
fi
exit 0
")
file(WRITE "${_iver_deb}/prerm" "#!/bin/sh
set -e
if [ \"\$1\" = remove ] && [ -z \"\${DPKG_ROOT:-}\" ] && [ -d /run/systemd/system ] &&
   [ \"\$(cat /proc/1/comm 2>/dev/null)\" = systemd ]; then
    systemctl stop iverd.service iverd.socket || true
fi
exit 0
")
file(WRITE "${_iver_deb}/postrm" "#!/bin/sh
set -e
if [ -z \"\${DPKG_ROOT:-}\" ] && [ -d /run/systemd/system ] && [ \"\$(cat /proc/1/comm 2>/dev/null)\" = systemd ]; then
    systemctl daemon-reload || true
fi
exit 0
")
file(CHMOD "${_iver_deb}/postinst" "${_iver_deb}/prerm" "${_iver_deb}/postrm"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${_iver_deb}/conffiles;${_iver_deb}/postinst;${_iver_deb}/prerm;${_iver_deb}/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Nothing but the installed tree: no test or bench programs are installed.
include(CPack)

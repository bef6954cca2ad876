# SPDX-License-Identifier: LGPL-2.1-or-later
# Where the built programs look for their configuration, and where the install
# step puts configuration and systemd files. Included from the top-level
# CMakeLists.txt before the targets (GNUInstallDirs is already included).
#
#   IVER_SYSCONFDIR   iverd reads IVER_SYSCONFDIR/iverd/iverd.conf, iverd.policy
#                     and policy.d/ (compiled in as IVER_SYSCONFDIR). Default:
#                     CMAKE_INSTALL_FULL_SYSCONFDIR, which is /etc for the /usr
#                     prefix (and /), PREFIX/etc otherwise (/etc/opt/… for /opt/…).
#
# The install destination of the configuration, IVER_ETCDIR, is relative to the
# install prefix whenever IVER_SYSCONFDIR lies below the configured prefix, so
# `cmake --install build --prefix /tmp/x` stays in /tmp/x; it is absolute
# (/etc/iverd) for a /usr build such as the .deb.

set(IVER_SYSCONFDIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}" CACHE PATH
    "Directory whose iverd/ subdirectory holds iverd.conf and the policy (compiled into iverd)")
add_compile_definitions(IVER_SYSCONFDIR="${IVER_SYSCONFDIR}")

string(REGEX REPLACE "/+$" "" _iver_pfx "${CMAKE_INSTALL_PREFIX}")
string(FIND "${IVER_SYSCONFDIR}/" "${_iver_pfx}/" _iver_pos)
if(_iver_pos EQUAL 0 AND NOT _iver_pfx STREQUAL "")
  file(RELATIVE_PATH _iver_rel "${_iver_pfx}" "${IVER_SYSCONFDIR}")
  set(IVER_ETCDIR "${_iver_rel}/iverd")
else()
  set(IVER_ETCDIR "${IVER_SYSCONFDIR}/iverd")
endif()

# systemd units, sysusers.d and tmpfiles.d: the system's directories (from
# pkg-config systemd) for a /usr (or /) prefix, where systemd reads them;
# below the install prefix otherwise (lib/systemd/system, lib/sysusers.d,
# lib/tmpfiles.d). A cache value (absolute, or relative to the prefix) wins.
if(_iver_pfx STREQUAL "/usr" OR _iver_pfx STREQUAL "")
  set(IVER_SYSTEM_PREFIX ON)
else()
  set(IVER_SYSTEM_PREFIX OFF)
endif()

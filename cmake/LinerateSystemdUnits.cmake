# Installs linerate's systemd units and their example configurations (dist/; docs/operations.md).
# Run at install time (cmake/LinerateInstall.cmake), when the prefix the units must name is known
# (`cmake --install --prefix`, CPack's /usr), and by tests/systemd/verify_units.sh on its own:
#   DESTDIR=ROOT cmake -DCMAKE_INSTALL_PREFIX=/usr -DLINERATE_SOURCE_DIR=SRC
#     -DLINERATE_STAGE_DIR=DIR -DLINERATE_BINDIR=bin -DLINERATE_DOCDIR=share/doc/linerate -P THIS
# (file(INSTALL) puts DESTDIR in front.) Units go to PREFIX/lib/systemd/system (a path systemd searches for /usr and /usr/local), the
# examples to SYSCONFDIR/linerate: /etc for the prefix /usr (GNUInstallDirs' rule), else
# PREFIX/etc.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/")
  set(LR_SYSCONFDIR /etc)
else()
  set(LR_SYSCONFDIR ${CMAKE_INSTALL_PREFIX}/etc)
endif()
set(LR_BINDIR ${CMAKE_INSTALL_PREFIX}/${LINERATE_BINDIR})
set(LR_DOCDIR ${CMAKE_INSTALL_PREFIX}/${LINERATE_DOCDIR})

# One unit per service: linerate-NAME@.service runs APP; ORDER is extra [Unit] lines.
function(linerate_unit name app description order)
  set(LR_NAME ${name})
  set(LR_APP ${app})
  set(LR_DESCRIPTION ${description})
  set(LR_UNIT_ORDER ${order})
  configure_file(${LINERATE_SOURCE_DIR}/dist/systemd/linerate-app@.service.in
                 ${LINERATE_STAGE_DIR}/linerate-${name}@.service @ONLY)
  file(INSTALL ${LINERATE_STAGE_DIR}/linerate-${name}@.service
       DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
  file(INSTALL ${LINERATE_SOURCE_DIR}/dist/etc/${name}-example.conf
       DESTINATION ${LR_SYSCONFDIR}/linerate)
endfunction()

linerate_unit(kvagg kvagg "key-value stream aggregation" "")
linerate_unit(nfv nfv "IPv4 header check, a bump in the wire" "")
linerate_unit(clocksync-master clocksync "clock synchronization master" "")
# A time source: chronyd reads its SHM refclock, ClockBound's clients its segment, so it starts
# before them, as time sources order themselves before time-sync.target (ClockBound has no
# unit in Debian; its clients wait for time-sync.target).
linerate_unit(clocksync-client clocksync "clock synchronization client, a time source"
              "# chronyd reads its SHM refclock, ClockBound's clients its segment: a time source.
Before=chronyd.service chrony.service time-sync.target
Wants=time-sync.target
")

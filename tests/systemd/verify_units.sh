#!/usr/bin/env bash
# The systemd units (dist/systemd/, made by cmake/LinerateSystemdUnits.cmake) as installed to a
# prefix: `systemd-analyze verify` finds nothing to say about an instance of each (it also checks
# that ExecStart's program exists: the build's apps are linked into the prefix), and each runs the
# right program with the contract docs/operations.md states. Skips without systemd-analyze.
#   verify_units.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC=$1
BUILD=$2
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
T=$(mktemp -d /tmp/linerate-units.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

P=$T/prefix
mkdir -p "$P/bin"
for app in kvagg nfv clocksync; do
  [[ -x $BUILD/apps/$app/$app ]] || fail "$BUILD/apps/$app/$app not built (scripts/build $app)"
  ln -s "$BUILD/apps/$app/$app" "$P/bin/$app"
done
cmake -DCMAKE_INSTALL_PREFIX="$P" -DLINERATE_SOURCE_DIR="$SRC" -DLINERATE_STAGE_DIR="$T/stage" \
  -DLINERATE_BINDIR=bin -DLINERATE_DOCDIR=share/doc/linerate \
  -P "$SRC/cmake/LinerateSystemdUnits.cmake" >/dev/null

# A unit line by line: `want UNIT LINE...`.
want() {
  local unit=$1
  shift
  for line in "$@"; do
    grep -qxF "$line" "$unit" || fail "$(basename "$unit") has no line '$line'"
  done
}

for pair in kvagg:kvagg nfv:nfv clocksync-master:clocksync clocksync-client:clocksync; do
  name=${pair%%:*} app=${pair#*:}
  unit=$P/lib/systemd/system/linerate-$name@.service
  [[ -f $unit ]] || fail "no $unit"
  [[ -f $P/etc/linerate/$name-example.conf ]] || fail "no $P/etc/linerate/$name-example.conf"
  grep -q '^ARGS="' "$P/etc/linerate/$name-example.conf" || fail "$name-example.conf sets no ARGS"
  want "$unit" "Type=notify" "WatchdogSec=10s" "Restart=on-failure" "KillSignal=SIGINT" \
    "RestartSec=1s" "RestartPreventExitStatus=2" "StartLimitIntervalSec=60s" "StartLimitBurst=5" \
    "EnvironmentFile=$P/etc/linerate/$name-%i.conf" "ExecStart=$P/bin/$app \$ARGS" \
    "StateDirectory=linerate" "LimitMEMLOCK=infinity"
  # The sandbox (docs/operations.md; the systemd stage scores it against chrony.service's).
  want "$unit" "NoNewPrivileges=yes" "ProtectSystem=strict" "ProtectHome=yes" "PrivateTmp=yes" \
    "ProtectKernelTunables=yes" "ProtectKernelModules=yes" "ProtectKernelLogs=yes" \
    "ProtectControlGroups=yes" "ProtectClock=yes" "ProtectProc=invisible" \
    "DevicePolicy=closed" "RestrictNamespaces=yes" "RestrictSUIDSGID=yes" "LockPersonality=yes" \
    "MemoryDenyWriteExecute=yes" "SystemCallArchitectures=native" \
    "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK AF_PACKET AF_XDP"
  # Verify an instance: the template loaded from the unit's directory. Warnings (an unknown key,
  # a bad value) leave its exit status 0, so its output must be empty too.
  out=$(systemd-analyze verify "$P/lib/systemd/system/linerate-$name@test.service" 2>&1) ||
    fail "systemd-analyze verify linerate-$name@test.service: $out"
  [[ -z $out ]] || fail "systemd-analyze verify linerate-$name@test.service: $out"
  echo "ok: linerate-$name@.service"
done
want "$P/lib/systemd/system/linerate-clocksync-client@.service" \
  "Before=chronyd.service chrony.service time-sync.target" "Wants=time-sync.target"
echo "ok: every unit verifies"

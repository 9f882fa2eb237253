# shellcheck shell=bash
# The system container of tests/systemd/run: its cached Debian root, its boot, commands in it,
# and the removal of everything at exit. Sourced; uses SRC, W, MIRROR and CACHE.

ID=$$
NAME=lrsd-$ID           # the container's machine name and hostname
CL_NS=lrsd-$ID          # the clients' network namespace
KV_IF=lrsdk$ID          # the veth end moved into the container (kvagg's --af-xdp)
CL_IF=lrsdc$ID          # its peer, in CL_NS
KV_IP=10.213.0.1        # the addresses tests/kvagg/service_test.py's clients use
CL_IP=10.213.0.2
NSPAWN="" LEADER="" MOUNTED=0
CLIENT_PIDS=()

# A command inside the container: every namespace of its PID 1, a clean environment.
in_ct() {
  nsenter -t "$LEADER" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}

# The package names of the .deb's Depends, comma-separated, without versions.
deb_depends() {
  dpkg-deb -f "$1" Depends | sed -E 's/ *\([^)]*\)//g; s/ //g'
}

# Prints the path of the cached root for this package's dependencies, making it when missing.
# chrony is there for check_units_security, whose yardstick is its unit; it never runs in the
# container (ConditionCapability=CAP_SYS_TIME: nspawn withholds it).
cached_rootfs() {
  local include key dir
  include="systemd,systemd-sysv,dbus,chrony,$(deb_depends "$1")"
  key=$(printf '%s\n' bookworm minbase "$MIRROR" "$include" | sha256sum | cut -c1-16)
  dir=$CACHE/bookworm-$key
  [[ -e $dir/.complete ]] || make_rootfs "$dir" "$include" >&2
  echo "$dir"
}

# debootstrap into a temporary directory, renamed into place when complete (a run killed halfway
# leaves no root that looks usable; of two runs making the same root at once, one is kept).
make_rootfs() {
  local dir=$1 include=$2 tmp=$1.tmp.$ID t0=$SECONDS
  echo "systemd: making the Debian 12 root $dir (debootstrap --include=$include)"
  mkdir -p "$CACHE"
  rm -rf "$tmp"
  if ! debootstrap --variant=minbase --include="$include" bookworm "$tmp" "$MIRROR" \
    >"$W/debootstrap.log" 2>&1; then
    tail -20 "$W/debootstrap.log"
    rm -rf "$tmp"
    return 1
  fi
  rm -f "$tmp"/var/cache/apt/archives/*.deb
  touch "$tmp/.complete"
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  echo "systemd: root made in $((SECONDS - t0)) s"
}

# The veth pair: KV_IF stays here until the container takes it, CL_IF in the clients' namespace.
make_veth() {
  ip netns add "$CL_NS"
  ip link add "$KV_IF" type veth peer name "$CL_IF" netns "$CL_NS"
  ip -n "$CL_NS" addr add "$CL_IP/24" dev "$CL_IF"
  ip -n "$CL_NS" link set "$CL_IF" up
  ip -n "$CL_NS" link set lo up
}

# A command in the container's root before it boots (the host's network: apt reaches the mirror).
in_root() {
  systemd-nspawn -q -D "$W/root" --register=no --keep-unit env DEBIAN_FRONTEND=noninteractive "$@"
}

# An overlay of the cached root (the cache stays as it is), the package installed by apt inside
# it, then booted with KV_IF; returns once systemd says the system is running.
boot_container() {
  local lower=$1 deb=$2
  mkdir -p "$W/upper" "$W/work" "$W/root"
  mount -t overlay overlay -o "lowerdir=$lower,upperdir=$W/upper,workdir=$W/work" "$W/root"
  MOUNTED=1
  cp "$deb" "$W/root/var/tmp/linerate.deb"
  # Without Recommends: the package's Depends must be enough. The root's package lists are as
  # old as the root: when a dependency needs a newer version, they are updated (in the overlay).
  in_root apt-get install -y -q --no-install-recommends /var/tmp/linerate.deb >"$W/apt.log" 2>&1 ||
    { in_root apt-get update -q && in_root apt-get install -y -q --no-install-recommends \
      /var/tmp/linerate.deb; } >>"$W/apt.log" 2>&1 || {
    tail -20 "$W/apt.log"
    return 1
  }
  make_veth
  # What a host has and nspawn withholds by default: the capabilities AF_XDP and BPF need (the
  # units' CapabilityBoundingSet names them), the bpf() system call (not in nspawn's seccomp
  # allow list) and /sys/module (nspawn's /sys has block, bus, class, dev, devices and kernel
  # only; the EAL's VFIO set-up fails without it). The veth end is moved in by ip
  # (--network-interface= wants udev to have seen it; this host may run no udev).
  systemd-nspawn -q -D "$W/root" -b --register=no --keep-unit --console=passive \
    --machine="$NAME" --private-network --bind-ro=/sys/module \
    --capability=CAP_IPC_LOCK,CAP_BPF,CAP_PERFMON --system-call-filter=bpf \
    >"$W/console.log" 2>&1 &
  NSPAWN=$!
  wait_for_boot
  ip link set dev "$KV_IF" netns "$LEADER"
  nsenter -t "$LEADER" -n ip addr add "$KV_IP/24" dev "$KV_IF"
  nsenter -t "$LEADER" -n ip link set "$KV_IF" up
}

# LEADER: the container's PID 1 (systemd, a child of nspawn); then its boot, to `running`.
wait_for_boot() {
  local state=
  for _ in $(seq 300); do
    kill -0 "$NSPAWN" 2>/dev/null || { cat "$W/console.log"; return 1; }
    LEADER=${LEADER:-$(pgrep -P "$NSPAWN" -x systemd || true)}
    # Refused until PID 1 listens; then --wait returns at the end of the boot.
    if [[ -n $LEADER ]] && state=$(in_ct timeout 60 systemctl is-system-running --wait 2>&1); then
      return 0
    fi
    [[ $state == degraded ]] && break
    sleep 0.1
  done
  echo "systemd: the container's boot did not reach running: ${state:-no PID 1}"
  [[ -n $LEADER ]] && in_ct systemctl --failed --no-pager
  return 1
}

# Poweroff (SIGTERM to nspawn), or SIGKILL after 20 s; then the overlay, the namespace, the veth
# (if the container never took it) and the scratch directory.
cleanup() {
  local rc=$?
  for pid in "${CLIENT_PIDS[@]}"; do
    kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  if [[ -n $NSPAWN ]] && kill -0 "$NSPAWN" 2>/dev/null; then
    kill -TERM "$NSPAWN"
    for _ in $(seq 200); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$NSPAWN" ${LEADER:+"$LEADER"} 2>/dev/null || true
  fi
  if [[ -n $NSPAWN ]]; then wait "$NSPAWN" 2>/dev/null || true; fi
  rmdir "/run/systemd/nspawn/propagate/$NAME" 2>/dev/null || true # what a killed nspawn leaves
  ip netns del "$CL_NS" 2>/dev/null || true
  ip link del "$KV_IF" 2>/dev/null || true
  if ((MOUNTED)) && ! umount "$W/root"; then
    echo "systemd: $W/root still mounted; left in place" >&2
  else
    rm -rf "$W"
  fi
  exit "$rc"
}

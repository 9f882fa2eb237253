#!/usr/bin/env bash
# The project as a user gets it: `cmake --install` into a prefix, the Debian package unpacked with
# dpkg -x, and examples/ttl-forward built against the installed package with its own tests.
# The installed l2reflect must write byte for byte what the build tree's writes.
#   install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC=$1
BUILD=$2
for tool in cmake cpack dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
T=$(mktemp -d /tmp/linerate-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# The frames of two pcaps, byte for byte (net_pcap stamps them with the time they were sent).
same_frames() {
  python3 - "$1" "$2" <<'PY'
import struct, sys
def frames(path):
    data = open(path, "rb").read()
    off, out = 24, []
    while off < len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out
a, b = frames(sys.argv[1]), frames(sys.argv[2])
sys.exit(0 if a == b and len(a) > 0 else 1)
PY
}

"$BUILD/bench/gen/linerate-gen" --write-pcap "$T/in.pcap" --count 500 --kind udp --size 128 \
  --flows 8 >/dev/null
"$BUILD/apps/l2reflect/l2reflect" --pcap "$T/in.pcap:$T/want.pcap" >/dev/null

# kvagg's wire header as a C client uses it (strict C11), the C++ client beside it.
check_kvagg_headers() {
  local inc=$1
  printf '%s\n' '#include <linerate/kvagg_wire.h>' \
    'int main(void) { return LINERATE_KV_HEADER_LEN == 22 && LINERATE_KV_MAGIC == 0x4B56 ? 0 : 1; }' \
    >"$T/kv_wire.c"
  cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$inc" "$T/kv_wire.c" -o "$T/kv_wire" ||
    fail "$inc/linerate/kvagg_wire.h does not compile as C11"
  "$T/kv_wire" || fail "$inc/linerate/kvagg_wire.h: wrong numbers"
  local std
  for std in c++17 c++20; do  # the C++ client is C++17 or later
    echo '#include <linerate/kvagg_client.hpp>' |
      c++ -std=$std -Wall -Wextra -Werror -fsyntax-only -I"$inc" -x c++ - ||
      fail "$inc/linerate/kvagg_client.hpp does not compile as $std"
  done
}

# Every public header compiles on its own against an installed tree and DPDK (once: the
# package holds the same files).
check_headers_alone() {
  local inc=$1/include
  for header in $(cd "$inc/linerate" && find . -name '*.hpp' | sed 's|^\./||'); do
    echo "#include \"$header\"" |
      c++ -std=c++20 -fsyntax-only -I"$inc/linerate" -I"$inc" $(pkg-config --cflags libdpdk) \
        -x c++ - || fail "installed $header does not compile alone"
  done
  echo "ok: every public header compiles alone"
}

# An installed tree: every program runs from it, l2reflect gives the same output, the XDP
# objects are where the apps look (bin/../lib.../linerate/bpf).
check_tree() {
  local root=$1 bin=$1/bin
  for p in l2reflect nfv kvagg clocksync linerate-gen linerate-tt kvagg_load; do
    "$bin/$p" --help >/dev/null || fail "$bin/$p --help"
  done
  "$bin/l2reflect" --pcap "$T/in.pcap:$T/got.pcap" --json "$T/got.json" >/dev/null ||
    fail "$bin/l2reflect --pcap"
  same_frames "$T/want.pcap" "$T/got.pcap" || fail "$bin/l2reflect wrote other frames"
  grep -q '"mempool_in_use_at_exit": 0' "$T/got.json" || fail "installed l2reflect leaked mbufs"
  if [[ -f $BUILD/bpf/steer.bpf.o ]]; then
    compgen -G "$root/lib*/linerate/bpf/steer.bpf.o" >/dev/null ||
      compgen -G "$root/lib/*/linerate/bpf/steer.bpf.o" >/dev/null ||
      fail "no steer.bpf.o under $root/lib"
  fi
  [[ -f $root/include/linerate/runtime/runtime.hpp && -f $root/include/linerate/truetime.h ]] ||
    fail "headers missing under $root/include"
  # The runtime's inside stays out (cmake/LinerateInstall.cmake: LINERATE_PUBLIC_HEADERS).
  for private in eal/eal.hpp eal/af_xdp_ports.hpp runtime/pcap_mode.hpp runtime/exception_feature.hpp \
      runtime/xdp_steer_ports.hpp runtime/xdp_steer_feature.hpp stats/report.hpp; do
    [[ ! -e $root/include/linerate/$private ]] || fail "private header installed: $private"
  done
  check_kvagg_headers "$root/include"
  echo "ok: $root"
}

# The systemd units and example configurations (docs/operations.md): each unit runs the prefix's
# program with the arguments of its file under SYSCONFDIR/linerate.
#   check_units UNIT_DIR SYSCONFDIR BINDIR (the last two as the units name them)
check_units() {
  local units=$1 etc=$2 bin=$3 root=${4:-}
  for pair in kvagg:kvagg nfv:nfv clocksync-master:clocksync clocksync-client:clocksync; do
    local name=${pair%%:*} app=${pair#*:} unit=$units/linerate-${pair%%:*}@.service
    [[ -f $unit ]] || fail "no $unit"
    grep -qxF "ExecStart=$bin/$app \$ARGS" "$unit" || fail "$unit does not run $bin/$app"
    grep -qxF "EnvironmentFile=$etc/linerate/$name-%i.conf" "$unit" ||
      fail "$unit does not read $etc/linerate/$name-%i.conf"
    [[ -f $root$etc/linerate/$name-example.conf ]] || fail "no $root$etc/linerate/$name-example.conf"
  done
  echo "ok: units in $units"
}

cmake --install "$BUILD" --prefix "$T/prefix" >/dev/null
check_tree "$T/prefix"
check_units "$T/prefix/lib/systemd/system" "$T/prefix/etc" "$T/prefix/bin"
check_headers_alone "$T/prefix"

(cd "$BUILD" && cpack -G DEB -B "$T/deb" >/dev/null)
DEB=$(ls "$T"/deb/linerate_*.deb)
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
for dep in librte-eal23 librte-ethdev23 librte-net-af-xdp23 libpcap0.8 libbpf1 libtbb12 libsystemd0 librte-mempool-ring23; do
  [[ $DEPENDS == *"$dep"* ]] || fail "$DEB does not depend on $dep: $DEPENDS"
done
dpkg -x "$DEB" "$T/root"
check_tree "$T/root/usr"
check_units "$T/root/usr/lib/systemd/system" /etc /usr/bin "$T/root"
# The examples are conffiles (an edited one survives an upgrade).
diff <(dpkg-deb -I "$DEB" conffiles) <(cd "$T/root" && find etc/linerate -type f | sed 's|^|/|' | sort) ||
  fail "$DEB: conffiles differ from the files under /etc"
echo "ok: $(basename "$DEB") $(du -k "$DEB" | cut -f1) KiB"

LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$SRC/examples/ttl-forward" -B "$T/ttl" -DCMAKE_PREFIX_PATH="$T/prefix" "${LAUNCHER[@]}" \
  >/dev/null
cmake --build "$T/ttl" -j2 >/dev/null
(cd "$T/ttl" && ctest --output-on-failure) || fail "examples/ttl-forward tests"
echo "ok: examples/ttl-forward built against the installed package, tests pass"

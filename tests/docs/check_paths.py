#!/usr/bin/env python3
"""The paths a reference page names exist: docs/architecture.md's "where things go" and its
layers and file tables tell a reader which files to touch, so a file moved or renamed without the
page fails here. A path is a word starting with a top-level directory of the repository, or
with one of lib/'s (then under lib/); a path
without its extension names a C++ pair (`runtime/xdp_steer_feature`: .hpp/.cpp); `<app>` and `*`
are placeholders and are skipped.
  check_paths.py REPO_ROOT PAGE..."""
import os
import re
import sys

ROOTS = ("lib", "apps", "cmake", "tests", "include", "bench", "examples", "scripts", "docs")
# lib/'s own directories, which the page also names from lib/ (`runtime/pcap_mode`).
LIB_DIRS = ("cli", "eal", "mem", "pcapio", "pkt", "ring", "runtime", "stats", "worker", "xdp")
PATH = re.compile(r"(?<![\w/.<-])((?:%s)/[\w./-]*[\w/])" % "|".join(ROOTS + LIB_DIRS))


def exists(root, path):
    if path.split("/")[0] in LIB_DIRS:
        path = os.path.join("lib", path)
    full = os.path.join(root, path)
    return any(os.path.exists(full + ext) for ext in ("", ".hpp", ".cpp", ".h", ".c"))


def missing_paths(root, page):
    text = open(os.path.join(root, page), encoding="utf-8").read()
    found = []
    for m in PATH.finditer(text):
        path = m.group(1)
        if "<" in text[m.end():m.end() + 1] or "*" in text[m.end():m.end() + 1]:
            continue  # lib/xdp/<family>/, apps/<app>/: a placeholder follows
        if not exists(root, path):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{page}:{line}: {path}")
    return found


def main():
    root, pages = sys.argv[1], sys.argv[2:]
    missing = [m for page in pages for m in missing_paths(root, page)]
    for m in missing:
        print(f"no such file: {m}")
    checked = sum(len(PATH.findall(open(os.path.join(root, p)).read())) for p in pages)
    print(f"{checked} paths named, {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

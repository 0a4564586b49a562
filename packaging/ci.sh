#!/usr/bin/env bash
# CI for the installers: build the bundle + .deb, smoke-test the bundle and the .deb unpacked into
# a throwaway root, print the sizes. Linux (Debian/Ubuntu) only; run from anywhere:
#     bash packaging/ci.sh
# Needs the venv (`make test` or `make demo` creates it); installs PyInstaller into it on demand
# and, when root, the system libraries Qt's xcb plugin needs (for the build host and the smoke test).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-$PWD/.venv/bin/python}"
[ -x "$PY" ] || make .venv/.installed-app

XCB_LIBS="libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0
          libxcb-shape0 libxcb-randr0 libxcb-xkb1 libegl1 libgl1 libfontconfig1 libdbus-1-3 libwayland-client0
          libwayland-cursor0 libwayland-egl1 binutils desktop-file-utils xvfb xauth"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=""
    for p in $XCB_LIBS; do dpkg -s "$p" >/dev/null 2>&1 || missing+=" $p"; done
    if [ -n "$missing" ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    fi
fi

# Builds (or, with DPSTUDIO_PACKAGING_REBUILD=0 and existing outputs, reuses) and smoke-tests.
DPSTUDIO_TEST_PACKAGING=1 DPSTUDIO_PACKAGING_REBUILD="${DPSTUDIO_PACKAGING_REBUILD:-1}" \
    QT_QPA_PLATFORM=offscreen "$PY" -m pytest -q -p no:cacheprovider -s tests/test_packaging.py

echo "== sizes"
du -sh packaging/dist/dpstudio
ls -l packaging/dist/*.deb | awk '{printf "%s  %.1f MB\n", $NF, $5/1e6}'

#!/usr/bin/env bash
# Build the Debian/Ubuntu package from the PyInstaller one-folder bundle.
#
#   packaging/build_deb.sh BUNDLE_DIR [OUT_DIR]      (BUNDLE_DIR: packaging/dist/dpstudio)
#
# Layout installed:
#   /opt/dpstudio/                      the bundle (executable dpstudio + _internal/)
#   /usr/bin/dpstudio                   -> /opt/dpstudio/dpstudio (CLI and GUI: `dpstudio`, `dpstudio gui FILE`)
#   /usr/share/applications/dpstudio.desktop
#   /usr/share/icons/hicolor/{16..512}x{..}/apps/dpstudio.png, scalable/apps/dpstudio.svg
#   /usr/share/mime/packages/dpstudio.xml   (Parquet MIME type: not in every shared-mime-info)
#   /usr/share/doc/dpstudio/copyright
# Env: ICON_DIR (PNGs from render_icons.py; rendered here when absent), PY (python with PySide6,
#      to render icons), DEB_MAINTAINER, DEB_ARCH (default: dpkg --print-architecture),
#      XZ_LEVEL (default 6: 98 MB; 9: ~95 MB, twice the time).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
BUNDLE="$(cd "${1:?usage: build_deb.sh BUNDLE_DIR [OUT_DIR]}" && pwd)"
OUT="$(mkdir -p "${2:-$HERE/dist}" && cd "${2:-$HERE/dist}" && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
NAME=dpstudio
VERSION="$(sed -n "s/^__version__ *= *[\"']\([^\"']*\).*/\1/p" "$ROOT/dpstudio/__init__.py")"
ARCH="${DEB_ARCH:-$(dpkg --print-architecture)}"
MAINTAINER="${DEB_MAINTAINER:-dpstudio maintainers <maintainers@dpstudio.invalid>}"
SVG="$ROOT/resources/icons/dpstudio.svg"; [ -f "$SVG" ] || SVG="$HERE/icons/dpstudio.svg"

[ -x "$BUNDLE/$NAME" ] || { echo "build_deb: $BUNDLE/$NAME is not an executable bundle" >&2; exit 2; }
[ -n "$VERSION" ] || { echo "build_deb: cannot read the version from dpstudio/__init__.py" >&2; exit 2; }

ICON_DIR="${ICON_DIR:-}"; ICON_DIR_TMP=""
if [ -z "$ICON_DIR" ] || [ ! -f "$ICON_DIR/$NAME-256.png" ]; then
    ICON_DIR_TMP="$(mktemp -d)"; ICON_DIR="$ICON_DIR_TMP"
    QT_QPA_PLATFORM=offscreen "$PY" "$HERE/render_icons.py" "$ICON_DIR" "$SVG" >/dev/null
fi

# Runtime libraries the bundle expects from the system (Qt's xcb/wayland platform plugins, GL,
# fonts, D-Bus, ICU/glib come bundled or from here). check_depends below verifies that every
# library the bundle links against and does not carry itself is covered.
# glibc: the newest GLIBC_x.y symbol version any bundled binary uses (the build host's Python and
# system libraries set it: built on Debian 12 -> 2.36, i.e. Debian 12+, Ubuntu 23.04+).
GLIBC_MIN="$(find "$BUNDLE" -type f \( -name '*.so*' -o -name "$NAME" \) -print0 | xargs -0 objdump -T 2>/dev/null \
             | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1)"
DEPENDS=(
    "libc6 (>= ${GLIBC_MIN:-2.28})" libstdc++6 libgcc-s1 zlib1g libzstd1 libglib2.0-0 libdbus-1-3
    libfontconfig1 libfreetype6 libx11-6 libx11-xcb1 libxcb1 libxcb-cursor0 libxcb-icccm4
    libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render0 libxcb-render-util0 libxcb-shape0
    libxcb-shm0 libxcb-sync1 libxcb-util1 libxcb-xfixes0 libxcb-xkb1 libxkbcommon0
    libxkbcommon-x11-0 libegl1 libgl1 libwayland-client0 libwayland-cursor0 libwayland-egl1
)
# libgtk-3-0: only for Qt's optional GTK platform theme (native file dialogs/colours on GNOME).
RECOMMENDS=(fonts-dejavu-core shared-mime-info desktop-file-utils hicolor-icon-theme libgtk-3-0)

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE" ${ICON_DIR_TMP:+"$ICON_DIR_TMP"}' EXIT
PKG="$STAGE/pkg"
umask 022
mkdir -p "$PKG/DEBIAN" "$PKG/opt" "$PKG/usr/bin" "$PKG/usr/share/applications" \
         "$PKG/usr/share/icons/hicolor/scalable/apps" "$PKG/usr/share/mime/packages" \
         "$PKG/usr/share/doc/$NAME"

cp -a "$BUNDLE" "$PKG/opt/$NAME"
chmod -R u+rwX,go+rX,go-w "$PKG/opt/$NAME"
ln -s "/opt/$NAME/$NAME" "$PKG/usr/bin/$NAME"

for n in 16 24 32 48 64 128 256 512; do
    d="$PKG/usr/share/icons/hicolor/${n}x${n}/apps"; mkdir -p "$d"
    install -m 644 "$ICON_DIR/$NAME-$n.png" "$d/$NAME.png"
done
install -m 644 "$SVG" "$PKG/usr/share/icons/hicolor/scalable/apps/$NAME.svg"

cat > "$PKG/usr/share/applications/$NAME.desktop" <<EOF
[Desktop Entry]
Type=Application
Version=1.0
Name=dpstudio
GenericName=Differential Privacy Release
Comment=Release sensitive tables with differential privacy and a signed-off report
Exec=dpstudio gui %f
TryExec=dpstudio
Icon=dpstudio
Terminal=false
Categories=Office;Science;
MimeType=text/csv;application/vnd.apache.parquet;application/x-parquet;
Keywords=privacy;differential privacy;anonymization;anonymisation;census;CSV;Parquet;
StartupNotify=true
StartupWMClass=dpstudio
EOF
chmod 644 "$PKG/usr/share/applications/$NAME.desktop"

cat > "$PKG/usr/share/mime/packages/$NAME.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">
  <mime-type type="application/vnd.apache.parquet">
    <comment>Apache Parquet table</comment>
    <alias type="application/x-parquet"/>
    <magic priority="50"><match type="string" offset="0" value="PAR1"/></magic>
    <glob pattern="*.parquet"/>
  </mime-type>
</mime-info>
EOF

cat > "$PKG/usr/share/doc/$NAME/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: dpstudio

Files: *
License: Apache-2.0
 On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.
 /opt/dpstudio/_internal bundles Python 3 (PSF licence), numpy, scipy, pandas, pyarrow,
 openpyxl, pyqtgraph and Qt for Python / Qt 6 (LGPL-3.0; the Qt libraries are shipped as
 separate, replaceable shared libraries under /opt/dpstudio/_internal/PySide6/Qt/lib).

Files: opt/dpstudio/_internal/resources/demo/*
License: public-domain
 Derived from US Census PUMS microdata; see
 /opt/dpstudio/_internal/resources/demo/LICENSE-data.md.
EOF

cat > "$PKG/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q /usr/share/applications || true
    command -v update-mime-database >/dev/null 2>&1 && update-mime-database /usr/share/mime || true
    command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t -f /usr/share/icons/hicolor || true
fi
exit 0
EOF
cat > "$PKG/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = remove ] || [ "$1" = purge ]; then
    command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q /usr/share/applications || true
    command -v update-mime-database >/dev/null 2>&1 && update-mime-database /usr/share/mime || true
    command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t -f /usr/share/icons/hicolor || true
fi
exit 0
EOF
chmod 755 "$PKG/DEBIAN/postinst" "$PKG/DEBIAN/postrm"

join() { local IFS=','; echo "$*" | sed 's/,/, /g'; }
INSTALLED_KB="$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)"
cat > "$PKG/DEBIAN/control" <<EOF
Package: $NAME
Version: $VERSION
Section: science
Priority: optional
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $INSTALLED_KB
Depends: $(join "${DEPENDS[@]}")
Recommends: $(join "${RECOMMENDS[@]}")
Homepage: https://github.com/dpstudio/dpstudio
Description: release sensitive tables with differential privacy
 dpstudio loads a table (CSV/TSV, Parquet, Excel, Stata, SAS), suggests which
 columns identify people, guides you through a differentially private release
 (perturbed records, synthetic data, a DP model or density), shows what each
 privacy budget costs in accuracy and risk, and writes the privatized data plus
 an HTML/PDF report. A per-dataset ledger tracks the total privacy spend.
 .
 Self-contained: Python, Qt and the numeric libraries are bundled in
 /opt/dpstudio; "dpstudio --help" lists the headless commands.
EOF

# Every shared library the bundle needs but does not carry must come from a declared package.
check_depends() {
    command -v dpkg-query >/dev/null || return 0
    local carried needed missing="" lib pkgs
    carried="$(find "$PKG/opt/$NAME" -name '*.so*' -printf '%f\n' | sort -u)"
    # (optional plugins are skipped: Qt ignores a platform theme whose libraries are missing)
    needed="$(find "$PKG/opt/$NAME" -type f \( -name '*.so*' -o -name "$NAME" \) -not -path '*/platformthemes/*' -print0 \
        | xargs -0 -r readelf -d 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)"
    for lib in $needed; do
        grep -qxF "$lib" <<<"$carried" && continue
        pkgs="$(dpkg-query -S "*/$lib" 2>/dev/null | cut -d: -f1 | sort -u | tr '\n' ' ')" || true
        if [ -z "$pkgs" ]; then missing+=" $lib(no-package-on-build-host)"; continue; fi
        local ok=0 p
        for p in $pkgs; do
            for d in "${DEPENDS[@]}"; do [ "${d%% *}" = "$p" ] && ok=1; done
        done
        [ "$ok" = 1 ] || missing+=" $lib($pkgs)"
    done
    if [ -n "$missing" ]; then
        echo "build_deb: WARNING: libraries linked by the bundle but not covered by Depends:$missing" >&2
        [ "${STRICT_DEPENDS:-0}" = 1 ] && return 1
    fi
    return 0
}
check_depends

DEB="$OUT/${NAME}_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Zxz -z"${XZ_LEVEL:-6}" --build "$PKG" "$DEB" >/dev/null
echo "$DEB"
ls -l "$DEB" | awk '{printf "deb size: %.1f MB (%d bytes)\n", $5/1e6, $5}'
echo "installed size: $((INSTALLED_KB / 1024)) MB"

#!/usr/bin/env bash
# macOS: dpstudio.app + .dmg from the same PyInstaller spec. Cannot run on the Linux CI machines.
#
#   packaging/macos/build_app.sh            (from anywhere; needs Xcode command line tools)
#
# Steps: venv python (PY, default .venv/bin/python) with dpstudio + pyinstaller; icons rendered with
# Qt (render_icons.py) -> iconutil .icns; PyInstaller builds packaging/dist/dpstudio.app (BUNDLE in
# dpstudio.spec); Info.plist replaced from Info.plist.in (CSV/Parquet document types, version from
# dpstudio/__init__.py); ad-hoc code signature (set CODESIGN_IDENTITY="Developer ID Application: ..."
# for a distributable, notarised build); hdiutil makes packaging/dist/dpstudio-<version>.dmg with an
# /Applications link. The CLI is the same binary: dpstudio.app/Contents/MacOS/dpstudio --version.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PKG="$(cd "$HERE/.." && pwd)"
ROOT="$(cd "$PKG/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
NAME=dpstudio
VERSION="$(sed -n "s/^__version__ *= *[\"']\([^\"']*\).*/\1/p" "$ROOT/dpstudio/__init__.py")"
DIST="$PKG/dist"; WORK="$ROOT/build/pyinstaller-macos"; ICONS="$ROOT/build/icons"
[ "$(uname -s)" = Darwin ] || { echo "build_app.sh runs on macOS only" >&2; exit 2; }

"$PY" -c 'import PyInstaller' 2>/dev/null || "$PY" -m pip install -q pyinstaller

# Icons: PNGs from the SVG (Qt), then an .icns via iconutil.
"$PY" "$PKG/render_icons.py" "$ICONS" >/dev/null
ISET="$ICONS/$NAME.iconset"; rm -rf "$ISET"; mkdir -p "$ISET"
for n in 16 32 128 256 512; do
    cp "$ICONS/$NAME-$n.png" "$ISET/icon_${n}x${n}.png"
    d=$((n * 2)); [ -f "$ICONS/$NAME-$d.png" ] && cp "$ICONS/$NAME-$d.png" "$ISET/icon_${n}x${n}@2x.png"
done
[ -f "$ISET/icon_512x512@2x.png" ] || sips -z 1024 1024 "$ICONS/$NAME-512.png" --out "$ISET/icon_512x512@2x.png" >/dev/null
iconutil -c icns "$ISET" -o "$ICONS/$NAME.icns"

DPSTUDIO_ICON_DIR="$ICONS" "$PY" -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$DIST" --workpath "$WORK" "$PKG/dpstudio.spec"
APP="$DIST/$NAME.app"
[ -d "$APP" ] || { echo "build_app.sh: $APP was not built" >&2; exit 1; }

sed "s/@VERSION@/$VERSION/g" "$HERE/Info.plist.in" > "$APP/Contents/Info.plist"
plutil -lint "$APP/Contents/Info.plist"
cp "$ICONS/$NAME.icns" "$APP/Contents/Resources/$NAME.icns"

codesign --force --deep --options runtime --timestamp=none --sign "${CODESIGN_IDENTITY:--}" "$APP"
"$APP/Contents/MacOS/$NAME" --version

DMG="$DIST/$NAME-$VERSION.dmg"
STAGE="$(mktemp -d)"; trap 'rm -rf "$STAGE"' EXIT
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"
rm -f "$DMG"
hdiutil create -volname "$NAME $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO -imagekey zlib-level=9 "$DMG"
echo "$DMG"

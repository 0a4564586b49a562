#!/usr/bin/env bash
# Smoke test of the frozen dpstudio.
#
#   packaging/smoke_test.sh BUNDLE_DIR        (packaging/dist/dpstudio)
#   packaging/smoke_test.sh DEB_ROOT          (a .deb unpacked with `dpkg-deb -x pkg.deb DEB_ROOT`)
#
# Checks, without Python or a display on the host:
#   1. `dpstudio --version` (also through a symlink, as /usr/bin/dpstudio is one)
#   2. a headless release of the bundled demo data with an HTML report; the outputs exist
#   3. Parquet + CSV through the bundled pyarrow: release the demo to .parquet with a PDF report
#      (Qt's QPdfWriter), `inspect` the .parquet back
#   4. the GUI on the demo data, offscreen (QT_QPA_PLATFORM=offscreen), quitting itself after
#      DPSTUDIO_EXIT_AFTER_MS=2000: exit 0, a visible window, no traceback / Qt plugin error;
#      prints launch -> event loop with the main window shown
#   5. the xcb platform plugin's libraries resolve on this host (what a desktop user needs);
#      with xvfb-run available, also the GUI on a real (virtual) X server
#   DEB_ROOT only: /usr/bin/dpstudio link, .desktop entry (desktop-file-validate when present),
#      hicolor icons, MIME definition, control file.
# Env: SMOKE_GUI=0 skips 4+5 (GUI not written yet); SMOKE_XVFB=0 skips the Xvfb run.
set -uo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
TARGET="$(cd "${1:?usage: smoke_test.sh BUNDLE_DIR|DEB_ROOT}" && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
FAILS=0
ok()   { printf '  ok    %s\n' "$*"; }
fail() { printf '  FAIL  %s\n' "$*"; FAILS=$((FAILS + 1)); }
note() { printf '  note  %s\n' "$*"; }
now()  { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
BAD_STDERR='Traceback|could not load the Qt platform plugin|This application failed to start|no Qt platform plugin|ModuleNotFoundError|ImportError|Segmentation fault|core dumped|internal error|cannot open shared object'

if [ -x "$TARGET/dpstudio" ] && [ -d "$TARGET/_internal" ]; then
    KIND=bundle; BUNDLE="$TARGET"
elif [ -x "$TARGET/opt/dpstudio/dpstudio" ]; then
    KIND=deb; BUNDLE="$TARGET/opt/dpstudio"
else
    echo "smoke_test: $TARGET is neither a dpstudio bundle nor an unpacked .deb root" >&2; exit 2
fi
EXE="$BUNDLE/dpstudio"
EXPECTED_VERSION=""
[ -f "$HERE/../dpstudio/__init__.py" ] && \
    EXPECTED_VERSION="$(sed -n "s/^__version__ *= *[\"']\([^\"']*\).*/\1/p" "$HERE/../dpstudio/__init__.py")"
# Isolate from the user's settings and ledger.
export HOME="$TMP/home" XDG_CONFIG_HOME="$TMP/home/.config" XDG_DATA_HOME="$TMP/home/.local/share" \
       XDG_RUNTIME_DIR="$TMP/run" DPSTUDIO_LEDGER="$TMP/ledger.sqlite"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"; chmod 700 "$XDG_RUNTIME_DIR"
unset DPSTUDIO_RESOURCES PYTHONPATH PYTHONHOME
echo "smoke test of $KIND $TARGET"

# ---- deb layout --------------------------------------------------------------------------------
if [ "$KIND" = deb ]; then
    link="$(readlink "$TARGET/usr/bin/dpstudio" 2>/dev/null)"
    if [ "$link" = /opt/dpstudio/dpstudio ]; then ok "/usr/bin/dpstudio -> $link"
    elif [ -f "$TARGET/usr/bin/dpstudio" ]; then ok "/usr/bin/dpstudio (wrapper)"
    else fail "/usr/bin/dpstudio missing or points to '$link'"; fi
    desktop="$TARGET/usr/share/applications/dpstudio.desktop"
    if [ -f "$desktop" ]; then
        grep -q '^Categories=Office;Science;' "$desktop" && grep -q '^MimeType=.*text/csv' "$desktop" \
            && grep -q 'application/vnd.apache.parquet' "$desktop" && ok ".desktop entry" \
            || fail ".desktop entry lacks Categories/MimeType"
        if command -v desktop-file-validate >/dev/null; then
            out="$(desktop-file-validate "$desktop" 2>&1)"
            if grep -q 'error:' <<<"$out"; then fail "desktop-file-validate: $out"; else ok "desktop-file-validate${out:+ ($out)}"; fi
        fi
    else fail "no .desktop entry"; fi
    [ -s "$TARGET/usr/share/icons/hicolor/256x256/apps/dpstudio.png" ] && ok "hicolor 256x256 icon" || fail "no 256x256 icon"
    [ -s "$TARGET/usr/share/icons/hicolor/scalable/apps/dpstudio.svg" ] && ok "scalable icon" || fail "no scalable icon"
    [ -s "$TARGET/usr/share/mime/packages/dpstudio.xml" ] && ok "Parquet MIME type" || fail "no MIME definition"
    if [ -f "$TARGET/DEBIAN/control" ]; then grep -q '^Depends:.*libxcb-cursor0' "$TARGET/DEBIAN/control" \
        && ok "control Depends" || fail "control Depends lacks the xcb libraries"; fi
fi

# ---- 1. version --------------------------------------------------------------------------------
t0="$(now)"; out="$("$EXE" --version 2>"$TMP/err")"; rc=$?; t1="$(now)"
if [ $rc = 0 ] && [[ "$out" == "dpstudio ${EXPECTED_VERSION}"* ]]; then ok "--version: '$out' in $(secs "$t0" "$t1") s"
else fail "--version: rc=$rc out='$out' $(head -c 2000 "$TMP/err")"; fi
ln -s "$EXE" "$TMP/dpstudio-link"
out="$("$TMP/dpstudio-link" --version 2>&1)"
[ "${out%% *}" = dpstudio ] && ok "--version through a symlink" || fail "through a symlink: $out"

# ---- 2. headless demo release with a report --------------------------------------------------
t0="$(now)"; "$EXE" demo --headless --out "$TMP/demo" >"$TMP/demo.out" 2>"$TMP/demo.err"; rc=$?; t1="$(now)"
rel="$TMP/demo/demo_release.csv"; rep="$TMP/demo/demo_report.html"
if [ $rc = 0 ] && [ -s "$rel" ] && [ "$(wc -l <"$rel")" -gt 10 ] && [ -s "$rep" ] && grep -qi '<html' "$rep"; then
    ok "headless demo release in $(secs "$t0" "$t1") s: $(wc -l <"$rel") lines, report $(wc -c <"$rep") bytes"
else
    fail "headless demo: rc=$rc; $(tail -c 1500 "$TMP/demo.err")"
fi

# ---- 3. Parquet out and back in ----------------------------------------------------------------
demo_csv="$BUNDLE/_internal/resources/demo/census_demo.csv"
recipe="$BUNDLE/_internal/resources/demo/census_demo.recipe.json"
"$EXE" release "$recipe" --input "$demo_csv" --output "$TMP/demo.parquet" --ledger "$TMP/l2.sqlite" \
    --report "$TMP/demo_report.pdf" >"$TMP/pq.out" 2>"$TMP/pq.err"; rc=$?
if [ $rc = 0 ] && [ "$(head -c 5 "$TMP/demo_report.pdf" 2>/dev/null)" = %PDF- ]; then
    ok "PDF report (Qt's QPdfWriter, bundled fonts/fontconfig): $(wc -c <"$TMP/demo_report.pdf") bytes"
else
    fail "PDF report: rc=$rc; $(tail -c 1500 "$TMP/pq.err")"
fi
if [ $rc = 0 ] && [ "$(head -c 4 "$TMP/demo.parquet" 2>/dev/null)" = PAR1 ]; then
    if "$EXE" inspect "$TMP/demo.parquet" >"$TMP/inspect.json" 2>"$TMP/inspect.err" \
        && grep -q '"format": "parquet"' "$TMP/inspect.json"; then ok "Parquet release written and read back"
    else fail "inspect parquet: $(tail -c 1500 "$TMP/inspect.err")"; fi
else
    fail "release to parquet: rc=$rc; $(tail -c 1500 "$TMP/pq.err")"
fi
# ---- 3b. PEARL synthetic release: generator training in spawned worker processes -------------
# (a frozen app must re-enter through freeze_support for spawn to work; the report says whether
# the workers ran or the fit fell back to training in one process)
"$EXE" recipe init "$demo_csv" -o "$TMP/syn.json" --release synthetic --synth pearl --rows 300 \
    --epsilon 1 --delta 1e-5 --option steps=40 --option workers=2 --role employed=label \
    --role sex=ignore --role age=ignore --role ethnicity=ignore --role married=ignore \
    --role us_citizen=ignore --role speaks_english_well=ignore \
    --bounds education_level=1:16 --bounds income=0:500000 --categories children=0,1 \
    --categories disability=no,yes --categories employed=0,1 >"$TMP/syn.out" 2>"$TMP/syn.err" \
  && "$EXE" release "$TMP/syn.json" --output "$TMP/syn.csv" --report "$TMP/syn.html" \
    --ledger "$TMP/l3.sqlite" >>"$TMP/syn.out" 2>>"$TMP/syn.err"; rc=$?
if [ $rc = 0 ] && [ "$(wc -l <"$TMP/syn.csv")" = 301 ] && grep -q "2 batch shards, 2 worker processes" "$TMP/syn.html"; then
    ok "PEARL synthetic release trained in 2 worker processes"
else
    fail "PEARL synthetic release: rc=$rc; $(grep -o 'batch shards[^<]*' "$TMP/syn.html" 2>/dev/null); $(tail -c 1500 "$TMP/syn.err")"
fi
"$EXE" inspect "$demo_csv" >"$TMP/inspect_csv.json" 2>"$TMP/inspect_csv.err" \
    && grep -q '"format": "csv"' "$TMP/inspect_csv.json" && ok "CSV inspect (pyarrow.csv)" \
    || fail "inspect csv: $(tail -c 1500 "$TMP/inspect_csv.err")"

# ---- 4. GUI offscreen ---------------------------------------------------------------------------
run_gui() {  # $1 = label, rest = command prefix (env / xvfb-run)
    local label="$1"; shift
    local err="$TMP/gui-$label.err"
    t0="$(now)"
    DPSTUDIO_EXIT_AFTER_MS=2000 timeout -s INT 40 "$@" "$EXE" gui "$demo_csv" >"$TMP/gui.out" 2>"$err"; rc=$?
    t1="$(now)"
    local line; line="$(grep -m1 '^dpstudio-startup: event-loop' "$err")"
    local tshow; tshow="$(sed -n 's/.* t=\([0-9.]*\) .*/\1/p' <<<"$line")"
    if grep -Eq "$BAD_STDERR" "$err"; then
        fail "GUI $label: rc=$rc; stderr: $(grep -Ev '^dpstudio-startup' "$err" | tail -c 2500)"
    elif [ $rc != 0 ]; then
        fail "GUI $label: exit code $rc; stderr: $(tail -c 2500 "$err")"
    elif [ -z "$line" ] || grep -q 'windows=\[\]' <<<"$line"; then
        fail "GUI $label: no window visible when the event loop started ($line)"
    elif grep -Eiq "windows=.*(could not|cannot|error|failed|problem)" <<<"$line"; then
        fail "GUI $label: an error dialog is open: ${line#*windows=}"
    else
        local app_t; app_t="$(sed -n 's/^dpstudio: first window shown after \([0-9.]*\) s.*/\1/p' "$err" | head -1)"
        ok "GUI $label: first window painted ${app_t:-?} s after process start (app's own measure); event loop with the window up $(secs "$t0" "$tshow") s after launch; ran 2 s, quit cleanly (${line#*windows=})"
        local other; other="$(grep -Ev '^dpstudio-startup|^dpstudio: first window shown|propagateSizeHints' "$err" | grep -v '^\s*$' | head -5)"
        [ -n "$other" ] && note "GUI $label stderr: $other"
    fi
}
if [ "${SMOKE_GUI:-1}" = 1 ]; then
    run_gui offscreen env QT_QPA_PLATFORM=offscreen

    # ---- 5. the xcb plugin's system libraries --------------------------------------------------
    xcb="$(find "$BUNDLE/_internal" -name 'libqxcb.so' | head -1)"
    if [ -n "$xcb" ]; then
        libdirs="$BUNDLE/_internal:$(dirname "$(find "$BUNDLE/_internal" -name 'libQt6Core.so.6' | head -1)")"
        missing="$(LD_LIBRARY_PATH="$libdirs" ldd "$xcb" "$(dirname "$xcb")/../../lib/libQt6XcbQpa.so.6" 2>/dev/null \
                   | grep 'not found' | sort -u | awk '{print $1}' | tr '\n' ' ')"
        [ -z "$missing" ] && ok "xcb platform plugin: all libraries resolve on this host" \
                          || fail "xcb platform plugin needs (apt-get install the .deb's Depends): $missing"
    else
        fail "xcb platform plugin not in the bundle"
    fi
    if [ "${SMOKE_XVFB:-1}" = 1 ] && command -v xvfb-run >/dev/null; then
        run_gui xcb xvfb-run -a -s '-screen 0 1280x800x24' env QT_QPA_PLATFORM=xcb
    elif [ "${SMOKE_XVFB:-1}" = 1 ]; then
        note "xvfb-run not available: real-X (xcb) start not tried"
    fi
else
    note "GUI checks skipped (SMOKE_GUI=0)"
fi

if [ "$FAILS" = 0 ]; then echo "smoke test PASSED ($KIND)"; exit 0; fi
echo "smoke test FAILED: $FAILS check(s) ($KIND)"; exit 1

#!/usr/bin/env bash
# The HTML report in a real browser: render the fixture's report (sample-report.json) with
# headless Chromium, assert on the rendered DOM's text, and keep a screenshot to look at.
#   browser-test.sh RENDER_REPORT_HTML SOURCE_ROOT OUT_DIR
# Exit 77 (skipped) when Chromium is not installed.
set -euo pipefail
render=$1 source_root=$2 out=$3

browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then
  echo "skipped: no chromium on PATH (Debian: apt-get install chromium)"
  exit 77
fi

mkdir -p "$out"
html=$out/sample-report.html
"$render" "$source_root" "$source_root/harness/tests/html/sample-report.json" "$html"

# A private profile, so a user's running Chromium or its lock is never touched.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --disable-gpu --no-sandbox --no-first-run --hide-scrollbars --user-data-dir="$profile")
timeout 60 "$browser" "${flags[@]}" --dump-dom "file://$html" >"$out/dom.html" 2>"$out/chromium.log"
timeout 60 "$browser" "${flags[@]}" --screenshot="$out/sample-report.png" --window-size=1200,2000 \
  "file://$html" >>"$out/chromium.log" 2>&1
# A phone's width, to look at: the tables scroll and the plots scale down rather than being cut.
timeout 60 "$browser" "${flags[@]}" --screenshot="$out/sample-report-420.png" --window-size=420,2000 \
  "file://$html" >>"$out/chromium.log" 2>&1

failures=0
expect() {  # expect present|absent TEXT WHY
  if grep -qF -- "$2" "$out/dom.html"; then found=present; else found=absent; fi
  if [[ $found != "$1" ]]; then echo "FAIL: '$2' is $found in the rendered DOM ($3)"; failures=$((failures + 1)); fi
}
expect present 'Histogram with atomics and shared-memory privatization' 'lab title'
expect present 'same-1000003' 'a correctness case'
expect present 'uniform-1GiB' 'a performance case'
expect present 'points curve' 'the points plot'
expect present '69.31 / 200 points' 'the report total'
expect present 'racecheck: read-after-write hazard on shared memory at histogram.cu:13' 'a sanitizer finding with its line'
expect present '&lt;script&gt;document.body.innerHTML' "the hint's <script> shown as text"
expect absent '<script' 'no script element came from a hint'
expect absent '<body>PWNED' 'the hostile script did not replace the page'
expect absent '<title>PWNED' 'the hostile onerror did not run'
# The plot as a reader takes it in: each student's dot on the drawn points curve (within 2 px).
python3 - "$out/dom.html" <<'EOF' || failures=$((failures + 1))
import re, sys
dom = open(sys.argv[1]).read()
curves = re.findall(r'<polyline class="curve"[^>]*points="([^"]+)"', dom)
dots = re.findall(r'<circle class="you" cx="([-\d.]+)" cy="([-\d.]+)"', dom)
if not curves or len(curves) != len(dots):
    sys.exit(f"FAIL: {len(curves)} points curves and {len(dots)} dots in the rendered DOM")
for curve, (x, y) in zip(curves, dots):
    line = [tuple(map(float, point.split(","))) for point in curve.split()]
    x, y = float(x), float(y)
    on = [a[1] + (b[1] - a[1]) * (x - a[0]) / (b[0] - a[0]) for a, b in zip(line, line[1:]) if a[0] <= x <= b[0] and b[0] > a[0]]
    if not on or abs(on[0] - y) > 2:
        sys.exit(f"FAIL: the dot at ({x}, {y}) is off its curve (there at y {on[0] if on else None})")
EOF
[[ -s $out/sample-report.png ]] || { echo "FAIL: no screenshot was written"; failures=$((failures + 1)); }

if ((failures > 0)); then
  echo "chromium's log: $out/chromium.log"
  exit 1
fi
echo "ok: rendered by $("$browser" --version 2>/dev/null || echo "$browser"); screenshot $out/sample-report.png"

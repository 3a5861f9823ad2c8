#!/usr/bin/env bash
# A lab is found, not listed: in a copy of the kit, lab 01 copied as labs/14-throwaway (its
# checks renamed, no benchmark, a second function in its contract header) and its solution
# folder copied, with no other file touched, configures into the same programs as every lab:
# its runner, host and reference module in labs/lab-targets.txt, its test, and a host table
# of both contract functions, which compiles. A third function added to the header reaches the
# table when Ninja next runs (Meson configures again by itself). No GPU needed; the lab's CUDA
# programs are not compiled (minutes each on a small machine).
#   new-lab-test.sh MESON SOURCE_ROOT WORK_DIR
set -euo pipefail
meson="$1"
root="$2"
work="$3"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v "$meson" >/dev/null && command -v ninja >/dev/null || { echo "skipped: meson or ninja not found"; exit 77; }

rm -rf "$work"
mkdir -p "$work/kit"
# The kit's own files: no build folders, no git.
tar -C "$root" --exclude='./build*' --exclude='./.git' --exclude='./.carry' --exclude='./subprojects/*' \
  -cf - . | tar -C "$work/kit" -xf -
cp "$root"/subprojects/*.wrap "$work/kit/subprojects/"
lab="$work/kit/labs/14-throwaway"
cp -r "$work/kit/labs/01-histogram" "$lab"
cp -r "$work/kit/solutions/01-histogram" "$work/kit/solutions/14-throwaway"
mv "$lab/test_histogram.cu" "$lab/test_throwaway.cu"
rm "$lab/bench_histogram.cu"
echo 'extern "C" void throwaway_extra(const uint8_t* d_in, size_t n, cudaStream_t stream);' >>"$lab/histogram.h"

if ! "$meson" setup "$work/build" "$work/kit" -Dgpu_arch=75 >"$work/setup.log" 2>&1; then
  tail -n 20 "$work/setup.log" >&2
  fail "meson setup failed on a kit with a copied lab"
fi

expected="14-throwaway labs/lab-14-throwaway-runner labs/lab-14-throwaway-host labs/lab-14-throwaway-solution.so"
grep -qxF "$expected" "$work/build/labs/lab-targets.txt" ||
  fail "labs/lab-targets.txt has no line '$expected': $(grep 14- "$work/build/labs/lab-targets.txt" || echo none)"
targets="$("$meson" introspect --targets "$work/build" | tr ',' '\n')"
for name in lab-14-throwaway-runner lab-14-throwaway-host lab-14-throwaway-solution; do
  grep -q "\"name\": \"$name\"" <<<"$targets" || fail "the build has no target $name"
done
grep -q '"name": "lab-14-throwaway-bench"' <<<"$targets" && fail "a lab without bench_*.cu got a benchmark"
"$meson" introspect --tests "$work/build" | grep -q '14-throwaway reference solution passes its checks' ||
  fail "the build has no test of lab 14's reference"

table="$work/build/labs/lab-14-throwaway-contract.cpp"
for function in histogram throwaway_extra; do
  grep -q "LABKIT_CONTRACT_FUNCTION($function)" "$table" || fail "the host table lacks $function: $(cat "$table")"
done
object="labs/lab-14-throwaway-host.p/meson-generated_.._lab-14-throwaway-contract.cpp.o"
ninja -C "$work/build" "$object" >"$work/ninja.log" 2>&1 || { tail -n 20 "$work/ninja.log" >&2; fail "the host table does not compile"; }

# The header is the one place the contract's functions are declared: a new one reaches the table.
echo 'extern "C" size_t throwaway_temp_bytes(size_t n);' >>"$lab/histogram.h"
ninja -C "$work/build" "$object" >"$work/ninja.log" 2>&1 || { tail -n 20 "$work/ninja.log" >&2; fail "no rebuild after a header change"; }
grep -q "LABKIT_CONTRACT_FUNCTION(throwaway_temp_bytes)" "$table" ||
  fail "a function added to the contract header did not reach the host table"

echo "lab 14 found: runner, host and reference module; host table of $(grep -c LABKIT_CONTRACT_FUNCTION "$table") functions"
rm -rf "$work"

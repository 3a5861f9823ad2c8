#!/usr/bin/env bash
# Runs a test that needs a GPU only where there is one; elsewhere it is skipped (77) at once,
# with the reason, instead of after building everything it would have run.
#   needs-gpu.sh GPU_PROBE COMMAND [ARGUMENTS...]
probe="$1"
shift
"$probe" || exit $?
exec "$@"

#!/bin/bash
# bench/sanitize_gpu.sh: compute-sanitizer over the GPU tests, for the GPU machine.
# Builds (flex / bison from .devdeps/*.deb, as bench/run_gpu.sh does), then runs
# each of memcheck, racecheck, initcheck and synccheck over
#   - every ctest test labelled `gpu` (minus the long ones: SANITIZE_EXCLUDE),
#   - a short soak (rel_soak: 200 launches, 5 Mamba-2 forwards, 2 life cycles),
#   - the Mamba-2 driver at ragged shapes: seqlen, heads, headdim and dstate not
#     multiples of any block, every dtype, z / D / dt_bias / initial states,
# and prints a summary table last (one row per program, one column per tool:
# ok, N errors, exit status, skip, timeout).  Exit status 0 when every cell is
# ok or skip.
#   bash bench/sanitize_gpu.sh
# Knobs: SANITIZE_TOOLS="memcheck racecheck initcheck synccheck",
#        SANITIZE_ONLY=REGEX (programs to run), SANITIZE_EXCLUDE=REGEX (ctest names
#        left out; default the anchors, the large-tensor and long-sequence tests),
#        SANITIZE_TIMEOUT=seconds per run (default 1800), SANITIZE_JOBS=programs at once
#        (default 6), TILEC_GPU_BUILD (default
#        /tmp/build), SANITIZE_SKIP_BUILD=1 (use that build as it is),
#        COMPUTE_SANITIZER (default: on PATH, else $CUDA_HOME/bin).
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${TILEC_GPU_BUILD:-/tmp/build}
TOOLS=${SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}
EXCLUDE=${SANITIZE_EXCLUDE:-anchor|large|long|soak}
ONLY=${SANITIZE_ONLY:-}
LIMIT=${SANITIZE_TIMEOUT:-1800}
JOBS=${SANITIZE_JOBS:-6}
LOGS=${SANITIZE_LOGS:-/tmp/tilec-sanitize}
export TILE_CACHE_DIR=${TILE_CACHE_DIR:-/tmp/tilec-cache}

if ! command -v bison >/dev/null 2>&1 && ls .devdeps/*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/fb && for f in .devdeps/*.deb; do dpkg -x "$f" /tmp/fb; done
  export PATH=/tmp/fb/usr/bin:$PATH M4=/tmp/fb/usr/bin/m4 BISON_PKGDATADIR=/tmp/fb/usr/share/bison
  FLEXINC=-DFLEX_INCLUDE_DIR=/tmp/fb/usr/include
fi
if [ -z "${SANITIZE_SKIP_BUILD:-}" ]; then
  echo "== build ($BUILD)"
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FLEXINC:-} >/tmp/tilec-cmake.log 2>&1 || { tail -30 /tmp/tilec-cmake.log; exit 1; }
  cmake --build "$BUILD" -j16 >/tmp/tilec-build.log 2>&1 || { grep -E "error|Error" /tmp/tilec-build.log | head -30; exit 1; }
fi

SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")}
[ -x "$SAN" ] || { echo "compute-sanitizer not found (set COMPUTE_SANITIZER)"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
"$SAN" --version | tail -1

# ---- the programs: NAME<TAB>shell command, one per line -----------------------
LIST=$(mktemp)
ctest --test-dir "$BUILD" -N -L gpu --show-only=json-v1 2>/dev/null | python3 -c '
import json, re, shlex, sys
exclude = re.compile(sys.argv[1])
for t in json.load(sys.stdin).get("tests", []):
    cmd = t.get("command")
    if not cmd or exclude.search(t["name"]):
        continue
    wd = [p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"]
    line = shlex.join(cmd)
    if wd:
        line = "cd " + shlex.quote(wd[0]) + " && " + line
    print(t["name"] + "\t" + line)
' "$EXCLUDE" >"$LIST" || { echo "cannot list the gpu tests (python3 and ctest's json-v1 needed)"; exit 1; }
REL=$BUILD/tests/reliability
M2=$BUILD/examples/mamba2/mamba2
# The sanitizers' own bookkeeping grows the process (21 MB seen under racecheck):
# the host-memory check gets room for it; device memory is still checked.
printf '%s\t%s\n' "soak_short" "$REL/rel_soak $ROOT/examples/mamba2 --backend cuda --launches 200 --forwards 5 --cycles 2 --host-slack-kb 262144" >>"$LIST"
# Ragged Mamba-2 shapes: nothing a multiple of 16, 64 or the chunk.
RAGGED=(
  "ragged_bf16|--dtype bf16 --batch 2 --seqlen 1000 --heads 5 --groups 5 --headdim 40 --dstate 24 --chunk 64 --z --D headdim --dt-bias --dt-softplus --initial-states"
  "ragged_tf32|--dtype f32 --precision tf32 --batch 1 --seqlen 777 --heads 3 --groups 1 --headdim 72 --dstate 40 --chunk 128 --z --D heads"
  "ragged_f16_sbf16|--dtype f16 --state-dtype bf16 --batch 3 --seqlen 1531 --heads 7 --groups 7 --headdim 33 --dstate 17 --chunk 256"
  "ragged_fp32_tiny|--dtype f32 --precision fp32 --batch 1 --seqlen 65 --heads 1 --groups 1 --headdim 5 --dstate 3 --chunk 64 --initial-states"
  "ragged_bf16_wide|--dtype bf16 --batch 2 --seqlen 301 --heads 6 --groups 2 --headdim 100 --dstate 130 --chunk 256 --z --dt-bias --dt-softplus"
  "ragged_bf16_blocks|--dtype bf16 --batch 1 --seqlen 515 --heads 9 --groups 3 --headdim 24 --dstate 48 --chunk 128 --block-k 32 --block-n-state 32 --block-n-out 16"
)
for r in "${RAGGED[@]}"; do
  printf 'mamba2_%s\t%s --backend cuda --check %s\n' "${r%%|*}" "$M2" "${r#*|}" >>"$LIST"
done
[ -n "$ONLY" ] && { grep -E "^[^	]*($ONLY)" "$LIST" >"$LIST.only"; mv "$LIST.only" "$LIST"; }
echo "== $(wc -l <"$LIST") programs x tools: $TOOLS (logs in $LOGS)"

# ---- run ----------------------------------------------------------------------
# JOBS programs at once (the GPU is shared, each process is small): the whole
# table fits one device call.
mkdir -p "$LOGS"
declare -A CELL
NAMES=()
run_one() {   # name tool cmd -> writes $LOGS/name.tool.cell
  local name=$1 tool=$2 cmd=$3 log="$LOGS/$1.$2.log" start rc errors cell
  start=$(date +%s)
  # --target-processes all: tests wrapped in sh scripts are followed into the
  # programs they start.  --error-exitcode marks sanitizer findings apart from
  # the program's own failures.
  timeout "$LIMIT" "$SAN" --tool "$tool" --target-processes all --error-exitcode 99 --print-limit 50 \
    bash -c "$cmd" >"$log" 2>&1
  rc=$?
  errors=$(grep -Eo "ERROR SUMMARY: [0-9]+ error" "$log" | awk '{s += $3} END {print s + 0}')
  if [ "$rc" -eq 124 ]; then cell="timeout"
  elif [ "$errors" -gt 0 ] || [ "$rc" -eq 99 ]; then cell="$errors errors"
  elif [ "$rc" -eq 77 ]; then cell="skip"
  elif [ "$rc" -eq 0 ]; then cell="ok"
  else cell="exit $rc"
  fi
  echo "$cell" >"$LOGS/$name.$tool.cell"
  printf '  %-36s %-10s %-10s %4ds\n' "$name" "$tool" "$cell" $(( $(date +%s) - start ))
}
# One job per program, its tools one after another: a test's scratch folder is
# its own, but the same test under two tools at once would share it.
while IFS=$'\t' read -r name cmd; do
  NAMES+=("$name")
  for tool in $TOOLS; do rm -f "$LOGS/$name.$tool.cell"; done
  case "$name" in
    soak*) wait; for tool in $TOOLS; do run_one "$name" "$tool" "$cmd"; done ;;   # alone: it reads the device's free memory
    *) while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
       ( for tool in $TOOLS; do run_one "$name" "$tool" "$cmd"; done ) & ;;
  esac
done <"$LIST"
wait
rm -f "$LIST"
for name in "${NAMES[@]}"; do
  for tool in $TOOLS; do
    CELL[$name,$tool]=$(cat "$LOGS/$name.$tool.cell" 2>/dev/null || echo "no result")
  done
done

# ---- summary ------------------------------------------------------------------
echo
echo "== compute-sanitizer summary ($(date -u +%Y-%m-%dT%H:%MZ); logs in $LOGS)"
printf '| %-36s |' "program"
for tool in $TOOLS; do printf ' %-10s |' "$tool"; done
echo
printf '|%s|' "$(printf -- '-%.0s' $(seq 1 38))"
for tool in $TOOLS; do printf '%s|' "$(printf -- '-%.0s' $(seq 1 12))"; done
echo
bad=0 ok=0 skipped=0
for name in "${NAMES[@]}"; do
  printf '| %-36s |' "$name"
  for tool in $TOOLS; do
    cell=${CELL[$name,$tool]}
    printf ' %-10s |' "$cell"
    case "$cell" in
      ok) ok=$((ok + 1)) ;;
      skip) skipped=$((skipped + 1)) ;;
      *) bad=$((bad + 1))   # on the device machine, $OUT brings the log back
         [ -n "${OUT:-}" ] && mkdir -p "$OUT/sanitize" && cp "$LOGS/$name.$tool.log" "$OUT/sanitize/" ;;
    esac
  done
  echo
done
echo
echo "sanitizers: $ok clean, $skipped skipped (no GPU?), $bad not clean$([ "$bad" -gt 0 ] && echo ' (see the logs)')"
[ "$bad" -eq 0 ] && [ "$ok" -gt 0 ]

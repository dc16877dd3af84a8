#!/usr/bin/env bash
# ab.sh - the package bench on two (or more) libraries in turn, then their ratios side by side.
#   OUT=dir dev/bench/ab.sh LABEL=LIB LABEL=LIB [...] -- [bench args]
# Each library runs REPS times (default 2), the libraries alternating (a b a b ..), each run a
# fresh process of python -m cudadent.bench with CUDADENT_LIBRARY set to that library and
# cudadent + cuDNN only (add --backends to the bench args to change it). What one library reads
# against cuDNN in its own process is the measure; dev/bench/ratios.py prints the medians.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/ab}; reps=${REPS:-2}
libs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do libs+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
jsons=(); labels=()
for ((i = 0; i < reps; ++i)); do
  for spec in "${libs[@]}"; do
    lab=${spec%%=*} lib=${spec#*=} dir="$out/$lab-$i"
    mkdir -p "$dir"
    CUDADENT_LIBRARY=$lib PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 600 \
      python3 -m cudadent.bench --suite fa3 --backends cudadent,cudnn --no-plot --out "$dir" "$@" \
      > "$dir/bench.log" 2>&1
    echo "ab: $lab run $i rc $?"
    j=$(ls "$dir"/*.json 2>/dev/null | head -1)
    [ -n "$j" ] && { jsons+=("$j"); labels+=("$lab"); }
  done
done
python3 dev/bench/ratios.py "${jsons[@]}" --labels "$(IFS=,; echo "${labels[*]}")" | tee "$out/ratios.txt"

#!/bin/bash
# Measures what a live view costs (issue 12): the CPU of the agent's threads in process PID
# (sampler, drain, IPC: ticks of 10 ms, read 1 s before the end) and of the controller, for
# `sonde record --pid PID --duration SECS` and for `sonde top --pid PID` (in tmux, quit with q).
# The program with a large call tree is tests/apps/Wide.cs. SONDE picks the sonde binary.
# Usage: scripts/bench-live.sh PID record|top SECS
P=$1; MODE=$2; SECS=$3; S=${SONDE:-$(cd "$(dirname "$0")/.." && pwd)/target/release/sonde}
agent_cpu() { local t=0; for d in /proc/$P/task/*; do c=$(cat $d/comm 2>/dev/null); case "$c" in sonde*) set -- $(sed 's/.*) //' $d/stat); t=$((t + ${12} + ${13}));; esac; done; echo $t; }
if [ $MODE = record ]; then
  /usr/bin/time -f "controller %U user %S sys" $S record --pid $P --duration $SECS -o ${TMPDIR:-/tmp}/sonde-bench-live.sonde --force -q 2> ${TMPDIR:-/tmp}/sonde-bench-live.time &
  sleep $((SECS - 1)); a=$(agent_cpu); wait; echo "agent threads ticks at $((SECS-1)) s: $a"; cat ${TMPDIR:-/tmp}/sonde-bench-live.time
else
  tmux -S ${TMPDIR:-/tmp}/sonde-bench-live.tmux new-session -d -s lc -x 120 -y 30 "/usr/bin/time -f 'controller %U user %S sys' -o ${TMPDIR:-/tmp}/sonde-bench-live.time $S top --pid $P"
  sleep $((SECS - 1)); a=$(agent_cpu); sleep 1; tmux -S ${TMPDIR:-/tmp}/sonde-bench-live.tmux send-keys -t lc q; sleep 2; tmux -S ${TMPDIR:-/tmp}/sonde-bench-live.tmux kill-server 2>/dev/null
  echo "agent threads ticks at $((SECS-1)) s: $a"; cat ${TMPDIR:-/tmp}/sonde-bench-live.time
fi

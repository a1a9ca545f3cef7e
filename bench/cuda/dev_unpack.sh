# bench/cuda/dev_unpack.sh -- on the device machine: unpack binaries built here (.h200pack/bins.tar.xz,
# carried by the device tool) into .h200/ and set the library path; dev_tests runs the device tests. Source it.
mkdir -p .h200 && tar -C .h200 -xJf .h200pack/bins.tar.xz
export LD_LIBRARY_PATH=$PWD/.h200/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

# dev_card DIR: the GPU's name, clocks and power (DIR/nvidia-smi.txt) and the read ceiling (DIR/bw.log)
dev_card() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$1/nvidia-smi.txt" 2>&1
  timeout 30 .h200/bench_cuda_bw --quick > "$1/bw.log" 2>&1
}

# dev_tests DIR: the device test matrix (TEST_S seconds at most) in SHARDS processes side by side (default 6:
# MPL_CUDA_W4A16_TEST_SHARD i/SHARDS, logs DIR/test_cuda_w4a16_sI.log; one process took over 7 minutes in v41) and
# test_cuda_faults, then dev_card; prints the tests' verdict lines.
dev_tests() {
  local n=${SHARDS:-6} i
  for i in $(seq 0 $((n - 1))); do
    ( ( time MPL_CUDA_W4A16_TEST_SHARD=$i/$n timeout ${TEST_S:-330} .h200/test_cuda_w4a16 ) > "$1/test_cuda_w4a16_s$i.log" 2>&1
      echo "rc=$?" >> "$1/test_cuda_w4a16_s$i.log" ) &
  done
  wait
  ( timeout 60 .h200/test_cuda_faults ) > "$1/test_cuda_faults.log" 2>&1; echo "rc=$?" >> "$1/test_cuda_faults.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$1"/test_cuda_w4a16_s*.log "$1/test_cuda_faults.log" | head -40
  dev_card "$1"
}

# dev_begin TAG MODE: R = the call's log folder ($OUT/TAG_MODE, or /tmp/TAG_MODE off the device tool), created; S = the
# six layers of the A/B tables
dev_begin() {
  R=${OUT:-/tmp}/$1_$2
  mkdir -p "$R"
  S=70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up
}
# dev_end TAG MODE: the read ceiling's lines, then (the device tool returns a limited count of files) the logs in R as
# one tar, $OUT/TAG_MODE.tgz, beside the A/B table
dev_end() {
  stamp "done"
  grep -iE "read16" "$R/bw.log" | head -2
  if [ -n "${OUT:-}" ]; then tar -C "$R" -czf "$OUT/$1_$2.tgz" . && cp "$R/ab_table.txt" "$OUT/" 2>/dev/null; rm -rf "$R"; fi
}

# stamp TEXT: a progress line with the seconds since this file was sourced
t0=$(date +%s)
stamp() { echo "== $(($(date +%s) - t0)) s: $*"; }

# dev_humming BITS DIR: the Humming peer (the wheel carried in .whl/, bench/cuda/humming_peer.py) at HUMMING_PEER_MS
# (HMS, default 1,16,64,256,1024) within PEER_SECONDS (default 150), logs in DIR; prints its summary
dev_humming() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  mkdir -p "$2"
  OUT="$2" PEER_SECONDS=${PEER_SECONDS:-150} HUMMING_PEER_PROBE=0 HUMMING_PEER_BITS=$1 HUMMING_PEER_MS=${HMS:-1,16,64,256,1024} \
      PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 timeout 200 python3 bench/cuda/humming_peer.py > "$2/stdout.log" 2>&1
  grep -A24 SUMMARY "$2/stdout.log"
}

# dev_final DIR SHAPES: the defaults at M 1..2048 for uint4b8, uint8b128 and uint2b2 on SHAPES (DIR/default_TYPE.log),
# then Humming 0.1.19 int4 / int8 / int2 beside them (dev_humming, PEER_SECONDS 120 each unless set: 45 s ran out before
# the first shape on a fresh H200, its kernels compiling, bench/results/v28/call3/humming4); prints both.
# FINAL_TYPES (weight types, each ending in its bit count's Humming peer) and FINAL_MS (the M list) override the defaults.
dev_final() {
  local w b ms=${FINAL_MS:-1,16,64,256,1024,2048} types=${FINAL_TYPES:-uint4b8 uint8b128 uint2b2}
  local cols
  cols=$(echo "$ms" | tr ',' '\n' | sed 's/.*/-/' | tr '\n' ' ')
  for w in $types; do
    stamp "defaults $w"
    timeout 60 stdbuf -oL .h200/bench_cuda_w4a16 --shapes "$2" --m "$ms" --wtype $w --reps 10 > "$1/default_$w.log" 2>&1
    grep -E "cuda_w4a16" "$1/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste $cols
  done
  for w in $types; do
    b=$(echo "$w" | sed -E 's/^u?int([0-9]).*/\1/')
    stamp "humming $b"
    HMS=$ms PEER_SECONDS=${PEER_SECONDS:-120} dev_humming $b "$1/humming$b" | tail -14
  done
}

# bench_of VERSION: the bench binary of an A/B version: new = .h200/bench_cuda_w4a16, old / mid / alt = a bench built from an
# earlier tree or a patch, packed beside it as .h200/bench_cuda_w4a16_old / _mid / _alt (bench/cuda/ab_table.py reads their logs)
bench_of() { if [ "$1" = new ]; then echo .h200/bench_cuda_w4a16; else echo ".h200/bench_cuda_w4a16_$1"; fi; }

# dev_ab ROUNDS DIR BENCH_ARGS...: A/B of .h200/bench_cuda_w4a16_old (a bench built from an earlier tree, packed
# beside the current one) and .h200/bench_cuda_w4a16, taking turns for ROUNDS rounds; logs DIR/ab_{old,new}_R.log
dev_ab() {
  local rounds=$1 dir=$2 r v
  shift 2
  for r in $(seq "$rounds"); do
    for v in old new; do
      timeout 60 stdbuf -oL "$(bench_of $v)" "$@" > "$dir/ab_${v}_$r.log" 2>&1
    done
  done
}

# dev_rounds DIR NAME: one group of the device matrix's rounds alone (NAME halves, thirds, w8, gemv, m1, wg or quick:
# MPL_CUDA_W4A16_TEST_HALVES, _THIRDS, _W8, _GEMV, _M1, _WG, _QUICK), log DIR/test_NAME.log; prints the verdict lines.
# dev_halves DIR: the halves rounds.
dev_rounds() {
  local log=$1/test_$2.log
  ( time env "MPL_CUDA_W4A16_TEST_$(echo "$2" | tr a-z A-Z)=1" timeout 200 .h200/test_cuda_w4a16 ) > "$log" 2>&1; echo "rc=$?" >> "$log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$log" | head -20
}
dev_halves() { dev_rounds "$1" halves; }

# dev_ncu OUT BIN KERNEL_REGEX BENCH_ARGS...: one launch of the kernel under ncu (no clock control; speed of light, warp
# states, schedulers, launch and occupancy, instruction stats, the pipes' shares and the stall reasons per issue) while
# BIN runs BENCH_ARGS, report OUT; prints its summary lines
dev_ncu() {
  local out=$1 bin=$2 kern=$3 ncu
  shift 3
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 100 "$ncu" --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,dram__bytes_read.sum" \
    -k "regex:$kern" -c 1 "$bin" "$@" > "$out" 2>&1
  grep -E "^    (Duration|DRAM Throughput|Issue Slots Busy|No Eligible|Registers Per|Achieved Occupancy|Block Limit|Executed Instructions )|pipe_|hmma" "$out" | head -18
  grep -E "stalled_.*ratio" "$out" | sort -k3 -nr | head -6
}

# dev_m1_ab DIR ROUNDS CONFIG...: A/B at M = 1 (or the list in MS) of .h200/bench_cuda_w4a16_old and the current bench on the layers in $S,
# taking turns for ROUNDS rounds; CONFIG hf4 (f16, uint4b8), bf4 (bf16, uint4b8), bs4 (bf16, uint4b8, bf16 scales), bf3
# (bf16, uint3b4), bf2 (bf16, uint2b2), bf8 (bf16, uint8b128) or hf8 (f16, uint8b128); logs
# DIR/o_{old,new}_CONFIG_R.log, then bench/cuda/ab_table.py's table
dev_m1_ab() {
  local dir=$1 rounds=$2 r v c args
  shift 2
  for r in $(seq "$rounds"); do
    for v in old new; do
      for c in "$@"; do
        case $c in
        hf4) args="--act f16 --wtype uint4b8" ;; bf4) args="--wtype uint4b8" ;; bs4) args="--scales bf16 --wtype uint4b8" ;;
        bf3) args="--wtype uint3b4" ;; bf2) args="--wtype uint2b2" ;; hf8) args="--act f16 --wtype uint8b128" ;;
        *) args="--wtype uint8b128" ;;
        esac
        # shellcheck disable=SC2086
        timeout 60 stdbuf -oL "$(bench_of $v)" --shapes "$S" --m "${MS:-1}" $args --reps 10 > "$dir/o_${v}_${c}_$r.log" 2>&1
      done
    done
  done
  python3 bench/cuda/ab_table.py "$dir"/o_*.log
}

# dev_turn T ACT...: one A/B turn (T: its number) of the new and alt builds (bench_of), wg and wg-streamk forced and the
# default, at M 512 / 1024 / 2048 on the layers in $S, 4-bit codes, for each activation type ACT (bf16: the SPLIT form, f16:
# S16); logs $R/o_{new,alt}_{bf4,hf4}_T.log, then bench/cuda/ab_table.py's table over every turn so far in $R/ab_table.txt
dev_turn() {
  local t=$1 v act
  shift
  for v in new alt; do
    stamp "$v turn $t"
    for act in "$@"; do
      timeout 90 stdbuf -oL "$(bench_of $v)" --sweep --sets "wg,wg-streamk" --shapes "$S" --m 512,1024,2048 --act $act \
          --wtype uint4b8 --reps 10 > "$R/o_${v}_$([ $act = f16 ] && echo hf4 || echo bf4)_$t.log" 2>&1
    done
  done
  python3 bench/cuda/ab_table.py "$R"/o_*.log > "$R/ab_table.txt" 2>&1
}

# dev_wg_alt: the wg rounds of the alt build's test (MPL_CUDA_W4A16_TEST_WG, log $R/test_wg_alt.log); prints the verdicts.
# dev_peers: card, h200_m1, then the defaults at M 1..1024 on the layers in $S at every width with Humming int2 / int3 /
# int4 / int8 beside them (dev_final).
dev_wg_alt() {
  stamp "wg rounds (alt)"
  ( time env MPL_CUDA_W4A16_TEST_WG=1 timeout 150 .h200/test_cuda_w4a16_alt ) > "$R/test_wg_alt.log" 2>&1; echo "rc=$?" >> "$R/test_wg_alt.log"
  grep -E "device matrix|FAIL|rc=|real" "$R/test_wg_alt.log" | head
}
dev_peers() {
  card
  h200_m1
  FINAL_TYPES="uint2b2 uint3b4 uint4b8 uint8b128" FINAL_MS=1,16,64,256,1024 PEER_SECONDS=100 dev_final "$R" "$S"
}

# card: dev_card, its nvidia-smi line printed; h200_m1: on an H200 only, the defaults at M = 1 on the six layers at
# every width (issue 18's M = 1 target, not measured on an H200 since 2d2ff4a)
card() { dev_card "$R"; cat "$R/nvidia-smi.txt"; }
h200_m1() {
  grep -q H200 "$R/nvidia-smi.txt" || return 0
  local w
  for w in uint2b2 uint3b4 uint4b8 uint8b128; do
    stamp "M = 1 $w"
    timeout 60 stdbuf -oL .h200/bench_cuda_w4a16 --shapes "$S" --m 1 --wtype $w --reps 10 > "$R/m1_$w.log" 2>&1
    grep -E "cuda_w4a16" "$R/m1_$w.log" | head -6
  done
}

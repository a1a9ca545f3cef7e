#!/usr/bin/env bash
# bench/cuda/v24_h200.sh MODE -- on the device machine (bench/cuda/NOTES.md v24): the halves skinny loop's diet (bf16:
# one fold per packed chunk, half 1 against x / 4; both types: x loads with one bound per row).
#   ab:    the halves rounds of the device matrix, then an A/B of the bench built from the tree before the change
#          (.h200/bench_cuda_w4a16_old) and after, taking turns (2 rounds): uint2b2 defaults and forced skinny with two
#          and four row tiles at M 1, 8, 16 on the 70B and 8B shapes (bf16), and at M 1 with f16 activations; then ncu
#          of the new skinny at M = 1 on 70B gate_up (bf16).
#   hi:    the halves rounds, then an A/B of the bench of the tree before (_old) and after the halves shifts became
#          IMAD.HI (uint2b2 bf16 M 1 and 16, f16 M 1), taking turns (bench/cuda/NOTES.md v24). Not in the tree and not
#          run yet (no device was lent after call 5): apply bench/results/v24/imadhi.patch and build first.
#   ab2:   the device matrix, then an A/B/C of the bench before this session (_old), after the bf16 one-fold change
#          (_mid) and with the scale format a template parameter of the offset forms (new): defaults at M 1 and 16,
#          uint2b2 bf16 / f16 and uint4b8 f16 (the 4-bit offset form), taking turns.
#   peers: uint2b2 defaults at M 1..1024 (before and after) and Humming 0.1.19 int2 (the wheel carried in .whl/), then
#          uint4b8 defaults.
#   tests: the whole device matrix and test_cuda_faults, then the uint2b2 and uint4b8 defaults at M 1..1024 and the
#          uint2b2 sweep at m 9, 16, 17 (skinny with two and four row tiles, wg) for bf16 and f16.
# Binaries packed as in bench/cuda/dev_unpack.sh; every log in one tar ($OUT/v24_MODE.tar.gz).
set -u
. bench/cuda/dev_unpack.sh
R=$(mktemp -d)
B=.h200
S=70B.gate_up,70B.down,70B.qkv,70B.o,8B.qkv,8B.gate_up
best() { # the best of each (shape, M, set, version) over the A/B logs in $R (prefix $1)
  python3 - "$R" "$1" <<'PY'
import glob, re, sys
best = {}
for f in glob.glob(sys.argv[1] + "/" + sys.argv[2] + "_*_*.log"):
    v = "old" if "_old_" in f else "new"
    for line in open(f):
        m = re.match(r"sweep\s+(\S+)\s+M=(\d+)\s+(.+?)\s+([\d.]+) us", line)
        if m and m.group(3) != "cuBLAS bf16":
            k = (m.group(1), int(m.group(2)), m.group(3))
            best.setdefault(k, {})[v] = min(best.get(k, {}).get(v, 1e9), float(m.group(4)))
for k in sorted(best):
    o, n = best[k].get("old"), best[k].get("new")
    print(k[0], k[1], k[2], "old", o, "new", n, "new/old %.3f" % (n / o) if o and n else "")
PY
}
case "${1:-ab}" in
ab)
  dev_card "$R"
  ( time MPL_CUDA_W4A16_TEST_HALVES=1 timeout 200 $B/test_cuda_w4a16 ) > "$R/test_halves.log" 2>&1; echo "rc=$?" >> "$R/test_halves.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_halves.log" | head -20
  stamp "A/B bf16"
  for r in 1 2; do
    for v in old new; do
      bin=$B/bench_cuda_w4a16; [ $v = old ] && bin=$B/bench_cuda_w4a16_old
      timeout 80 stdbuf -oL $bin --sweep --sets "default,skinny,skinny nw4" --shapes $S --m 1,8,16 --wtype uint2b2 --reps 10 > "$R/bf_${v}_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --sweep --sets "default,skinny" --shapes $S --m 1 --act f16 --wtype uint2b2 --reps 10 > "$R/hf_${v}_$r.log" 2>&1
    done
  done
  echo "-- bf16"; best bf
  echo "-- f16"; best hf
  stamp "ncu"
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  sec="--section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --section InstructionStats --section LaunchStats"
  met="--metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,dram__bytes_read.sum"
  for v in new old; do
    bin=$B/bench_cuda_w4a16; [ $v = old ] && bin=$B/bench_cuda_w4a16_old
    timeout 100 "$NCU" --clock-control none $sec $met -k "regex:w4a16_skinny" -c 1 $bin --sweep --sets "skinny,_" --shapes 70B.gate_up --m 1 --wtype uint2b2 --reps 1 > "$R/ncu_$v.txt" 2>&1
    echo "-- ncu $v"
    grep -E "^    (Duration|DRAM Throughput|Issue Slots Busy|No Eligible|Registers Per|Executed Instructions )|pipe_tensor|pipe_alu|pipe_fma|pipe_lsu" "$R/ncu_$v.txt" | head -12
    grep -E "stalled_.*ratio" "$R/ncu_$v.txt" | sort -k3 -nr | head -6
  done
  ;;
hi)
  ( time MPL_CUDA_W4A16_TEST_HALVES=1 timeout 200 $B/test_cuda_w4a16 ) > "$R/test_halves.log" 2>&1; echo "rc=$?" >> "$R/test_halves.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$R/test_halves.log" | head -20
  dev_card "$R"
  stamp "A/B"
  for r in 1 2; do
    for v in old new; do
      bin=$B/bench_cuda_w4a16; [ $v = old ] && bin=$B/bench_cuda_w4a16_old
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,16 --wtype uint2b2 --reps 10 > "$R/h_${v}_bf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1 --act f16 --wtype uint2b2 --reps 10 > "$R/h_${v}_hf2_$r.log" 2>&1
    done
  done
  python3 - "$R" <<'PY'
import glob, re, sys
best = {}
for f in glob.glob(sys.argv[1] + "/h_*.log"):
    _, v, cfg, _r = f.rsplit("/", 1)[1][:-4].split("_")
    for line in open(f):
        m = re.match(r"(\S+)\s+(\d+)\s+\S+\s+([\d.]+)\s+(cuda_w4a16:\S+)", line)
        if m:
            d = best.setdefault((cfg, m.group(1), int(m.group(2))), {})
            d[v] = min(d.get(v, 1e9), float(m.group(3)))
for k in sorted(best):
    d = best[k]
    print(*k, "old %.2f new %.2f new/old %.3f" % (d["old"], d["new"], d["new"] / d["old"]))
PY
  ;;
ab2)
  TEST_S=400 dev_tests "$R"
  stamp "A/B/C"
  for r in 1 2; do
    for v in old mid new; do
      bin=$B/bench_cuda_w4a16; [ $v != new ] && bin=$B/bench_cuda_w4a16_$v
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,16 --wtype uint2b2 --reps 10 > "$R/c_${v}_bf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,16 --act f16 --wtype uint2b2 --reps 10 > "$R/c_${v}_hf2_$r.log" 2>&1
      timeout 40 stdbuf -oL $bin --shapes $S --m 1,16 --act f16 --wtype uint4b8 --reps 10 > "$R/c_${v}_hf4_$r.log" 2>&1
    done
  done
  python3 - "$R" <<'PY'
import glob, re, sys
best = {}
for f in glob.glob(sys.argv[1] + "/c_*.log"):
    _, v, cfg, _r = f.rsplit("/", 1)[1][:-4].split("_")
    for line in open(f):
        m = re.match(r"(\S+)\s+(\d+)\s+\S+\s+([\d.]+)\s+(cuda_w4a16:\S+)", line)
        if m:
            k = (cfg, m.group(1), int(m.group(2)))
            d = best.setdefault(k, {})
            d[v] = min(d.get(v, 1e9), float(m.group(3)))
            d["path"] = m.group(4)
for k in sorted(best):
    d = best[k]
    print(*k, d["path"], "old %.2f mid %.2f new %.2f" % (d.get("old", 0), d.get("mid", 0), d.get("new", 0)),
          "new/old %.3f new/mid %.3f" % (d["new"] / d["old"], d["new"] / d["mid"]) if "old" in d and "mid" in d and "new" in d else "")
PY
  ;;
peers)
  dev_card "$R"
  stamp "defaults uint2b2"
  timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype uint2b2 --reps 10 > "$R/default_uint2b2.log" 2>&1
  stamp "humming 2"
  PEER_SECONDS=${PEER_SECONDS:-90} dev_humming 2 "$R/humming2" | tail -14
  stamp "defaults uint2b2 again, uint4b8"
  timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype uint2b2 --reps 10 > "$R/default_uint2b2_2.log" 2>&1
  timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype uint4b8 --reps 10 > "$R/default_uint4b8.log" 2>&1
  timeout 30 $B/bench_cuda_bw --quick > "$R/bw_end.log" 2>&1
  for f in default_uint2b2 default_uint2b2_2 default_uint4b8; do echo "-- $f"; grep -E "cuda_w4a16" "$R/$f.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done
  ;;
tests)
  TEST_S=450 dev_tests "$R"
  for w in uint2b2 uint4b8; do
    stamp "defaults $w"
    timeout 70 stdbuf -oL $B/bench_cuda_w4a16 --shapes $S --m 1,16,64,256,1024 --wtype $w --reps 10 > "$R/default_$w.log" 2>&1
  done
  stamp "sweep m 9..17"
  for act in bf16 f16; do
    timeout 60 stdbuf -oL $B/bench_cuda_w4a16 --sweep --sets "default,skinny,skinny nw4,wg" --shapes $S --m 9,16,17 --act $act --wtype uint2b2 --reps 5 > "$R/sweep_$act.log" 2>&1
  done
  for w in uint2b2 uint4b8; do echo "-- $w"; grep -E "cuda_w4a16" "$R/default_$w.log" | awk '{print $1, $2, $4, $5}' | paste - - - - - ; done
  for act in bf16 f16; do echo "-- sweep $act"; grep -E "^sweep" "$R/sweep_$act.log" | grep -v "cuBLAS" | awk '{print $2, $3, $4, $5, $6, $7}' | paste - - - - ; done
  ;;
esac
stamp done
grep -iE "read16" "$R/bw.log" | head -2
tar -C "$R" -czf "${OUT:-/tmp}/v24_${1:-ab}.tar.gz" .

cd /work/main
for spec in "w4a16-g128 bfloat16" "w4a16-asym-g64 bfloat16" "w4a16-g128 float16"; do
  set -- $spec
  echo "=== $(date -u +%H:%M:%S) scheme $1 dtype $2"
  nice -n 10 /tmp/lcenv/bin/python python/integration/vllm_cpu.py --work /tmp/mplinear-vllm --scheme $1 --dtype $2 \
      --vllm-python /work/vllmenv/bin/python --logs /tmp/vfinal2/logs
  echo "exit $?"
done
echo ALLDONE

# bench/cuda/dev_unpack.sh -- on the device machine: unpack binaries built here (.h200pack/bins.tar.xz,
# carried by the device tool) into .h200/ and set the library path; dev_tests runs the device tests. Source it.
mkdir -p .h200 && tar -C .h200 -xJf .h200pack/bins.tar.xz
export LD_LIBRARY_PATH=$PWD/.h200/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

# dev_tests DIR: the GPU, the device test matrix (TEST_S seconds at most) and test_cuda_faults, logs in DIR,
# and the read ceiling (DIR/bw.log); prints the tests' verdict lines.
dev_tests() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$1/nvidia-smi.txt" 2>&1
  ( time timeout ${TEST_S:-330} .h200/test_cuda_w4a16 ) > "$1/test_cuda_w4a16.log" 2>&1; echo "rc=$?" >> "$1/test_cuda_w4a16.log"
  ( timeout 60 .h200/test_cuda_faults ) > "$1/test_cuda_faults.log" 2>&1; echo "rc=$?" >> "$1/test_cuda_faults.log"
  grep -E "device matrix|FAIL|PASSED|rc=|real" "$1/test_cuda_w4a16.log" "$1/test_cuda_faults.log" | head -20
  timeout 30 .h200/bench_cuda_bw --quick > "$1/bw.log" 2>&1
}

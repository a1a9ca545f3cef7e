"""bench/results/v33/make_v33.py: the v33 tables of bench/results/h200-widths.md from call1 (sweeps, A/B) and the
Humming summaries (call1/humming3, call3/humming{2,4,8})."""
import os, sys
H = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(H))
from table_logs import humming, sweep  # noqa: E402
W = [('uint3b4', '3-bit', 'call1/humming3'), ('uint4b8', '4-bit', 'call3/humming4'), ('uint2b2', '2-bit', 'call3/humming2'),
     ('uint8b128', '8-bit', 'call3/humming8')]
cols = ['default', 'skinny ox', 'skinny sx', 'skinny sx ksplit1', 'skinny sx ksplit2', 'skinny sx ksplit4']
print('| layer | M | width | default (before) | own x | shared x (rule) | shared x, split-K 1 | 2 | 4 | Humming (bf16) |')
print('|---|---|---|---|---|---|---|---|---|---|')
for wt, name, hf in W:
    d = sweep(os.path.join(H, 'call1', 'sx_%s.log' % wt))
    h = humming(os.path.join(H, hf, 'stdout.log'))
    for (s, m), v in d.items():
        best = min(v[c] for c in cols)
        cells = ['**%.2f**' % v[c] if v[c] == best else '%.2f' % v[c] for c in cols]
        hv = h.get((s, m))
        print('| %s | %d | %s | %s | %s |' % (s, m, name, ' | '.join(cells), '%.1f' % hv if hv else '-'))

"""bench/results/v34/make_v34.py: the v34 table of bench/results/h200-widths.md from call1's sweeps (sx_<type>.log:
own x, the shared x by the launcher's rule -- now split-K by the clusters that fit --, forced split-K 2 / 4, and
the one-row-tile-per-warp shared x (nw1) by the rule and at split-K 2 / 4). Bold: the fastest set of the row."""
import os, sys
H = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(H))
from table_logs import sweep  # noqa: E402
CALL = sys.argv[1] if len(sys.argv) > 1 else 'call1'
W = [('uint3b4', '3-bit'), ('uint4b8', '4-bit'), ('uint2b2', '2-bit'), ('uint8b128', '8-bit')]
cols = ['default', 'skinny ox', 'skinny sx', 'skinny sx ksplit2', 'skinny sx ksplit4', 'skinny sx nw1',
        'skinny sx nw1 ksplit2', 'skinny sx nw1 ksplit4']
print('| layer | M | width | default | own x | shared x (rule: fitting clusters) | sx split-K 2 | sx split-K 4 | sx NW 1 (rule) | NW 1, split-K 2 | NW 1, split-K 4 |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for wt, name in W:
    f = os.path.join(H, CALL, 'sx_%s.log' % wt)
    if not os.path.exists(f): continue
    for (s, m), v in sweep(f).items():
        got = [v.get(c) for c in cols]
        best = min(x for x in got if x is not None)
        cells = ['-' if x is None else '**%.2f**' % x if x == best else '%.2f' % x for x in got]
        print('| %s | %d | %s | %s |' % (s, m, name, ' | '.join(cells)))

# widths_table.py RAW.md -- the per-width summary of a bench/x86/ggml_peer run (bench/results/zen4-widths.md)
import sys,re,collections
rows=[l.split('|')[1:-1] for l in open(sys.argv[1]) if l.startswith('| ') and re.match(r'\| \d',l)]
def ms(t):
    v,u=t.strip().split(); v=float(v); return v/1000 if u=='us' else v
d=collections.defaultdict(dict)
for r in rows:
    r=[x.strip() for x in r]
    shape,M,T,w,impl=r[0],int(r[1]),int(r[2]),int(r[3]),r[4]
    d[(w,M,T)].setdefault(shape,{})[impl]=(ms(r[6]),r[10])
for w in (2,3,4,8):
    print(f"\n### {w}-bit (shapes in the order " + " / ".join(sorted({s for k in d for s in d[k]})) + ")\n\n| M | T | mplinear path | mplinear ms (per shape) | % of read BW (M=1) | best ggml (per shape) | ggml / mplinear |\n|---|---|---|---|---|---|---|")
    for M in (1,4,16,64,512):
        for T in (1,2):
            if (w,M,T) not in d: continue
            sh=d[(w,M,T)]; mt=[];bw=[];gg=[];rat=[];path=set()
            for s in sorted(sh):
                im=sh[s]; mp=[k for k in im if k.startswith('mplinear')][0]; path.add(mp.split(':')[-1])
                g=min((v[0],k) for k,v in im.items() if k.startswith('ggml'))
                mt.append(f"{im[mp][0]:.3g}"); bw.append(im[mp][1]); gg.append(f"{g[0]:.3g} ({g[1][5:]})"); rat.append(g[0]/im[mp][0])
            print(f"| {M} | {T} | {'/'.join(sorted(path))} | {' / '.join(mt)} | {' / '.join(bw) if M==1 else ''} | {' / '.join(gg)} | {min(rat):.2f}-{max(rat):.2f}x |")

#!/usr/bin/env python3
"""bench/cuda/sass_mix.py CSV... -- the instruction mix and stall samples per opcode of an ncu SASS page (ncu --import R
--page source --print-source sass --csv; the first kernel of each file), as bench/cuda/v40.sh prof writes them."""
import csv, sys, re, collections
def load(p):
    rows = list(csv.reader(open(p)))
    hdr = rows[1]; data = []
    for r in rows[2:]:
        if r and r[0] == "Kernel Name": break
        data.append(r)
    ix = {h:i for i,h in enumerate(hdr)}
    out=[]
    for r in data:
        if len(r) < len(hdr): continue
        try: ie = float(r[ix["Instructions Executed"]] or 0)
        except ValueError: ie = 0
        samp = float(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
        st = {h: float(r[i] or 0) for h,i in ix.items() if h.startswith("stall_") and "Not Issued" not in h}
        out.append((r[ix["Address"]], r[ix["Source"]], ie, samp, st))
    return out
for p in sys.argv[1:]:
    d = load(p)
    tot = sum(x[2] for x in d); ts = sum(x[3] for x in d)
    ops = collections.Counter(); sm = collections.Counter(); stt = collections.Counter()
    for a,src,ie,s,st in d:
        op = re.sub(r"^@!?U?P\w+\s+", "", src.strip()).split(" ")[0].split(".")[0]
        ops[op] += ie; sm[op] += s
        for k,v in st.items(): stt[k]+=v
    print("==", p, "instr %.1fM samples %d" % (tot/1e6, ts))
    for op,c in ops.most_common(22): print("  %-12s %6.2f%% instr  %6.2f%% samples" % (op, 100*c/tot, 100*sm[op]/ts))
    print("  stalls:", ", ".join("%s %.1f%%" % (k[6:], 100*v/ts) for k,v in stt.most_common(9)))

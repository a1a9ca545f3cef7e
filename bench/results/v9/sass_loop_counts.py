import re,sys,collections
txt=open(sys.argv[1]).read()
for f in re.split(r'\n\s*Function : ',txt)[1:]:
    name=f.split('\n',1)[0]
    if sys.argv[2] not in name: continue
    ins=[(int(m.group(1),16),m.group(2).strip()) for m in re.finditer(r'/\*([0-9a-f]{4,})\*/\s+([^;]*);',f)]
    # main loop = backward branch containing most HMMA
    best=None
    for a,t in ins:
        mm=re.search(r'BRA\s+.*?0x([0-9a-f]+)',t)
        if mm and int(mm.group(1),16)<a:
            body=[x for x in ins if int(mm.group(1),16)<=x[0]<=a]
            nh=sum('HMMA' in x[1] for x in body)
            if best is None or nh>best[0]: best=(nh,body)
    body=best[1]
    # fold regions: conditional forward branch skipping a region that contains FFMA
    skip=set()
    for a,t in body:
        mm=re.match(r'@!?P\d\s+BRA\s+.*?0x([0-9a-f]+)',t)
        if mm:
            tgt=int(mm.group(1),16)
            reg=[x for x in body if a<x[0]<tgt]
            if sum('FFMA' in x[1] for x in reg)>=8: skip.update(x[0] for x in reg)
    c=collections.Counter(); cf=collections.Counter()
    for a,t in body:
        op=re.sub(r'^@!?U?P\w+\s+','',t).split()[0].split('.')[0]
        (cf if a in skip else c)[op]+=1
    alu=sum(c[k] for k in ('LOP3','SHF','ISETP','SEL','PRMT','LEA','IADD3','VIADD','MOV','FSEL','CS2R'))
    print(name[30:80],'nofold',sum(c.values()),'fold-regions',sum(cf.values()),'(%d folds)'%len([1]))
    print('   nofold:',' '.join('%s:%d'%kv for kv in c.most_common()))
    print('   ALU-ish(LOP3,SHF,ISETP,SEL,PRMT,LEA,IADD3,VIADD,MOV,CS2R) nofold:',alu,' fold total:',sum(cf[k] for k in ('LOP3','SHF','ISETP','SEL','PRMT','LEA','IADD3','VIADD','MOV','CS2R')))

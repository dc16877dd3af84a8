#!/usr/bin/env python3
"""varlen_layout_check.py - the Hopper varlen backward's index arithmetic on the CPU (no GPU).

Mirrors src/kernels/sm90/bwd_varlen_plan.cuh (with varlen_plan_common.cuh) and bwd_kernel.cuh
(kVarlen) in Python: the clamping of cu_seqlens / seqused_k, the padded layout (pad0, R, the
binary search of a row's sequence), the units and their query-block ranges (cd_mask_q_blocks)
and the list capacity; for the ragged
batches of tests/varlen_cases.h and tests/test_gpu_varlen_bwd.c, BLOCK_M 64 and 128 and four
masks it asserts: every token maps to exactly one padded row; every row a unit visits is its
own sequence's or padding (LSE2 = +inf); rows stay below R; the units fit the capacity; every
used key is in exactly one unit. Run: python3 dev/sm90_bwd/varlen_layout_check.py
"""
import math, itertools
def clampseq(cu_q, cu_k, used, tq, tk, mq, mk, b):
    qlo=min(max(cu_q[b],0),tq); qhi=min(max(cu_q[b+1],qlo),min(tq,qlo+mq))
    klo=min(max(cu_k[b],0),tk); khi=min(max(cu_k[b+1],klo),min(tk,klo+mk))
    lk=khi-klo
    if used is not None: lk=min(max(used[b],0),lk)
    return qlo,klo,qhi-qlo,lk
def qblocks(k0,k1,sq,sk,wl,wr,bm):
    shift=sk-sq; lo=0; hi=sq-1
    if wr>=0 and k0-shift-wr>lo: lo=k0-shift-wr
    if wl>=0 and k1-shift+wl<hi: hi=k1-shift+wl
    if lo>hi: return 0,0
    return lo//bm, hi//bm+1
def run(q,k,used=None,cu_q=None,cu_k=None,mask=(-1,-1),bm=64,bn=128):
    B=len(q)
    cq=cu_q or [0]+list(itertools.accumulate(q)); ck=cu_k or [0]+list(itertools.accumulate(k))
    tq=sum(q); tk=sum(k); mq=max(q); mk=max(k)
    seqs=[clampseq(cq,ck,used,tq,tk,mq,mk,b) for b in range(B)]
    R=(tq+B*bm+bm-1)//bm*bm
    pad0=[ (s[0]+b*bm)//bm*bm for b,s in enumerate(seqs)]
    # row owner by binary search
    def owner(r):
        lo,hi=0,B-1
        while lo<hi:
            mid=(lo+hi+1)//2
            q0=min(max(cq[mid],0),tq)
            if (q0+mid*bm)//bm*bm<=r: lo=mid
            else: hi=mid-1
        return lo
    rowtok={}
    for r in range(R):
        b=owner(r); s=seqs[b]; i=r-pad0[b]
        if 0<=i<s[2]: rowtok[r]=(b,s[0]+i)
    # each valid token exactly once
    toks=[t for (_,t) in rowtok.values()]
    exp=[s[0]+i for s in seqs for i in range(s[2])]
    assert sorted(toks)==sorted(exp), "token map"
    # units & tiles visited: rows visited in seq b tile m must be owned by b or invalid
    cap=min(B*math.ceil(mk/bn), math.ceil(tk/bn)+B)
    units=[]
    for b,s in enumerate(seqs):
        for n in range((s[3]+bn-1)//bn):
            lo,hi=qblocks(n*bn,min(n*bn+bn,s[3])-1,s[2],s[3],mask[0],mask[1],bm)
            units.append((hi-lo,b,n,lo,hi))
            for m in range(lo,hi):
                for rr in range(bm):
                    r=pad0[b]+m*bm+rr
                    assert r<R, ("R overflow",r,R)
                    if r in rowtok: assert rowtok[r][0]==b and rowtok[r][1]==s[0]+m*bm+rr, "row of other seq"
                    else: assert m*bm+rr>=s[2], "valid row marked invalid"
    assert len(units)<=cap, ("cap",len(units),cap)
    # keys covered
    keys=sorted(s[1]+n*bn+j for (_,b,n,_,_) in units for s in [seqs[b]] for j in range(min(bn,s[3]-n*bn)))
    assert keys==sorted(s[1]+j for s in seqs for j in range(s[3])), "keys"
    return len(units),cap,R
cases=[
 ([0,1,17,300,64,129],[5,1,17,400,0,129]),([5,1,17,400,0,129],[0,1,17,300,64,129]),
 ([63,65,127,129,1,0,64,191,128],)*2,([5,700,1,300,0,33],)*2,([100,7,260,1,129,64],[300,7,90,129,1,200]),
]
for q,k in cases:
    for bm in (64,128):
        for mask in ((-1,-1),(-1,0),(33,7),(64,0)):
            print(run(q,k,mask=mask,bm=bm),end=' ')
print()
print(run([37,0,200,5,64],[100,10,250,64,64],used=[50,3,250,0,1],mask=(-1,0)))
print(run([50,70,30,10],[60]*4,cu_q=[0,50,150,150,155]))
print(run([50,70,30,10],[60]*4,cu_k=[0,60,130,400,240],mask=(-1,0),bm=128))
many_q=[1,8,14,22,6,13,19,3,10,17,2,9,15,21,5,12,18,1,7,14,20,4,11,17,1,8,14,22,6,13,19,3,10,17,2,9,15,21,5,12]
many_k=[1,6,11,16,21,26,2,7,12,17,22,27,3,8,13,18,23,28,4,9,14,19,24,29,5,10,15,20,25,1,6,11,16,21,26,2,7,12,17,22]
print(run(many_q,many_k,mask=(-1,0),bm=128), run(many_q,many_k,mask=(-1,0),bm=64))
print("ALL OK")

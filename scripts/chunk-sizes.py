#!/usr/bin/env python3
"""Measures FastCDC chunk sizes against what they cost (docs/ODRPACK.md, "Chunking").

For each average size (minimum a quarter of it, maximum four times it) it cuts, with PyPI's
`fastcdc` (whose default chunker odrpack's FastCDC matches), the issue's two cases and prints:
  big:  a 256 MiB random file, 1 MiB inserted at 10% and 4 MiB overwritten at 60%: the chunks of
        the new file and the bytes of those the old file does not hold;
  text: 64 MiB of random words, 10 edits of 100 bytes spread out: the same, each chunk counted
        compressed on its own (zlib level 6, as a full flush makes it);
and the chunk tables as compact JSON against the file's bytes, and what compressing the chunks
apart costs against compressing the text whole.

    pip install fastcdc && python3 scripts/chunk-sizes.py     # about 10 minutes
"""
import random, zlib, hashlib, json, sys
from fastcdc import fastcdc
MiB=1<<20
r=random.Random(23)
big=b"".join(r.randbytes(MiB) for _ in range(256))
new=bytearray(big)
p=int(len(new)*0.6); new[p:p+4*MiB]=r.randbytes(4*MiB)
p=int(len(new)*0.1); new[p:p]=r.randbytes(MiB)
new=bytes(new)
# text-like: lines of words
words=[''.join(r.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(r.randint(2,9))) for _ in range(5000)]
lines=[]; n=0
while n<64*MiB:
    l=' '.join(r.choice(words) for _ in range(r.randint(4,14)))+'\n'; lines.append(l); n+=len(l)
text=''.join(lines).encode()[:64*MiB]
tnew=bytearray(text)
for k in range(10):
    q=(k*2+1)*len(tnew)//21; tnew[q:q+100]=r.randbytes(100)
tnew=bytes(tnew)
def chunks(d,mi,av,ma): return [d[c.offset:c.offset+c.length] for c in fastcdc(d,min_size=mi,avg_size=av,max_size=ma)]
def entry(c,comp):
    h=hashlib.sha256(c).hexdigest(); s=len(zlib.compress(c,6)) if comp else len(c)
    return h,len(c),s
print("avg min max | big: chunks moved_MiB manifest_B growth% | text: chunks moved_KiB manifest_B growth% | deflate_loss%")
for av in [32*1024,64*1024,128*1024,256*1024,512*1024,1024*1024]:
    mi,ma=av//4,av*4
    out=[f"{av//1024}K {mi//1024}K {ma//1024}K"]
    for old,nw,comp in [(big,new,False),(text,tnew,True)]:
        held={hashlib.sha256(c).hexdigest() for c in chunks(old,mi,av,ma)}
        es=[entry(c,comp) for c in chunks(nw,mi,av,ma)]
        moved=sum(s for h,_,s in es if h not in held)
        man=len(json.dumps([{"sha256":h,"size":n,"storedSize":s} for h,n,s in es],separators=(',',':')))
        out.append(f"{len(es)} {moved/MiB:.2f}MiB {man} {100*man/len(nw):.4f}%")
        if comp:
            whole=len(zlib.compress(nw,6)); parts=sum(s for _,_,s in es)
            out.append(f"deflate +{100*(parts-whole)/whole:.2f}%")
    print(" | ".join(out)); sys.stdout.flush()

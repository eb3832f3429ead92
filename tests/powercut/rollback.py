#!/usr/bin/env python3
"""A power cut, for benches/load/power_cut_soak.sh: undoes every write in a
journal of tests/powercut/shim.c that no fsync covered, as `power_cut` in
tests/api/power_cut.rs does for the tests. `some` keeps a random prefix of
each file's unsynced writes (a disk that kept part of them).
    rollback.py JOURNAL [none|some]
"""
import os, struct, sys, random
path = sys.argv[1]; keep_mode = sys.argv[2] if len(sys.argv) > 2 else "none"
data = open(path, "rb").read()
at = 0; recs = []
while at < len(data):
    kind = data[at:at+1]; at += 1
    seq, = struct.unpack_from("<Q", data, at); at += 8
    ln, = struct.unpack_from("<I", data, at); at += 4
    p = data[at:at+ln].decode(); at += ln
    a, = struct.unpack_from("<Q", data, at); at += 8
    if kind == b"S":
        recs.append((kind, seq, p, a, 0, b""))
    else:
        before, n = struct.unpack_from("<QQ", data, at); at += 16
        recs.append((kind, seq, p, a, before, data[at:at+n])); at += n
synced = {}
for r in recs:
    if r[0] == b"S": synced[r[2]] = max(synced.get(r[2], 0), r[3])
unsynced = {}
for r in recs:
    if r[0] != b"S" and r[1] >= synced.get(r[2], 0): unsynced.setdefault(r[2], []).append(r)
undo = []
for p, ws in unsynced.items():
    k = 0 if keep_mode == "none" else random.randint(0, len(ws))
    undo += ws[k:]
    print(f"{os.path.relpath(p, os.path.dirname(os.path.dirname(p)))}: {len(ws)-k} undone, {k} kept")
undo.sort(key=lambda r: -r[1])
for kind, seq, p, a, before, old in undo:
    try: fd = os.open(p, os.O_WRONLY)
    except FileNotFoundError: continue
    if kind == b"W":
        os.pwrite(fd, old, a); os.ftruncate(fd, before)
    else:
        os.ftruncate(fd, before); os.pwrite(fd, old, a)
    os.close(fd)

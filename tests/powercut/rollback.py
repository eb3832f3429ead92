#!/usr/bin/env python3
"""A power cut: undoes every write in a journal of tests/powercut/shim.c that
no fsync covered, so that the data dir holds what a disk would after the
power went at the kill. Used by tests/api/power_cut.rs and
benches/load/power_cut_soak.sh.
    rollback.py JOURNAL [none|some [SEED]]
`none` keeps none of a file's unsynced writes; `some` keeps a random prefix
of each file's (a disk that wrote part of them), from SEED if given.
Prints each file's writes undone and kept, then `total: U undone, K kept`.
"""
import os
import random
import struct
import sys


def records(data):
    """(kind, sequence, path, at, size before, bytes) of each record."""
    at = 0
    while at < len(data):
        kind = data[at:at + 1]
        seq, length = struct.unpack_from("<QI", data, at + 1)
        at += 13
        path = data[at:at + length].decode()
        at += length
        (where,) = struct.unpack_from("<Q", data, at)
        at += 8
        if kind == b"S":
            yield kind, seq, path, where, 0, b""
            continue
        before, n = struct.unpack_from("<QQ", data, at)
        at += 16
        yield kind, seq, path, where, before, data[at:at + n]
        at += n


def main():
    journal = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "none"
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else None)
    with open(journal, "rb") as f:
        recs = list(records(f.read()))
    # A sync record: this path's records below its sequence are durable.
    synced = {}
    for kind, _, path, upto, _, _ in recs:
        if kind == b"S":
            synced[path] = max(synced.get(path, 0), upto)
    unsynced = {}
    for r in recs:
        if r[0] != b"S" and r[1] >= synced.get(r[2], 0):
            unsynced.setdefault(r[2], []).append(r)
    undo, undone, kept = [], 0, 0
    for path, writes in unsynced.items():
        k = 0 if mode == "none" else rng.randint(0, len(writes))
        undo += writes[k:]
        undone += len(writes) - k
        kept += k
        name = os.path.relpath(path, os.path.dirname(os.path.dirname(path)))
        print(f"{name}: {len(writes) - k} undone, {k} kept")
    # Newest first: each undo puts back the file as it was before.
    undo.sort(key=lambda r: -r[1])
    for kind, _, path, at, before, old in undo:
        try:
            fd = os.open(path, os.O_WRONLY)
        except FileNotFoundError:
            continue  # renamed or removed since: the directory kept that
        if kind == b"W":
            os.pwrite(fd, old, at)
            os.ftruncate(fd, before)
        else:
            os.ftruncate(fd, before)
            os.pwrite(fd, old, at)
        os.close(fd)
    print(f"total: {undone} undone, {kept} kept")


main()

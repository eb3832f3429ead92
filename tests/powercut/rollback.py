#!/usr/bin/env python3
"""A power cut: undoes every write in a journal of tests/powercut/shim.c that
no fsync covered, and every rename and removal no fsync of its directory
covered, so that the data dir holds what a disk would after the power went
at the kill. Used by tests/api/power_cut.rs and
benches/load/power_cut_soak.sh.
    rollback.py JOURNAL [none|some [SEED]]
`none` keeps none of a file's unsynced writes and none of the unsynced
renames and removals; `some` keeps a random prefix of each file's writes (a
disk that wrote part of them) and each rename or removal with even odds
(directory blocks reach the disk in any order), from SEED if given.
Prints each file's writes undone and kept, the renames and removals undone
and kept, then `total: U undone, K kept` (all of them).
"""
import os
import random
import shutil
import struct
import sys


def records(data):
    """(kind, sequence, path, fields) of each record: for a write or a
    truncate (at, size before, bytes), a sync (upto,), a rename (new path,
    set aside), a removal (set aside,).

    A record cut short ends the journal: the kill came while the shim was
    writing it. A write is journaled before it is made, so it never
    happened; a sync, rename or removal is journaled after it returned but
    before its caller went on, so nothing the server answered depended on
    it, and reading it as not done (or, for a rename, as kept) is a state a
    disk could be in."""
    try:
        yield from complete_records(data)
    except (struct.error, IndexError, UnicodeDecodeError):
        return


def complete_records(data):
    at = 0
    while at < len(data):
        kind = data[at:at + 1]
        seq, length = struct.unpack_from("<QI", data, at + 1)
        at += 13
        if at + length > len(data):
            return
        path = data[at:at + length].decode()
        at += length
        if kind == b"S":
            (upto,) = struct.unpack_from("<Q", data, at)
            at += 8
            yield kind, seq, path, (upto,)
        elif kind == b"N":
            (n,) = struct.unpack_from("<I", data, at)
            at += 4
            to = data[at:at + n].decode()
            at += n
            yield kind, seq, path, (to, data[at] == 1)
            at += 1
        elif kind == b"U":
            yield kind, seq, path, (data[at] == 1,)
            at += 1
        else:
            where, before, n = struct.unpack_from("<QQQ", data, at)
            at += 24
            if at + n > len(data):
                return
            yield kind, seq, path, (where, before, data[at:at + n])
            at += n


def undo_write(kind, path, fields):
    where, before, old = fields
    try:
        fd = os.open(path, os.O_WRONLY)
    except FileNotFoundError:
        return  # renamed or removed since, and that stayed
    if kind == b"W":
        os.pwrite(fd, old, where)
        os.ftruncate(fd, before)
    else:
        os.ftruncate(fd, before)
        os.pwrite(fd, old, where)
    os.close(fd)


def undo_rename(journal, seq, path, fields):
    to, saved = fields
    if os.path.lexists(to) and os.path.isdir(os.path.dirname(path)):
        os.rename(to, path)
    if saved:
        shutil.copyfile(f"{journal}.{seq}", to)


def undo_removal(journal, seq, path, fields):
    (saved,) = fields
    if saved and not os.path.lexists(path):
        shutil.copyfile(f"{journal}.{seq}", path)


def main():
    journal = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "none"
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else None)
    with open(journal, "rb") as f:
        recs = list(records(f.read()))
    # A sync record: this path's records below its sequence are durable
    # (a directory's: the renames and removals in it).
    synced = {}
    for kind, _, path, fields in recs:
        if kind == b"S":
            synced[path] = max(synced.get(path, 0), fields[0])

    def durable_in(path, seq):
        return seq < synced.get(os.path.dirname(path), 0)

    unsynced, names = {}, []
    for r in recs:
        kind, seq, path, fields = r
        if kind in (b"W", b"T") and seq >= synced.get(path, 0):
            unsynced.setdefault(path, []).append(r)
        elif kind == b"N" and not (durable_in(path, seq) and durable_in(fields[0], seq)):
            names.append(r)
        elif kind == b"U" and not durable_in(path, seq):
            names.append(r)
    undo, undone, kept = [], 0, 0
    for path, writes in unsynced.items():
        k = 0 if mode == "none" else rng.randint(0, len(writes))
        undo += writes[k:]
        undone += len(writes) - k
        kept += k
        name = os.path.relpath(path, os.path.dirname(os.path.dirname(path)))
        print(f"{name}: {len(writes) - k} undone, {k} kept")
    lost = [r for r in names if mode == "none" or rng.random() < 0.5]
    undo += lost
    print(f"renames and removals: {len(lost)} undone, {len(names) - len(lost)} kept")
    undone += len(lost)
    kept += len(names) - len(lost)
    # Newest first: each undo puts back the file (or name) as it was before.
    undo.sort(key=lambda r: -r[1])
    for kind, seq, path, fields in undo:
        if kind == b"N":
            undo_rename(journal, seq, path, fields)
        elif kind == b"U":
            undo_removal(journal, seq, path, fields)
        else:
            undo_write(kind, path, fields)
    print(f"total: {undone} undone, {kept} kept")


main()

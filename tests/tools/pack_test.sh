#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `stoker pack` against readers we did not write: GNU tar lists and extracts exactly the
# original bytes, Python's tarfile groups members by key as WebDataset does, the index's
# offsets point at the original bytes; then the refusals and error messages.
set -euo pipefail
stoker=$1
py=${2:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$(dirname "$0")/../skip_policy.sh"
command -v tar > /dev/null || skip "no tar (Debian: tar)"

"$stoker" gen "$tmp/d" --sizes 48 --classes 3 --per-class 7 --seed 3 > /dev/null 2>&1
# an upper-case extension keeps its name, lower-cased
mv "$tmp/d/class_001/img_000002.jpg" "$tmp/d/class_001/img_000002.JPEG"
"$stoker" pack "$tmp/d" --out "$tmp/s" --shard-size 12KB --no-progress > "$tmp/pack.txt"
grep -q '21 samples into' "$tmp/pack.txt" || fail "pack summary: $(cat "$tmp/pack.txt")"
ls "$tmp/s"/shard-*.tar > /dev/null || fail "no shards"
[ "$(ls "$tmp/s" | grep -c '\.partial$')" = 0 ] || fail "partial files left"
nshards=$(ls "$tmp/s"/shard-*.tar | wc -l)
[ "$nshards" -gt 2 ] || fail "expected several shards at 12KB, got $nshards"

# GNU tar: every shard lists cleanly (ustar checksums) as key.ext, key.cls pairs in order,
# and extracts to exactly the original bytes.
mkdir "$tmp/x"
for s in "$tmp/s"/shard-*.tar; do
  tar -tvf "$s" > /dev/null || fail "tar -tvf $s"
  tar --format=ustar -tf "$s" >> "$tmp/members.txt"
  tar -xf "$s" -C "$tmp/x" || fail "tar -xf $s"
done
[ "$(wc -l < "$tmp/members.txt")" = 42 ] || fail "member count $(wc -l < "$tmp/members.txt")"
grep -qx '000000009.jpeg' "$tmp/members.txt" || fail "upper-case extension not kept lower-cased"
"$py" - "$tmp" <<'PY'
import hashlib, os, sys
tmp = sys.argv[1]
lines = open(os.path.join(tmp, "s", "stoker-shards.tsv"), "rb").read().split(b"\n")
head = lines[0].split(b"\t")
assert head[0] == b"stoker-shards" and head[1] == b"1", head
nc, ns, n = map(int, head[2:5])
classes = [l.split(b"\t", 1)[1].decode() for l in lines[1:1 + nc]]
assert classes == ["class_000", "class_001", "class_002"], classes
shards = [l.split(b"\t", 2) for l in lines[1 + nc:1 + nc + ns]]
samples = [l.split(b"\t", 4) for l in lines[1 + nc + ns:1 + nc + ns + n]]
assert len(samples) == 21 and lines[1 + nc + ns + n:] == [b""], "trailing lines"
members = open(os.path.join(tmp, "members.txt")).read().split()
for i, (sh, off, length, label, path) in enumerate(samples):
    orig = open(os.path.join(tmp, "d", path.decode()), "rb").read()
    key = "%09d" % i
    ext = path.decode().rsplit(".", 1)[1].lower()
    assert members[2 * i] == key + "." + ext and members[2 * i + 1] == key + ".cls", members[2*i:2*i+2]
    # tar -xf gave the original bytes
    got = open(os.path.join(tmp, "x", key + "." + ext), "rb").read()
    assert hashlib.sha256(got).digest() == hashlib.sha256(orig).digest(), key
    assert open(os.path.join(tmp, "x", key + ".cls")).read() == label.decode(), key
    # the index's byte range in its shard is the original file
    shard_file = shards[int(sh)][2].decode()
    with open(os.path.join(tmp, "s", shard_file), "rb") as f:
        f.seek(int(off))
        assert f.read(int(length)) == orig, ("offset", i)
    assert int(label) == classes.index(path.decode().split("/")[0]), path
for _, bytes_, name in shards:
    assert os.path.getsize(os.path.join(tmp, "s", name.decode())) == int(bytes_), name
PY

# Python's tarfile, read the way WebDataset reads a shard: members in order, grouped by the
# key (the name up to the first dot), .cls decoded as an integer label.
"$py" - "$tmp" <<'PY'
import glob, os, tarfile, sys
tmp = sys.argv[1]
seen = []
for shard in sorted(glob.glob(os.path.join(tmp, "s", "shard-*.tar"))):
    with tarfile.open(shard, "r|") as tf:  # streaming mode, as WebDataset opens shards
        current = None
        for m in tf:
            assert m.isfile() and m.mode == 0o644, m
            key, ext = m.name.split(".", 1)
            data = tf.extractfile(m).read()
            if current is None or current["__key__"] != key:
                current = {"__key__": key}
                seen.append(current)
            current[ext] = data
for i, s in enumerate(seen):
    assert s["__key__"] == "%09d" % i, s["__key__"]
    img = [k for k in s if k not in ("__key__", "cls")]
    assert len(img) == 1 and len(s) == 3, s.keys()
    label = int(s["cls"].decode())
    assert label == i // 7, (i, label)
    assert s[img[0]][:2] == b"\xff\xd8", "not a JPEG"
assert len(seen) == 21, len(seen)
PY

# Refusals and errors.
set +e
"$stoker" pack "$tmp/d" --out "$tmp/s" --no-progress > /dev/null 2> "$tmp/err.txt"
code=$?
set -e
[ $code = 2 ] && grep -q 'already holds a packed dataset.*--force' "$tmp/err.txt" ||
  fail "existing output not refused: $code $(cat "$tmp/err.txt")"
"$stoker" pack "$tmp/d" --out "$tmp/s" --force --no-progress > /dev/null
[ "$(ls "$tmp/s"/shard-*.tar | wc -l)" = 1 ] || fail "--force left stale shards"

# --list: a list file relative to DATA
printf 'class_002/img_000001.jpg 2\nclass_000/img_000003.jpg 0\n' > "$tmp/list.txt"
"$stoker" pack "$tmp/d" --list "$tmp/list.txt" --out "$tmp/l" --no-progress | grep -q '2 samples' ||
  fail "--list"
cmp <(tar -xOf "$tmp/l/shard-000000.tar" 000000000.jpg) "$tmp/d/class_002/img_000001.jpg" ||
  fail "--list order"

# an unreadable input is named (a directory where the list promises a file: root reads any
# mode, and the tree indexer skips what is not a file)
mkdir "$tmp/d/class_000/zz_dir.jpg"
printf 'class_002/img_000001.jpg 2\nclass_000/zz_dir.jpg 0\n' > "$tmp/bad_list.txt"
set +e
"$stoker" pack "$tmp/d" --list "$tmp/bad_list.txt" --out "$tmp/u" --no-progress > /dev/null \
  2> "$tmp/err.txt"
code=$?
set -e
[ $code = 1 ] && grep -q 'zz_dir.jpg' "$tmp/err.txt" || fail "unreadable input: $(cat "$tmp/err.txt")"
[ ! -e "$tmp/u/stoker-shards.tsv" ] || fail "index written after a failure"
[ "$(ls "$tmp/u" | grep -c 'partial')" = 0 ] || fail "partial left after a failure"
rmdir "$tmp/d/class_000/zz_dir.jpg"

# a write failure (file size limit, as a full disk would be) names the shard
set +e
(ulimit -f 8; "$stoker" pack "$tmp/d" --out "$tmp/f" --no-progress > /dev/null 2> "$tmp/err.txt")
code=$?
set -e
[ $code = 1 ] && grep -q 'shard .*shard-000000.tar.partial: write failed' "$tmp/err.txt" ||
  fail "write failure: $code $(cat "$tmp/err.txt")"
[ "$(ls "$tmp/f" | wc -l)" = 0 ] || fail "files left after a write failure: $(ls "$tmp/f")"
echo "pack: ok ($nshards shards)"

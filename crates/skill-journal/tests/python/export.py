"""Checks a journal export, independently of the Rust code: every entry's leaf and payload digest,
the tree rebuilt from the entries against every signed checkpoint (and a trusted one), and any
`.tlog-proof` files given. Standard library only. Prints one line per failure (naming the index)
and exits 2 when there is any (1 when the export cannot be read at all); else one line saying
what held.

    python3 export.py EXPORT_DIR [--trust CHECKPOINT] [--key KEY] [PROOF.tlog-proof ...]
"""

import base64
import hashlib
import json
import os
import sys

from check import open_note
from proofs import leaf_hash, node_hash, verify_inclusion


def levels(leaves: list) -> list:
    """Every complete subtree, level by level."""
    tree = [leaves]
    while len(tree[-1]) > 1:
        below = tree[-1]
        tree.append([node_hash(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])
    return tree


def root_of(tree: list, size: int) -> bytes:
    """MTH of the first `size` leaves, from the complete subtrees."""
    if size == 0:
        return hashlib.sha256(b"").digest()

    def mth(start: int, end: int) -> bytes:
        n = end - start
        if n & (n - 1) == 0 and start % n == 0:
            return tree[n.bit_length() - 1][start // n]
        k = 1 << ((n - 1).bit_length() - 1)
        return node_hash(mth(start, start + k), mth(start + k, end))

    return mth(0, size)


def check_checkpoint(vkey: str, note: str, tree: list, held: list, what: str, failures: list):
    """The checkpoint's size when it holds; a failure naming where, when not."""
    name = vkey.split("+", 1)[0]
    try:
        origin, size, top = open_note(vkey, note).splitlines()[:3]
        size = int(size)
    except ValueError as error:
        failures.append(f"the {what} is not signed by the key {vkey.split('+')[:2]}: {error}")
        return None
    if origin != name:
        failures.append(f"the {what} is of another log: {origin}")
    elif size > len(tree[0]):
        failures.append(f"index {len(tree[0])}: the {what} signs {size} entries, the export holds {len(tree[0])}")
    elif base64.b64decode(top) != root_of(tree, size):
        first = max([n for n in held if n < size], default=0)
        failures.append(f"index {first}: the entries do not hash to the {what} of {size} (a change from index {first} to {size - 1})")
    else:
        return size
    return None


def unique_keys(pairs):
    """A JSON object, refused when a key is in it twice (as the Rust reader refuses it)."""
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"the key {key!r} is there twice")
        seen[key] = value
    return seen


def loads(text):
    return json.loads(text, object_pairs_hook=unique_keys)


def small_file(path: str, what: str) -> str:
    """A regular file of at most 64 KiB, as text (a FIFO or a device is refused, never read)."""
    if not os.path.isfile(path) or os.path.getsize(path) > 65536:
        raise ValueError(f"{what} {path} is not a file of at most 64 KiB")
    with open(path, encoding="utf-8") as opened:
        return opened.read()


def check_proof(vkey: str, text: str, failures: list, name: str):
    head, _, note = text.partition("\n\n")
    lines = head.split("\n")
    if lines[0] != "c2sp.org/tlog-proof@v1" or not lines[1].startswith("extra ") or not lines[2].startswith("index "):
        failures.append(f"{name}: not a tlog-proof")
        return
    entry = base64.b64decode(lines[1][len("extra "):])
    index = int(lines[2][len("index "):])
    path = [base64.b64decode(line) for line in lines[3:]]
    try:
        origin, size, top = open_note(vkey, note).splitlines()[:3]
    except ValueError as error:
        failures.append(f"{name}: {error}")
        return
    if not verify_inclusion(index, int(size), leaf_hash(entry), path, base64.b64decode(top)):
        failures.append(f"{name}: index {index} is not in the checkpoint of {size}")


def main() -> int:
    args = sys.argv[1:]
    if not args:
        print("usage: export.py EXPORT_DIR [--trust NOTE] [--key KEY] [PROOF ...]")
        return 1
    folder, trust, key, proofs = args[0], None, None, []
    rest = args[1:]
    while rest:
        flag = rest.pop(0)
        if flag in ("--trust", "--key") and not rest:
            print(f"{flag} needs a value")
            return 1
        if flag == "--trust":
            trust = small_file(rest.pop(0), "--trust")
        elif flag == "--key":
            key = rest.pop(0)
        else:
            proofs.append(flag)
    vkey = key or small_file(f"{folder}/key.txt", "the export's key").strip()
    if len(vkey.split("+", 2)) != 3:
        print(f"the key is not name+id+key: {vkey!r}")
        return 1
    failures, leaves, erased = [], [], []
    with open(f"{folder}/entries.jsonl", "rb") as lines:
        for at, raw in enumerate(lines):
            try:
                row = loads(raw.decode("utf-8"))
                index, entry_text = row["index"], row["entry"]
                if type(index) is not int or not isinstance(entry_text, str):
                    raise ValueError("`index` is not an integer or `entry` not a string")
                entry = loads(entry_text)
                digest = entry["data"] if isinstance(entry, dict) else None
                payload, salt = row.get("payload"), row.get("salt")
                if not isinstance(payload, (str, type(None))) or not isinstance(salt, (str, type(None))):
                    raise ValueError("`payload` and `salt` are strings or null")
                stored = base64.b64decode(row["leafHash"]) if row.get("leafHash") else None
                salt = base64.b64decode(salt) if salt is not None else None
            except (ValueError, KeyError, TypeError, RecursionError) as error:
                failures.append(f"index {at}: the line cannot be read ({type(error).__name__}: {error})")
                break
            if index != at:
                failures.append(f"index {at}: missing (the export goes on at {index})")
                break
            leaf = leaf_hash(entry_text.encode("utf-8"))
            if stored is not None and stored != leaf:
                failures.append(f"index {at}: the entry does not hash to its stored leaf")
            if payload is None and salt is None:
                erased.append(at)
            elif payload is None or salt is None:
                failures.append(f"index {at}: a payload without its salt, or a salt without its payload")
            elif "sha256:" + hashlib.sha256(salt + payload.encode("utf-8")).hexdigest() != digest:
                failures.append(f"index {at}: the payload is not the one its digest commits to")
            leaves.append(leaf)
    tree = levels(leaves)
    held = []
    with open(f"{folder}/checkpoints.jsonl", "rb") as lines:
        for number, raw in enumerate(lines):
            try:
                row = loads(raw.decode("utf-8"))
                note, size = row["note"], row["size"]
                if not isinstance(note, str) or type(size) is not int:
                    raise ValueError("`note` is not a string or `size` not an integer")
            except (ValueError, KeyError, TypeError, RecursionError) as error:
                failures.append(f"checkpoints.jsonl line {number + 1} cannot be read: {error}")
                continue
            signed = check_checkpoint(vkey, note, tree, held, "checkpoint", failures)
            if signed is not None:
                held.append(signed)
                if signed != size:
                    failures.append(f"a checkpoint kept as the one of {size} entries is the signed note of {signed}")
    if trust is not None:
        check_checkpoint(vkey, trust, tree, held, "trusted checkpoint", failures)
    for path in proofs:
        try:
            check_proof(vkey, small_file(path, "the proof"), failures, path)
        except (ValueError, IndexError) as error:
            failures.append(f"{path}: {error}")
    for failure in failures:
        print(failure)
    if failures:
        return 2
    print(f"{len(leaves)} entries, {len(held)} checkpoints and {len(proofs)} proofs hold; {len(erased)} payloads erased")
    return 0


def run() -> int:
    """main, with what cannot be read said in a line instead of a traceback."""
    try:
        return main()
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as error:
        print(f"cannot check: {type(error).__name__}: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(run())

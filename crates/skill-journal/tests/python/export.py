"""Checks a journal export, independently of the Rust code: every entry's leaf and payload digest,
the tree rebuilt from the entries against every signed checkpoint (and a trusted one), and any
`.tlog-proof` files given. Standard library only. Prints one line per failure (naming the index)
and exits 1 when there is any; else one line saying what held.

    python3 export.py EXPORT_DIR [--trust CHECKPOINT] [--key KEY] [PROOF.tlog-proof ...]
"""

import base64
import hashlib
import json
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
    folder, trust, key, proofs = args[0], None, None, []
    rest = args[1:]
    while rest:
        flag = rest.pop(0)
        if flag == "--trust":
            trust = open(rest.pop(0), encoding="utf-8").read(65536)
        elif flag == "--key":
            key = rest.pop(0)
        else:
            proofs.append(flag)
    try:
        vkey = key or open(f"{folder}/key.txt", encoding="utf-8").read(4096).strip()
    except OSError as error:
        print(f"no --key and no key.txt: {error}")
        return 1
    failures, leaves, erased = [], [], []
    with open(f"{folder}/entries.jsonl", encoding="utf-8") as lines:
        for at, line in enumerate(lines):
            try:
                row = json.loads(line)
                index, entry_text = row["index"], row["entry"]
                entry = json.loads(entry_text)
                digest = entry["data"] if isinstance(entry, dict) else None
            except (ValueError, KeyError, TypeError) as error:
                failures.append(f"index {at}: the line cannot be read ({type(error).__name__}: {error})")
                break
            if index != at:
                failures.append(f"index {at}: missing (the export goes on at {index})")
                break
            leaf = leaf_hash(entry_text.encode("utf-8"))
            if row.get("leafHash") and base64.b64decode(row["leafHash"]) != leaf:
                failures.append(f"index {at}: the entry does not hash to its stored leaf")
            payload, salt = row.get("payload"), row.get("salt")
            if payload is None and salt is None:
                erased.append(at)
            elif payload is None or salt is None:
                failures.append(f"index {at}: a payload without its salt, or a salt without its payload")
            elif "sha256:" + hashlib.sha256(base64.b64decode(salt) + payload.encode("utf-8")).hexdigest() != digest:
                failures.append(f"index {at}: the payload is not the one its digest commits to")
            leaves.append(leaf)
    tree = levels(leaves)
    held = []
    with open(f"{folder}/checkpoints.jsonl", encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            try:
                note = json.loads(line)["note"]
            except (ValueError, KeyError, TypeError) as error:
                failures.append(f"checkpoints.jsonl line {number + 1} cannot be read: {error}")
                continue
            size = check_checkpoint(vkey, note, tree, held, "checkpoint", failures)
            if size is not None:
                held.append(size)
    if trust is not None:
        check_checkpoint(vkey, trust, tree, held, "trusted checkpoint", failures)
    for path in proofs:
        check_proof(vkey, open(path, encoding="utf-8").read(), failures, path)
    for failure in failures:
        print(failure)
    if failures:
        return 1
    print(f"{len(leaves)} entries, {len(held)} checkpoints and {len(proofs)} proofs hold; {len(erased)} payloads erased")
    return 0


if __name__ == "__main__":
    sys.exit(main())

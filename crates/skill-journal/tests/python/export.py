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


def canonical(value) -> str:
    """Canonical JSON as the journal writes payloads: keys sorted, no whitespace. None for a value
    with a float, whose text two languages need not agree on."""
    if isinstance(value, float):
        return None
    if isinstance(value, dict):
        parts = []
        for key in sorted(value):
            inner = canonical(value[key])
            if inner is None:
                return None
            parts.append(json.dumps(key, ensure_ascii=False) + ":" + inner)
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        inner = [canonical(item) for item in value]
        return None if None in inner else "[" + ",".join(inner) + "]"
    return json.dumps(value, ensure_ascii=False)


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


def check_checkpoint(vkey: str, note: str, tree: list, what: str, failures: list):
    name = vkey.split("+", 1)[0]
    try:
        origin, size, top = open_note(vkey, note).splitlines()[:3]
    except ValueError as error:
        failures.append(f"the {what} is not signed by the key: {error}")
        return None
    size = int(size)
    if origin != name:
        failures.append(f"the {what} is of another log: {origin}")
    elif size > len(tree[0]):
        failures.append(f"index {len(tree[0])}: the {what} signs {size} entries, the export holds {len(tree[0])}")
    elif base64.b64decode(top) != root_of(tree, size):
        failures.append(f"the entries do not hash to the {what} of {size}")
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
            trust = open(rest.pop(0), encoding="utf-8").read()
        elif flag == "--key":
            key = rest.pop(0)
        else:
            proofs.append(flag)
    vkey = key or open(f"{folder}/key.txt", encoding="utf-8").read().strip()
    failures, leaves, skipped = [], [], 0
    with open(f"{folder}/entries.jsonl", encoding="utf-8") as lines:
        for at, line in enumerate(lines):
            row = json.loads(line)
            if row["index"] != at:
                failures.append(f"index {at}: missing (the export goes on at {row['index']})")
                break
            entry = row["entry"].encode("utf-8")
            leaf = leaf_hash(entry)
            if row.get("leafHash") and base64.b64decode(row["leafHash"]) != leaf:
                failures.append(f"index {at}: the entry does not hash to its stored leaf")
            if row.get("data") is not None and row.get("salt") is not None:
                text = canonical(row["data"])
                if text is None:
                    skipped += 1
                else:
                    digest = hashlib.sha256(base64.b64decode(row["salt"]) + text.encode("utf-8")).hexdigest()
                    if json.loads(row["entry"])["data"] != "sha256:" + digest:
                        failures.append(f"index {at}: the payload is not the one its digest commits to")
            leaves.append(leaf)
    tree = levels(leaves)
    held = 0
    with open(f"{folder}/checkpoints.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if check_checkpoint(vkey, json.loads(line)["note"], tree, "checkpoint", failures) is not None:
                held += 1
    if trust is not None:
        check_checkpoint(vkey, trust, tree, "trusted checkpoint", failures)
    for path in proofs:
        check_proof(vkey, open(path, encoding="utf-8").read(), failures, path)
    for failure in failures:
        print(failure)
    if failures:
        return 1
    print(f"{len(leaves)} entries, {held} checkpoints and {len(proofs)} proofs hold ({skipped} payloads with floats not re-serialised)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

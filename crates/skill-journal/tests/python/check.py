"""Checks, independently of the Rust code, what the journal's proofs test wrote: a signed
checkpoint against its verifier key, the root of the leaves, and every inclusion and consistency
proof. Prints one line per failure and exits 1 when there is any.

    python3 check.py cases.json
"""

import base64
import hashlib
import json
import sys

from proofs import ed25519_verify, leaf_hash, root, verify_consistency, verify_inclusion


def open_note(vkey: str, note: str) -> str:
    """The note's body once the signature of `vkey` (name+id+base64 key) verifies over it."""
    name, key_id, key = vkey.split("+", 2)
    raw = base64.b64decode(key)
    if raw[0] != 1 or len(raw) != 33:
        raise ValueError("not an Ed25519 key")
    public = raw[1:]
    if hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4].hex() != key_id:
        raise ValueError("the key id does not match")
    body, _, signatures = note.rpartition("\n\n")
    body += "\n"
    for line in signatures.splitlines():
        if not line.startswith("\u2014 "):
            raise ValueError("a signature line does not start with an em dash")
        signer, signature = line[2:].split(" ", 1)
        signature = base64.b64decode(signature)
        if signer == name and signature[:4].hex() == key_id:
            if ed25519_verify(public, body.encode(), signature[4:]):
                return body
            raise ValueError("the signature does not verify")
    raise ValueError("no signature by the key")


def main() -> int:
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    failures = []
    leaves = [leaf_hash(bytes.fromhex(entry)) for entry in cases["entries"]]
    try:
        origin, size, top = open_note(cases["vkey"], cases["note"]).splitlines()
        if origin != cases["origin"] or int(size) != len(leaves):
            failures.append("the checkpoint names another log or size")
        if base64.b64decode(top) != root(leaves):
            failures.append("the checkpoint's root is not the leaves' root")
    except ValueError as error:
        failures.append(f"the checkpoint: {error}")
    for case in cases["inclusion"]:
        proof = [bytes.fromhex(h) for h in case["proof"]]
        top = root(leaves[: case["size"]])
        if not verify_inclusion(case["index"], case["size"], leaves[case["index"]], proof, top):
            failures.append(f"inclusion of {case['index']} in {case['size']}")
    for case in cases["consistency"]:
        proof = [bytes.fromhex(h) for h in case["proof"]]
        first, second = root(leaves[: case["first"]]), root(leaves[: case["second"]])
        if not verify_consistency(case["first"], case["second"], first, second, proof):
            failures.append(f"consistency of {case['first']} with {case['second']}")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

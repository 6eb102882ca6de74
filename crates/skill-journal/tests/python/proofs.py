"""RFC 6962 tree hashes and proof checks, and Ed25519 signature checks, in the standard library
only: the independent half of the journal's verification."""

import hashlib

# --- RFC 6962 --------------------------------------------------------------------------------

def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root(leaves: list) -> bytes:
    """The root of the tree over the leaf hashes `leaves`, level by level."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    level = list(leaves)
    while len(level) > 1:
        paired = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def verify_inclusion(index: int, size: int, leaf: bytes, proof: list, top: bytes) -> bool:
    if index >= size:
        return False
    f, s, r = index, size - 1, leaf
    for p in proof:
        if s == 0:
            return False
        if f & 1 or f == s:
            r = node_hash(p, r)
            while f & 1 == 0 and f != 0:
                f >>= 1
                s >>= 1
        else:
            r = node_hash(r, p)
        f >>= 1
        s >>= 1
    return s == 0 and r == top


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, proof: list) -> bool:
    if first > second:
        return False
    if first == second:
        return not proof and first_root == second_root
    if first == 0:
        return not proof
    path = ([first_root] if first & (first - 1) == 0 else []) + list(proof)
    if not path:
        return False
    f, s = first - 1, second - 1
    while f & 1:
        f >>= 1
        s >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if s == 0:
            return False
        if f & 1 or f == s:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while f & 1 == 0 and f != 0:
                f >>= 1
                s >>= 1
        else:
            sr = node_hash(sr, c)
        f >>= 1
        s >>= 1
    return fr == first_root and sr == second_root and s == 0

# --- Ed25519 (verification only) ----------------------------------------------------------------

Q = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = (-121665 * pow(121666, Q - 2, Q)) % Q
ROOT_MINUS_ONE = pow(2, (Q - 1) // 4, Q)


def _x_of(y: int, sign: int):
    xx = (y * y - 1) * pow(D * y * y + 1, Q - 2, Q) % Q
    x = pow(xx, (Q + 3) // 8, Q)
    if (x * x - xx) % Q:
        x = x * ROOT_MINUS_ONE % Q
    if (x * x - xx) % Q:
        return None
    if x == 0 and sign:
        return None
    if x & 1 != sign:
        x = Q - x
    return x


def _point(encoded: bytes):
    if len(encoded) != 32:
        return None
    value = int.from_bytes(encoded, "little")
    y, sign = value & ((1 << 255) - 1), value >> 255
    if y >= Q:
        return None
    x = _x_of(y, sign)
    if x is None:
        return None
    return (x, y, 1, x * y % Q)


def _add(p, q):
    x1, y1, z1, t1 = p
    x2, y2, z2, t2 = q
    a = (y1 - x1) * (y2 - x2) % Q
    b = (y1 + x1) * (y2 + x2) % Q
    c = t1 * 2 * D * t2 % Q
    d = z1 * 2 * z2 % Q
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % Q, g * h % Q, f * g % Q, e * h % Q)


def _times(n: int, p):
    out = (0, 1, 1, 0)
    while n:
        if n & 1:
            out = _add(out, p)
        p = _add(p, p)
        n >>= 1
    return out


def _same(p, q) -> bool:
    return (p[0] * q[2] - q[0] * p[2]) % Q == 0 and (p[1] * q[2] - q[1] * p[2]) % Q == 0


_BY = 4 * pow(5, Q - 2, Q) % Q
BASE = (_x_of(_BY, 0), _BY, 1, _x_of(_BY, 0) * _BY % Q)


def ed25519_verify(public: bytes, message: bytes, signature: bytes) -> bool:
    if len(signature) != 64:
        return False
    a, r = _point(public), _point(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if a is None or r is None or s >= L:
        return False
    h = int.from_bytes(hashlib.sha512(signature[:32] + public + message).digest(), "little") % L
    return _same(_times(s, BASE), _add(r, _times(h, a)))

//! The RFC 6962 (RFC 9162) Merkle tree: leaf and node hashes with their domain separation, the
//! root of any prefix, inclusion and consistency proofs, and their verification. The tree is read
//! through [`Nodes`]: the hash of every complete subtree, as the journal stores them.

use sha2::{Digest, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// The root of the empty tree: the hash of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// `H(0x00 || entry)`.
pub fn leaf_hash(entry: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x00]);
    hasher.update(entry);
    hasher.finalize().into()
}

/// `H(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([0x01]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// The hashes of complete subtrees: `node(level, index)` covers the leaves
/// `[index << level, (index + 1) << level)` (level 0: the leaf hashes).
pub trait Nodes {
    fn node(&self, level: u32, index: u64) -> Hash;
}

/// Every complete subtree of a list of leaves, kept in memory level by level (about twice the
/// leaves' size): what a verifier rebuilds offline, each node then read at once.
#[derive(Debug, Clone, Default)]
pub struct Levels(Vec<Vec<Hash>>);

impl Levels {
    /// The tree over `leaves` (leaf hashes).
    pub fn new(leaves: Vec<Hash>) -> Self {
        let mut levels = vec![leaves];
        while let Some(below) = levels.last().filter(|level| level.len() > 1) {
            let above: Vec<Hash> = below.chunks_exact(2).map(|pair| node_hash(&pair[0], &pair[1])).collect();
            levels.push(above);
        }
        Self(levels)
    }

    /// How many leaves.
    pub fn size(&self) -> u64 {
        self.0.first().map_or(0, Vec::len) as u64
    }
}

impl Nodes for Levels {
    fn node(&self, level: u32, index: u64) -> Hash {
        self.0[level as usize][index as usize]
    }
}

/// The leaf hashes themselves, every complete subtree computed from them when asked (for small
/// trees and tests; [`Levels`] keeps them).
impl Nodes for [Hash] {
    fn node(&self, level: u32, index: u64) -> Hash {
        let start = (index << level) as usize;
        subtree(&self[start..start + (1_usize << level)])
    }
}

fn subtree(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        1 => leaves[0],
        n => {
            let half = n / 2;
            node_hash(&subtree(&leaves[..half]), &subtree(&leaves[half..]))
        }
    }
}

/// The left siblings appending leaf `index` needs, from the leaf up: `(level, index)` of each.
pub fn left_siblings(index: u64) -> Vec<(u32, u64)> {
    let mut needed = Vec::new();
    let (mut level, mut at) = (0_u32, index);
    while at % 2 == 1 {
        needed.push((level, at - 1));
        level += 1;
        at /= 2;
    }
    needed
}

/// The complete subtrees that appending leaf `index` (hash `leaf`) to a tree of `index` leaves
/// completes: `(level, index, hash)` from the leaf up, each parent made with its left sibling
/// (`lefts`: the hashes of [`left_siblings`], in its order) — what a store writes beside the leaf.
pub fn appended(index: u64, leaf: Hash, lefts: &[Hash]) -> Vec<(u32, u64, Hash)> {
    let mut rows = vec![(0, index, leaf)];
    let mut hash = leaf;
    for (level, left) in (1_u32..).zip(lefts) {
        hash = node_hash(left, &hash);
        rows.push((level, index >> level, hash));
    }
    rows
}

/// The nodes an algorithm over a tree reads, in the order it reads them. Which nodes a proof or a
/// root needs depends on the sizes only, so a store learns them by running it over this once
/// (every hash zero), reads them in one query, then runs it again over what it read.
#[derive(Debug, Default)]
pub struct Needed(std::cell::RefCell<Vec<(u32, u64)>>);

impl Needed {
    pub fn into_vec(self) -> Vec<(u32, u64)> {
        self.0.into_inner()
    }
}

impl Nodes for Needed {
    fn node(&self, level: u32, index: u64) -> Hash {
        self.0.borrow_mut().push((level, index));
        [0; 32]
    }
}

/// Nodes read from a store, by `(level, index)`.
impl Nodes for std::collections::HashMap<(u32, u64), Hash> {
    fn node(&self, level: u32, index: u64) -> Hash {
        self.get(&(level, index)).copied().unwrap_or([0; 32])
    }
}

/// The largest power of two below `n` (n > 1).
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// `MTH(D[start:end])` for a range that begins on a boundary of its size's largest power of two,
/// as every range of a proof does.
fn range_hash(nodes: &(impl Nodes + ?Sized), start: u64, end: u64) -> Hash {
    let size = end - start;
    if size.is_power_of_two() && start.is_multiple_of(size) {
        return nodes.node(size.trailing_zeros(), start / size);
    }
    let k = split(size);
    node_hash(&range_hash(nodes, start, start + k), &range_hash(nodes, start + k, end))
}

/// The root of the first `size` leaves.
pub fn root(nodes: &(impl Nodes + ?Sized), size: u64) -> Hash {
    if size == 0 { empty_root() } else { range_hash(nodes, 0, size) }
}

/// The audit path of leaf `index` in the tree of the first `size` leaves (`index < size`).
pub fn inclusion_proof(nodes: &(impl Nodes + ?Sized), index: u64, size: u64) -> Vec<Hash> {
    let mut path = Vec::new();
    path_of(nodes, index, 0, size, &mut path);
    path
}

fn path_of(nodes: &(impl Nodes + ?Sized), index: u64, start: u64, end: u64, path: &mut Vec<Hash>) {
    let n = end - start;
    if n <= 1 {
        return;
    }
    let k = split(n);
    if index < k {
        path_of(nodes, index, start, start + k, path);
        path.push(range_hash(nodes, start + k, end));
    } else {
        path_of(nodes, index - k, start + k, end, path);
        path.push(range_hash(nodes, start, start + k));
    }
}

/// The proof that the tree of the first `first` leaves is a prefix of the tree of `second`
/// (`0 < first <= second`).
pub fn consistency_proof(nodes: &(impl Nodes + ?Sized), first: u64, second: u64) -> Vec<Hash> {
    let mut proof = Vec::new();
    if 0 < first && first < second {
        subproof(nodes, first, 0, second, true, &mut proof);
    }
    proof
}

fn subproof(nodes: &(impl Nodes + ?Sized), m: u64, start: u64, end: u64, whole: bool, proof: &mut Vec<Hash>) {
    let n = end - start;
    if m == n {
        if !whole {
            proof.push(range_hash(nodes, start, end));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(nodes, m, start, start + k, whole, proof);
        proof.push(range_hash(nodes, start + k, end));
    } else {
        subproof(nodes, m - k, start + k, end, false, proof);
        proof.push(range_hash(nodes, start, start + k));
    }
}

/// Whether `proof` shows the leaf `leaf` at `index` in the tree of `size` leaves whose root is
/// `root`.
pub fn verify_inclusion(index: u64, size: u64, leaf: &Hash, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s, mut r) = (index, size - 1, *leaf);
    for p in proof {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && r == *root
}

/// Whether `proof` shows the tree of `first` leaves (root `first_root`) a prefix of the tree of
/// `second` leaves (root `second_root`).
pub fn verify_consistency(first: u64, second: u64, first_root: &Hash, second_root: &Hash, proof: &[Hash]) -> bool {
    if first > second {
        return false;
    }
    if first == second {
        return proof.is_empty() && first_root == second_root;
    }
    if first == 0 {
        return proof.is_empty();
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if first.is_power_of_two() {
        path.push(*first_root);
    }
    path.extend_from_slice(proof);
    let Some((seed, rest)) = path.split_first() else { return false };
    let (mut f, mut s) = (first - 1, second - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (*seed, *seed);
    for c in rest {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    fr == *first_root && sr == *second_root && s == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_leaf_by_leaf_writes_every_complete_subtree_once() {
        let leaves: Vec<Hash> = (0..37_u32).map(|n| leaf_hash(&n.to_be_bytes())).collect();
        let mut stored = std::collections::HashMap::new();
        for (index, leaf) in leaves.iter().enumerate() {
            let index = index as u64;
            let lefts: Vec<Hash> = left_siblings(index).iter().map(|at| stored[at]).collect();
            for (level, at, hash) in appended(index, *leaf, &lefts) {
                assert!(stored.insert((level, at), hash).is_none(), "({level}, {at}) written twice");
            }
        }
        let levels = Levels::new(leaves.clone());
        let expected: usize = (0..6).map(|level| leaves.len() >> level).sum();
        assert_eq!(stored.len(), expected);
        for ((level, at), hash) in &stored {
            assert_eq!(*hash, levels.node(*level, *at), "node ({level}, {at})");
        }
        assert_eq!(left_siblings(5), vec![(0, 4)]);
        assert_eq!(left_siblings(7), vec![(0, 6), (1, 2), (2, 0)]);
        assert!(left_siblings(8).is_empty());
        // What a proof reads, learnt over zeros, then read from a map, gives the same proof.
        let needed = Needed::default();
        let _ = inclusion_proof(&needed, 9, 37);
        let _ = root(&needed, 37);
        let read: std::collections::HashMap<(u32, u64), Hash> =
            needed.into_vec().into_iter().map(|at| (at, levels.node(at.0, at.1))).collect();
        assert_eq!(inclusion_proof(&read, 9, 37), inclusion_proof(&levels, 9, 37));
        assert_eq!(root(&read, 37), root(&levels, 37));
    }

    fn hex(hash: &Hash) -> String {
        hash.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex")).collect()
    }

    /// The leaves of the RFC 6962 reference tests (Certificate Transparency's).
    fn leaves() -> Vec<Hash> {
        ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"]
            .iter()
            .map(|data| leaf_hash(&unhex(data)))
            .collect()
    }

    #[test]
    fn roots_are_the_published_ones() {
        let roots = [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
        ];
        let leaves = leaves();
        assert_eq!(hex(&root(&leaves[..], 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        for (size, expected) in roots.iter().enumerate() {
            assert_eq!(hex(&root(&leaves[..], size as u64 + 1)), *expected, "size {}", size + 1);
        }
    }

    #[test]
    fn proofs_are_the_published_ones() {
        let leaves = leaves();
        let path: Vec<String> = inclusion_proof(&leaves[..], 0, 8).iter().map(hex).collect();
        assert_eq!(
            path,
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
            ]
        );
        let proof: Vec<String> = consistency_proof(&leaves[..], 6, 8).iter().map(hex).collect();
        assert_eq!(
            proof,
            [
                "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            ]
        );
        let proof: Vec<String> = consistency_proof(&leaves[..], 2, 5).iter().map(hex).collect();
        assert_eq!(
            proof,
            [
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            ]
        );
    }

    #[test]
    fn the_levels_in_memory_give_the_same_tree() {
        let leaves: Vec<Hash> = (0_u32..77).map(|n| leaf_hash(&n.to_le_bytes())).collect();
        let levels = Levels::new(leaves.clone());
        assert_eq!(levels.size(), 77);
        for size in [1, 2, 3, 31, 32, 33, 64, 77] {
            assert_eq!(root(&levels, size), root(&leaves[..], size), "{size}");
            assert_eq!(inclusion_proof(&levels, size - 1, size), inclusion_proof(&leaves[..], size - 1, size));
            assert_eq!(consistency_proof(&levels, size / 2 + 1, 77), consistency_proof(&leaves[..], size / 2 + 1, 77));
        }
    }

    #[test]
    fn every_proof_of_every_small_tree_verifies_and_no_altered_one_does() {
        let leaves: Vec<Hash> = (0_u32..40).map(|n| leaf_hash(&n.to_be_bytes())).collect();
        for size in 1..=40_u64 {
            let top = root(&leaves[..], size);
            for index in 0..size {
                let proof = inclusion_proof(&leaves[..], index, size);
                let leaf = &leaves[index as usize];
                assert!(verify_inclusion(index, size, leaf, &proof, &top), "{index} in {size}");
                assert!(!verify_inclusion(index, size, &leaves[(index as usize + 1) % 40], &proof, &top));
                if size > 1 {
                    assert!(!verify_inclusion((index + 1) % size, size, leaf, &proof, &top), "{index} moved in {size}");
                }
                for (n, _) in proof.iter().enumerate() {
                    let mut altered = proof.clone();
                    altered[n][0] ^= 1;
                    assert!(!verify_inclusion(index, size, leaf, &altered, &top));
                }
            }
            for first in 1..=size {
                let proof = consistency_proof(&leaves[..], first, size);
                let old = root(&leaves[..], first);
                assert!(verify_consistency(first, size, &old, &top, &proof), "{first} to {size}");
                if first < size {
                    let mut other = old;
                    other[5] ^= 1;
                    assert!(!verify_consistency(first, size, &other, &top, &proof));
                    for (n, _) in proof.iter().enumerate() {
                        let mut altered = proof.clone();
                        altered[n][31] ^= 0x80;
                        assert!(!verify_consistency(first, size, &old, &top, &altered), "{first} to {size}, {n}");
                    }
                }
            }
        }
    }
}

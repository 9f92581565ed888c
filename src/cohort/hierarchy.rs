//! Concept ancestry (OMOP `concept_ancestor`-style edges) used to expand concept sets with
//! `include_descendants`.

use std::collections::BTreeSet;

use crate::digest::sha256_hex;

/// Ancestor -> descendant edges, deduplicated and sorted so that each concept's children form
/// one contiguous run (a compact adjacency list without a hash map).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hierarchy {
    edges: Vec<(i64, i64)>,
}

impl Hierarchy {
    /// Builds from `(ancestor, descendant)` pairs; repeats are dropped, cycles are allowed.
    pub fn new(edges: &[(i64, i64)]) -> Self {
        let mut edges = edges.to_vec();
        edges.sort_unstable();
        edges.dedup();
        Self { edges }
    }

    /// No edges at all (so `include_descendants` cannot be honoured).
    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }

    /// The roots plus every concept reachable from them. Iterative breadth-first walk with a
    /// visited set, so cycles and deep chains cost nothing extra.
    pub fn descendants_with_self(&self, roots: &[i64]) -> BTreeSet<i64> {
        let mut seen: BTreeSet<i64> = roots.iter().copied().collect();
        let mut queue: std::collections::VecDeque<i64> = seen.iter().copied().collect();
        while let Some(c) = queue.pop_front() {
            for &child in self.children(c) {
                if seen.insert(child) {
                    queue.push_back(child);
                }
            }
        }
        seen
    }

    /// Direct descendants of `c` listed in the edges.
    fn children(&self, c: i64) -> impl Iterator<Item = &i64> {
        let from = self.edges.partition_point(|e| e.0 < c);
        self.edges[from..]
            .iter()
            .take_while(move |e| e.0 == c)
            .map(|e| &e.1)
    }

    /// SHA-256 (lower-case hex) of the deduplicated edges sorted by (ancestor, descendant), as
    /// compact JSON `[{"ancestor_concept_id":1,"descendant_concept_id":2},…]`.
    pub fn sha256(&self) -> String {
        let mut json = String::with_capacity(2 + self.edges.len() * 56);
        json.push('[');
        for (i, (a, d)) in self.edges.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json.push_str(&format!(
                "{{\"ancestor_concept_id\":{a},\"descendant_concept_id\":{d}}}"
            ));
        }
        json.push(']');
        sha256_hex(json.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[i64]) -> BTreeSet<i64> {
        ids.iter().copied().collect()
    }

    #[test]
    fn chain_is_closed_transitively() {
        // 1 -> 2 -> 3 -> 4: from 2 we reach 3 and 4, never the ancestor 1.
        let h = Hierarchy::new(&[(1, 2), (2, 3), (3, 4)]);
        assert_eq!(h.descendants_with_self(&[2]), set(&[2, 3, 4]));
        assert_eq!(h.descendants_with_self(&[1]), set(&[1, 2, 3, 4]));
        // A leaf has only itself.
        assert_eq!(h.descendants_with_self(&[4]), set(&[4]));
    }

    #[test]
    fn diamond_yields_each_concept_once() {
        // A=10 -> B=20, A -> C=30, B -> D=40, C -> D: D is reached twice but listed once.
        let h = Hierarchy::new(&[(10, 20), (10, 30), (20, 40), (30, 40)]);
        assert_eq!(h.descendants_with_self(&[10]), set(&[10, 20, 30, 40]));
        assert_eq!(h.descendants_with_self(&[30]), set(&[30, 40]));
    }

    #[test]
    fn cycle_is_tolerated() {
        // A=1 -> B=2 -> C=3 -> A: every member reaches the whole cycle and the walk ends.
        let h = Hierarchy::new(&[(1, 2), (2, 3), (3, 1)]);
        assert_eq!(h.descendants_with_self(&[2]), set(&[1, 2, 3]));
        // A self-loop is harmless too.
        let h = Hierarchy::new(&[(5, 5), (5, 6)]);
        assert_eq!(h.descendants_with_self(&[5]), set(&[5, 6]));
    }

    #[test]
    fn unknown_roots_and_multiple_roots() {
        // 99 has no edges: only itself. Roots 1 and 7 merge their closures.
        let h = Hierarchy::new(&[(1, 2), (7, 8)]);
        assert_eq!(h.descendants_with_self(&[99]), set(&[99]));
        assert_eq!(h.descendants_with_self(&[1, 7]), set(&[1, 2, 7, 8]));
        assert_eq!(h.descendants_with_self(&[]), set(&[]));
    }

    #[test]
    fn long_chain_does_not_recurse() {
        // 0 -> 1 -> ... -> 99_999: 100,000 concepts reached without stack growth.
        let edges: Vec<(i64, i64)> = (0..99_999).map(|i| (i, i + 1)).collect();
        let h = Hierarchy::new(&edges);
        assert_eq!(h.descendants_with_self(&[0]).len(), 100_000);
    }

    #[test]
    fn emptiness() {
        assert!(Hierarchy::new(&[]).is_empty());
        assert!(!Hierarchy::new(&[(1, 2)]).is_empty());
    }

    #[test]
    fn sha256_is_order_and_duplicate_insensitive() {
        let a = Hierarchy::new(&[(2, 3), (1, 2), (1, 2)]);
        let b = Hierarchy::new(&[(1, 2), (2, 3)]);
        assert_eq!(a.sha256(), b.sha256());
        assert_ne!(a.sha256(), Hierarchy::new(&[(1, 2)]).sha256());
    }

    #[test]
    fn sha256_of_known_serialisation() {
        // The hash must equal SHA-256 of exactly this JSON text.
        let h = Hierarchy::new(&[(2, 3), (1, 2)]);
        let json = r#"[{"ancestor_concept_id":1,"descendant_concept_id":2},{"ancestor_concept_id":2,"descendant_concept_id":3}]"#;
        assert_eq!(h.sha256(), sha256_hex(json.as_bytes()));
        // `printf '%s' "$json" | sha256sum`
        assert_eq!(
            h.sha256(),
            "ca81e299eca2f1ea9b3513972428f891de0df0c45d9a8544c968c22a63e2ffa0"
        );
        // SHA-256("[]"), computed independently (e.g. `printf '[]' | sha256sum`).
        assert_eq!(
            Hierarchy::new(&[]).sha256(),
            "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
        );
    }
}

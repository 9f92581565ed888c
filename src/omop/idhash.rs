//! Hash sets and maps keyed by 63-bit ids. The ids are either the caller's integers or already
//! SHA-256-derived, and never chosen by an attacker against a live table, so a fast
//! multiplicative mix replaces SipHash on the hot paths of cohort evaluation.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// splitmix64's finalizer over one integer.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_i64(&mut self, i: i64) {
        self.0 ^= i as u64;
    }
}

pub type IdSet = HashSet<i64, BuildHasherDefault<IdHasher>>;
pub type IdMap<V> = HashMap<i64, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_behave_like_sets() {
        let s: IdSet = [1, 2, 3, 1 << 62, 1].into_iter().collect();
        assert_eq!(s.len(), 4);
        assert!(s.contains(&(1 << 62)) && !s.contains(&4));
    }
}

//! Hash sets and maps keyed by 63-bit ids, for the hot paths of cohort evaluation where
//! SipHash would dominate. Ids can come from callers, so the mix is keyed with a per-process
//! random seed: without it, crafted ids could all land in one bucket.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        let mut b = [0u8; 8];
        // Without an entropy source, fall back to the address of a static and the clock:
        // weaker, but no worse than an unkeyed hash.
        if getrandom::fill(&mut b).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            b = (t ^ (&SEED as *const _ as u64)).to_le_bytes();
        }
        u64::from_le_bytes(b)
    })
}

/// splitmix64's finalizer over the id xor the process seed.
#[derive(Clone, Copy)]
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

/// Builds [`IdHasher`]s seeded for this process.
#[derive(Clone, Copy)]
pub struct IdHashBuilder(u64);

impl Default for IdHashBuilder {
    fn default() -> Self {
        Self(seed())
    }
}

impl BuildHasher for IdHashBuilder {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(self.0)
    }
}

pub type IdSet = HashSet<i64, IdHashBuilder>;
pub type IdMap<V> = HashMap<i64, V, IdHashBuilder>;

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

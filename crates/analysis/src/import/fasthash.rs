//! A small, fast hash for the importers' sets of row keys.
//!
//! A small, fast hash for the importers' sets of row keys: SipHash's
//! resistance to crafted collisions buys nothing for keys read from a
//! user's own file, and hashing was a tenth of a large import's time.
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate mixing of each written word (in the style of FxHash).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.add(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.add(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
    /// MurmurHash3's finaliser: multiplication only carries upwards, so
    /// without it keys differing in high bits (sizes 4096 apart) would share
    /// the low bits the table indexes by.
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_work() {
        let mut set: FastSet<(u8, Option<u32>, u64)> = FastSet::default();
        assert!(set.insert((1, None, 8)));
        assert!(set.insert((1, Some(0), 8)));
        assert!(!set.insert((1, None, 8)));
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn sizes_a_page_apart_spread_over_the_low_bits() {
        use std::hash::BuildHasher;
        let build = BuildHasherDefault::<FastHasher>::default();
        let low: std::collections::HashSet<u64> = (1..=256u64)
            .map(|i| build.hash_one(i * 4096) & 0xff)
            .collect();
        assert!(low.len() > 128, "{}", low.len());
    }
}

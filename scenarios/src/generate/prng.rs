//! A small seeded PRNG (splitmix64): the same seed gives the same numbers on every platform, and
//! the crate needs no `rand`.

/// splitmix64 (Steele, Lea, Flood 2014; the seeding generator of the xoshiro family).
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0), by multiply-high (bias below 2^-32 for the small `n` used
    /// here, and deterministic).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let n = n as u128;
        usize::try_from((u128::from(self.next_u64()) * n) >> 64).unwrap_or(0)
    }

    pub(crate) fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// Fisher-Yates.
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

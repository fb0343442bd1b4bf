//! Helpers of the crate's unit tests.

/// A xorshift64 generator: the same numbers from the same seed on every platform, for
/// tests that draw a long random sequence of steps without a dependency.
pub(crate) struct Xorshift(pub(crate) u64);

impl Xorshift {
    /// The next number (the seed must not be 0).
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

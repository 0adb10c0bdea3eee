//! The generator of the seeded fuzz tests: xorshift64*, small, the same on every machine.
//! A test's seed is printed; `CODER_FUZZ_SEED=<n>` replays a run.

/// A seeded xorshift64* generator.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (zero is taken as one).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// A generator from [`Rng::seed`]`(default)`.
    pub fn seeded(default: u64) -> Self {
        Self::new(Self::seed(default))
    }

    /// `CODER_FUZZ_SEED` when set, else `default`; printed so a failing run can be replayed.
    pub fn seed(default: u64) -> u64 {
        let seed = std::env::var("CODER_FUZZ_SEED")
            .ok()
            .and_then(|seed| seed.parse().ok())
            .unwrap_or(default);
        println!("fuzz seed {seed} (replay with CODER_FUZZ_SEED={seed})");
        seed
    }

    /// The next number.
    pub fn number(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.number() % n.max(1)
    }

    /// An index below `n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True once in `one_in` times.
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }

    /// One of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.number() as u8).collect()
    }
}

/// What [`mutate`] splices into any input: JSON's syntax, numbers past every integer,
/// escapes of NUL and of a lone surrogate, invalid UTF-8.
pub const JSON_PIECES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"\n",
    b"null",
    b"true",
    b"-1",
    b"1e999999",
    b"18446744073709551616",
    b"\\u0000",
    b"\\ud800",
    b"\xff\xfe",
    b"\xc3",
];

/// `valid` with one to four hostile edits: a cut, a flipped bit, one of [`JSON_PIECES`] or
/// of the input's own `pieces` spliced in, a run repeated, up to 5,000 levels of nesting,
/// or a string of up to 1 MiB.
pub fn mutate(valid: &[u8], pieces: &[&[u8]], rng: &mut Rng) -> Vec<u8> {
    let mut bytes = valid.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.index(bytes.len() + 1);
        match rng.below(6) {
            0 => bytes.truncate(at),
            1 => {
                if let Some(byte) = bytes.get_mut(at) {
                    *byte ^= 1 << rng.below(8);
                }
            }
            2 => {
                let which = rng.index(JSON_PIECES.len() + pieces.len());
                let piece = JSON_PIECES
                    .get(which)
                    .or_else(|| pieces.get(which - JSON_PIECES.len()))
                    .copied()
                    .unwrap_or_default();
                bytes.splice(at..at, piece.iter().copied());
            }
            3 => {
                let end = (at + rng.index(200)).min(bytes.len());
                let run = bytes[at..end].to_vec();
                bytes.splice(at..at, run);
            }
            4 => {
                let depth = 1 + rng.index(5_000);
                let nested = [vec![b'['; depth], vec![b']'; depth]].concat();
                bytes.splice(at..at, nested);
            }
            _ => {
                let long = vec![b'a'; 1 + rng.index(1 << 20)];
                bytes.splice(at..at, long);
            }
        }
    }
    bytes
}

//! Small figures the benchmarks share: the median of timed samples, and a duration in
//! milliseconds.

use std::time::Duration;

/// The median of `samples` (the upper one of an even count). Panics on no samples: a
/// benchmark fails loudly.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// `duration` in milliseconds.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

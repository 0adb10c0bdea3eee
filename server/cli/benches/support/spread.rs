//! How far apart per-delta costs are across sizes, for the streaming benches.

/// How far apart the largest and smallest of `values` are, relative to the smallest, as a
/// percentage ("n/a" for fewer than two values or a cost that is not positive).
pub fn spread(values: &[f64]) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.len() < 2 || min <= 0.0 {
        return "n/a".into();
    }
    format!("{:.0}%", (max / min - 1.0) * 100.0)
}

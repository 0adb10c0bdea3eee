//! Numbers as people read them.

/// `n` with its thousands separated by commas: `3000` as `3,000`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_separated_by_commas() {
        assert_eq!(super::grouped(1_234_567), "1,234,567");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(0), "0");
    }
}

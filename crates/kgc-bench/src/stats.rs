//! Percentiles and number formatting.

use std::time::Duration;

/// Milliseconds, as a float.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Sorted samples.
pub struct Samples(Vec<f64>);

impl Samples {
    pub fn new(mut v: Vec<f64>) -> Self {
        v.sort_by(f64::total_cmp);
        Self(v)
    }

    /// The samples of several runs as one.
    pub fn merged(parts: impl IntoIterator<Item = Samples>) -> Self {
        Self::new(parts.into_iter().flat_map(|s| s.0).collect())
    }

    /// Nearest-rank percentile (`p` in 0..=100).
    pub fn pct(&self, p: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.0.len() as f64).ceil() as usize;
        self.0[rank.clamp(1, self.0.len()) - 1]
    }

    pub fn median(&self) -> f64 {
        self.pct(50.0)
    }

    pub fn min(&self) -> f64 {
        self.0.first().copied().unwrap_or(f64::NAN)
    }

    pub fn max(&self) -> f64 {
        self.0.last().copied().unwrap_or(f64::NAN)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// A duration in milliseconds with sensible precision.
pub fn fmt_ms(v: f64) -> String {
    if v.abs() < 1.0 {
        format!("{v:.3} ms")
    } else if v.abs() < 10.0 {
        format!("{v:.2} ms")
    } else {
        format!("{v:.1} ms")
    }
}

/// An integer with thousands separators.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_formatting() {
        let s = Samples::new((1..=100).rev().map(f64::from).collect());
        assert_eq!(s.pct(50.0), 50.0);
        assert_eq!(s.pct(99.0), 99.0);
        assert_eq!(s.pct(100.0), 100.0);
        assert_eq!(s.min(), 1.0);
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }
}

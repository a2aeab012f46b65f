//! An int-or-percent scaled to a total, as `intstr.GetScaledValueFromIntOrPercent`
//! (kubernetes `staging/src/k8s.io/apimachinery/pkg/util/intstr/intstr.go`) computes it for a
//! Deployment's `maxSurge`/`maxUnavailable` and a PodDisruptionBudget's `minAvailable`.

/// A percentage string (`"25%"`) of `total`, rounded up or down; anything else is upstream's
/// error, in its words.
pub fn scaled_percent(s: &str, total: i64, round_up: bool) -> Result<i64, String> {
    let Some(digits) = s.strip_suffix('%') else {
        return Err(format!("invalid type: string is not a percentage: {s:?}"));
    };
    let percent: i64 = digits
        .parse()
        .map_err(|e| format!("invalid value {s:?}: {e}"))?;
    let product = percent.saturating_mul(total);
    Ok(match round_up {
        true => product.saturating_add(99).div_euclid(100),
        false => product.div_euclid(100),
    })
}

#[cfg(test)]
mod tests {
    use super::scaled_percent;

    #[test]
    fn percentages_round_as_upstream() {
        assert_eq!(scaled_percent("25%", 10, true), Ok(3));
        assert_eq!(scaled_percent("25%", 10, false), Ok(2));
        assert_eq!(scaled_percent("0%", 10, true), Ok(0));
        assert_eq!(scaled_percent("100%", 7, false), Ok(7));
        assert_eq!(
            scaled_percent("25", 10, true),
            Err("invalid type: string is not a percentage: \"25\"".to_owned())
        );
        assert!(scaled_percent("x%", 10, true).is_err());
    }
}

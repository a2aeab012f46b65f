//! Human ages, as kubernetes/apimachinery pkg/util/duration/duration.go `HumanDuration`
//! prints them: the API server's tables and `kgc tree` share them.

use jiff::SignedDuration;

/// apimachinery `duration.HumanDuration`: about two significant figures.
pub fn human_duration(d: SignedDuration) -> String {
    // Go truncates toward zero (`int(d.Seconds())`), as `as_secs` does.
    let seconds = d.as_secs();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_human_duration_matches_apimachinery() {
        let cases: &[(i64, &str)] = &[
            (-5, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (59, "59s"),
            (119, "119s"),
            (120, "2m"),
            (310, "5m10s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 59 * 60, "47h"),
            (2 * 86400, "2d"),
            (2 * 86400 + 3 * 3600, "2d3h"),
            (8 * 86400, "8d"),
            (400 * 86400, "400d"),
            (2 * 365 * 86400, "2y"),
            (2 * 365 * 86400 + 10 * 86400, "2y10d"),
            (8 * 365 * 86400 + 100 * 86400, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(
                human_duration(SignedDuration::from_secs(*secs)),
                *want,
                "{secs}s"
            );
        }
        // Go truncates toward zero: -1.5s is "0s".
        assert_eq!(human_duration(SignedDuration::from_millis(-1500)), "0s");
    }
}

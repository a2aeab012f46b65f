//! The `kgc.io/*` annotations that tell a simulated container what to do. A malformed one is
//! reported (a Warning event on the pod naming it) and the pod runs as if it were absent.

use std::collections::BTreeMap;
use std::time::Duration;

use kgc_meta::quantity::Quantity;

/// How long each container runs before it exits (Go duration syntax: `30s`, `1m30s`).
pub const RUN_FOR: &str = "kgc.io/run-for";
/// The exit code a container that finishes exits with (default 0).
pub const EXIT_CODE: &str = "kgc.io/exit-code";
/// How long each container takes to stop once sent SIGTERM (Go duration syntax; default 0:
/// it stops at once, as nginx and most images do). The pod's grace period caps it: a container
/// still running when the grace period ends is killed (SIGKILL).
pub const STOP_AFTER: &str = "kgc.io/stop-after";
/// The size of the pod's images when the node pulls them (a Quantity, e.g. `250Mi`).
pub const IMAGE_SIZE: &str = "kgc.io/image-size";

/// What a pod's annotations say, and what was wrong with them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Directives {
    pub run_for: Option<Duration>,
    pub exit_code: Option<i32>,
    pub stop_after: Option<Duration>,
    pub image_size: Option<u64>,
    /// One message per malformed annotation, naming it.
    pub problems: Vec<String>,
}

/// Reads the `kgc.io/*` annotations of a pod.
pub fn read(annotations: Option<&BTreeMap<String, String>>) -> Directives {
    let mut d = Directives::default();
    let Some(a) = annotations else {
        return d;
    };
    d.run_for = duration(a, RUN_FOR, &mut d.problems);
    d.stop_after = duration(a, STOP_AFTER, &mut d.problems);
    if let Some(v) = a.get(EXIT_CODE) {
        match v.trim().parse::<i32>() {
            Ok(n) if (0..=255).contains(&n) => d.exit_code = Some(n),
            _ => d.problems.push(bad(
                EXIT_CODE,
                v,
                "an exit code is an integer from 0 to 255",
            )),
        }
    }
    if let Some(v) = a.get(IMAGE_SIZE) {
        match Quantity::parse(v.trim()).map(|q| q.value()) {
            Ok(Some(n)) if n > 0 => d.image_size = Some(n.unsigned_abs()),
            Ok(_) => d
                .problems
                .push(bad(IMAGE_SIZE, v, "an image size must be positive")),
            Err(e) => d.problems.push(bad(IMAGE_SIZE, v, &e.to_string())),
        }
    }
    d
}

/// A non-negative Go duration annotation, if present and well formed.
fn duration(
    a: &BTreeMap<String, String>,
    annotation: &str,
    problems: &mut Vec<String>,
) -> Option<Duration> {
    let v = a.get(annotation)?;
    match kgc_validation::parse_go_duration(v) {
        Ok(ns) if ns >= 0 => Some(Duration::from_nanos(ns.unsigned_abs())),
        Ok(_) => {
            problems.push(bad(annotation, v, "a duration cannot be negative"));
            None
        }
        Err(e) => {
            problems.push(bad(annotation, v, &e));
            None
        }
    }
}

fn bad(annotation: &str, value: &str, why: &str) -> String {
    format!(
        "annotation {annotation}: {value:?} is not valid ({why}); the pod runs as if it were absent"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pairs: &[(&str, &str)]) -> Directives {
        let map = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        read(Some(&map))
    }

    #[test]
    fn well_formed_annotations_are_read() {
        let d = of(&[
            (RUN_FOR, "1m30s"),
            (EXIT_CODE, "3"),
            (IMAGE_SIZE, "100Mi"),
            (STOP_AFTER, "20s"),
        ]);
        assert_eq!(d.run_for, Some(Duration::from_secs(90)));
        assert_eq!(d.stop_after, Some(Duration::from_secs(20)));
        assert_eq!(d.exit_code, Some(3));
        assert_eq!(d.image_size, Some(100 << 20));
        assert!(d.problems.is_empty());
        assert_eq!(read(None), Directives::default());
    }

    #[test]
    fn malformed_annotations_are_named_and_ignored() {
        let d = of(&[(RUN_FOR, "soon"), (EXIT_CODE, "-1"), (IMAGE_SIZE, "big")]);
        assert_eq!((d.run_for, d.exit_code, d.image_size), (None, None, None));
        assert_eq!(d.problems.len(), 3);
        assert!(
            d.problems[0].contains("kgc.io/run-for: \"soon\""),
            "{:?}",
            d
        );
        assert!(d.problems[1].contains(EXIT_CODE));
        assert!(d.problems[2].contains(IMAGE_SIZE));
        assert_eq!(of(&[(RUN_FOR, "-5s")]).problems.len(), 1);
        let slow = of(&[(STOP_AFTER, "later")]);
        assert_eq!(slow.stop_after, None);
        assert!(slow.problems[0].contains(STOP_AFTER), "{slow:?}");
    }
}

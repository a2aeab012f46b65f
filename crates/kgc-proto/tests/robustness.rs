//! Arbitrary, truncated and corrupted bodies never panic: they decode or fail with an error.

use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;

static FIXTURES: LazyLock<Vec<Vec<u8>>> = LazyLock::new(load_fixtures);

fn fixtures() -> &'static [Vec<u8>] {
    &FIXTURES
}

fn load_fixtures() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut bodies: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "pb"))
        .map(|path| std::fs::read(path).unwrap())
        .collect();
    bodies.sort();
    assert!(bodies.len() >= 20);
    bodies
}

#[test]
fn every_truncation_of_every_fixture_is_handled() {
    for body in fixtures() {
        for len in 0..body.len() {
            // Any outcome but a panic is fine; most truncations cut a length-delimited field.
            let _ = kgc_proto::decode(&body[..len]);
        }
        assert!(kgc_proto::decode(body).is_ok());
    }
}

#[test]
fn every_single_byte_corruption_of_a_fixture_is_handled() {
    for body in fixtures().iter().filter(|body| body.len() < 300) {
        for i in 0..body.len() {
            for byte in [0x00, 0x01, 0x07, 0x0a, 0x12, 0x7f, 0x80, 0xff] {
                let mut corrupted = body.clone();
                corrupted[i] = byte;
                let _ = kgc_proto::decode(&corrupted);
            }
        }
    }
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = kgc_proto::decode(&bytes);
    }

    #[test]
    fn random_bytes_after_the_magic_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut body = b"k8s\0".to_vec();
        body.extend(bytes);
        let _ = kgc_proto::decode(&body);
    }

    /// Random object bytes inside a valid envelope of a deep kind reach the schema walker.
    #[test]
    fn random_objects_in_a_valid_envelope_never_panic(
        raw in proptest::collection::vec(any::<u8>(), 0..512),
        kind in prop::sample::select(vec![("v1", "Pod"), ("apps/v1", "Deployment"), ("batch/v1", "CronJob"), ("v1", "ConfigMap")]),
    ) {
        let mut body = b"k8s\0".to_vec();
        let type_meta = [&[0x0a, kind.0.len() as u8][..], kind.0.as_bytes(), &[0x12, kind.1.len() as u8], kind.1.as_bytes()].concat();
        body.extend([0x0a, type_meta.len() as u8]);
        body.extend(type_meta);
        body.push(0x12);
        let mut len = raw.len();
        while len >= 0x80 {
            body.push((len as u8) | 0x80);
            len >>= 7;
        }
        body.push(len as u8);
        body.extend(raw);
        let _ = kgc_proto::decode(&body);
    }

    /// Splicing random bytes into a real body exercises deeper paths than pure noise.
    #[test]
    fn spliced_fixtures_never_panic(
        which in 0usize..30,
        at in any::<prop::sample::Index>(),
        noise in proptest::collection::vec(any::<u8>(), 1..16),
    ) {
        let bodies = fixtures();
        let body = &bodies[which % bodies.len()];
        let at = at.index(body.len());
        let spliced = [&body[..at], &noise[..], &body[at..]].concat();
        let _ = kgc_proto::decode(&spliced);
    }
}

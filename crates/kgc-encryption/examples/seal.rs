//! What encryption at rest costs one write and one read of a Secret: times the default
//! configuration's AES-GCM seal and open of a 1 KiB value.
//!
//! `cargo run --release -p kgc-encryption --example seal [N]`

use std::time::Instant;

use kgc_encryption::{EncryptionConfig, default_config, storage_key};

fn main() -> Result<(), kgc_encryption::Error> {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let config = EncryptionConfig::parse(default_config()?.as_bytes(), "default")?;
    let t = config.transformers()?;
    let key = storage_key("", "secrets", "default", "bench");
    let value = vec![b'x'; 1024];
    let started = Instant::now();
    let mut sealed = Vec::new();
    for _ in 0..n {
        sealed = t.write("", "secrets", &key, &value)?.unwrap_or_default();
    }
    let seal = started.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    let started = Instant::now();
    for _ in 0..n {
        let read = t.read("", "secrets", &key, &sealed)?;
        assert_eq!(read.data.len(), value.len());
    }
    let open = started.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    println!("AES-GCM, 1 KiB Secret, {n} times: seal {seal:.2} µs, open {open:.2} µs");
    Ok(())
}

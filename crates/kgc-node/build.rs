//! Generates the CRI v1 client from the vendored `proto/runtime/v1/api.proto` with protox, a
//! protobuf compiler in pure Rust, so that building kgc needs no system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/runtime/v1/api.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(false)
        .compile_fds(descriptors)?;
    Ok(())
}

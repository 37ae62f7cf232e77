//! Generates the CRI v1 client (`runtime.v1.RuntimeService`, `runtime.v1.ImageService`) from the
//! vendored `proto/runtime/v1/api.proto`.
//!
//! The proto is parsed by `protox`, a protobuf compiler written in Rust, so the build needs no
//! system `protoc`. `tonic-prost-build` turns the descriptor set into prost messages and tonic
//! clients in `OUT_DIR/runtime.v1.rs`, included by `src/agent/cri/proto.rs`.

fn main() {
    let proto = "proto/runtime/v1/api.proto";
    println!("cargo:rerun-if-changed={proto}");
    println!("cargo:rerun-if-changed=build.rs");
    let descriptors = match protox::compile([proto], ["proto"]) {
        Ok(fds) => fds,
        Err(e) => panic!("cannot compile {proto}: {e:?}"),
    };
    if let Err(e) = tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .build_transport(false)
        .compile_fds(descriptors)
    {
        panic!("cannot generate the CRI client from {proto}: {e}");
    }
}

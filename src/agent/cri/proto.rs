//! The generated CRI v1 messages and clients (`build.rs` compiles `proto/runtime/v1/api.proto`).

#![allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]

tonic::include_proto!("runtime.v1");

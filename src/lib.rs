//! emisor: issues Colombian electronic tax documents and transmits them to the
//! tax authority. The library holds everything; `main.rs` only calls `cli::run`.

pub mod authority;
pub mod engine;

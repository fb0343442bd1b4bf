//! Integration tests: one binary, one module per area.

mod cli;
mod common;
mod engine;
mod persistence;
mod ranking;

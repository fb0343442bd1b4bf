//! Integration tests: one binary, one module per area.

mod analysis;
mod campaign;
mod common;
mod docs;
mod embedder;
mod engine;
mod feedback;
mod graph;
mod kinds;
mod layers;
mod persistence;
mod ranking;
mod readers;
mod relevance;
mod rule_files;
#[path = "../common/sample.rs"]
mod sample;
mod seam;
mod sync;
mod turn;

//! End-to-end tests of the `ruche` command, and the trust properties checked through it.

mod cli;
mod cli_more;
mod crashes;
mod edges;
mod gateway;
mod inspect;
mod mcp;
mod run;
mod sync;
mod trust;
mod turn;

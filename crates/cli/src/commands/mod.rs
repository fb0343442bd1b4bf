//! The subcommands, one file per family of commands.

mod documents;
mod feedback;
mod index;
mod maintain;
mod open;
mod search;
mod select;
mod sync;

pub(crate) use self::documents::{delete, export, get, purge, stats};
pub(crate) use self::feedback::{feedback, fusion_base};
pub(crate) use self::index::index;
pub(crate) use self::maintain::{backup, check, compact, reembed, repair};
pub(crate) use self::open::{
    ReadHandle, builder, open_engine_to_read, open_to_read, refuse_milvus, set_wait,
};
pub(crate) use self::search::{apply_policy, search, turn};
pub(crate) use self::select::select;
pub(crate) use self::sync::sync;

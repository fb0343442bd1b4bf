//! Opening an index for a command: a writer (waiting `--wait` for another), or a reader.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use ruchedb::{Config, Engine, Reader};

/// How long to wait for an index another process holds (`--wait`).
pub(crate) static WAIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// Sets `--wait SECONDS`.
pub fn set_wait(seconds: f64) -> Result<()> {
    if !(0.0..=86_400.0).contains(&seconds) {
        bail!("--wait: expected seconds between 0 and 86400, got {seconds}");
    }
    let _ = WAIT.set(Duration::from_secs_f64(seconds));
    Ok(())
}

/// An engine builder with the configuration and `--wait`.
pub fn builder(config: &Config) -> ruchedb::EngineBuilder {
    Engine::builder()
        .with_config(config.clone())
        .with_wait(WAIT.get().copied().unwrap_or_default())
}

/// Opens a local index; a Milvus location gets a clear refusal.
pub fn open(config: &Config, dir: &Path) -> Result<Engine> {
    refuse_milvus(dir)?;
    Ok(builder(config).open(dir)?)
}

pub(crate) fn refuse_milvus(dir: &Path) -> Result<()> {
    if crate::milvus::is_milvus(dir) {
        bail!(
            "{}: this command works on a local index directory; a Milvus index supports index, search, delete and stats --tenant",
            dir.display()
        );
    }
    Ok(())
}

/// An index opened to read: a reader, or, for an index nothing was published for yet,
/// its writer (see [`open_engine_to_read`]). Either reads as a [`Reader`].
pub enum ReadHandle {
    Reader(Reader),
    Writer(Engine),
}

impl std::ops::Deref for ReadHandle {
    type Target = Reader;

    fn deref(&self) -> &Reader {
        match self {
            ReadHandle::Reader(reader) => reader,
            ReadHandle::Writer(engine) => engine,
        }
    }
}

impl ReadHandle {
    /// Ends a command that is about to exit. A reader has nothing to flush or release
    /// (it holds no lock and wrote nothing): its memory, a catalog of every document
    /// that takes tens of milliseconds to free at 20,000, goes back with the process.
    /// A writer (an index opened to be published) closes as usual.
    pub fn finish(self) {
        match self {
            ReadHandle::Reader(reader) => std::mem::forget(reader),
            ReadHandle::Writer(engine) => drop(engine),
        }
    }

    /// Closes the handle: a writer as [`Engine::close`] does; a reader has nothing to
    /// close.
    ///
    /// # Errors
    ///
    /// A writer's, as [`Engine::close`].
    pub fn close(self) -> ruchedb::Result<()> {
        match self {
            ReadHandle::Reader(_) => Ok(()),
            ReadHandle::Writer(engine) => engine.close(),
        }
    }
}

/// Opens a local index to read only: no lock, nothing written, beside a writer in
/// another process (see [`open_engine_to_read`]).
pub fn open_to_read(config: &Config, dir: &Path) -> Result<ReadHandle> {
    refuse_milvus(dir)?;
    Ok(open_engine_to_read(&builder(config), dir)?)
}

/// Opens an index to read only. An index nothing was published for yet (written by an
/// earlier version) is opened for writing instead, once: that publishes it. (Damaged
/// published files are an error naming the file: `ruche repair`, or any writer, publishes
/// them again; a read never opens an index for writing beside its writer.)
pub fn open_engine_to_read(
    builder: &ruchedb::EngineBuilder,
    dir: &Path,
) -> ruchedb::Result<ReadHandle> {
    match builder.clone().open_read_only(dir) {
        Ok(reader) => Ok(ReadHandle::Reader(reader)),
        Err(err) if matches!(err.kind(), ruchedb::ErrorKind::NotPublished { .. }) => {
            tracing::info!(error = %err, "opening for writing to publish the index for readers");
            builder.clone().open(dir).map(ReadHandle::Writer)
        }
        Err(err) => Err(err),
    }
}

/// `--embedder SPEC` of a command that creates an index, parsed.
pub(crate) fn embedder_flag(flag: Option<&str>) -> anyhow::Result<Option<ruchedb::EmbedderSpecs>> {
    use anyhow::Context;
    flag.map(str::parse::<ruchedb::EmbedderSpecs>)
        .transpose()
        .context("--embedder")
}

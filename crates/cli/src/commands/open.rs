//! Opening an index for a command: a writer (waiting `--wait` for another), or a reader.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use ruchedb::{Config, Engine};

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
        .config(config.clone())
        .wait(WAIT.get().copied().unwrap_or_default())
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

/// Opens a local index to read only: no lock, nothing written, beside a writer in
/// another process (see [`open_engine_to_read`]).
pub fn open_to_read(config: &Config, dir: &Path) -> Result<Engine> {
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
) -> ruchedb::Result<Engine> {
    match builder.clone().open_read_only(dir) {
        Ok(engine) => Ok(engine),
        Err(err) if matches!(err.kind(), ruchedb::ErrorKind::NotPublished { .. }) => {
            tracing::info!(error = %err, "opening for writing to publish the index for readers");
            builder.clone().open(dir)
        }
        Err(err) => Err(err),
    }
}

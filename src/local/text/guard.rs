//! tantivy's errors and panics as ours: every call into tantivy runs guarded, and a panic
//! becomes an error that prints nothing.

use std::path::Path;

use crate::{Error, Result};

/// A tantivy error; an I/O one as the operating system's error naming the file (in
/// `text/`), not tantivy's debug text of it.
pub(crate) fn tantivy_err(err: tantivy::TantivyError) -> Error {
    use tantivy::TantivyError;
    use tantivy::directory::error::{OpenReadError, OpenWriteError};
    let plain = |io: &std::io::Error| match io.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => std::io::Error::new(io.kind(), io.to_string()),
    };
    let in_text = |file: &Path| Path::new("text").join(file);
    match &err {
        TantivyError::OpenWriteError(OpenWriteError::IoError { io_error, filepath })
        | TantivyError::OpenReadError(OpenReadError::IoError { io_error, filepath }) => {
            Error::io_at(&in_text(filepath), plain(io_error))
        }
        TantivyError::IoError(io_error) => Error::io_at(Path::new("text"), plain(io_error)),
        _ => Error::storage("tantivy", err),
    }
}

/// Runs `f`, turning a panic into a `Corrupt` error: tantivy trusts its files, and a
/// damaged one can make it panic (an offset read from garbage) instead of failing. A
/// damaged file must never take the process down.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    quiet_panics();
    GUARDED.with(|depth| depth.set(depth.get() + 1));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|depth| depth.set(depth.get() - 1));
    result.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::corrupt(format!(
            "text index: {what} failed on damaged data ({message}); run `ruche check` and `ruche repair`"
        )))
    })
}

std::thread_local! {
    /// How many [`guarded`] calls this thread is inside.
    static GUARDED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Installs, once, a panic hook that keeps quiet about the panics [`guarded`] turns into
/// errors (the error says what happened; "thread panicked" on stderr would only alarm)
/// and hands every other panic to the hook that was there before.
pub(crate) fn quiet_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(std::cell::Cell::get) > 0 {
                tracing::debug!(panic = %info, "tantivy panicked on damaged data");
            } else {
                previous(info);
            }
        }));
    });
}

//! sled's errors as the engine's: an I/O error names its path and reads as the operating
//! system's message, a held lock is `Locked`, a damaged log is `Corrupt`.

use std::path::Path;

use crate::{Error, ErrorKind};

/// sled reports an I/O error as a new error whose message is the original one's debug
/// text (`Os { code: 28, kind: StorageFull, .. }`): the operating system's error again,
/// from its code, when the text has one.
fn plain_io(io: std::io::Error) -> std::io::Error {
    if io.raw_os_error().is_some() {
        return io;
    }
    let text = io.to_string();
    let code = text
        .split("code: ")
        .nth(1)
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|digits| digits.parse::<i32>().ok());
    match code {
        Some(code) => std::io::Error::from_raw_os_error(code),
        None => io,
    }
}

/// A sled error, typed.
pub(super) fn sled_err(err: sled::Error) -> Error {
    match err {
        sled::Error::Io(io) => Error::with_source(ErrorKind::Io { path: None }, plain_io(io)),
        sled::Error::Corruption { .. } => Error::with_source(
            ErrorKind::Corrupt {
                what: "the document store (sled)".to_string(),
            },
            err,
        ),
        other => Error::storage("sled", other),
    }
}

/// A sled error of the store at `path`: a held lock is `Locked`, an I/O error names `path`.
pub(super) fn sled_error(err: sled::Error, path: &Path) -> Error {
    if let sled::Error::Io(io) = &err
        && (io.kind() == std::io::ErrorKind::WouldBlock
            || io.to_string().contains("could not acquire lock"))
    {
        return Error::with_source(
            ErrorKind::Locked {
                path: path.to_path_buf(),
            },
            err,
        );
    }
    match err {
        sled::Error::Io(io) => Error::io_at(path, plain_io(io)),
        other => sled_err(other),
    }
}

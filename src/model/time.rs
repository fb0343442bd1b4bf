//! Timestamps: RFC 3339 or unix seconds in, milliseconds since the epoch inside.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Result};

/// A point in time, with millisecond precision.
///
/// Parsed from RFC 3339 (`2026-11-21T09:30:00Z`, any offset) or from a number of unix
/// seconds (integer or fractional, as a JSON number or a string). Serialised as RFC 3339
/// in UTC.
///
/// # Example
///
/// ```
/// use ruchedb::Timestamp;
///
/// let a: Timestamp = "2026-11-21T00:00:00Z".parse()?;
/// let b: Timestamp = "1795219200".parse()?;
/// assert_eq!(a, b);
/// assert_eq!(a.to_string(), "2026-11-21T00:00:00Z");
/// # Ok::<(), ruchedb::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The current time of the system clock.
    pub fn now() -> Timestamp {
        Timestamp(Utc::now().timestamp_millis())
    }

    /// A timestamp from milliseconds since the unix epoch.
    pub fn from_unix_millis(millis: i64) -> Timestamp {
        Timestamp(millis)
    }

    /// A timestamp from (possibly fractional) seconds since the unix epoch.
    ///
    /// # Errors
    ///
    /// Returns [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) when `seconds`
    /// is not finite or is out of the representable range.
    pub fn from_unix_seconds(seconds: f64) -> Result<Timestamp> {
        let millis = seconds * 1000.0;
        // Keep within chrono's range (about ±262,000 years) so formatting never fails.
        if !millis.is_finite() || millis.abs() > 8.0e15 {
            return Err(Error::invalid_input(format!(
                "timestamp {seconds} is not a valid number of unix seconds"
            )));
        }
        Ok(Timestamp(millis.round() as i64))
    }

    /// Milliseconds since the unix epoch.
    pub fn unix_millis(self) -> i64 {
        self.0
    }

    /// Hours from `self` to `later` (negative when `later` is earlier).
    pub fn hours_until(self, later: Timestamp) -> f64 {
        (later.0 - self.0) as f64 / 3_600_000.0
    }
}

impl FromStr for Timestamp {
    type Err = Error;

    /// Parses RFC 3339 or a number of unix seconds.
    fn from_str(s: &str) -> Result<Timestamp> {
        let s = s.trim();
        if let Ok(seconds) = s.parse::<f64>() {
            return Timestamp::from_unix_seconds(seconds);
        }
        DateTime::parse_from_rfc3339(s)
            .map(|dt| Timestamp(dt.timestamp_millis()))
            .map_err(|err| {
                Error::invalid_input(format!(
                    "`{s}` is not an RFC 3339 timestamp or a number of unix seconds ({err})"
                ))
            })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match DateTime::<Utc>::from_timestamp_millis(self.0) {
            Some(dt) => f.write_str(&dt.to_rfc3339_opts(SecondsFormat::AutoSi, true)),
            None => write!(f, "{}", self.0 as f64 / 1000.0),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct TimestampVisitor;

        impl Visitor<'_> for TimestampVisitor {
            type Value = Timestamp;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 timestamp or a number of unix seconds")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Timestamp, E> {
                v.parse().map_err(E::custom)
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Timestamp, E> {
                Timestamp::from_unix_seconds(v as f64).map_err(E::custom)
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Timestamp, E> {
                Timestamp::from_unix_seconds(v as f64).map_err(E::custom)
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Timestamp, E> {
                Timestamp::from_unix_seconds(v).map_err(E::custom)
            }
        }

        deserializer.deserialize_any(TimestampVisitor)
    }
}

/// Microseconds since `since`, for the timings a response reports.
pub(crate) fn micros(since: std::time::Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(input: &str, millis: i64) {
        let ts: Timestamp = input.parse().unwrap();
        assert_eq!(ts.unix_millis(), millis, "{input}");
    }

    #[test]
    fn parses_rfc3339_and_unix_seconds() {
        check("1970-01-01T00:00:00Z", 0);
        check("1970-01-01T01:00:00+01:00", 0);
        check("2026-11-21T00:00:00.250Z", 1_795_219_200_250);
        check("1795219200", 1_795_219_200_000);
        check("1795219200.5", 1_795_219_200_500);
        check("-1", -1000);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "NaN",
            "inf",
            "1e300",
        ] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad}");
        }
    }

    #[test]
    fn json_round_trip() {
        let ts: Timestamp = serde_json::from_str("1795219200").unwrap();
        assert_eq!(
            serde_json::to_string(&ts).unwrap(),
            "\"2026-11-21T00:00:00Z\""
        );
        let back: Timestamp = serde_json::from_str("\"2026-11-21T00:00:00Z\"").unwrap();
        assert_eq!(back, ts);
        assert!(serde_json::from_str::<Timestamp>("true").is_err());
    }

    #[test]
    fn hours_until() {
        let a = Timestamp::from_unix_millis(0);
        let b = Timestamp::from_unix_millis(3_600_000 * 168);
        assert_eq!(a.hours_until(b), 168.0);
        assert_eq!(b.hours_until(a), -168.0);
    }
}

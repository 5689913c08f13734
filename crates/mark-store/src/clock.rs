//! Protocol times: UTC, whole seconds, RFC 3339 (`2026-02-17T10:00:00Z`).
//! Times are kept as Unix seconds so comparisons are plain integers.

use std::time::{SystemTime, UNIX_EPOCH};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Whole Unix seconds of `t` (floored, also before 1970).
pub(crate) fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => {
            let d = e.duration();
            let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            if d.subsec_nanos() > 0 {
                -secs - 1
            } else {
                -secs
            }
        }
    }
}

/// `2026-02-17T10:00:00Z`; out-of-range instants clamp to the epoch.
pub(crate) fn format_rfc3339(secs: i64) -> String {
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

/// Parses an RFC 3339 time (any offset) to Unix seconds.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    OffsetDateTime::parse(s.trim(), &Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp())
}

/// Parses an RFC 3339 time or a bare `YYYY-MM-DD` date (midnight UTC).
pub(crate) fn parse_time_or_date(s: &str) -> Option<i64> {
    let s = s.trim();
    parse_rfc3339(s).or_else(|| parse_rfc3339(&format!("{s}T00:00:00Z")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_whole_seconds_in_utc() {
        let t = UNIX_EPOCH + Duration::from_millis(1_771_322_400_900);
        assert_eq!(format_rfc3339(unix_seconds(t)), "2026-02-17T10:00:00Z");
    }

    #[test]
    fn parses_offsets_and_dates() {
        assert_eq!(
            parse_rfc3339("2026-02-17T11:00:00+01:00"),
            Some(1_771_322_400)
        );
        assert_eq!(parse_time_or_date("2026-02-17"), Some(1_771_286_400));
        assert_eq!(parse_time_or_date("yesterday"), None);
    }

    #[test]
    fn floors_times_before_the_epoch() {
        assert_eq!(unix_seconds(UNIX_EPOCH - Duration::from_millis(1500)), -2);
    }
}

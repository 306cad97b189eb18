//! Timestamps: milliseconds since the Unix epoch, serialized as RFC 3339 UTC strings.
//!
//! Time is read through the `Clock` port; the domain only formats and compares instants.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// An instant in UTC with millisecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_unix_millis(millis: i64) -> Self {
        Self(millis)
    }

    pub const fn unix_millis(self) -> i64 {
        self.0
    }

    /// Milliseconds elapsed from `earlier` to `self`, never negative.
    pub fn millis_since(self, earlier: Timestamp) -> u64 {
        u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS(.mmm)?Z`.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let text = text.strip_suffix('Z')?;
        let (date, clock) = text.split_once('T')?;
        let mut date_parts = date.splitn(3, '-');
        let year: i64 = date_parts.next()?.parse().ok()?;
        let month: u32 = date_parts.next()?.parse().ok()?;
        let day: u32 = date_parts.next()?.parse().ok()?;
        let (hms, frac) = match clock.split_once('.') {
            Some((hms, frac)) => (hms, frac),
            None => (clock, "0"),
        };
        let mut clock_parts = hms.splitn(3, ':');
        let hour: i64 = clock_parts.next()?.parse().ok()?;
        let minute: i64 = clock_parts.next()?.parse().ok()?;
        let second: i64 = clock_parts.next()?.parse().ok()?;
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return None;
        }
        let frac_digits: String = frac.chars().take(3).collect();
        if frac_digits.is_empty() || !frac_digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let millis: i64 = format!("{frac_digits:0<3}").parse().ok()?;
        let days = days_from_civil(year, month, day);
        Some(Self(
            ((days * 86_400 + hour * 3_600 + minute * 60 + second) * 1_000) + millis,
        ))
    }
}

impl Timestamp {
    /// The parts of the RFC 3339 form: year, month, day, hour, minute, second, millisecond.
    fn parts(self) -> (i64, u32, u32, i64, i64, i64, i64) {
        let millis = self.0.rem_euclid(1_000);
        let total_seconds = self.0.div_euclid(1_000);
        let days = total_seconds.div_euclid(86_400);
        let seconds_of_day = total_seconds.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        (
            year,
            month,
            day,
            seconds_of_day / 3_600,
            (seconds_of_day % 3_600) / 60,
            seconds_of_day % 60,
            millis,
        )
    }

    /// `f` of the RFC 3339 text, `YYYY-MM-DDTHH:MM:SS.mmmZ`. Every event and record carries
    /// timestamps, and going through `write!` for each was about 2% of a fan-out's CPU: years 0
    /// to 9999 are written digit by digit, and events and records written together carry the
    /// same instant, so the thread's last text is reused as it is, already a `str`. Only a
    /// nested use (never made) finds that text borrowed: it writes its own.
    fn with_text<R>(self, f: impl FnOnce(&str) -> R) -> R {
        LAST_TEXT.with(|last| match last.try_borrow_mut() {
            Ok(mut last) => {
                if last.0 != Some(self.0) {
                    last.1.clear();
                    self.write_text(&mut last.1);
                    last.0 = Some(self.0);
                }
                f(&last.1)
            }
            Err(_) => {
                let mut text = String::with_capacity(24);
                self.write_text(&mut text);
                f(&text)
            }
        })
    }

    /// Appends the RFC 3339 text to `out`.
    fn write_text(self, out: &mut String) {
        let (year, month, day, hour, minute, second, millis) = self.parts();
        if !(0..=9_999).contains(&year) {
            use fmt::Write as _;
            // Writing into a `String` cannot fail.
            let _ = write!(
                out,
                "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z"
            );
            return;
        }
        let mut digits = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut value: i64| {
            for slot in digits.iter_mut().skip(at).take(width).rev() {
                // Each digit is 0..=9, so the cast cannot truncate.
                *slot = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, 4, year);
        put(5, 2, i64::from(month));
        put(8, 2, i64::from(day));
        put(11, 2, hour);
        put(14, 2, minute);
        put(17, 2, second);
        put(20, 3, millis);
        // Only ASCII digits and separators were written: the check always passes.
        if let Ok(text) = std::str::from_utf8(&digits) {
            out.push_str(text);
        }
    }
}

thread_local! {
    /// The last instant [`Timestamp::with_text`] wrote on this thread, and its text.
    static LAST_TEXT: std::cell::RefCell<(Option<i64>, String)> =
        const { std::cell::RefCell::new((None, String::new())) };
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_text(|text| f.write_str(text))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.with_text(|text| serializer.serialize_str(text))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse_rfc3339(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid RFC 3339 timestamp `{text}`")))
    }
}

// Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    // Both values are bounded by construction (1..=31, 1..=12).
    (
        year,
        u32::try_from(month).unwrap_or(1),
        u32::try_from(day).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The formatter's rendering, the reference for the digit-by-digit one.
    fn formatted(ts: Timestamp) -> String {
        let (year, month, day, hour, minute, second, millis) = ts.parts();
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
    }

    #[test]
    fn years_outside_four_digits_take_the_formatter_path() {
        let before_year_zero = Timestamp::from_unix_millis(-62_167_219_200_001);
        assert_eq!(before_year_zero.to_string(), "-001-12-31T23:59:59.999Z");
        let year_10000 = Timestamp::from_unix_millis(253_402_300_800_000);
        assert_eq!(year_10000.to_string(), "10000-01-01T00:00:00.000Z");
        assert_eq!(
            serde_json::to_string(&year_10000).unwrap(),
            "\"10000-01-01T00:00:00.000Z\""
        );
    }

    proptest! {
        #[test]
        fn the_fixed_rendering_equals_the_formatted_one(millis in -70_000_000_000_000i64..300_000_000_000_000) {
            let ts = Timestamp::from_unix_millis(millis);
            prop_assert_eq!(ts.to_string(), formatted(ts));
            prop_assert_eq!(serde_json::to_string(&ts).unwrap(), format!("\"{}\"", formatted(ts)));
        }
    }

    #[test]
    fn the_reused_text_follows_the_instant_and_a_nested_use_writes_its_own() {
        let (a, b) = (
            Timestamp::from_unix_millis(1_764_677_944_123),
            Timestamp::from_unix_millis(0),
        );
        for ts in [a, a, b, a, b, b] {
            assert_eq!(ts.to_string(), formatted(ts));
        }
        // A writer that formats another instant while the first one's text is lent to it.
        struct Nesting(String);
        impl fmt::Write for Nesting {
            fn write_str(&mut self, text: &str) -> fmt::Result {
                self.0.push_str(text);
                self.0.push('|');
                self.0.push_str(&Timestamp::from_unix_millis(0).to_string());
                Ok(())
            }
        }
        let mut nesting = Nesting(String::new());
        fmt::Write::write_fmt(&mut nesting, format_args!("{a}")).unwrap();
        assert_eq!(
            nesting.0,
            "2025-12-02T12:19:04.123Z|1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(
            Timestamp::from_unix_millis(0).to_string(),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            Timestamp::from_unix_millis(1_764_677_944_123).to_string(),
            "2025-12-02T12:19:04.123Z"
        );
    }

    #[test]
    fn parses_without_fraction() {
        assert_eq!(
            Timestamp::parse_rfc3339("1970-01-01T00:00:01Z"),
            Some(Timestamp::from_unix_millis(1_000))
        );
        assert_eq!(Timestamp::parse_rfc3339("garbage"), None);
    }

    proptest! {
        #[test]
        fn round_trips(millis in -62_000_000_000_000i64..253_000_000_000_000i64) {
            let ts = Timestamp::from_unix_millis(millis);
            prop_assert_eq!(Timestamp::parse_rfc3339(&ts.to_string()), Some(ts));
        }
    }
}

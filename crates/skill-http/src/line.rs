//! The plain text log line, written without colour codes and with as little formatting
//! machinery as possible: the same layout as the usual text format,
//!
//! ```text
//! 2026-12-01T00:25:48.471109Z  INFO skill{skill=echo@1 transport=http}: skill_http::requests: request request_id=… status=200
//! ```
//!
//! but about half the instructions per line: no colour-code wrapper around every name and
//! separator, and the timestamp formatted by integer arithmetic. A terminal (colours on) keeps
//! the usual format.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Formats events (and, as [`FormatFields`], span fields) as plain lines.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PlainLine;

impl<'writer> FormatFields<'writer> for PlainLine {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = Fields { writer: &mut writer, first: true, result: Ok(()) };
        fields.record(&mut visitor);
        visitor.result
    }
}

impl<S, N> FormatEvent<S, N> for PlainLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        write_timestamp(&mut writer, SystemTime::now())?;
        writer.write_str(level(event.metadata().level()))?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                writer.write_str(span.metadata().name())?;
                let extensions = span.extensions();
                if let Some(fields) = extensions.get::<FormattedFields<N>>()
                    && !fields.is_empty()
                {
                    writer.write_char('{')?;
                    writer.write_str(fields)?;
                    writer.write_char('}')?;
                }
                writer.write_char(':')?;
            }
            writer.write_char(' ')?;
        }
        writer.write_str(event.metadata().target())?;
        writer.write_str(": ")?;
        ctx.format_fields(writer.by_ref(), event)?;
        writer.write_char('\n')
    }
}

/// The level, right-aligned in five columns, between single spaces.
fn level(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => " TRACE ",
        Level::DEBUG => " DEBUG ",
        Level::INFO => "  INFO ",
        Level::WARN => "  WARN ",
        Level::ERROR => " ERROR ",
    }
}

/// Writes `message` first, then ` name=value` for every other field (a string field quoted,
/// a `%`-recorded one as it displays).
struct Fields<'a, 'writer> {
    writer: &'a mut Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl Fields<'_, '_> {
    fn field(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        if self.result.is_err() {
            return;
        }
        let name = field.name();
        if name.starts_with("log.") {
            return;
        }
        let separator = if std::mem::take(&mut self.first) { "" } else { " " };
        let writer = &mut *self.writer;
        self.result = writer.write_str(separator).and_then(|()| {
            if name != "message" {
                writer.write_str(name.strip_prefix("r#").unwrap_or(name))?;
                writer.write_char('=')?;
            }
            match value.as_str() {
                Some(text) => writer.write_str(text),
                None => writer.write_fmt(value),
            }
        });
    }
}

impl Visit for Fields<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.field(field, format_args!("{value}"));
        } else {
            self.field(field, format_args!("{value:?}"));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.field(field, format_args!("{value}"));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.field(field, format_args!("{value}"));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.field(field, format_args!("{value}"));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.field(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.field(field, format_args!("{value:?}"));
    }
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, microseconds), as the usual text format writes it.
fn write_timestamp(writer: &mut impl fmt::Write, now: SystemTime) -> fmt::Result {
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (year, month, day) = civil_date(seconds / 86_400);
    let time = seconds % 86_400;
    let mut text = *b"0000-00-00T00:00:00.000000Z ";
    digits(&mut text[0..4], year);
    digits(&mut text[5..7], month);
    digits(&mut text[8..10], day);
    digits(&mut text[11..13], time / 3600);
    digits(&mut text[14..16], time / 60 % 60);
    digits(&mut text[17..19], time % 60);
    digits(&mut text[20..26], u64::from(since.subsec_micros()));
    // Only ASCII digits and separators were written.
    writer.write_str(std::str::from_utf8(&text[..27]).map_err(|_| fmt::Error)?)
}

/// Fills `out` with the last `out.len()` decimal digits of `value`.
fn digits(out: &mut [u8], mut value: u64) {
    for slot in out.iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (the days-to-civil algorithm
/// of the `chrono`-free date libraries: eras of 400 years, years starting in March).
fn civil_date(days: u64) -> (u64, u64, u64) {
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn timestamp(seconds: u64, micros: u64) -> String {
        let mut text = String::new();
        write_timestamp(&mut text, UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_micros(micros))
            .expect("written");
        text
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_microseconds() {
        // Checked against `date -u -d @<seconds>`.
        assert_eq!(timestamp(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(timestamp(951_782_400, 7), "2000-02-29T00:00:00.000007Z");
        assert_eq!(timestamp(951_868_799, 999_999), "2000-02-29T23:59:59.999999Z");
        assert_eq!(timestamp(1_709_251_199, 0), "2024-02-29T23:59:59.000000Z");
        assert_eq!(timestamp(1_795_998_348, 244_940), "2026-11-30T00:25:48.244940Z");
        assert_eq!(timestamp(4_102_444_800, 0), "2100-01-01T00:00:00.000000Z");
        assert_eq!(timestamp(253_402_300_799, 0), "9999-12-31T23:59:59.000000Z");
    }

    /// A buffer shared by a test subscriber and the test.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("not poisoned").extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The lines `events` log through `subscriber`, without their timestamps.
    fn lines(subscriber: impl Subscriber + Send + Sync + 'static, captured: &Captured) -> Vec<String> {
        tracing::subscriber::with_default(subscriber, || {
            let error = std::io::Error::other("the disk is full");
            tracing::info!(request_id = %"01a2-ef", method = %"POST", status = 200u16, elapsed_ms = %format_args!("{}.{:03}", 1, 5), "request");
            let outer = tracing::info_span!("skill", skill = %"echo@1", invocation_id = %"", transport = "http");
            let _outer = outer.enter();
            tracing::warn!(code = "upstream", retryable = true, attempts = -3i64, "the skill failed: {}", 5);
            let inner = tracing::info_span!("step");
            let _inner = inner.enter();
            tracing::error!(error = &error as &(dyn std::error::Error + 'static), r#type = "io");
            tracing::info!(path = ?"/a b", "quoted \"as\" given");
            tracing::warn!(reason = "bye\n2026-01-01T00:00:00Z  INFO forged\u{1b}[31m", "call ended");
        });
        let text = String::from_utf8(captured.0.lock().expect("not poisoned").clone()).expect("UTF-8");
        text.lines().map(|line| line[27..].to_owned()).collect()
    }

    #[test]
    fn lines_read_as_the_usual_text_format_does() {
        let ours = Captured::default();
        let usual = Captured::default();
        let plain = tracing_subscriber::fmt()
            .with_writer({
                let ours = ours.clone();
                move || ours.clone()
            })
            .with_ansi(false)
            .event_format(PlainLine)
            .fmt_fields(PlainLine)
            .finish();
        let default = tracing_subscriber::fmt()
            .with_writer({
                let usual = usual.clone();
                move || usual.clone()
            })
            .with_ansi(false)
            .finish();
        let ours = lines(plain, &ours);
        assert_eq!(ours, lines(default, &usual));
        assert_eq!(ours.len(), 5, "a text field's line break stays in its line: {ours:#?}");
        assert!(
            ours[4].ends_with(r#"call ended reason="bye\n2026-01-01T00:00:00Z  INFO forged\u{1b}[31m""#),
            "{}",
            ours[4]
        );
        assert_eq!(
            ours[1],
            "  WARN skill{skill=echo@1 invocation_id= transport=\"http\"}: skill_http::line::tests: \
             the skill failed: 5 code=\"upstream\" retryable=true attempts=-3"
        );
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_one_before() {
        let mut previous = civil_date(0);
        assert_eq!(previous, (1970, 1, 1));
        for days in 1..146_097 * 2 {
            let (year, month, day) = civil_date(days);
            let (y, m, d) = previous;
            let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
            let length = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m as usize - 1];
            let expected = if d < length {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
            assert_eq!((year, month, day), expected, "day {days}");
            previous = (year, month, day);
        }
    }
}

//! OpenTelemetry traces for the core, the executors and the skill hosts.
//!
//! | what | where |
//! |---|---|
//! | the exporter (OTLP/HTTP protobuf), on only when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) is set | [`install`], [`Traces`] |
//! | a span's W3C `traceparent` out, a caller's in | [`traceparent_of`], [`current`], [`set_parent`] |
//! | the spans every component opens the same way | [`spans`] |
//! | JSON log lines with the trace and span ids | [`logs`] |
//! | the conventions' attribute names | [`attr`] |
//!
//! With no endpoint set nothing is installed, [`enabled`] is false, and every span of
//! [`spans`] is [`tracing::Span::none`]: no span, no context, no export.

pub mod attr;
mod context;
mod export;
pub mod logs;
pub mod spans;

pub use context::{current, enabled, set_parent, traceparent_of};
pub use export::{Exported, Installed, Traces, install};

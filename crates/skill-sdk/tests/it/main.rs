//! The SDK's integration tests, one binary: authoring and the exported contract, the runtime,
//! the compile errors of `#[skill]`, the context's core client against a real HTTP server and the
//! fake core, the language-model clients, and redaction.

mod authoring;
mod compile_fail;
#[path = "support/core_behaviour.rs"]
mod core_behaviour;
mod core_http;
mod duplicates;
mod fake_core;
mod fake_llm;
mod llm_claude;
mod llm_openai;
#[path = "support/logs.rs"]
mod logs;
mod pii;
mod runtime;

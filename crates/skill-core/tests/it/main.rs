//! The core's behaviour tests, one binary: the API through a real server, the typed client
//! against it, the committed OpenAPI document, and `skill-core` as a process.

mod agents;
mod api;
mod artifacts;
mod attacks;
mod budget;
mod calls;
mod claim_many;
mod claims;
mod client;
mod console;
mod console_browser;
mod console_work;
mod credentials;
mod dev;
mod gateway;
mod heavy_contracts;
mod hostile_api;
mod journal;
mod knowledge;
mod looks;
mod metrics;
mod openapi_file;
mod package_apply;
mod package_tests;
mod process;
mod processes;
mod prometheus;
mod remote;
mod rules;
mod running;
mod slow_clients;
mod tokens;
mod traces;
mod webdriver;
mod work;

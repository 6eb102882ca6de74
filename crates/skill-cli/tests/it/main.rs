//! The `skill-sdk` command's behaviour tests, one binary: the host commands from a package root,
//! `package check|plan|apply` against a served core, `package test` (the scenarios), and the
//! README's quick start as written.

mod calls;
mod cli;
mod image;
mod package;
mod quickstart;
mod scenarios;

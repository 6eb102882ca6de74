//! The engine's behaviour tests, one binary: the catalog's rules, and the model-based test of
//! the basis rules.

mod catalog;
mod model;

//! The engine's behaviour tests, one binary: the catalog's rules, the model-based test of the
//! basis rules, and agents' requests under random interleavings.

mod catalog;
mod model;
mod random;
mod requests;

//! `#[skill(...)]`: the contract of a skill from its Rust function.
//!
//! Use it through `skill_sdk::skill`; the attribute's arguments and rules are documented there.
//! The stages are parse and check ([`args`], [`signature`]), then expand ([`expand`]); what the
//! core would refuse is a compile error on the offending token, and the function is emitted even
//! then so the rest of the crate keeps compiling.

mod args;
mod description;
mod expand;
mod signature;

use proc_macro::TokenStream;

/// Declares a skill. See `skill_sdk::skill` for the arguments.
#[proc_macro_attribute]
pub fn skill(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::skill(attr.into(), item.into()).into()
}

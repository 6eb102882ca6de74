//! The integration code of the claims package: its skills.

pub mod skills;

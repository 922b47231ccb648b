//! The Gateway API's types as the router holds them: the objects read (`objects`) and what the Gateway API
//! step found about them, for status (`report`). Kept apart from the step (`model::gateway`), which reads
//! snapshots that hold these types.

mod objects;
mod report;

pub use objects::*;
pub use report::*;

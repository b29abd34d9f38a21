//! locklab traces: the versioned JSON format every engine writes and every
//! renderer reads, and the renderers themselves.
//!
//! This crate knows nothing about the model. A trace carries readable state
//! snapshots and structured events, so a renderer can draw it from the file
//! alone; replaying and validating a trace is the model crate's job.

pub mod dot;
pub mod format;
pub mod html;
pub mod itf;
pub mod mermaid;
pub mod narrate;
pub mod render;
pub mod scene;
pub mod schema;
pub mod sequence;
pub mod svg;
pub mod text;
pub mod time;
pub mod vocab;

pub use format::*;
pub use render::Format;

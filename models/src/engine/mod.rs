//! The dense-time clock-zone engine: difference-bound matrices ([`dbm`]) for
//! the symbolic search, and an exact difference-constraint solver ([`solve`])
//! that turns a symbolic path into concrete rational timestamps and validates
//! them independently of the zone code. The search keeps its states in
//! the passed list ([`passed`]: zones per world, merging) and its levels
//! packed and compressed ([`packed`]).

pub mod concrete;
pub mod dbm;
pub mod packed;
pub mod passed;
pub mod solve;
pub mod zone;

//! Exit codes `kgc tree` and `kgc why` share, so a script tells the outcomes apart whichever
//! command it ran. A usage error (an unknown flag, an argument that is not `KIND/NAME`) is an
//! error, 1, as kubectl's; 2 and 3 are unused.

/// The answer is complete: the object exists (`kgc why`: kept, healthy).
pub const OK: i32 = 0;
/// Anything went wrong (a usage error, the cluster unreachable, a request failed).
pub const ERROR: i32 = 1;
/// `kgc why`: the object is being deleted and something holds the deletion.
pub const BLOCKED: i32 = 4;
/// `KIND` is unknown to the server, or a short name several resources share.
pub const UNKNOWN_KIND: i32 = 5;
/// The object does not exist.
pub const NOT_FOUND: i32 = 6;
/// The answer was given, but some kinds could not be listed (forbidden): the parts that depend
/// on them are unknown and said so.
pub const INCOMPLETE: i32 = 7;

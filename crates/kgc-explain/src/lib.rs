//! The ownership graph as operators read it.
//!
//! The collector's graph (`kgc-gc`) is built for deciding, compactly, over a whole cluster.
//! Operators ask other questions of it: what hangs under this Deployment, what holds this
//! deletion, why was this ConfigMap kept. This crate answers them: [`graph`] is the graph with
//! the collector's rules about owner references (which are present, absent, invalid), [`load`]
//! builds it from any cluster with discovery and metadata-only lists, [`resolve`] turns
//! `KIND/NAME` into a resource as kubectl does, and [`tree`] / [`svg`] draw it.
#![forbid(unsafe_code)]

pub mod exit;
pub mod graph;
pub mod load;
pub mod resolve;
pub mod svg;
pub mod tree;
pub mod why;

pub use graph::{Graph, Node, Owner, OwnerState};

/// Why an explanation could not be given.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `KIND` names no resource the server serves.
    #[error("the server doesn't have a resource type {0:?}")]
    UnknownKind(String),
    /// `KIND` is a short name (or kind) several resources answer to.
    #[error("{name:?} is ambiguous: it could be {}", candidates.join(", "))]
    Ambiguous {
        name: String,
        candidates: Vec<String>,
    },
    /// The object does not exist.
    #[error("{resource} {name:?} not found{}", in_namespace(namespace))]
    NotFound {
        resource: String,
        namespace: String,
        name: String,
    },
    /// `KIND/NAME` is not of that form.
    #[error("{0:?}: expected KIND/NAME (or KIND NAME)")]
    BadReference(String),
    #[error("discovering the server's resources")]
    Discovery(#[source] kgc_client::Error),
    #[error("reading {what}")]
    Request {
        what: String,
        #[source]
        source: kube::Error,
    },
}

fn in_namespace(ns: &str) -> String {
    if ns.is_empty() {
        String::new()
    } else {
        format!(" in namespace {ns:?}")
    }
}

impl Error {
    /// The exit code a command ends with for this error (see [`exit`]).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::UnknownKind(_) | Error::Ambiguous { .. } => exit::UNKNOWN_KIND,
            Error::NotFound { .. } => exit::NOT_FOUND,
            // A usage error, as kubectl's.
            Error::BadReference(_) | Error::Discovery(_) | Error::Request { .. } => exit::ERROR,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

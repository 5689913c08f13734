//! mark-client (in progress)

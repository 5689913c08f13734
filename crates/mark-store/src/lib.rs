//! mark-store (in progress)

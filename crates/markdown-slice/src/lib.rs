//! markdown-slice (in progress)

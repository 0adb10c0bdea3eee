//! `apply_patch`: applies a patch in the `*** Begin Patch` format (being written).

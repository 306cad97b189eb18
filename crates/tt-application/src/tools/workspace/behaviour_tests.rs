//! Behaviour tests of the workspace tools against the in-memory store.

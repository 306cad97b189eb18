//! The seven workspace tools (reference §2.6).

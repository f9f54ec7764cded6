//! The strategies, one module each, every one reading top to bottom as its
//! source's stages: the baselines (`bm25`, `flat`, `hybrid`), SGKR's dependency
//! `paths`, Graph-RAG's `neighborhood`, DomAgent's `domain` (with its case base),
//! and `unified`, the iterative refinement whose one fused ranking takes in the
//! others as channels.

pub(crate) mod bm25;
pub(crate) mod domain;
pub(crate) mod flat;
pub(crate) mod hybrid;
pub(crate) mod neighborhood;
pub(crate) mod paths;
pub(crate) mod unified;

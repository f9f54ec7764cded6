//! `Engine::builder`: open (or create) a data directory with the engine's language
//! model and default retrieval and answering options in one place.

use crate::{
    Answer, AskOptions, EmbedderConfig, Engine, EngineInit, Error, FusedContext, LanguageModel,
    NoProgress, Progress, RetrieveOptions,
};
use kgfuse_core::config::CONFIG_FILE;
use kgfuse_store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The options an [`Engine`] uses when the caller gives none (see
/// [`Engine::retrieve_default`] and [`Engine::ask_default`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Defaults {
    pub(crate) retrieve: RetrieveOptions,
    pub(crate) ask: AskOptions,
}

/// Opens or creates a kgfuse data directory; made by [`Engine::builder`].
///
/// ```no_run
/// use kgfuse::{Engine, EngineInit, RetrieveOptions, Strategy};
///
/// # async fn run() -> Result<(), kgfuse::Error> {
/// let engine = Engine::builder("kgfuse-data")
///     // Only used if kgfuse-data holds no store yet: then it is created.
///     .embedder(EngineInit::hash(384))
///     .retrieve_options(RetrieveOptions {
///         strategy: Strategy::Hybrid,
///         top_k: 5,
///         ..RetrieveOptions::default()
///     })
///     .build()
///     .await?;
/// let context = engine.retrieve_default("How do I flash the hazard lights?").await?;
/// # Ok(()) }
/// ```
///
/// What [`build`](EngineBuilder::build) does with the directory:
///
/// | directory | no embedder given | `.embedder(init)` given |
/// |---|---|---|
/// | holds a store | opens it | opens it if its embedder is `init`'s (same kind, model and dimension), else [`Error::Invalid`] |
/// | holds none | [`Error::NotInitialised`] | creates the store with `init` |
///
/// [`create_if_missing`](EngineBuilder::create_if_missing) overrides the bottom row:
/// `false` never creates (an embedder is then only checked against the stored one),
/// `true` without an embedder creates with `kgfuse init`'s default, all-MiniLM-L6-v2
/// (`EngineInit::minilm(None)`).
///
/// Why a different embedder is an error and not a warning: the stored vectors were
/// made by the stored embedder, so the store cannot switch, and silently searching
/// with another embedder than the one asked for would surprise. Drop `.embedder(..)`
/// to take whatever the directory holds.
pub struct EngineBuilder<'p> {
    dir: PathBuf,
    init: Option<EngineInit>,
    create_if_missing: Option<bool>,
    model: Option<Arc<dyn LanguageModel>>,
    defaults: Defaults,
    progress: &'p dyn Progress,
}

impl std::fmt::Debug for EngineBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("dir", &self.dir)
            .field("init", &self.init)
            .field("create_if_missing", &self.create_if_missing)
            .field("model", &self.model.as_ref().map(|m| m.name().to_owned()))
            .field("retrieve_options", &self.defaults.retrieve)
            .field("ask_options", &self.defaults.ask)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// A builder for an engine on the data directory `dir`: embedder for a new
    /// directory, language model, default options. See [`EngineBuilder`].
    pub fn builder(dir: impl AsRef<Path>) -> EngineBuilder<'static> {
        EngineBuilder {
            dir: dir.as_ref().to_path_buf(),
            init: None,
            create_if_missing: None,
            model: None,
            defaults: Defaults::default(),
            progress: &NoProgress,
        }
    }

    /// The options [`Engine::retrieve_default`] uses (set with
    /// [`EngineBuilder::retrieve_options`]; [`RetrieveOptions::default`] otherwise).
    /// [`Engine::search_domain_kg`] takes its package and gate thresholds
    /// (`domain`) and its exclusions from them too.
    pub fn retrieve_options(&self) -> &RetrieveOptions {
        &self.defaults.retrieve
    }

    /// The options [`Engine::ask_default`] uses (set with
    /// [`EngineBuilder::ask_options`]; [`AskOptions::default`] otherwise).
    pub fn ask_options(&self) -> &AskOptions {
        &self.defaults.ask
    }

    /// The same engine with other default retrieval options.
    #[must_use]
    pub fn with_retrieve_options(mut self, options: RetrieveOptions) -> Self {
        Arc::make_mut(&mut self.defaults).retrieve = options;
        self
    }

    /// The same engine with other default answering options.
    #[must_use]
    pub fn with_ask_options(mut self, options: AskOptions) -> Self {
        Arc::make_mut(&mut self.defaults).ask = options;
        self
    }

    /// [`Engine::retrieve`] with the engine's default options
    /// ([`Engine::retrieve_options`]).
    pub async fn retrieve_default(&self, question: &str) -> Result<FusedContext, Error> {
        self.retrieve(question, &self.defaults.retrieve).await
    }

    /// [`Engine::ask`] with the engine's default options ([`Engine::ask_options`]).
    /// Never fails: problems end in [`AnswerStatus::Failure`](crate::AnswerStatus::Failure).
    pub async fn ask_default(&self, question: &str) -> Answer {
        self.ask(question, &self.defaults.ask).await
    }
}

impl<'p> EngineBuilder<'p> {
    /// The embedder to create the store with when the directory holds none yet.
    /// Giving one turns [`create_if_missing`](Self::create_if_missing) on unless it
    /// was set; an existing store must use the same embedder (kind, model and
    /// dimension) or [`build`](Self::build) fails.
    #[must_use]
    pub fn embedder(mut self, init: EngineInit) -> Self {
        self.init = Some(init);
        self
    }

    /// Whether [`build`](Self::build) creates the store when the directory holds
    /// none. Default: `true` when an [`embedder`](Self::embedder) was given, `false`
    /// otherwise; `true` without an embedder uses all-MiniLM-L6-v2, like
    /// `kgfuse init`.
    #[must_use]
    pub fn create_if_missing(mut self, create: bool) -> Self {
        self.create_if_missing = Some(create);
        self
    }

    /// The language model of the judgement steps (default: the offline
    /// [`RuleBased`](crate::RuleBased)); the same as [`Engine::with_model`].
    #[must_use]
    pub fn model(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.model = Some(model);
        self
    }

    /// Default options of [`Engine::retrieve_default`] (strategy, `top_k`, the
    /// `domain` package and gate thresholds, ...).
    #[must_use]
    pub fn retrieve_options(mut self, options: RetrieveOptions) -> Self {
        self.defaults.retrieve = options;
        self
    }

    /// Default options of [`Engine::ask_default`] (relevance, coverage and support
    /// thresholds, passages, retrieval attempts, ...).
    #[must_use]
    pub fn ask_options(mut self, options: AskOptions) -> Self {
        self.defaults.ask = options;
        self
    }

    /// Reports the repair an interrupted earlier write calls for when the store
    /// is opened (default: [`NoProgress`]).
    #[must_use]
    pub fn progress<'q>(self, progress: &'q dyn Progress) -> EngineBuilder<'q> {
        EngineBuilder {
            dir: self.dir,
            init: self.init,
            create_if_missing: self.create_if_missing,
            model: self.model,
            defaults: self.defaults,
            progress,
        }
    }

    /// Opens the store, creating it first if allowed and needed (see
    /// [`EngineBuilder`] for the rules), and returns the engine.
    pub async fn build(self) -> Result<Engine, Error> {
        let initialised = |dir: &Path| dir.join(CONFIG_FILE).exists();
        let create = self.create_if_missing.unwrap_or(self.init.is_some());
        let store = if initialised(&self.dir) || !create {
            Store::open(&self.dir, self.progress).await?
        } else {
            let init = self
                .init
                .clone()
                .unwrap_or_else(|| EngineInit::minilm(None));
            match Store::init(&self.dir, init.config).await {
                Ok(store) => {
                    tracing::info!(
                        "created a kgfuse store in {} ({} embedder)",
                        self.dir.display(),
                        store.config().embedder.kind
                    );
                    store
                }
                // Another process created it meanwhile: use theirs.
                Err(StoreError::AlreadyInitialised(_)) if initialised(&self.dir) => {
                    Store::open(&self.dir, self.progress).await?
                }
                Err(e) => return Err(e.into()),
            }
        };
        if let Some(init) = &self.init {
            same_embedder(&self.dir, &store.config().embedder, &init.config.embedder)?;
        }
        let mut engine = Engine::from_store(store);
        if let Some(model) = self.model {
            engine = engine.with_model(model);
        }
        engine.defaults = Arc::new(self.defaults);
        Ok(engine)
    }
}

/// Fails unless the stored embedder makes the same vectors as the requested one.
/// Where the model lives (`model_dir`, `base_url`) and the batch size do not change
/// the vectors, so they may differ.
fn same_embedder(
    dir: &Path,
    stored: &EmbedderConfig,
    wanted: &EmbedderConfig,
) -> Result<(), Error> {
    let describe = |c: &EmbedderConfig| match &c.model {
        Some(model) => format!("{} embedder {model} ({} dimensions)", c.kind, c.dimension),
        None => format!("{} embedder ({} dimensions)", c.kind, c.dimension),
    };
    if stored.kind == wanted.kind
        && stored.dimension == wanted.dimension
        && stored.model == wanted.model
    {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "{} holds a store made with the {}, not the {} asked for; \
         build without .embedder(..) to use the stored one, or pick another directory",
        dir.display(),
        describe(stored),
        describe(wanted)
    )))
}

/// An engine is shared across tasks and threads by cloning it.
const _: fn() = || {
    fn shareable<T: Send + Sync + Clone + 'static>() {}
    shareable::<Engine>();
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AnswerStatus, DomainOptions, EmbedderKind, RuleBased, Strategy};

    fn tempdir() -> tempfile::TempDir {
        tempfile::tempdir().expect("tempdir")
    }

    /// Checked at compile time: an engine moves into spawned tasks and threads.
    #[test]
    fn engine_is_send_sync_clone_static() {
        fn shareable<T: Send + Sync + Clone + 'static>() {}
        shareable::<Engine>();
        fn sendable<T: Send>(_: &T) {}
        let builder = Engine::builder("unused").embedder(EngineInit::hash(8));
        sendable(&builder);
        sendable(&builder.build());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn builds_a_new_store_with_the_given_embedder() {
        let tmp = tempdir();
        let dir = tmp.path().join("data");
        let engine = Engine::builder(&dir)
            .embedder(EngineInit::hash(64))
            .build()
            .await
            .expect("build");
        assert!(dir.join(CONFIG_FILE).is_file());
        assert_eq!(engine.store().config().embedder.kind, EmbedderKind::Hash);
        assert_eq!(engine.store().config().embedder.dimension, 64);
        assert_eq!(engine.model().name(), RuleBased::default().name());
        // Defaults are the crate's defaults.
        assert_eq!(
            engine.retrieve_options().top_k,
            RetrieveOptions::default().top_k
        );
        assert_eq!(
            engine.ask_options().max_passages,
            AskOptions::default().max_passages
        );
        assert!(engine.check().await.expect("check").is_ok());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reopens_an_existing_store() {
        let tmp = tempdir();
        let dir = tmp.path().join("data");
        let first = Engine::builder(&dir)
            .embedder(EngineInit::hash(32))
            .build()
            .await
            .expect("create");
        first
            .update(
                "INSERT DATA { GRAPH <urn:g> { <urn:a> <http://www.w3.org/2000/01/rdf-schema#label> \"remote work policy\" } }",
                &NoProgress,
            )
            .await
            .expect("update");
        drop(first);

        // The same embedder, without one, and with create_if_missing(false): all open it.
        for builder in [
            Engine::builder(&dir).embedder(EngineInit::hash(32)),
            Engine::builder(&dir),
            Engine::builder(&dir)
                .embedder(EngineInit::hash(32))
                .create_if_missing(false),
        ] {
            let engine = builder.build().await.expect("reopen");
            let hits = engine.search("remote work", 1).await.expect("search");
            assert_eq!(hits.first().map(|h| h.iri.as_str()), Some("urn:a"));
        }

        // Another embedder is refused, naming both, and the store is untouched.
        let err = Engine::builder(&dir)
            .embedder(EngineInit::hash(64))
            .build()
            .await
            .expect_err("a different dimension");
        let message = err.to_string();
        assert!(
            message.contains("hash embedder (32 dimensions)"),
            "{message}"
        );
        assert!(
            message.contains("hash embedder (64 dimensions)"),
            "{message}"
        );
        assert_eq!(
            Engine::open(&dir)
                .await
                .expect("open")
                .store()
                .config()
                .embedder
                .dimension,
            32
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn does_not_create_unless_asked() {
        let tmp = tempdir();
        let dir = tmp.path().join("data");
        let err = Engine::builder(&dir).build().await.expect_err("no store");
        assert!(
            matches!(err, Error::Store(StoreError::NotInitialised(_))),
            "{err}"
        );
        let err = Engine::builder(&dir)
            .embedder(EngineInit::hash(16))
            .create_if_missing(false)
            .build()
            .await
            .expect_err("creation disabled");
        assert!(
            matches!(err, Error::Store(StoreError::NotInitialised(_))),
            "{err}"
        );
        assert!(!dir.join(CONFIG_FILE).exists());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn applies_defaults_and_the_model() {
        let tmp = tempdir();
        let model = RuleBased {
            relevance_overlap: 0.9,
            ..RuleBased::default()
        };
        let engine = Engine::builder(tmp.path().join("data"))
            .embedder(EngineInit::hash(64))
            .model(Arc::new(model))
            .retrieve_options(RetrieveOptions {
                strategy: Strategy::Flat,
                top_k: 1,
                domain: DomainOptions {
                    gate_margin: 0.01,
                    ..DomainOptions::default()
                },
                ..RetrieveOptions::default()
            })
            .ask_options(AskOptions {
                max_passages: 2,
                ..AskOptions::default()
            })
            .progress(&NoProgress)
            .build()
            .await
            .expect("build");
        assert_eq!(engine.retrieve_options().strategy, Strategy::Flat);
        assert!((engine.retrieve_options().domain.gate_margin - 0.01).abs() < f32::EPSILON);
        assert_eq!(engine.ask_options().max_passages, 2);
        engine
            .update(
                "INSERT DATA { GRAPH <urn:g> { \
                   <urn:a> <http://www.w3.org/2000/01/rdf-schema#label> \"remote work policy\" . \
                   <urn:b> <http://www.w3.org/2000/01/rdf-schema#label> \"remote work abroad\" } }",
                &NoProgress,
            )
            .await
            .expect("update");

        // Clones share the store and the defaults; they run on other tasks.
        let task = tokio::spawn({
            let engine = engine.clone();
            async move { engine.retrieve_default("remote work").await }
        });
        let context = task.await.expect("join").expect("retrieve");
        assert_eq!(context.strategy, "flat");
        assert_eq!(context.unstructured.len(), 1, "top_k 1: {context:?}");

        let answer = engine.ask_default("What is the remote work policy?").await;
        assert_ne!(answer.status, AnswerStatus::Failure, "{answer:?}");

        // Changing a clone's defaults leaves the original alone.
        let flat_top3 = engine.clone().with_retrieve_options(RetrieveOptions {
            top_k: 3,
            ..RetrieveOptions::default()
        });
        assert_eq!(flat_top3.retrieve_options().top_k, 3);
        assert_eq!(engine.retrieve_options().top_k, 1);
        let ask = engine.clone().with_ask_options(AskOptions::default());
        assert_eq!(
            ask.ask_options().max_passages,
            AskOptions::default().max_passages
        );
        assert_eq!(engine.ask_options().max_passages, 2);
    }
}

//! `kgfuse serve --config serve.toml`: the stores of a shared server, each with
//! its own model and limits. Secrets stay out of it: tokens live in the token
//! file, a model's API key in an environment variable the file names.
//!
//! ```toml
//! [stores.docs]
//! data = "/srv/kgfuse/docs"
//! offline = true                     # the rule-based model, whatever the environment says
//! max_rows = 5000
//! query_timeout_secs = 10
//!
//! [stores.code]
//! data = "/srv/kgfuse/code"
//! llm_base_url = "http://127.0.0.1:8088/v1"
//! llm_model = "qwen2.5-coder-1.5b"
//! llm_api_key_env = "CODE_LLM_KEY"   # optional
//! max_concurrent = 4
//! datasets = ["https://example.org/code/"]
//! ```

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The file: stores by name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServeFile {
    /// Each store's settings, by the name in its paths.
    pub(crate) stores: BTreeMap<String, StoreSettings>,
}

/// One store's settings.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreSettings {
    /// The data directory (relative to the file's directory).
    data: PathBuf,
    /// The offline rule-based model, even when a model is configured.
    #[serde(default)]
    offline: bool,
    /// An OpenAI-compatible server for this store (with `llm_model`); without it,
    /// the model the environment names (KGFUSE_LLM_*), if any.
    llm_base_url: Option<String>,
    /// The model's name on that server.
    llm_model: Option<String>,
    /// The environment variable holding the server's API key.
    llm_api_key_env: Option<String>,
    query_timeout_secs: Option<u64>,
    request_timeout_secs: Option<u64>,
    max_rows: Option<usize>,
    max_concurrent: Option<usize>,
    datasets: Option<Vec<String>>,
}

impl ServeFile {
    /// Reads and checks the file.
    pub(crate) fn read(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut file: Self = toml::from_str(&text)
            .with_context(|| format!("{} is not a serve file", path.display()))?;
        if file.stores.is_empty() {
            bail!("{}: no [stores.NAME] section", path.display());
        }
        let base = path.parent().unwrap_or_else(|| Path::new("."));
        for (name, store) in &mut file.stores {
            if !kgfuse_http::is_store_name(name) {
                bail!(
                    "{}: store name {name:?}: use 1 to 64 letters, digits, '_' or '-'",
                    path.display()
                );
            }
            if store.data.is_relative() {
                store.data = base.join(&store.data);
            }
            if store.llm_base_url.is_some() != store.llm_model.is_some() {
                bail!(
                    "{}: store {name}: give llm_base_url and llm_model together",
                    path.display()
                );
            }
            if store.offline && store.llm_base_url.is_some() {
                bail!(
                    "{}: store {name}: offline and an llm_base_url contradict",
                    path.display()
                );
            }
        }
        Ok(file)
    }
}

impl StoreSettings {
    /// The data directory.
    pub(crate) fn data(&self) -> &Path {
        &self.data
    }

    /// This store's language model: offline, its own server, or the environment's
    /// (`from_environment`, unless the command line said `--offline`).
    pub(crate) fn model(
        &self,
        from_environment: &Arc<dyn kgfuse::LanguageModel>,
    ) -> Result<Arc<dyn kgfuse::LanguageModel>> {
        if self.offline {
            return Ok(Arc::new(kgfuse::RuleBased::default()));
        }
        let (Some(base_url), Some(model)) = (&self.llm_base_url, &self.llm_model) else {
            return Ok(Arc::clone(from_environment));
        };
        let api_key = match &self.llm_api_key_env {
            Some(variable) => Some(
                std::env::var(variable)
                    .with_context(|| format!("the API key variable {variable} is not set"))?,
            ),
            None => None,
        };
        let config = kgfuse::OpenAiChatConfig {
            base_url: base_url.clone(),
            model: model.clone(),
            api_key,
            ..kgfuse::OpenAiChatConfig::default()
        };
        Ok(Arc::new(kgfuse::OpenAiChat::new(config)?))
    }

    /// This store's limits; unset ones take the server's.
    pub(crate) fn limits(&self) -> kgfuse_http::StoreLimits {
        kgfuse_http::StoreLimits {
            query_timeout: self.query_timeout_secs.map(Duration::from_secs),
            request_timeout: self.request_timeout_secs.map(Duration::from_secs),
            max_rows: self.max_rows,
            max_concurrent: self.max_concurrent,
            datasets: self.datasets.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ServeFile> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("serve.toml");
        std::fs::write(&path, text)?;
        ServeFile::read(&path)
    }

    #[test]
    fn stores_read_with_their_own_limits_and_relative_data() {
        let file = read(
            "[stores.docs]\ndata = \"docs\"\nmax_rows = 5\nquery_timeout_secs = 2\n\
             [stores.code]\ndata = \"/srv/code\"\noffline = true\n",
        )
        .expect("reads");
        let docs = &file.stores["docs"];
        assert!(docs.data().ends_with("docs") && docs.data().is_absolute());
        assert_eq!(docs.limits().max_rows, Some(5));
        assert_eq!(docs.limits().query_timeout, Some(Duration::from_secs(2)));
        assert_eq!(docs.limits().max_concurrent, None);
        assert_eq!(file.stores["code"].data(), Path::new("/srv/code"));
    }

    #[test]
    fn contradictions_and_unknown_keys_are_refused() {
        for bad in [
            "[stores.docs]\ndata = \"d\"\nllm_model = \"m\"\n",
            "[stores.docs]\ndata = \"d\"\noffline = true\nllm_base_url = \"u\"\nllm_model = \"m\"\n",
            "[stores.docs]\ndata = \"d\"\nmax_rowz = 1\n",
            "[stores.\"a b\"]\ndata = \"d\"\n",
            "stores = {}\n",
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
}

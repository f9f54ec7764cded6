//! Test support for this crate and the crates above it (feature `testing`):
//! temporary stores with files loaded, a small employees ontology, a lending
//! library whose attributes are text, and a
//! language model that answers `generate_sparql` from a script. Nothing here is
//! used outside tests.

use kgfuse_core::config::StoreConfig;
use kgfuse_core::progress::NoProgress;
use kgfuse_llm::{
    ChoiceRequest, Draft, LanguageModel, LlmError, Passage, ReadingRequest, Relevance,
    SparqlRequest,
};
use kgfuse_store::Store;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use tempfile::TempDir;

/// Employees, organisations, and two classes unrelated to them (volcanoes,
/// recipes), with labels, comments, domains and ranges.
pub const EMPLOYEES: &str = r#"
@prefix ex: <http://example.org/> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .

ex:Person a owl:Class ; rdfs:label "person" ; rdfs:comment "A human being." .
ex:Employee a owl:Class ; rdfs:subClassOf ex:Person ; rdfs:label "employee" ;
rdfs:comment "A person employed by an organisation." .
ex:Organisation a owl:Class ; rdfs:label "organisation" ;
rdfs:comment "A company or institution that employs people." .
ex:worksFor a owl:ObjectProperty ; rdfs:label "works for" ;
rdfs:comment "The organisation an employee works for." ;
rdfs:domain ex:Employee ; rdfs:range ex:Organisation .
ex:Volcano a owl:Class ; rdfs:label "volcano" ;
rdfs:comment "A mountain whose crater erupts lava and ash." .
ex:Recipe a owl:Class ; rdfs:label "recipe" ;
rdfs:comment "Cooking instructions for a dish, with ingredients." .
ex:lastEruption a owl:DatatypeProperty ; rdfs:label "last eruption" ;
rdfs:comment "The year a volcano last erupted." ; rdfs:domain ex:Volcano .

ex:alice a ex:Employee ; rdfs:label "Alice" ; ex:worksFor ex:acme .
ex:bob a ex:Person ; rdfs:label "Bob" .
ex:acme a ex:Organisation ; rdfs:label "Acme" .
ex:etna a ex:Volcano ; rdfs:label "Etna" ; ex:lastEruption 2024 .
"#;

/// A store holding `files`, in a temporary directory that lives as long as the
/// returned guard.
pub async fn with_files(files: &[PathBuf]) -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = in_dir(&dir, files).await;
    (dir, store)
}

/// A lending library, written for the planner's tests: books whose genre and
/// writer are kept as text, and a reading room whose name shares a word with
/// a genre.
pub const LIBRARY: &str = r#"
@prefix l: <http://example.org/library/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .

l:Book a owl:Class ; rdfs:label "book" .
l:Room a owl:Class ; rdfs:label "room" .
l:genre a owl:DatatypeProperty ; rdfs:label "genre" .
l:writer a owl:DatatypeProperty ; rdfs:label "writer" .
l:shelvedIn a owl:ObjectProperty ; rdfs:label "shelved in" .

l:hall a l:Room ; rdfs:label "Poetry Hall" .
l:annex a l:Room ; rdfs:label "Annex" .
l:b1 a l:Book ; rdfs:label "Salt Winds" ; l:genre "poetry" ; l:writer "Mara Holt" ; l:shelvedIn l:hall .
l:b2 a l:Book ; rdfs:label "Iron Tides" ; l:genre "poetry" ; l:writer "Ivo Brandt" ; l:shelvedIn l:annex .
l:b3 a l:Book ; rdfs:label "Night Orchard" ; l:genre "mystery" ; l:writer "Mara Holt" ; l:shelvedIn l:annex .
"#;

/// A store holding `turtle` as one file, written beside the store.
pub async fn with_turtle(turtle: &str) -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("data.ttl");
    std::fs::write(&file, turtle).expect("write");
    let store = in_dir(&dir, &[file]).await;
    (dir, store)
}

/// Writes `turtle` to the file `name` in `dir` and loads it into `store`: a
/// write after the store was made (a file loaded again replaces what it held).
pub async fn load_turtle(store: &Store, dir: &std::path::Path, name: &str, turtle: &str) {
    let path = dir.join(name);
    std::fs::write(&path, turtle).expect("write the file");
    store
        .load_files(&[path.as_path().into()], None, &NoProgress)
        .await
        .expect("load");
}

async fn in_dir(dir: &TempDir, files: &[PathBuf]) -> Store {
    let data = dir.path().join("data");
    {
        let store = Store::init(
            &data,
            StoreConfig::new(kgfuse_core::config::EmbedderKind::Hash, 384),
        )
        .await
        .expect("init");
        let sources: Vec<_> = files.iter().map(|f| f.as_path().into()).collect();
        store
            .load_files(&sources, None, &NoProgress)
            .await
            .expect("load");
    }
    Store::open(&data, &NoProgress).await.expect("reopen")
}

/// A language model that answers `generate_sparql` and `read_question` from scripts
/// (the last reply repeats) and remembers every request. Without a plan script
/// it cannot fill plans.
pub struct Scripted {
    replies: Mutex<VecDeque<String>>,
    requests: Mutex<Vec<SparqlRequest>>,
    plans: Mutex<VecDeque<String>>,
    plan_requests: Mutex<Vec<ReadingRequest>>,
    /// The reading `choose_reading` picks (from 0); `None`: it cannot choose.
    choice: Mutex<Option<Option<usize>>>,
    choice_requests: Mutex<Vec<ChoiceRequest>>,
}

impl Scripted {
    /// A model that gives `replies` in turn, repeating the last.
    pub fn new(replies: &[&str]) -> Self {
        Self {
            replies: Mutex::new(replies.iter().map(|r| (*r).to_owned()).collect()),
            requests: Mutex::new(Vec::new()),
            plans: Mutex::new(VecDeque::new()),
            plan_requests: Mutex::new(Vec::new()),
            choice: Mutex::new(None),
            choice_requests: Mutex::new(Vec::new()),
        }
    }

    /// The model chooses reading `choice` (from 0; `None`: none of them)
    /// whenever it is asked to choose.
    pub fn choosing(self, choice: Option<usize>) -> Self {
        *self.choice.lock().expect("lock") = Some(choice);
        self
    }

    /// Every `choose_reading` request so far.
    pub fn choice_requests(&self) -> Vec<ChoiceRequest> {
        self.choice_requests.lock().expect("lock").clone()
    }

    /// A model that fills plans with `plans` in turn, repeating the last.
    pub fn with_plans(plans: &[&str]) -> Self {
        let model = Self::new(&[]);
        *model.plans.lock().expect("lock") = plans.iter().map(|p| (*p).to_owned()).collect();
        model
    }

    /// Every `read_question` request so far.
    pub fn plan_requests(&self) -> Vec<ReadingRequest> {
        self.plan_requests.lock().expect("lock").clone()
    }

    /// Every `generate_sparql` request so far.
    pub fn requests(&self) -> Vec<SparqlRequest> {
        self.requests.lock().expect("lock").clone()
    }
}

impl LanguageModel for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn classify(&self, _: &str, _: &[&str]) -> Result<Option<usize>, LlmError> {
        Ok(None)
    }
    fn extract_entities(&self, _: &str) -> Result<Vec<String>, LlmError> {
        Ok(Vec::new())
    }
    fn judge_candidates(&self, _: &str, items: &[&str]) -> Result<Vec<Relevance>, LlmError> {
        Ok(items
            .iter()
            .map(|_| Relevance {
                relevant: true,
                why: "scripted".into(),
            })
            .collect())
    }
    fn complete(&self, _: &str, _: &str) -> Result<String, LlmError> {
        Err(LlmError::Service("not scripted".into()))
    }
    fn rewrite_query(&self, question: &str, _: &[String]) -> Result<String, LlmError> {
        Ok(question.to_owned())
    }
    fn draft_answer(&self, _: &str, _: &[Passage]) -> Result<Draft, LlmError> {
        Err(LlmError::Service("not scripted".into()))
    }
    fn generate_sparql(&self, request: &SparqlRequest) -> Result<String, LlmError> {
        self.requests.lock().expect("lock").push(request.clone());
        let mut replies = self.replies.lock().expect("lock");
        next(&mut replies).ok_or_else(|| LlmError::Service("script exhausted".into()))
    }
    fn choose_reading(&self, request: &ChoiceRequest) -> Result<Option<usize>, LlmError> {
        let Some(choice) = *self.choice.lock().expect("lock") else {
            return Err(LlmError::Unsupported {
                model: self.name().to_owned(),
                task: "choose a reading".to_owned(),
            });
        };
        self.choice_requests
            .lock()
            .expect("lock")
            .push(request.clone());
        Ok(choice)
    }
    fn read_question(&self, request: &ReadingRequest) -> Result<String, LlmError> {
        let mut plans = self.plans.lock().expect("lock");
        if plans.is_empty() {
            return Err(LlmError::Unsupported {
                model: self.name().to_owned(),
                task: "read a question".to_owned(),
            });
        }
        self.plan_requests
            .lock()
            .expect("lock")
            .push(request.clone());
        next(&mut plans).ok_or_else(|| LlmError::Service("script exhausted".into()))
    }
}

/// The script's next reply; the last one repeats.
fn next(script: &mut VecDeque<String>) -> Option<String> {
    if script.len() > 1 {
        script.pop_front()
    } else {
        script.front().cloned()
    }
}

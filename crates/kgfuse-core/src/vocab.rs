//! IRIs of the vocabularies kgfuse reads and writes.
//!
//! The kgfuse terms mirror `ontology/kgfuse.ttl`; a test in the graph crate checks
//! that every constant here is declared there, so the two cannot drift apart.

/// Namespace of the kgfuse ontology.
pub const KGFUSE: &str = "https://w3id.org/kgfuse/ontology#";
/// RDF namespace.
pub const RDF: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
/// RDF Schema namespace.
pub const RDFS: &str = "http://www.w3.org/2000/01/rdf-schema#";
/// OWL namespace.
pub const OWL: &str = "http://www.w3.org/2002/07/owl#";
/// XML Schema datatypes namespace.
pub const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
/// SKOS namespace.
pub const SKOS: &str = "http://www.w3.org/2004/02/skos/core#";
/// Dublin Core terms namespace.
pub const DCTERMS: &str = "http://purl.org/dc/terms/";
/// PROV-O namespace.
pub const PROV: &str = "http://www.w3.org/ns/prov#";

/// Prefixes every kgfuse SPARQL query and console session knows without declaring them.
pub const WELL_KNOWN_PREFIXES: &[(&str, &str)] = &[
    ("rdf", RDF),
    ("rdfs", RDFS),
    ("owl", OWL),
    ("xsd", XSD),
    ("skos", SKOS),
    ("dcterms", DCTERMS),
    ("prov", PROV),
    ("kgfuse", KGFUSE),
];

macro_rules! terms {
    ($($(#[$doc:meta])* $name:ident = $iri:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $name: &str = $iri;
        )*
        /// Every term of this group as (constant name, full IRI).
        pub const ALL: &[(&str, &str)] = &[$((stringify!($name), $name)),*];
    };
}

/// Full IRIs of kgfuse ontology terms.
pub mod kg {
    terms! {
        /// Class: a package or crate.
        PACKAGE = "https://w3id.org/kgfuse/ontology#Package";
        /// Class: a module.
        MODULE = "https://w3id.org/kgfuse/ontology#Module";
        /// Class: a class, struct, enum or trait.
        CLASS = "https://w3id.org/kgfuse/ontology#Class";
        /// Class: a function.
        FUNCTION = "https://w3id.org/kgfuse/ontology#Function";
        /// Class: a method.
        METHOD = "https://w3id.org/kgfuse/ontology#Method";
        /// Class: a function parameter.
        PARAMETER = "https://w3id.org/kgfuse/ontology#Parameter";
        /// Class: a worked example.
        CASE = "https://w3id.org/kgfuse/ontology#Case";
        /// Class: knowledge bound to a function.
        KNOWLEDGE_UNIT = "https://w3id.org/kgfuse/ontology#KnowledgeUnit";
        /// Class: a K-means cluster of one package's function vectors (case base).
        FUNCTION_CLUSTER = "https://w3id.org/kgfuse/ontology#FunctionCluster";
        /// Class: the case base: clusters and the cases selected to cover them.
        CASE_BASE = "https://w3id.org/kgfuse/ontology#CaseBase";
        /// Class: a semantic input concept.
        INPUT_TAG = "https://w3id.org/kgfuse/ontology#InputTag";
        /// Class: a semantic output concept.
        OUTPUT_TAG = "https://w3id.org/kgfuse/ontology#OutputTag";
        /// Class: a document.
        DOCUMENT = "https://w3id.org/kgfuse/ontology#Document";
        /// Class: a document chunk.
        CHUNK = "https://w3id.org/kgfuse/ontology#Chunk";
        /// Class: a policy.
        POLICY = "https://w3id.org/kgfuse/ontology#Policy";
        /// Class: a loaded or ingested source file.
        SOURCE_FILE = "https://w3id.org/kgfuse/ontology#SourceFile";
        /// Property: containment.
        CONTAINS = "https://w3id.org/kgfuse/ontology#contains";
        /// Property: package/module contains module.
        HAS_MODULE = "https://w3id.org/kgfuse/ontology#hasModule";
        /// Property: module contains class.
        HAS_CLASS = "https://w3id.org/kgfuse/ontology#hasClass";
        /// Property: module/class contains function.
        HAS_FUNCTION = "https://w3id.org/kgfuse/ontology#hasFunction";
        /// Property: shortcut to the package.
        IN_PACKAGE = "https://w3id.org/kgfuse/ontology#inPackage";
        /// Property: shortcut to the module.
        IN_MODULE = "https://w3id.org/kgfuse/ontology#inModule";
        /// Property: generic dependency.
        DEPENDS_ON = "https://w3id.org/kgfuse/ontology#dependsOn";
        /// Property: resolved call edge.
        CALLS = "https://w3id.org/kgfuse/ontology#calls";
        /// Property: call edge matched by name only.
        CALLS_BY_NAME = "https://w3id.org/kgfuse/ontology#callsByName";
        /// Property: short name.
        NAME = "https://w3id.org/kgfuse/ontology#name";
        /// Property: qualified name.
        QUALIFIED_NAME = "https://w3id.org/kgfuse/ontology#qualifiedName";
        /// Property: function signature text.
        SIGNATURE = "https://w3id.org/kgfuse/ontology#signature";
        /// Property: function -> parameter.
        HAS_PARAMETER = "https://w3id.org/kgfuse/ontology#hasParameter";
        /// Property: parameter type annotation.
        PARAMETER_TYPE = "https://w3id.org/kgfuse/ontology#parameterType";
        /// Property: parameter default value.
        DEFAULT_VALUE = "https://w3id.org/kgfuse/ontology#defaultValue";
        /// Property: parameter position.
        POSITION = "https://w3id.org/kgfuse/ontology#position";
        /// Property: return type text.
        RETURNS = "https://w3id.org/kgfuse/ontology#returns";
        /// Property: source code text.
        CODE = "https://w3id.org/kgfuse/ontology#code";
        /// Property: domain knowledge text.
        KNOWLEDGE = "https://w3id.org/kgfuse/ontology#knowledge";
        /// Property: function -> knowledge unit.
        HAS_KNOWLEDGE = "https://w3id.org/kgfuse/ontology#hasKnowledge";
        /// Property: case -> function it calls.
        EXERCISES = "https://w3id.org/kgfuse/ontology#exercises";
        /// Property: function -> its cluster in the case base.
        IN_CLUSTER = "https://w3id.org/kgfuse/ontology#inCluster";
        /// Property: case base -> a case selected for coverage.
        SELECTED_CASE = "https://w3id.org/kgfuse/ontology#selectedCase";
        /// Property: selected case -> a cluster it covers.
        COVERS_CLUSTER = "https://w3id.org/kgfuse/ontology#coversCluster";
        /// Property: package -> hex of the little-endian f32 unit mean of its function vectors.
        CENTROID = "https://w3id.org/kgfuse/ontology#centroid";
        /// Property: case base -> share of packages its selected cases cover.
        PACKAGE_COVERAGE = "https://w3id.org/kgfuse/ontology#packageCoverage";
        /// Property: case base -> share of clusters its selected cases cover.
        CLUSTER_COVERAGE = "https://w3id.org/kgfuse/ontology#clusterCoverage";
        /// Property: function -> input tag.
        CONSUMES = "https://w3id.org/kgfuse/ontology#consumes";
        /// Property: function -> output tag.
        PRODUCES = "https://w3id.org/kgfuse/ontology#produces";
        /// Property: prose text of a chunk.
        TEXT = "https://w3id.org/kgfuse/ontology#text";
        /// Property: document -> chunk.
        HAS_CHUNK = "https://w3id.org/kgfuse/ontology#hasChunk";
        /// Property: stable chunk id.
        CHUNK_ID = "https://w3id.org/kgfuse/ontology#chunkId";
        /// Property: chunk section path.
        SECTION = "https://w3id.org/kgfuse/ontology#section";
        /// Property: chunk mentions entity.
        MENTIONS = "https://w3id.org/kgfuse/ontology#mentions";
        /// Property: policy applies to.
        APPLIES_TO = "https://w3id.org/kgfuse/ontology#appliesTo";
        /// Property: policy requires.
        REQUIRES = "https://w3id.org/kgfuse/ontology#requires";
        /// Property: supersedes an older source.
        SUPERSEDES = "https://w3id.org/kgfuse/ontology#supersedes";
        /// Property: escalation target.
        ESCALATES_TO = "https://w3id.org/kgfuse/ontology#escalatesTo";
        /// Property: two sources or policies disagree (symmetric).
        CONFLICTS_WITH = "https://w3id.org/kgfuse/ontology#conflictsWith";
        /// Property: policy -> the document or chunk stating it.
        STATED_IN = "https://w3id.org/kgfuse/ontology#statedIn";
        /// Property: source authority in [0, 1].
        AUTHORITY = "https://w3id.org/kgfuse/ontology#authority";
        /// Property: effective date.
        EFFECTIVE_DATE = "https://w3id.org/kgfuse/ontology#effectiveDate";
        /// Property: stale after this date.
        VALID_UNTIL = "https://w3id.org/kgfuse/ontology#validUntil";
        /// Property: path of the source file.
        SOURCE_FILE_PATH = "https://w3id.org/kgfuse/ontology#sourceFile";
        /// Property: SHA-256 of a source file.
        CONTENT_HASH = "https://w3id.org/kgfuse/ontology#contentHash";
        /// Property: canonical fingerprint of a loaded RDF file's triples
        /// (`rdfc-1.0:sha256:<hex>`, or `bytes:sha256:<hex>` when RDFC-1.0 was
        /// out of bounds).
        CANONICAL_HASH = "https://w3id.org/kgfuse/ontology#canonicalHash";
        /// Property: SHA-256 of the triples extracted from a source file.
        EXTRACTION_HASH = "https://w3id.org/kgfuse/ontology#extractionHash";
        /// Property: which extractor wrote a source file's graph.
        EXTRACTOR = "https://w3id.org/kgfuse/ontology#extractor";
        /// Property: first line of a definition.
        START_LINE = "https://w3id.org/kgfuse/ontology#startLine";
        /// Property: last line of a definition.
        END_LINE = "https://w3id.org/kgfuse/ontology#endLine";
        /// Property: inverse containment (module in module).
        CONTAINED_IN = "https://w3id.org/kgfuse/ontology#containedIn";
        /// Property: class extends base class / implements trait.
        EXTENDS = "https://w3id.org/kgfuse/ontology#extends";
        /// Property: case calls a function matched by name only.
        EXERCISES_BY_NAME = "https://w3id.org/kgfuse/ontology#exercisesByName";
    }

    /// kgfuse's record of loaded files (what a file's graph says about the
    /// file): never what a question is about.
    pub const FILE_RECORD: [&str; 6] = [
        SOURCE_FILE,
        SOURCE_FILE_PATH,
        CONTENT_HASH,
        CANONICAL_HASH,
        EXTRACTION_HASH,
        EXTRACTOR,
    ];
}

/// Full IRIs of the W3C and Dublin Core terms kgfuse uses directly.
pub mod w3c {
    /// `rdf:type`.
    pub const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
    /// `rdfs:label`.
    pub const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
    /// `rdfs:comment`.
    pub const RDFS_COMMENT: &str = "http://www.w3.org/2000/01/rdf-schema#comment";
    /// `dcterms:isPartOf`.
    pub const DCTERMS_IS_PART_OF: &str = "http://purl.org/dc/terms/isPartOf";
    /// `rdfs:subClassOf`.
    pub const RDFS_SUBCLASS_OF: &str = "http://www.w3.org/2000/01/rdf-schema#subClassOf";
    /// `rdfs:domain`.
    pub const RDFS_DOMAIN: &str = "http://www.w3.org/2000/01/rdf-schema#domain";
    /// `rdfs:range`.
    pub const RDFS_RANGE: &str = "http://www.w3.org/2000/01/rdf-schema#range";
    /// `owl:equivalentClass`.
    pub const OWL_EQUIVALENT_CLASS: &str = "http://www.w3.org/2002/07/owl#equivalentClass";
    /// `skos:prefLabel`.
    pub const SKOS_PREF_LABEL: &str = "http://www.w3.org/2004/02/skos/core#prefLabel";
    /// `skos:altLabel`.
    pub const SKOS_ALT_LABEL: &str = "http://www.w3.org/2004/02/skos/core#altLabel";
    /// `skos:definition`.
    pub const SKOS_DEFINITION: &str = "http://www.w3.org/2004/02/skos/core#definition";
    /// `dcterms:title`.
    pub const DCTERMS_TITLE: &str = "http://purl.org/dc/terms/title";
    /// `dcterms:description`.
    pub const DCTERMS_DESCRIPTION: &str = "http://purl.org/dc/terms/description";
    /// `dcterms:modified`.
    pub const DCTERMS_MODIFIED: &str = "http://purl.org/dc/terms/modified";
    /// `xsd:dateTime`.
    pub const XSD_DATE_TIME: &str = "http://www.w3.org/2001/XMLSchema#dateTime";
}

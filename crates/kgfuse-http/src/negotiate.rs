//! Content negotiation: which results format answers an `Accept` header.

use kgfuse::ResultsFormat;

/// Media types for SELECT and ASK results, the server's preference first.
const SOLUTION_TYPES: [(&str, ResultsFormat); 7] = [
    ("application/sparql-results+json", ResultsFormat::Json),
    ("application/json", ResultsFormat::Json),
    ("application/sparql-results+xml", ResultsFormat::Xml),
    ("application/xml", ResultsFormat::Xml),
    ("text/xml", ResultsFormat::Xml),
    ("text/csv", ResultsFormat::Csv),
    ("text/tab-separated-values", ResultsFormat::Tsv),
];

/// Media types for CONSTRUCT and DESCRIBE results (and Graph Store reads).
const GRAPH_TYPES: [(&str, ResultsFormat); 4] = [
    ("text/turtle", ResultsFormat::Turtle),
    ("application/x-turtle", ResultsFormat::Turtle),
    ("application/n-triples", ResultsFormat::NTriples),
    ("text/plain", ResultsFormat::NTriples),
];

/// What kind of result is being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultKind {
    /// SELECT or ASK.
    Solutions,
    /// CONSTRUCT, DESCRIBE, a Graph Store read.
    Graph,
}

impl ResultKind {
    fn offers(self) -> &'static [(&'static str, ResultsFormat)] {
        match self {
            Self::Solutions => &SOLUTION_TYPES,
            Self::Graph => &GRAPH_TYPES,
        }
    }

    /// The media types this kind can be sent as, for a 406 message.
    pub(crate) fn media_types(self) -> String {
        self.offers()
            .iter()
            .map(|(media, _)| *media)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The `Content-Type` a format is sent with.
pub(crate) fn content_type(format: ResultsFormat) -> &'static str {
    match format {
        ResultsFormat::Json => "application/sparql-results+json",
        ResultsFormat::Xml => "application/sparql-results+xml",
        ResultsFormat::Csv => "text/csv; charset=utf-8",
        ResultsFormat::Tsv => "text/tab-separated-values; charset=utf-8",
        ResultsFormat::Turtle => "text/turtle; charset=utf-8",
        ResultsFormat::NTriples => "application/n-triples",
    }
}

/// The format to send: `explicit` (a `format=` parameter: json, xml, csv, tsv,
/// turtle, ntriples) when it names one of these and fits the kind, else the offer
/// the `Accept` header rates highest (ties go to the server's order; no header
/// means the first offer). A name kgfuse does not know (`n3`, `rdf+xml`...) leaves
/// the choice to `Accept`. `None` means nothing acceptable: 406.
pub(crate) fn choose(
    kind: ResultKind,
    accept: Option<&str>,
    explicit: Option<&str>,
) -> Option<ResultsFormat> {
    let offers = kind.offers();
    if let Some(format) = explicit.and_then(ResultsFormat::from_name) {
        return offers.iter().any(|(_, f)| *f == format).then_some(format);
    }
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(offers[0].1);
    };
    let ranges: Vec<MediaRange<'_>> = accept.split(',').filter_map(MediaRange::parse).collect();
    let mut best: Option<(f32, ResultsFormat)> = None;
    for (media, format) in offers {
        let quality = quality_of(media, &ranges);
        if quality > 0.0 && best.is_none_or(|(q, _)| quality > q) {
            best = Some((quality, *format));
        }
    }
    best.map(|(_, format)| format)
}

/// One element of an `Accept` header: `type/subtype;q=0.5`.
#[derive(Debug)]
struct MediaRange<'a> {
    kind: &'a str,
    subtype: &'a str,
    quality: f32,
}

impl<'a> MediaRange<'a> {
    fn parse(text: &'a str) -> Option<Self> {
        let mut parts = text.split(';');
        let (kind, subtype) = parts.next()?.trim().split_once('/')?;
        let mut quality = 1.0;
        for parameter in parts {
            if let Some((name, value)) = parameter.split_once('=')
                && name.trim().eq_ignore_ascii_case("q")
            {
                quality = value.trim().parse::<f32>().ok()?.clamp(0.0, 1.0);
            }
        }
        Some(Self {
            kind: kind.trim(),
            subtype: subtype.trim(),
            quality,
        })
    }

    /// 3 for an exact match, 2 for `type/*`, 1 for `*/*`, 0 for none.
    fn specificity(&self, media: &str) -> u8 {
        let Some((kind, subtype)) = media.split_once('/') else {
            return 0;
        };
        if self.kind == "*" && self.subtype == "*" {
            1
        } else if !self.kind.eq_ignore_ascii_case(kind) {
            0
        } else if self.subtype == "*" {
            2
        } else if self.subtype.eq_ignore_ascii_case(subtype) {
            3
        } else {
            0
        }
    }
}

/// The quality the most specific matching range gives `media` (0 when none does).
fn quality_of(media: &str, ranges: &[MediaRange<'_>]) -> f32 {
    ranges
        .iter()
        .map(|range| (range.specificity(media), range.quality))
        .filter(|(specificity, _)| *specificity > 0)
        .max_by_key(|(specificity, _)| *specificity)
        .map_or(0.0, |(_, quality)| quality)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResultKind::{Graph, Solutions};

    #[test]
    fn no_header_or_any_type_gives_the_default() {
        assert_eq!(choose(Solutions, None, None), Some(ResultsFormat::Json));
        assert_eq!(
            choose(Graph, Some("*/*"), None),
            Some(ResultsFormat::Turtle)
        );
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert_eq!(
            choose(Solutions, Some(browser), None),
            Some(ResultsFormat::Xml)
        );
    }

    #[test]
    fn each_results_type_is_honoured() {
        for (accept, format) in [
            ("application/sparql-results+json", ResultsFormat::Json),
            ("application/sparql-results+xml", ResultsFormat::Xml),
            ("text/csv", ResultsFormat::Csv),
            ("text/tab-separated-values", ResultsFormat::Tsv),
        ] {
            assert_eq!(
                choose(Solutions, Some(accept), None),
                Some(format),
                "{accept}"
            );
        }
        assert_eq!(
            choose(Graph, Some("application/n-triples"), None),
            Some(ResultsFormat::NTriples)
        );
        assert_eq!(
            choose(Graph, Some("text/turtle"), Some("n3")),
            Some(ResultsFormat::Turtle),
            "an unknown name defers to Accept"
        );
    }

    #[test]
    fn quality_values_rank_and_zero_excludes() {
        let accept = "application/sparql-results+json;q=0.5, text/csv";
        assert_eq!(
            choose(Solutions, Some(accept), None),
            Some(ResultsFormat::Csv)
        );
        let accept = "text/*;q=0.9, text/csv;q=0";
        assert_eq!(
            choose(Solutions, Some(accept), None),
            Some(ResultsFormat::Xml)
        );
        assert_eq!(choose(Solutions, Some("image/png"), None), None);
        assert_eq!(
            choose(Graph, Some("application/sparql-results+json"), None),
            None
        );
    }

    #[test]
    fn an_explicit_format_wins_when_it_fits() {
        assert_eq!(
            choose(Solutions, Some("text/csv"), Some("tsv")),
            Some(ResultsFormat::Tsv)
        );
        assert_eq!(choose(Solutions, None, Some("turtle")), None);
        assert_eq!(
            choose(Graph, None, Some("nt")),
            Some(ResultsFormat::NTriples)
        );
        assert_eq!(
            choose(Graph, Some("text/turtle"), Some("n3")),
            Some(ResultsFormat::Turtle),
            "an unknown name defers to Accept"
        );
    }
}

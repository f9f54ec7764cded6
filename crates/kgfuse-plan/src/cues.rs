//! What a question's own words say about its shape, before any of them is
//! linked to the store: yes or no, how many, the most or least of something,
//! comparisons with numbers, negation, grouping, the columns asked for.
//!
//! These are words of English, not of any graph: question words, quantifiers,
//! comparatives and superlatives, and the measure a comparative adjective is
//! about ("cheapest" is about a price, "heavier" about a weight). Which property
//! of the store is that price is for the planner to find.

use crate::plan::{Comparison, SetFunction};
use kgfuse_lexicon::lexicon::analyze::words;

/// A question word by its index in [`words`] order.
pub type WordIndex = usize;

/// Which end of an order a question wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Greatest first ("most expensive", "highest").
    Descending,
    /// Least first ("cheapest", "lowest").
    Ascending,
}

/// A superlative: "the cheapest", "the most <noun>", "the three highest".
#[derive(Debug, Clone, PartialEq)]
pub struct Superlative {
    /// Greatest or least first.
    pub direction: Direction,
    /// The measure the adjective names, as nouns a property may be called by
    /// ("cheapest" -> price, cost); empty for "most", "highest" alone.
    pub measure: &'static [&'static str],
    /// The superlative's word.
    pub word: WordIndex,
}

/// A comparison with a number: "more than 10", "above 80", "at least 3".
#[derive(Debug, Clone, PartialEq)]
pub struct NumberComparison {
    /// The value on the left compares with the number by this.
    pub op: Comparison,
    /// The number as written (a decimal point kept).
    pub number: String,
    /// The first word of the comparison ("more").
    pub word: WordIndex,
    /// The number's word.
    pub number_word: WordIndex,
    /// The measure a comparative adjective names ("heavier than 5"), if any.
    pub measure: &'static [&'static str],
}

/// Two measures of the same thing compared: "wider than (they are) tall".
#[derive(Debug, Clone, PartialEq)]
pub struct MeasureComparison {
    /// The left measure's nouns.
    pub left: &'static [&'static str],
    /// How the left compares with the right.
    pub op: Comparison,
    /// The right measure's nouns.
    pub right: &'static [&'static str],
}

/// What a question's words say about its shape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cues {
    /// The question's words, lowercased.
    pub words: Vec<String>,
    /// The same words as written (same indices).
    pub written: Vec<String>,
    /// A yes-or-no question ("is there", "does", "are there any").
    pub ask: bool,
    /// "How many", "number of", "count".
    pub count: Option<WordIndex>,
    /// "average", "total", "maximum" ... with the word.
    pub function: Option<(SetFunction, WordIndex)>,
    /// "the cheapest", "the most".
    pub superlative: Option<Superlative>,
    /// "top 5", "the 3 most", "first ten": at most this many.
    pub limit: Option<usize>,
    /// "the 6th to 10th": rows skipped first.
    pub offset: Option<usize>,
    /// Comparisons with numbers.
    pub numbers: Vec<NumberComparison>,
    /// Two measures of one thing compared.
    pub measures_compared: Option<MeasureComparison>,
    /// Words that negate what follows ("no", "without", "not").
    pub negations: Vec<WordIndex>,
    /// "per X", "for each X", "by X": the first word of X.
    pub per: Option<WordIndex>,
    /// The question asks for names ("the names of", "with their name").
    pub names: bool,
}

/// Comparative and superlative adjectives, the measure nouns they are about
/// and which end is "more".
const MEASURE_ADJECTIVES: &[(&[&str], &[&str], Direction)] = &[
    (
        &["cheap", "cheaper", "cheapest", "inexpensive"],
        PRICE,
        Direction::Ascending,
    ),
    (
        &["expensive", "pricey", "costly", "priciest"],
        PRICE,
        Direction::Descending,
    ),
    (
        &["heavy", "heavier", "heaviest"],
        WEIGHT,
        Direction::Descending,
    ),
    (
        &["light", "lighter", "lightest"],
        WEIGHT,
        Direction::Ascending,
    ),
    (
        &["wide", "wider", "widest"],
        &["width", "breadth"],
        Direction::Descending,
    ),
    (
        &["narrow", "narrower", "narrowest"],
        &["width", "breadth"],
        Direction::Ascending,
    ),
    (
        &["tall", "taller", "tallest"],
        &["height"],
        Direction::Descending,
    ),
    (
        &["long", "longer", "longest"],
        &["length", "duration"],
        Direction::Descending,
    ),
    (
        &["short", "shorter", "shortest"],
        &["length", "duration", "height"],
        Direction::Ascending,
    ),
    (
        &["deep", "deeper", "deepest"],
        &["depth"],
        Direction::Descending,
    ),
    (&["old", "older", "oldest"], &["age"], Direction::Descending),
    (
        &["young", "younger", "youngest"],
        &["age"],
        Direction::Ascending,
    ),
    (
        &["big", "bigger", "biggest", "large", "larger", "largest"],
        SIZE,
        Direction::Descending,
    ),
    (
        &["small", "smaller", "smallest", "tiny"],
        SIZE,
        Direction::Ascending,
    ),
    (
        &["new", "newer", "newest", "recent", "latest"],
        DATE,
        Direction::Descending,
    ),
    (&["earliest", "first"], DATE, Direction::Ascending),
    (
        &["fast", "faster", "fastest", "quick", "quicker", "quickest"],
        &["speed"],
        Direction::Descending,
    ),
    (
        &["slow", "slower", "slowest"],
        &["speed"],
        Direction::Ascending,
    ),
];

const PRICE: &[&str] = &["price", "cost", "amount"];
const WEIGHT: &[&str] = &["weight", "mass"];
const SIZE: &[&str] = &["size", "area", "capacity", "volume"];
const DATE: &[&str] = &["date", "year", "time"];

/// Superlatives that name no measure of their own.
const PLAIN_SUPERLATIVES: &[(&str, Direction)] = &[
    ("most", Direction::Descending),
    ("highest", Direction::Descending),
    ("greatest", Direction::Descending),
    ("maximum", Direction::Descending),
    ("max", Direction::Descending),
    ("top", Direction::Descending),
    ("least", Direction::Ascending),
    ("fewest", Direction::Ascending),
    ("lowest", Direction::Ascending),
    ("minimum", Direction::Ascending),
    ("min", Direction::Ascending),
    ("bottom", Direction::Ascending),
];

/// Words that open a yes-or-no question about the data ("can I ...", "could
/// we ..." ask for permission or advice, which text answers).
const ASK_OPENERS: &[&str] = &[
    "is", "are", "does", "do", "did", "was", "were", "has", "have", "had",
];

/// Number words people write out.
const NUMBER_WORDS: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// Ordinals, first to twentieth.
const ORDINALS: &[&str] = &[
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
];

/// Words that negate.
const NEGATIONS: &[&str] = &[
    "no", "not", "without", "never", "none", "nobody", "nothing", "lack", "lacking", "lacks",
];

impl Cues {
    /// The cues of `question`.
    pub fn of(question: &str) -> Self {
        let written: Vec<String> = words(question).map(str::to_owned).collect();
        let words: Vec<String> = written.iter().map(|w| w.to_lowercase()).collect();
        let mut cues = Self {
            words,
            written,
            ..Self::default()
        };
        cues.read_form();
        cues.read_quantities();
        cues.read_numbers(question);
        cues.read_negations();
        cues.read_grouping();
        cues
    }

    fn word(&self, i: usize) -> &str {
        self.words.get(i).map_or("", String::as_str)
    }

    /// Yes or no, how many, which set function.
    fn read_form(&mut self) {
        let first = self.word(0);
        let wh_later = self
            .words
            .iter()
            .take(4)
            .any(|w| ["how", "what", "which", "who", "where", "when"].contains(&w.as_str()));
        self.ask = ASK_OPENERS.contains(&first) && !wh_later;
        for i in 0..self.words.len() {
            let (w, next) = (self.word(i).to_owned(), self.word(i + 1).to_owned());
            let (w, next) = (w.as_str(), next.as_str());
            // "the number of X" asks for a count near the start; "ranked by
            // their number of X" orders by one.
            let opening = i < 5 && !self.words[..i].iter().any(|w| w == "by");
            let number_of = w == "number" && next == "of" && opening;
            if (w == "how" && next == "many") || number_of || (w == "count" && i == 0) {
                self.count.get_or_insert(i);
            }
            let function = match w {
                "average" | "mean" | "avg" => Some(SetFunction::Avg),
                "total" | "sum" | "combined" | "overall" => Some(SetFunction::Sum),
                _ => None,
            };
            if let Some(function) = function
                && self.function.is_none()
                && !(w == "total" && next == "number")
            {
                self.function = Some((function, i));
            }
        }
        if self.word(0) == "what" || self.word(0) == "whats" {
            // "What is the highest price": the value, not the thing.
            for i in 1..self.words.len().min(5) {
                let function = match self.word(i) {
                    "highest" | "maximum" | "max" | "largest" | "biggest" | "greatest" => {
                        Some(SetFunction::Max)
                    }
                    "lowest" | "minimum" | "min" | "smallest" | "least" => Some(SetFunction::Min),
                    _ => None,
                };
                if let Some(function) = function
                    && self.function.is_none()
                    && matches!(self.word(i - 1), "the" | "is")
                    && is_measure_noun_phrase(self.word(i + 1))
                {
                    self.function = Some((function, i));
                }
            }
        }
    }

    /// Superlatives, top-N and ordinal ranges.
    fn read_quantities(&mut self) {
        for i in 0..self.words.len() {
            let w = self.word(i).to_owned();
            if self.superlative.is_none() {
                if let Some((_, measure, direction)) = MEASURE_ADJECTIVES
                    .iter()
                    .find(|(forms, _, _)| forms.contains(&w.as_str()))
                    && is_superlative_form(&w, self.word(i.wrapping_sub(1)))
                {
                    self.superlative = Some(Superlative {
                        direction: *direction,
                        measure,
                        word: i,
                    });
                } else if let Some((_, direction)) =
                    PLAIN_SUPERLATIVES.iter().find(|(s, _)| *s == w)
                    && !(w == "most" && self.word(i + 1) == "of")
                    && !(w == "least" && self.word(i - 1) == "at")
                    && !(matches!(w.as_str(), "most" | "least")
                        && self.word(i.wrapping_sub(1)) == "at")
                {
                    // "most expensive": the adjective carries the measure.
                    let next = self.word(i + 1);
                    let adjective = MEASURE_ADJECTIVES
                        .iter()
                        .find(|(forms, _, _)| forms.contains(&next));
                    let (measure, direction) = match adjective {
                        Some((_, measure, d)) if *direction == Direction::Descending => {
                            (*measure, *d)
                        }
                        Some((_, measure, d)) => (*measure, flip(*d)),
                        None => (&[][..], *direction),
                    };
                    self.superlative = Some(Superlative {
                        direction,
                        measure,
                        word: i,
                    });
                }
            }
            // "top 5", "first 3", "5 most", "the 3 cheapest".
            if matches!(w.as_str(), "top" | "first" | "last")
                && let Some(n) = number_of(self.word(i + 1))
            {
                self.limit = Some(n);
            }
            if let Some(n) = number_of(&w)
                && self.word(i.wrapping_sub(1)) == "the"
                && (PLAIN_SUPERLATIVES
                    .iter()
                    .any(|(s, _)| *s == self.word(i + 1))
                    || MEASURE_ADJECTIVES
                        .iter()
                        .any(|(f, _, _)| f.contains(&self.word(i + 1))))
            {
                self.limit = Some(n);
            }
            // "the 6th to 10th", "ranked 6 to 10", "positions 6 through 10".
            if let Some(from) = ordinal_of(&w)
                && matches!(
                    self.word(i + 1),
                    "to" | "through" | "and" | "till" | "until"
                )
                && let Some(to) = ordinal_of(self.word(i + 2))
                && to >= from
                && from >= 1
            {
                self.offset = Some(from - 1);
                self.limit = Some(to - from + 1);
            }
        }
        self.read_counted_superlative();
        self.read_ordinal_run();
        if self.superlative.is_some() && self.limit.is_none() && self.function.is_none() {
            self.limit = Some(1);
        }
    }

    /// "the five departments with the most students": a count after "the"
    /// and before the superlative.
    fn read_counted_superlative(&mut self) {
        let Some(superlative) = &self.superlative else {
            return;
        };
        if self.limit.is_some() {
            return;
        }
        let before = superlative.word;
        for i in before.saturating_sub(6)..before {
            if self.word(i.wrapping_sub(1)) == "the"
                && let Some(n) = number_of(self.word(i))
            {
                self.limit = Some(n);
                return;
            }
        }
    }

    /// "second, third and fourth": rows skipped and kept.
    fn read_ordinal_run(&mut self) {
        let mut i = 0;
        while i < self.words.len() {
            let mut positions = Vec::new();
            let mut j = i;
            while let Some(position) = ORDINALS.iter().position(|o| *o == self.word(j)) {
                positions.push(position + 1);
                j += 1;
                if self.word(j) == "and" {
                    j += 1;
                }
            }
            if positions.len() >= 2 {
                let (low, high) = (positions.iter().min(), positions.iter().max());
                if let (Some(&low), Some(&high)) = (low, high) {
                    self.offset = Some(low - 1);
                    self.limit = Some(high - low + 1);
                }
                // A rank is counted from the top.
                self.superlative.get_or_insert(Superlative {
                    direction: Direction::Descending,
                    measure: &[],
                    word: j.saturating_sub(1),
                });
                return;
            }
            i = j.max(i + 1);
        }
    }

    /// "more than 10", "above 80.5", "at least 3", "between 2 and 5", "10 or
    /// more", and two measures compared ("wider than tall"): each reading at
    /// word `i` says where the next starts.
    fn read_numbers(&mut self, question: &str) {
        let decimals = decimal_numbers(question);
        let mut i = 0;
        while i < self.words.len() {
            i = self
                .comparative_at(i, &decimals)
                .or_else(|| self.between_at(i, &decimals))
                .or_else(|| self.comparison_at(i, &decimals))
                .or_else(|| self.or_more_at(i, &decimals))
                .unwrap_or(i + 1);
        }
    }

    fn push_number(&mut self, op: Comparison, number: String, word: usize, number_word: usize) {
        self.numbers.push(NumberComparison {
            op,
            number,
            word,
            number_word,
            measure: &[],
        });
    }

    /// A comparative adjective: "heavier than 5", "wider than (they are) tall".
    fn comparative_at(&mut self, i: usize, decimals: &[(String, usize)]) -> Option<usize> {
        let (w, next) = (self.word(i), self.word(i + 1));
        let (_, measure, direction) = MEASURE_ADJECTIVES
            .iter()
            .find(|(forms, _, _)| forms.contains(&w) && w.ends_with("er") && next == "than")?;
        let op = match direction {
            Direction::Descending => Comparison::Greater,
            Direction::Ascending => Comparison::Less,
        };
        let mut j = i + 2;
        while matches!(
            self.word(j),
            "they" | "it" | "its" | "their" | "are" | "is" | "the"
        ) {
            j += 1;
        }
        if let Some((number, at)) = self.number_at(j, decimals) {
            self.numbers.push(NumberComparison {
                op,
                number,
                word: i,
                number_word: at,
                measure,
            });
        } else if let Some((_, right, _)) = MEASURE_ADJECTIVES
            .iter()
            .find(|(forms, _, _)| forms.contains(&self.word(j)))
        {
            self.measures_compared = Some(MeasureComparison {
                left: measure,
                op,
                right,
            });
        }
        Some(i + 2)
    }

    /// "between 2 and 5": both ends, included.
    fn between_at(&mut self, i: usize, decimals: &[(String, usize)]) -> Option<usize> {
        if self.word(i) != "between" {
            return None;
        }
        let (low, at) = self.number_at(i + 1, decimals)?;
        if self.word(at + 1) != "and" {
            return None;
        }
        let (high, high_at) = self.number_at(at + 2, decimals)?;
        self.push_number(Comparison::GreaterOrEqual, low, i, at);
        self.push_number(Comparison::LessOrEqual, high, i, high_at);
        Some(high_at + 1)
    }

    /// "more than 10", "at least 3", "above 80.5", "exactly 4".
    fn comparison_at(&mut self, i: usize, decimals: &[(String, usize)]) -> Option<usize> {
        let (op, skip) = match (self.word(i), self.word(i + 1)) {
            (
                "more" | "greater" | "higher" | "larger" | "bigger" | "over" | "above" | "exceeds"
                | "exceeding",
                "than",
            ) => (Comparison::Greater, 2),
            ("less" | "fewer" | "lower" | "smaller" | "under" | "below", "than") => {
                (Comparison::Less, 2)
            }
            ("at", "least") => (Comparison::GreaterOrEqual, 2),
            ("at", "most") => (Comparison::LessOrEqual, 2),
            ("over" | "above" | "exceeding" | "exceeds", _) => (Comparison::Greater, 1),
            ("under" | "below", _) => (Comparison::Less, 1),
            ("exactly" | "equals" | "equal", _) => (Comparison::Equal, 1),
            _ => return None,
        };
        let (number, at) = self.number_at(i + skip, decimals)?;
        self.push_number(op, number, i, at);
        Some(at + 1)
    }

    /// "10 or more", "5 or fewer".
    fn or_more_at(&mut self, i: usize, decimals: &[(String, usize)]) -> Option<usize> {
        let (number, at) = self.number_at(i, decimals)?;
        if self.word(at + 1) != "or" {
            return None;
        }
        let op = match self.word(at + 2) {
            "more" | "greater" | "higher" | "above" => Comparison::GreaterOrEqual,
            "less" | "fewer" | "lower" | "below" => Comparison::LessOrEqual,
            _ => return None,
        };
        self.push_number(op, number, i, at);
        Some(at + 3)
    }

    /// The number written at word `i` (digits, a decimal, or a number word),
    /// with the index of its last word.
    fn number_at(&self, i: usize, decimals: &[(String, usize)]) -> Option<(String, usize)> {
        let w = self.word(i);
        if let Some((text, _)) = decimals.iter().find(|(_, at)| *at == i) {
            return Some((text.clone(), i + words_in(text) - 1));
        }
        if !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()) {
            return Some((w.to_owned(), i));
        }
        NUMBER_WORDS
            .iter()
            .position(|n| *n == w)
            .map(|n| (n.to_string(), i))
    }

    /// Words that negate.
    fn read_negations(&mut self) {
        for i in 0..self.words.len() {
            let w = self.word(i);
            let contracted = w == "t"
                && matches!(
                    self.word(i.wrapping_sub(1)),
                    "don" | "doesn" | "didn" | "isn" | "aren" | "hasn" | "haven" | "wasn" | "weren"
                );
            if (NEGATIONS.contains(&w) && !(w == "no" && self.word(i + 1) == "more")) || contracted
            {
                self.negations.push(i);
            }
        }
    }

    /// "per X", "for each X", "for every X", "by X" after a set function, and
    /// whether names are asked for.
    fn read_grouping(&mut self) {
        for i in 0..self.words.len() {
            let w = self.word(i).to_owned();
            let w = w.as_str();
            let grouping = match w {
                "per" => Some(i + 1),
                // "for each X" groups; "each X" / "every X" group only what is
                // measured ("how many pets does each student have"): "the age
                // of every teacher" lists.
                "each" | "every"
                    if self.word(i.wrapping_sub(1)) == "for"
                        || self.function.is_some()
                        || self.count.is_some() =>
                {
                    Some(i + 1)
                }
                "by" if self.function.is_some() || self.count.is_some() => Some(i + 1),
                _ => None,
            };
            if let Some(at) = grouping
                && self.per.is_none()
            {
                self.per = Some(at);
            }
            // "Name the five departments ...": a verb, not a column.
            let imperative = i == 0 && w == "name";
            if !imperative
                && matches!(
                    w,
                    "name"
                        | "names"
                        | "called"
                        | "titled"
                        | "title"
                        | "titles"
                        | "label"
                        | "labels"
                )
            {
                self.names = true;
            }
        }
    }

    /// Whether the question has any cue beyond a lookup.
    pub fn is_lookup(&self) -> bool {
        !self.ask
            && self.count.is_none()
            && self.function.is_none()
            && self.superlative.is_none()
            && self.limit.is_none()
            && self.numbers.is_empty()
            && self.measures_compared.is_none()
            && self.negations.is_empty()
    }
}

fn flip(direction: Direction) -> Direction {
    match direction {
        Direction::Descending => Direction::Ascending,
        Direction::Ascending => Direction::Descending,
    }
}

/// "cheapest", or "cheap" after "most"/"least".
fn is_superlative_form(word: &str, before: &str) -> bool {
    word.ends_with("est") || matches!(before, "most" | "least")
}

/// Words that may follow "highest" when it names a value ("the highest price").
fn is_measure_noun_phrase(word: &str) -> bool {
    !word.is_empty() && !ASK_OPENERS.contains(&word) && !matches!(word, "of" | "and" | "or")
}

/// A count written as digits or as a word.
fn number_of(word: &str) -> Option<usize> {
    word.parse()
        .ok()
        .or_else(|| NUMBER_WORDS.iter().position(|n| *n == word))
}

/// "6th", "sixth", "6" as a position.
fn ordinal_of(word: &str) -> Option<usize> {
    let digits = word.trim_end_matches(|c: char| c.is_alphabetic());
    if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
        return digits.parse().ok();
    }
    ORDINALS.iter().position(|o| *o == word).map(|i| i + 1)
}

/// Numbers with a decimal point ("3.5"), which [`words`] splits in two: the
/// text and the index of its first word.
fn decimal_numbers(question: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut index = 0;
    let mut rest = question;
    // Walk the words with their byte offsets, as `words` splits them.
    let mut offsets = Vec::new();
    let mut at = 0;
    while let Some(start) = rest.find(|c: char| c.is_alphanumeric() || c == '_') {
        let tail = &rest[start..];
        let len = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        offsets.push((at + start, &tail[..len]));
        at += start + len;
        rest = &tail[len..];
    }
    while index + 1 < offsets.len() {
        let (start, first) = offsets[index];
        let (next_start, second) = offsets[index + 1];
        let joined = &question[start..next_start + second.len()];
        let is_digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
        if is_digits(first)
            && is_digits(second)
            && joined.len() == first.len() + 1 + second.len()
            && joined.as_bytes()[first.len()] == b'.'
        {
            out.push((joined.to_owned(), index));
            index += 2;
        } else {
            index += 1;
        }
    }
    out
}

/// How many words `text` makes.
fn words_in(text: &str) -> usize {
    words(text).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yes_or_no_questions_open_with_a_verb() {
        assert!(Cues::of("Do we have vendors in Oslo?").ask);
        assert!(Cues::of("Is there a department without a manager?").ask);
        assert!(Cues::of("Are there any courses taught by Lecturer3?").ask);
        assert!(!Cues::of("Which vendors are based in Oslo?").ask);
        assert!(
            !Cues::of("Is it true? What is the price of X").ask,
            "a wh-word early makes it a lookup"
        );
    }

    #[test]
    fn each_or_every_groups_only_a_measure() {
        assert_eq!(
            Cues::of("What is the age and hometown of every teacher?").per,
            None
        );
        assert_eq!(Cues::of("List the name of each singer.").per, None);
        assert_eq!(
            Cues::of("How many pets does each student have?").per,
            Some(5)
        );
        assert_eq!(Cues::of("Show the average age for each city.").per, Some(6));
    }

    #[test]
    fn counts_and_set_functions() {
        assert_eq!(Cues::of("How many students are there?").count, Some(0));
        assert_eq!(Cues::of("What is the number of courses?").count, Some(3));
        let c = Cues::of("What is the average rate per card scheme?");
        assert_eq!(c.function, Some((SetFunction::Avg, 3)));
        assert_eq!(c.per, Some(6));
        let c = Cues::of("What is the highest price of a pump?");
        assert_eq!(c.function, Some((SetFunction::Max, 3)));
        assert!(
            Cues::of("What is the total number of vendors?")
                .function
                .is_none()
        );
    }

    #[test]
    fn superlatives_carry_their_measure_and_end() {
        let c = Cues::of("Which pump is the cheapest?");
        let s = c.superlative.expect("superlative");
        assert_eq!((s.direction, s.measure), (Direction::Ascending, PRICE));
        assert_eq!(c.limit, Some(1));
        let s = Cues::of("What is the most expensive component?")
            .superlative
            .expect("s");
        assert_eq!((s.direction, s.measure), (Direction::Descending, PRICE));
        let s = Cues::of("Which product is the least expensive?")
            .superlative
            .expect("s");
        assert_eq!(s.direction, Direction::Ascending);
        let c = Cues::of("Which department has the most students?");
        let s = c.superlative.expect("s");
        assert_eq!((s.direction, s.measure.len()), (Direction::Descending, 0));
        assert!(
            Cues::of("Which courses does at least one student take?")
                .superlative
                .is_none()
        );
        assert!(Cues::of("Which vendors sell pumps?").superlative.is_none());
    }

    #[test]
    fn top_n_and_ordinal_ranges() {
        let c = Cues::of("List the top 5 merchants by volume");
        assert_eq!(c.limit, Some(5));
        let c = Cues::of("Give the 3 cheapest products");
        assert_eq!(c.limit, Some(3));
        let c = Cues::of("Which are the 6th to 10th most expensive items?");
        assert_eq!((c.offset, c.limit), (Some(5), Some(5)));
        let c = Cues::of("Name the five departments with the most students");
        assert_eq!(c.limit, Some(5));
        let c = Cues::of("Which teams come second, third and fourth by points?");
        assert_eq!((c.offset, c.limit), (Some(1), Some(3)));
        assert_eq!(Cues::of("What is the first name of Anna?").offset, None);
    }

    #[test]
    fn comparisons_with_numbers_and_between_measures() {
        let c = Cues::of("Which departments have more than 10 students?");
        assert_eq!(c.numbers.len(), 1);
        assert_eq!(
            (c.numbers[0].op, c.numbers[0].number.as_str()),
            (Comparison::Greater, "10")
        );
        assert_eq!(c.numbers[0].number_word, 5);
        let c = Cues::of("Fee rules with a rate above 80.5");
        assert_eq!(c.numbers[0].number, "80.5");
        let c = Cues::of("Products between 2 and 5 kg");
        assert_eq!(c.numbers.len(), 2);
        let c = Cues::of("Which items are heavier than 5?");
        assert_eq!(c.numbers[0].measure, WEIGHT);
        let c = Cues::of("Which boxes are wider than they are tall?");
        let m = c.measures_compared.expect("measures");
        assert_eq!(
            (m.left[0], m.op, m.right[0]),
            ("width", Comparison::Greater, "height")
        );
        let c = Cues::of("Which merchants have 3 or more acquirers?");
        assert_eq!(c.numbers[0].op, Comparison::GreaterOrEqual);
    }

    #[test]
    fn negation_words() {
        assert_eq!(
            Cues::of("Which departments have no manager?").negations,
            [3]
        );
        assert_eq!(Cues::of("Students without an advisor").negations, [1]);
        assert_eq!(
            Cues::of("Which vendors don't sell pumps?").negations.len(),
            1
        );
        assert!(Cues::of("Which vendors sell pumps?").negations.is_empty());
    }

    #[test]
    fn lookups_have_no_cues() {
        assert!(Cues::of("Who is the head of Department3?").is_lookup());
        assert!(Cues::of("What is the email address of Anna Keller?").is_lookup());
        assert!(!Cues::of("How many vendors are in Norway?").is_lookup());
    }
}

//! Sections of a document and their size-bounded chunks: Markdown headings (ATX and
//! setext, never inside code fences), section paths and slugs, and the splitting of a
//! section at paragraph, sentence (or code line), whitespace and character boundaries.

use kgfuse_core::text::{SentenceBreaks, sentence_ranges, trimmed};
use std::collections::HashSet;
use std::ops::Range;

/// Section slug of text outside any heading.
const BODY_SLUG: &str = "body";

// ---------------------------------------------------------------------------------
// Sections
// ---------------------------------------------------------------------------------

/// A run of text under one heading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Section {
    /// Heading titles from the top; empty outside headings.
    pub(super) path: Vec<String>,
    /// Byte range of the section's text (heading excluded).
    pub(super) body: Range<usize>,
}

/// A Markdown heading.
#[derive(Debug)]
struct Heading {
    level: usize,
    title: String,
    /// Byte range of the heading line(s), line ends included.
    lines: Range<usize>,
}

/// An open code fence: its character and length.
#[derive(Debug, Clone, Copy)]
struct Fence {
    marker: char,
    len: usize,
}

/// The lines of `text[range]` without their `\n`, with their byte offsets in `text`.
pub(super) fn lines_in(text: &str, range: Range<usize>) -> impl Iterator<Item = (usize, &str)> {
    let start = range.start;
    text[range]
        .split_inclusive('\n')
        .scan(start, |offset, line| {
            let line_start = *offset;
            *offset += line.len();
            Some((line_start, line.strip_suffix('\n').unwrap_or(line)))
        })
}

/// `line` without up to three spaces of indentation, or `None` if indented further
/// (an indented code block).
fn unindent(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(' ');
    (line.len() - rest.len() <= 3).then_some(rest)
}

/// The fence a line opens: three or more backticks or tildes.
fn opens_fence(line: &str) -> Option<Fence> {
    let rest = unindent(line)?;
    let marker = rest.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = rest.len() - rest.trim_start_matches(marker).len();
    let info = &rest[len..];
    (len >= 3 && !(marker == '`' && info.contains('`'))).then_some(Fence { marker, len })
}

/// Whether `line` closes `fence`.
fn closes_fence(line: &str, fence: Fence) -> bool {
    unindent(line).is_some_and(|rest| {
        let len = rest.len() - rest.trim_start_matches(fence.marker).len();
        len >= fence.len && rest[len..].trim().is_empty()
    })
}

/// An ATX heading `## Title ##`: its level and title.
fn atx_heading(line: &str) -> Option<(usize, String)> {
    let rest = unindent(line)?;
    let level = rest.len() - rest.trim_start_matches('#').len();
    let after = &rest[level..];
    if !(1..=6).contains(&level) || !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let title = after.trim();
    let without_closing = title.trim_end_matches('#');
    let title = if without_closing.is_empty() {
        ""
    } else if without_closing.ends_with([' ', '\t']) {
        without_closing.trim_end()
    } else {
        title
    };
    Some((level, title.to_owned()))
}

/// The level a setext underline (`===` or `---`) gives the line above it.
fn setext_level(line: &str) -> Option<usize> {
    let rest = unindent(line)?.trim_end();
    if !rest.is_empty() && rest.chars().all(|c| c == '=') {
        Some(1)
    } else if rest.len() >= 2 && rest.chars().all(|c| c == '-') {
        Some(2)
    } else {
        None
    }
}

/// Whether a line may be the text of a setext heading: plain paragraph text, not a
/// list item, quote, table row, HTML or thematic break.
fn is_setext_text(line: &str) -> bool {
    let Some(rest) = unindent(line) else {
        return false;
    };
    let rest = rest.trim_end();
    let list_item = ["- ", "* ", "+ "]
        .iter()
        .any(|marker| rest.starts_with(marker))
        || rest.split_once(['.', ')']).is_some_and(|(number, _)| {
            !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())
        });
    let thematic_break =
        rest.len() >= 3 && rest.chars().all(|c| matches!(c, '-' | '*' | '_' | ' '));
    !rest.is_empty() && !list_item && !thematic_break && !rest.starts_with(['>', '|', '<'])
}

/// The headings of a Markdown text, outside fenced code blocks.
fn markdown_headings(text: &str) -> Vec<Heading> {
    let lines: Vec<(usize, &str)> = lines_in(text, 0..text.len()).collect();
    let line_start = |index: usize| lines.get(index).map_or(text.len(), |&(start, _)| start);
    let mut headings = Vec::new();
    let mut fence: Option<Fence> = None;
    let mut at_block_start = true; // after a blank line, a heading, a fence or the start
    let mut index = 0;
    while let Some(&(start, line)) = lines.get(index) {
        index += 1;
        if let Some(open) = fence {
            if closes_fence(line, open) {
                fence = None;
                at_block_start = true;
            }
            continue;
        }
        if let Some(open) = opens_fence(line) {
            fence = Some(open);
            continue;
        }
        if let Some((level, title)) = atx_heading(line) {
            headings.push(Heading {
                level,
                title,
                lines: start..line_start(index),
            });
            at_block_start = true;
            continue;
        }
        if at_block_start
            && is_setext_text(line)
            && let Some(level) = lines.get(index).and_then(|&(_, under)| setext_level(under))
        {
            index += 1;
            headings.push(Heading {
                level,
                title: line.trim().to_owned(),
                lines: start..line_start(index),
            });
            continue;
        }
        at_block_start = line.trim().is_empty();
    }
    headings
}

/// The sections of a Markdown text and its first level-1 heading (the title
/// candidate).
///
/// When the first heading is the only level-1 heading, it titles the document: the
/// text under it has an empty path and the headings below it start the paths.
pub(super) fn markdown_sections(text: &str) -> (Vec<Section>, Option<String>) {
    let headings = markdown_headings(text);
    let first_h1 = headings
        .iter()
        .find(|h| h.level == 1 && !h.title.is_empty())
        .map(|h| h.title.clone());
    let title_heading = headings.first().is_some_and(|h| h.level == 1)
        && headings.iter().filter(|h| h.level == 1).count() == 1;

    let mut sections = vec![Section {
        path: Vec::new(),
        body: 0..headings.first().map_or(text.len(), |h| h.lines.start),
    }];
    let mut stack: Vec<(usize, &str)> = Vec::new();
    for (index, heading) in headings.iter().enumerate() {
        if !(index == 0 && title_heading) {
            while stack
                .last()
                .is_some_and(|&(level, _)| level >= heading.level)
            {
                stack.pop();
            }
            stack.push((heading.level, &heading.title));
        }
        let end = headings
            .get(index + 1)
            .map_or(text.len(), |h| h.lines.start);
        sections.push(Section {
            path: stack
                .iter()
                .filter(|(_, title)| !title.is_empty())
                .map(|(_, title)| (*title).to_owned())
                .collect(),
            body: heading.lines.end..end,
        });
    }
    (sections, first_h1)
}

/// Lowercase letters and digits with single `-` between words: `Remote work (EU)` ->
/// `remote-work-eu`.
pub(super) fn slugify(text: &str) -> String {
    let mut slug = String::with_capacity(text.len());
    let mut gap = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if gap && !slug.is_empty() {
                slug.push('-');
            }
            gap = false;
            slug.push(c);
        } else {
            gap = true;
        }
    }
    slug
}

/// The slugified heading path joined with `/`, or `body` outside headings.
pub(super) fn section_slug(path: &[String]) -> String {
    let parts: Vec<String> = path
        .iter()
        .map(|title| slugify(title))
        .filter(|slug| !slug.is_empty())
        .collect();
    if parts.is_empty() {
        BODY_SLUG.to_owned()
    } else {
        parts.join("/")
    }
}

/// `slug`, or `slug-2`, `slug-3`, ... when an earlier section of the document already
/// took it (two sections with the same heading path).
pub(super) fn unique_slug(slug: String, used: &mut HashSet<String>) -> String {
    let mut candidate = slug.clone();
    let mut number = 1;
    while used.contains(&candidate) {
        number += 1;
        candidate = format!("{slug}-{number}");
    }
    used.insert(candidate.clone());
    candidate
}

// ---------------------------------------------------------------------------------
// Chunking
// ---------------------------------------------------------------------------------

/// A paragraph, or a run of lines holding a fenced code block.
#[derive(Debug)]
struct Block {
    range: Range<usize>,
    code: bool,
}

fn char_len(text: &str) -> usize {
    text.chars().count()
}

/// Splits `text[range]` into chunk ranges of at most `max` characters each, at the
/// coarsest boundary that fits: paragraphs, then sentences (lines in code), then
/// whitespace, then characters. Consecutive pieces are packed while they fit.
pub(super) fn chunk_ranges(
    text: &str,
    range: Range<usize>,
    markdown: bool,
    max: usize,
) -> Vec<Range<usize>> {
    let mut pieces = Vec::new();
    for block in blocks(text, range, markdown) {
        if char_len(&text[block.range.clone()]) <= max {
            pieces.push(block.range);
            continue;
        }
        let parts = if block.code {
            code_lines(text, block.range)
        } else {
            sentence_ranges(text, block.range, SentenceBreaks::Prose)
        };
        for part in parts {
            if char_len(&text[part.clone()]) <= max {
                pieces.push(part);
            } else {
                pieces.extend(hard_split(text, part, max));
            }
        }
    }
    pack(text, pieces, max)
}

/// The paragraphs of `text[range]`: runs of non-blank lines; in Markdown a fenced
/// code block stays whole, blank lines included.
fn blocks(text: &str, range: Range<usize>, markdown: bool) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    let mut fence: Option<Fence> = None;
    for (start, line) in lines_in(text, range) {
        let end = start + line.len();
        let extend = |current: &mut Option<Block>, code: bool| {
            let block = current.get_or_insert(Block {
                range: start..end,
                code,
            });
            block.range.end = end;
            block.code |= code;
        };
        if markdown {
            if let Some(open) = fence {
                if closes_fence(line, open) {
                    fence = None;
                }
                extend(&mut current, true);
                continue;
            }
            if let Some(open) = opens_fence(line) {
                fence = Some(open);
                extend(&mut current, true);
                continue;
            }
        }
        if line.trim().is_empty() {
            blocks.extend(current.take());
        } else {
            extend(&mut current, false);
        }
    }
    blocks.extend(current);
    blocks
}

/// The non-blank lines of `text[range]`, indentation kept.
fn code_lines(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
    lines_in(text, range)
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(start, line)| start..start + line.trim_end().len())
        .collect()
}

/// Cuts `text[range]` into pieces of at most `max` characters, at the last whitespace
/// that fits, else after `max` characters.
fn hard_split(text: &str, range: Range<usize>, max: usize) -> Vec<Range<usize>> {
    let mut parts = Vec::new();
    let mut start = range.start;
    while start < range.end {
        let rest = &text[start..range.end];
        let limit = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        if limit == rest.len() {
            parts.extend(trimmed(text, start..range.end));
            break;
        }
        let cut = if rest[limit..].starts_with(char::is_whitespace) {
            limit
        } else {
            rest[..limit]
                .char_indices()
                .rev()
                .find(|&(i, c)| i > 0 && c.is_whitespace())
                .map_or(limit, |(i, _)| i)
        };
        parts.extend(trimmed(text, start..start + cut));
        let after = &rest[cut..];
        start += cut + (after.len() - after.trim_start().len());
    }
    parts
}

/// Merges consecutive pieces into chunks while a chunk (gaps included) stays within
/// `max` characters.
fn pack(text: &str, pieces: Vec<Range<usize>>, max: usize) -> Vec<Range<usize>> {
    let mut chunks: Vec<Range<usize>> = Vec::new();
    let mut current_len = 0;
    for piece in pieces {
        if let Some(current) = chunks.last_mut() {
            let extra = char_len(&text[current.end..piece.end]);
            if current_len + extra <= max {
                current.end = piece.end;
                current_len += extra;
                continue;
            }
        }
        current_len = char_len(&text[piece.clone()]);
        chunks.push(piece);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_paragraphs_split_at_sentences_then_words_then_characters() {
        let sentences = "Ünïcödé sentence one is here. Sentence two follows it! Is this three? ";
        let word = "Wörterbuchverwaltungsübersicht".repeat(4); // one 120-character word
        let text = format!(
            "{}\n\n{word} and then some trailing words here",
            sentences.repeat(3)
        );
        let ranges = chunk_ranges(&text, 0..text.len(), false, 40);
        assert!(ranges.len() > 5);
        for range in &ranges {
            let chunk = &text[range.clone()];
            assert!(chunk.chars().count() <= 40, "{chunk:?}");
            assert_eq!(chunk, chunk.trim());
        }
        let first = &text[ranges[0].clone()];
        assert_eq!(first, "Ünïcödé sentence one is here.");
        // The long word is cut into 40-character pieces, on character boundaries.
        let pieces: Vec<&str> = ranges
            .iter()
            .map(|r| &text[r.clone()])
            .filter(|c| c.starts_with("Wört") || c.contains("verwaltungs"))
            .collect();
        assert!(pieces.iter().any(|p| p.chars().count() == 40));
        // Nothing is lost but whitespace.
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        let joined: String = ranges.iter().map(|r| squeeze(&text[r.clone()])).collect();
        assert_eq!(joined, squeeze(&text));
    }
}

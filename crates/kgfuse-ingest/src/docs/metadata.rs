//! Document metadata: the leading front-matter block of a file and the
//! `<file name>.meta.toml` sidecar next to it, read key by key into [`Metadata`].

use super::chunk::lines_in;
use super::problem;
use crate::Problem;
use std::ops::Range;
use std::path::Path;

/// Document metadata from front matter and the sidecar file.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Metadata {
    pub(super) title: Option<String>,
    /// In 0..=1.
    pub(super) authority: Option<f64>,
    /// `YYYY-MM-DD`.
    pub(super) effective_date: Option<String>,
    /// `YYYY-MM-DD`.
    pub(super) valid_until: Option<String>,
    pub(super) source_id: Option<String>,
    pub(super) aliases: Vec<String>,
}

/// A metadata value as written.
#[derive(Debug, Clone, PartialEq)]
enum MetaValue {
    /// A scalar (numbers and dates as their text).
    Text(String),
    /// A list of strings.
    List(Vec<String>),
    /// Something else (a TOML table or boolean), named for the message.
    Other(&'static str),
}

impl Metadata {
    /// Sets the known `key` from `value`, or says why the value is unusable (the key
    /// is then left as it was). Unknown keys are ignored.
    fn set(&mut self, key: &str, value: MetaValue) -> Result<(), String> {
        let key = key.trim().to_lowercase().replace(['-', ' '], "_");
        match key.as_str() {
            "title" => {
                let title = single(&key, value)?;
                if title.is_empty() {
                    return Err("title is empty; ignored".to_owned());
                }
                self.title = Some(title);
            }
            "authority" => {
                let text = single(&key, value)?;
                match text.parse::<f64>() {
                    Ok(authority) if (0.0..=1.0).contains(&authority) => {
                        self.authority = Some(authority);
                    }
                    _ => {
                        return Err(format!(
                            "authority {text:?} is not a number from 0 to 1; ignored"
                        ));
                    }
                }
            }
            "effective_date" | "effective" | "date" => {
                self.effective_date = Some(date(&key, &single(&key, value)?)?);
            }
            "valid_until" => self.valid_until = Some(date(&key, &single(&key, value)?)?),
            "source_id" | "id" => {
                let id = single(&key, value)?;
                let valid = !id.is_empty()
                    && id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
                if !valid {
                    return Err(format!(
                        "{key} {id:?} may only contain ASCII letters, digits, '-', '_' and '.'; ignored"
                    ));
                }
                self.source_id = Some(id);
            }
            "aliases" | "alias" => {
                let aliases = match value {
                    MetaValue::Text(text) => vec![text],
                    MetaValue::List(items) => items,
                    MetaValue::Other(kind) => {
                        return Err(format!("{key} expects text or a list, not {kind}; ignored"));
                    }
                };
                self.aliases = aliases
                    .into_iter()
                    .map(|alias| alias.trim().to_owned())
                    .filter(|alias| !alias.is_empty())
                    .collect();
            }
            _ => {}
        }
        Ok(())
    }
}

/// The trimmed text of a scalar value.
fn single(key: &str, value: MetaValue) -> Result<String, String> {
    match value {
        MetaValue::Text(text) => Ok(text.trim().to_owned()),
        MetaValue::List(_) => Err(format!("{key} expects a single value, not a list; ignored")),
        MetaValue::Other(kind) => Err(format!("{key} expects text, not {kind}; ignored")),
    }
}

/// `text` if it is a calendar date `YYYY-MM-DD`.
fn date(key: &str, text: &str) -> Result<String, String> {
    let invalid = || format!("{key} {text:?} is not a date (expected YYYY-MM-DD); ignored");
    let bytes = text.as_bytes();
    let shape_ok = bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit());
    if !shape_ok {
        return Err(invalid());
    }
    // All ASCII digits and dashes: the slices below sit on character boundaries.
    let number = |range: Range<usize>| text[range].parse::<u32>().map_err(|_| invalid());
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(invalid()),
    };
    if day == 0 || day > days {
        return Err(invalid());
    }
    Ok(text.to_owned())
}

/// Splits a leading front-matter block off `text`: its lines with 1-based line
/// numbers, and the byte offset where the body starts. The block is `---` on the
/// first line, `key:` on its first content line, and ends at a `---` or `...` line.
pub(super) fn split_front_matter(text: &str) -> Option<(Vec<(usize, &str)>, usize)> {
    let mut lines = lines_in(text, 0..text.len()).enumerate();
    let (_, (_, first)) = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let mut block = Vec::new();
    for (index, (start, line)) in lines {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let end = start + line.len();
            let body = if text[end..].starts_with('\n') {
                end + 1
            } else {
                end
            };
            let looks_like_yaml = block
                .iter()
                .map(|(_, line): &(usize, &str)| line.trim())
                .find(|line| !line.is_empty() && !line.starts_with('#'))
                .is_none_or(|line| {
                    line.split_once(':')
                        .is_some_and(|(key, _)| !key.trim().is_empty())
                });
            return looks_like_yaml.then_some((block, body));
        }
        block.push((index + 1, line));
    }
    None
}

/// Reads the `key: value` lines of a front-matter block into `metadata`.
///
/// A YAML subset: scalars (optionally quoted, `#` comments), inline lists `[a, b]`
/// and block lists of `- item` lines. Nested mappings are skipped.
pub(super) fn parse_front_matter(
    lines: &[(usize, &str)],
    path: &Path,
    metadata: &mut Metadata,
    problems: &mut Vec<Problem>,
) {
    // A key with an empty value, collecting the `- item` lines that follow it.
    let mut pending: Option<(&str, usize, Vec<String>)> = None;
    let mut found = Vec::new();
    for &(number, line) in lines {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some((_, _, items)) = pending.as_mut() {
            let item = trimmed
                .strip_prefix("- ")
                .or_else(|| (trimmed == "-").then_some(""));
            if let Some(item) = item {
                items.push(unquote(item));
                continue;
            }
        }
        found.extend(set_list(pending.take(), path, metadata));
        if line.starts_with([' ', '\t']) {
            continue; // inside a nested mapping we do not read
        }
        let Some((key, value)) = line.split_once(':') else {
            found.push(problem(
                path,
                Some(number),
                "front matter line is not `key: value`; ignored",
            ));
            continue;
        };
        let value = value.trim();
        if value.is_empty() {
            pending = Some((key, number, Vec::new()));
            continue;
        }
        if value.starts_with(['|', '>']) {
            found.push(problem(
                path,
                Some(number),
                format!(
                    "{}: multi-line values are not supported; ignored",
                    key.trim()
                ),
            ));
            continue;
        }
        let value = match value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            Some(inner) => MetaValue::List(
                inner
                    .split(',')
                    .map(unquote)
                    .filter(|item| !item.is_empty())
                    .collect(),
            ),
            None => MetaValue::Text(unquote(value)),
        };
        if let Err(message) = metadata.set(key, value) {
            found.push(problem(path, Some(number), message));
        }
    }
    found.extend(set_list(pending, path, metadata));
    found.sort_by_key(|p| p.line);
    problems.extend(found);
}

/// Sets a key from the block-list items collected for it; a key without items (a
/// YAML null or a nested mapping) is left alone.
fn set_list(
    pending: Option<(&str, usize, Vec<String>)>,
    path: &Path,
    metadata: &mut Metadata,
) -> Option<Problem> {
    let (key, line, items) = pending?;
    if items.is_empty() {
        return None;
    }
    let message = metadata.set(key, MetaValue::List(items)).err()?;
    Some(problem(path, Some(line), message))
}

/// A YAML scalar without its quotes, or without a trailing ` # comment` if unquoted.
fn unquote(value: &str) -> String {
    let value = value.trim();
    for quote in ['"', '\''] {
        if let Some(rest) = value.strip_prefix(quote)
            && let Some(end) = rest.rfind(quote)
        {
            return rest[..end].to_owned();
        }
    }
    value
        .split_once(" #")
        .map_or(value, |(before, _)| before)
        .trim()
        .to_owned()
}

/// Reads `<file name>.meta.toml` next to `path`, if there is one, into `metadata`.
pub(super) fn read_sidecar(path: &Path, metadata: &mut Metadata, problems: &mut Vec<Problem>) {
    let Some(name) = path.file_name() else {
        return;
    };
    let mut sidecar_name = name.to_os_string();
    sidecar_name.push(".meta.toml");
    let sidecar = path.with_file_name(sidecar_name);
    let text = match std::fs::read_to_string(&sidecar) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            problems.push(problem(
                &sidecar,
                None,
                format!("metadata file not read: {e}"),
            ));
            return;
        }
    };
    let table = match text.parse::<toml::Table>() {
        Ok(table) => table,
        Err(e) => {
            let line = e.span().map(|span| line_at(&text, span.start));
            problems.push(problem(
                &sidecar,
                line,
                format!(
                    "not valid TOML ({}); metadata file ignored",
                    e.message().trim()
                ),
            ));
            return;
        }
    };
    for (key, value) in &table {
        let value = match value {
            toml::Value::String(text) => MetaValue::Text(text.clone()),
            toml::Value::Integer(n) => MetaValue::Text(n.to_string()),
            toml::Value::Float(x) => MetaValue::Text(x.to_string()),
            toml::Value::Datetime(d) => MetaValue::Text(d.to_string()),
            toml::Value::Array(items) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map_or(MetaValue::Other("an array of non-strings"), MetaValue::List),
            toml::Value::Boolean(_) => MetaValue::Other("a boolean"),
            toml::Value::Table(_) => MetaValue::Other("a table"),
        };
        if let Err(message) = metadata.set(key, value) {
            problems.push(problem(&sidecar, key_line(&text, key), message));
        }
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The 1-based line where TOML `key` is assigned, if it can be found.
fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            let rest = line
                .strip_prefix(key)
                .or_else(|| line.strip_prefix(&format!("\"{key}\"")))
                .or_else(|| line.strip_prefix(&format!("'{key}'")));
            rest.is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|index| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::chunk::slugify;
    use crate::docs::format_size;

    #[test]
    fn size_and_date_helpers() {
        assert_eq!(format_size(512), "512 bytes");
        assert_eq!(format_size(4 * 1024 * 1024), "4 MiB");
        assert_eq!(format_size(12_897_485), "12.3 MiB");
        assert!(date("d", "2024-02-29").is_ok());
        assert!(date("d", "2023-02-29").is_err());
        assert!(date("d", "2023-13-01").is_err());
        assert!(date("d", "2023-1-01").is_err());
        assert!(date("d", "２０２３-01-01").is_err());
        assert_eq!(slugify("Remote work (EU) > Élan"), "remote-work-eu-élan");
    }
}

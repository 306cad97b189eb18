//! `workspace.search_files {query, path?, limit?, context_lines?}`: case-insensitive passage
//! search over the files in the agent's visible roots, ranked by the score of `Query::score`.

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::text::{char_count, truncate_chars, word_count};
use tt_domain::workspace::{WorkspacePath, WorkspaceRoot};
use tt_ports::StorageError;

use super::commit_finish_args::short;
use super::env::{
    DEFAULT_SEARCH_CONTEXT_LINES, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_CONTEXT_LINES, MAX_SEARCH_DEPTH,
    MAX_SEARCH_FILES, MAX_SEARCH_LIMIT, StorageOp, WorkspaceToolEnv, storage_failure,
};
use super::read::number_lines;
use crate::error::{ToolCallError, ToolError};
use crate::tools::ToolSuccess;
use crate::tools::args::Args;

/// Longest snippet (in chars) a hit carries; longer passages are cut with `…`.
const MAX_SNIPPET_CHARS: usize = 1500;

pub(super) async fn search_files(
    args: &Value,
    env: WorkspaceToolEnv<'_>,
) -> Result<ToolSuccess, ToolCallError> {
    let args = Args::parse(args, &["query", "path", "limit", "context_lines"])?;
    let query = Query::parse(args.req_str("query")?)?;
    let scope = match args.opt_str("path")?.map(str::trim) {
        None | Some("" | "." | "./") => None,
        Some(raw) => Some(WorkspacePath::parse(raw)?),
    };
    let limit = search_limit(args.opt_i64("limit")?)?;
    let context = context_lines(args.opt_i64("context_lines")?)?;

    let roots: Vec<WorkspaceRoot> = match &scope {
        None => env.policy.visible_roots.clone(),
        Some(path) => {
            if !env.policy.is_visible(path) {
                return Err(env.policy.not_visible_error(path).into());
            }
            ensure_exists(path, &env).await?;
            path.root().into_iter().collect()
        }
    };
    let files = env
        .repo
        .walk_files(env.run_id, &roots, MAX_SEARCH_DEPTH, MAX_SEARCH_FILES)
        .await?;
    let files_capped = files.len() >= MAX_SEARCH_FILES;

    let mut hits = Vec::new();
    let mut searched = 0usize;
    for file in files {
        if !env.policy.is_visible(&file)
            || scope.as_ref().is_some_and(|s| !file.is_under_or_equal(s))
        {
            continue;
        }
        let content = match env.repo.read(env.run_id, &file).await {
            Ok(content) => content,
            // Gone or replaced by a folder since the walk: nothing to search.
            Err(StorageError::NotFound { .. } | StorageError::IsDirectory { .. }) => continue,
            Err(err) => return Err(storage_failure(err, &file, StorageOp::Read)),
        };
        searched += 1;
        let chars = char_count(&content.text);
        let words = word_count(&content.text);
        for passage in find_passages(&content.text, &query, context) {
            hits.push(Hit {
                path: file.clone(),
                passage,
                chars,
                words,
                sha256: content.sha256.clone(),
            });
        }
    }
    hits.sort_by(|a, b| {
        b.passage
            .score
            .cmp(&a.passage.score)
            .then_with(|| a.path.cmp(&b.path))
            .then_with(|| a.passage.start_line.cmp(&b.passage.start_line))
    });
    let total = hits.len();
    hits.truncate(limit);
    Ok(render(&query, &hits, total, searched, files_capped))
}

/// Confirms an explicit search scope exists, so a typo is reported rather than answered with
/// zero hits.
async fn ensure_exists(
    path: &WorkspacePath,
    env: &WorkspaceToolEnv<'_>,
) -> Result<(), ToolCallError> {
    match env.repo.sha256(env.run_id, path).await {
        Ok(Some(_)) | Err(StorageError::IsDirectory { .. }) => Ok(()),
        Ok(None) | Err(StorageError::NotFound { .. } | StorageError::NotADirectory { .. }) => {
            Err(ToolError::new(
                error_codes::WORKSPACE_PATH_NOT_FOUND,
                format!(
                    "`{path}` does not exist. Search a folder that exists, or omit `path` to search everything you can see."
                ),
            )
            .into())
        }
        Err(err) => Err(storage_failure(err, path, StorageOp::Read)),
    }
}

fn search_limit(raw: Option<i64>) -> Result<usize, ToolError> {
    match raw {
        None => Ok(DEFAULT_SEARCH_LIMIT),
        Some(limit) if limit < 1 => Err(ToolError::new(
            error_codes::WORKSPACE_SEARCH_LIMIT_INVALID,
            format!("`limit` must be at least 1 (got {limit})."),
        )),
        Some(limit) if limit > MAX_SEARCH_LIMIT as i64 => Err(ToolError::new(
            error_codes::WORKSPACE_SEARCH_LIMIT_TOO_LARGE,
            format!(
                "`limit` can be at most {MAX_SEARCH_LIMIT} (got {limit}). Narrow the search with `path` or more specific words instead."
            ),
        )),
        Some(limit) => Ok(usize::try_from(limit).unwrap_or(MAX_SEARCH_LIMIT)),
    }
}

fn context_lines(raw: Option<i64>) -> Result<usize, ToolError> {
    match raw {
        None => Ok(DEFAULT_SEARCH_CONTEXT_LINES),
        Some(lines) if lines < 0 => Err(ToolError::invalid_arguments(format!(
            "`context_lines` must be 0 or more (got {lines})."
        ))),
        Some(lines) if lines > MAX_SEARCH_CONTEXT_LINES as i64 => Err(ToolError::new(
            error_codes::WORKSPACE_SEARCH_CONTEXT_TOO_LARGE,
            format!(
                "`context_lines` can be at most {MAX_SEARCH_CONTEXT_LINES} (got {lines}). Read the file with `workspace_read_file` to see more around a match."
            ),
        )),
        Some(lines) => Ok(usize::try_from(lines).unwrap_or(MAX_SEARCH_CONTEXT_LINES)),
    }
}

/// The query as typed, plus its lowercased phrase and distinct lowercased words.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Query {
    raw: String,
    phrase: String,
    words: Vec<String>,
}

impl Query {
    fn parse(raw: &str) -> Result<Self, ToolError> {
        let mut words: Vec<String> = Vec::new();
        for word in raw.split_whitespace() {
            let word = word.to_lowercase();
            if !words.contains(&word) {
                words.push(word);
            }
        }
        if words.is_empty() {
            return Err(ToolError::invalid_arguments(
                "`query` is empty. Give a word or phrase to look for.",
            ));
        }
        Ok(Self {
            raw: raw.trim().to_owned(),
            phrase: raw
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase(),
            words,
        })
    }

    fn matches_line(&self, lowered_line: &str) -> bool {
        self.words
            .iter()
            .any(|word| lowered_line.contains(word.as_str()))
    }

    /// Score of a lowercased passage: 10 per occurrence of the whole query, 1 per occurrence
    /// of each query word, and 5 per distinct query word present. A line matches when it holds
    /// any query word; its passage is the line plus `context_lines` around it, and passages of
    /// one file never overlap. Hits sort by score (highest first), then path, then line; each
    /// hit also carries the whole file's chars, words and sha256.
    fn score(&self, lowered: &str) -> u64 {
        let phrase = lowered.matches(self.phrase.as_str()).count() as u64;
        let mut score = phrase * 10;
        for word in &self.words {
            let count = lowered.matches(word.as_str()).count() as u64;
            score += count;
            if count > 0 {
                score += 5;
            }
        }
        score
    }
}

/// A matching passage of one file: 1-based inclusive lines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Passage {
    start_line: usize,
    end_line: usize,
    score: u64,
    snippet: String,
}

fn find_passages(text: &str, query: &Query, context: usize) -> Vec<Passage> {
    let lines: Vec<&str> = {
        let mut lines: Vec<&str> = text.split('\n').collect();
        if text.ends_with('\n') {
            lines.pop();
        }
        lines
            .into_iter()
            .map(|line| line.strip_suffix('\r').unwrap_or(line))
            .collect()
    };
    let lowered: Vec<String> = lines.iter().map(|line| line.to_lowercase()).collect();
    let mut passages = Vec::new();
    let mut next_free = 0usize;
    for (index, line) in lowered.iter().enumerate() {
        if index < next_free || !query.matches_line(line) {
            continue;
        }
        let start = index.saturating_sub(context).max(next_free);
        let end = (index + context).min(lines.len().saturating_sub(1));
        next_free = end + 1;
        let window_lower = lowered.get(start..=end).unwrap_or_default().join("\n");
        let window = lines.get(start..=end).unwrap_or_default().join("\n");
        let (cut, was_cut) = truncate_chars(&window, MAX_SNIPPET_CHARS);
        let snippet = if was_cut {
            format!("{cut}…")
        } else {
            window.clone()
        };
        passages.push(Passage {
            start_line: start + 1,
            end_line: end + 1,
            score: query.score(&window_lower),
            snippet,
        });
    }
    passages
}

#[derive(Debug, Clone)]
struct Hit {
    path: WorkspacePath,
    passage: Passage,
    chars: usize,
    words: usize,
    sha256: String,
}

impl Hit {
    fn reference(&self) -> String {
        format!(
            "workspace:{}#L{}-L{}",
            self.path, self.passage.start_line, self.passage.end_line
        )
    }
}

fn render(query: &Query, hits: &[Hit], total: usize, searched: usize, capped: bool) -> ToolSuccess {
    let shown_query = short(&query.raw);
    let mut content = if hits.is_empty() {
        format!(
            "No matches for \"{shown_query}\" in {searched} visible file{}. Try other or fewer words, or see which files exist with `workspace_list_files`.",
            plural(searched)
        )
    } else {
        let mut out = format!(
            "Found {total} match{} for \"{shown_query}\" in {searched} file{} searched; showing {}, best first.",
            if total == 1 { "" } else { "es" },
            plural(searched),
            hits.len()
        );
        for hit in hits {
            let lines = if hit.passage.start_line == hit.passage.end_line {
                format!("line {}", hit.passage.start_line)
            } else {
                format!("lines {}-{}", hit.passage.start_line, hit.passage.end_line)
            };
            out.push_str(&format!(
                "\n\n{} {lines} (score {})\n{}",
                hit.path,
                hit.passage.score,
                number_lines(&hit.passage.snippet, hit.passage.start_line)
            ));
        }
        out
    };
    if capped {
        content.push_str(&format!(
            "\n\n(Only the first {MAX_SEARCH_FILES} files were searched; narrow the search with `path`.)"
        ));
    }
    let structured = json!({
        "query": query.raw,
        "totalHits": total,
        "filesSearched": searched,
        "hits": hits
            .iter()
            .map(|hit| json!({
                "path": hit.path,
                "score": hit.passage.score,
                "startLine": hit.passage.start_line,
                "endLine": hit.passage.end_line,
                "snippet": hit.passage.snippet,
                "chars": hit.chars,
                "words": hit.words,
                "sha256": hit.sha256,
                "ref": hit.reference(),
            }))
            .collect::<Vec<_>>(),
    });
    ToolSuccess::new(content, structured).with_refs(hits.iter().map(Hit::reference).collect())
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(raw: &str) -> Query {
        Query::parse(raw).unwrap()
    }

    #[test]
    fn query_words_are_lowercased_and_distinct() {
        let q = query("  Red  Dragon red ");
        assert_eq!(q.phrase, "red dragon red");
        assert_eq!(q.words, vec!["red", "dragon"]);
        assert_eq!(
            Query::parse("   ").unwrap_err().code,
            "tool.invalid_arguments"
        );
    }

    #[test]
    fn score_rewards_phrase_then_words_then_coverage() {
        let q = query("red dragon");
        // phrase once (10) + red once (1) + dragon once (1) + two distinct words (10)
        assert_eq!(q.score("the red dragon"), 22);
        // no phrase; red twice (2) + dragon once (1) + 10
        assert_eq!(q.score("red, red and a dragon"), 13);
        assert_eq!(q.score("red only"), 6);
        assert_eq!(q.score("nothing"), 0);
    }

    #[test]
    fn passages_include_context_and_never_overlap() {
        let text = "a\nb\nDragon\nc\nd\ne\nf\ndragon\ng\n";
        let passages = find_passages(text, &query("dragon"), 1);
        let ranges: Vec<(usize, usize)> = passages
            .iter()
            .map(|p| (p.start_line, p.end_line))
            .collect();
        assert_eq!(ranges, vec![(2, 4), (7, 9)]);
        assert_eq!(passages[0].snippet, "b\nDragon\nc");

        let close = "x dragon\ndragon y\nz\n";
        let passages = find_passages(close, &query("dragon"), 2);
        assert_eq!(
            passages.len(),
            1,
            "the second match lies inside the first passage"
        );
        assert_eq!((passages[0].start_line, passages[0].end_line), (1, 3));
        assert_eq!(passages[0].score, 10 * 2 + 2 + 5);

        let zero = find_passages(close, &query("dragon"), 0);
        assert_eq!(zero.len(), 2);
    }

    #[test]
    fn limits_carry_contract_codes() {
        use crate::tools::workspace::testing::assert_parsed;
        assert_parsed(
            search_limit,
            &[
                (None, Ok(20)),
                (Some(50), Ok(50)),
                (Some(0), Err("workspace.search_limit_invalid")),
                (Some(51), Err("workspace.search_limit_too_large")),
            ],
        );
        assert_parsed(
            context_lines,
            &[
                (None, Ok(2)),
                (Some(0), Ok(0)),
                (Some(5), Ok(5)),
                (Some(6), Err("workspace.search_context_too_large")),
                (Some(-1), Err("tool.invalid_arguments")),
            ],
        );
    }

    #[test]
    fn long_passages_are_cut() {
        let text = format!("{} dragon", "w".repeat(3000));
        let passages = find_passages(&text, &query("dragon"), 0);
        assert_eq!(char_count(&passages[0].snippet), MAX_SNIPPET_CHARS + 1);
        assert!(passages[0].snippet.ends_with('…'));
    }
}

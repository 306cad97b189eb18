//! The skill tools: `skill.list {query?, limit?}`, `skill.search {query, limit?}` and
//! `skill.read {skill, path?, start_char?, max_chars?}` over an invocation's resolved skills.
//! Hidden skills answer exactly like unknown ones; reads are capped per call and per invocation.

use serde_json::{Value, json};
use tt_domain::error_codes;
use tt_domain::profile::SkillsSection;
use tt_domain::skill::{SKILL_MD, SkillFilePath, parse_skill_frontmatter};
use tt_domain::text::char_count;
use tt_domain::tool::ToolName;
use tt_ports::{SkillFileRef, SkillRepository, StorageError};

use super::resolve::{EffectiveSkill, ResolvedSkills, is_skill_visible};
use crate::error::{ApplicationError, ToolCallError, ToolError};
use crate::tools::ToolSuccess;
use crate::tools::args::Args;

/// Skills `skill.list` shows when `limit` is omitted.
pub(crate) const DEFAULT_LIST_LIMIT: usize = 50;
/// Largest accepted `skill.list` `limit`.
pub(crate) const MAX_LIST_LIMIT: usize = 100;
/// Hits `skill.search` returns when `limit` is omitted.
pub(crate) const DEFAULT_SEARCH_LIMIT: usize = 10;
/// Largest accepted `skill.search` `limit`.
pub(crate) const MAX_SEARCH_LIMIT: usize = 30;
/// Longest search snippet, in chars.
pub(crate) const MAX_SNIPPET_CHARS: usize = 160;
/// Files named in "other files" and "its files" lines before "and N more".
const MAX_NAMED_FILES: usize = 20;

/// Characters of skill text one invocation has read with `skill.read`, counted against the
/// profile's `skills.maxReadCharsPerRun`. One per invocation; never shared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SkillReadBudget {
    used_chars: u64,
}

impl SkillReadBudget {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::default()
    }

    #[cfg(test)]
    pub(crate) fn used_chars(&self) -> u64 {
        self.used_chars
    }

    /// Characters still readable under `policy`.
    pub(crate) fn remaining(&self, policy: &SkillsSection) -> u64 {
        u64::from(policy.max_read_chars_per_run).saturating_sub(self.used_chars)
    }

    fn charge(&mut self, chars: usize) {
        self.used_chars = self
            .used_chars
            .saturating_add(u64::try_from(chars).unwrap_or(u64::MAX));
    }
}

/// What a skill tool call may use: the skill store, this invocation's resolved skills, the
/// profile's `skills` policy (checked again on every call) and the invocation's read budget.
pub(crate) struct SkillToolEnv<'a> {
    pub repo: &'a dyn SkillRepository,
    pub resolved: &'a ResolvedSkills,
    pub policy: &'a SkillsSection,
    pub budget: &'a mut SkillReadBudget,
}

impl<'a> SkillToolEnv<'a> {
    /// The skills this agent may use, sorted by id.
    fn visible(&self) -> impl Iterator<Item = &'a EffectiveSkill> + use<'a> {
        let policy = self.policy;
        self.resolved
            .skills
            .iter()
            .filter(move |skill| is_skill_visible(policy, &skill.id))
    }

    /// The visible skill named `raw` (trimmed, case-insensitive); unknown and hidden skills get
    /// the same answer.
    fn find(&self, raw: &str) -> Result<&'a EffectiveSkill, ToolError> {
        let wanted = raw.trim().to_ascii_lowercase();
        self.visible()
            .find(|skill| skill.id.as_str() == wanted)
            .ok_or_else(|| {
                ToolError::new(
                    error_codes::SKILL_NOT_FOUND,
                    format!(
                        "There is no skill `{}` you can read. Call `skill_list` to see the skills available to you.",
                        short(raw.trim(), 80)
                    ),
                )
            })
    }
}

/// Executes `skill.list`, `skill.search` or `skill.read`. Any other tool is a wiring mistake
/// and fails fast with `agent.internal_error`.
pub(crate) async fn execute(
    tool: ToolName,
    args: &Value,
    env: SkillToolEnv<'_>,
) -> Result<ToolSuccess, ToolCallError> {
    match tool {
        ToolName::SkillList => list(args, &env).map_err(ToolCallError::from),
        ToolName::SkillSearch => search(args, &env).await,
        ToolName::SkillRead => read(args, env).await,
        _ => Err(ToolCallError::Fatal(ApplicationError::fatal(
            error_codes::AGENT_INTERNAL_ERROR,
            format!("{tool} is not executed by the skill tool executor"),
        ))),
    }
}

// ----- skill.list ---------------------------------------------------------------------------

fn list(args: &Value, env: &SkillToolEnv<'_>) -> Result<ToolSuccess, ToolError> {
    let args = Args::parse(args, &["query", "limit"])?;
    let query = args
        .opt_str("query")?
        .map(str::trim)
        .filter(|query| !query.is_empty());
    let limit = parse_limit(args.opt_i64("limit")?, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)?;
    let words = query.map(query_words).unwrap_or_default();
    let matches: Vec<&EffectiveSkill> = env
        .visible()
        .filter(|skill| {
            let text = metadata_text(skill);
            words.iter().all(|word| text.contains(word.as_str()))
        })
        .collect();
    let total = matches.len();
    let shown: Vec<&EffectiveSkill> = matches.into_iter().take(limit).collect();

    let mut content = String::new();
    if shown.is_empty() {
        match query {
            Some(query) if env.visible().next().is_some() => content.push_str(&format!(
                "No skills match `{}`. Call `skill_list` without `query` to see all of them.",
                short(query, 80)
            )),
            Some(_) | None => content.push_str("No skills are available to you."),
        }
    } else {
        match query {
            Some(query) => content.push_str(&format!(
                "Skills matching `{}` ({total}):\n",
                short(query, 80)
            )),
            None => content.push_str(&format!("Skills you can read ({total}):\n")),
        }
        for skill in &shown {
            content.push_str(&list_line(skill));
            content.push('\n');
        }
        if total > shown.len() {
            content.push_str(&format!(
                "(Showing the first {} of {total}; narrow the list with `query`.)\n",
                shown.len()
            ));
        }
        content.push_str(
            "Read a skill with `skill_read` (`skill` = its id) before doing work it covers; `skill_search` finds skills by topic.",
        );
    }
    let skills: Vec<Value> = shown
        .iter()
        .map(|skill| {
            json!({
                "id": skill.id,
                "name": skill.name,
                "description": skill.description,
                "fileCount": skill.files.len(),
            })
        })
        .collect();
    Ok(ToolSuccess::new(
        content,
        json!({
            "query": query,
            "total": total,
            "truncated": total > shown.len(),
            "skills": skills,
        }),
    ))
}

/// `- <id>: <description>`, or `- <id>` when there is no description.
fn list_line(skill: &EffectiveSkill) -> String {
    if skill.description.is_empty() {
        format!("- {}", skill.id)
    } else {
        format!("- {}: {}", skill.id, skill.description)
    }
}

/// Lowercased id, name and description, for matching.
fn metadata_text(skill: &EffectiveSkill) -> String {
    format!("{} {} {}", skill.id, skill.name, skill.description).to_lowercase()
}

/// The distinct lowercase words of a query, in order.
fn query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in query.split_whitespace().map(str::to_lowercase) {
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words
}

fn parse_limit(raw: Option<i64>, default: usize, max: usize) -> Result<usize, ToolError> {
    match raw {
        None => Ok(default),
        Some(limit) if limit < 1 || limit > max as i64 => Err(ToolError::invalid_arguments(
            format!("`limit` must be between 1 and {max} (got {limit})."),
        )),
        Some(limit) => Ok(usize::try_from(limit).unwrap_or(max)),
    }
}

// ----- skill.search -------------------------------------------------------------------------

/// One matching skill.
struct Hit<'s> {
    skill: &'s EffectiveSkill,
    score: usize,
    /// 1-based line of `SKILL.md` and the passage shown, when its text matched.
    passage: Option<(usize, String)>,
}

async fn search(args: &Value, env: &SkillToolEnv<'_>) -> Result<ToolSuccess, ToolCallError> {
    let args = Args::parse(args, &["query", "limit"])?;
    let query = args.req_str("query")?.trim();
    if query.is_empty() {
        return Err(ToolError::invalid_arguments("`query` must name what to look for.").into());
    }
    let limit = parse_limit(
        args.opt_i64("limit")?,
        DEFAULT_SEARCH_LIMIT,
        MAX_SEARCH_LIMIT,
    )?;
    let words = query_words(query);
    let phrase = words.join(" ");

    let mut hits = Vec::new();
    for skill in env.visible() {
        let body = match env
            .repo
            .read_skill_file(SkillFileRef::new(
                &skill.scope,
                &skill.id,
                &SkillFilePath::skill_md(),
            ))
            .await
        {
            Ok(text) => text,
            // Removed or no longer text since the skills were resolved: search what is known.
            Err(
                StorageError::NotFound { .. }
                | StorageError::IsDirectory { .. }
                | StorageError::Corrupt { .. },
            ) => String::new(),
            Err(err) => return Err(ApplicationError::Storage(err).into()),
        };
        let body_start = parse_skill_frontmatter(&body).body_start;
        let body_lower = body.get(body_start..).unwrap_or("").to_lowercase();
        let body_text = body_lower.as_str();
        let title = format!("{} {}", skill.id, skill.name).to_lowercase();
        let description = skill.description.to_lowercase();
        let count = |text: &str| words.iter().filter(|w| text.contains(w.as_str())).count();
        let matched = words
            .iter()
            .filter(|w| {
                title.contains(w.as_str())
                    || description.contains(w.as_str())
                    || body_text.contains(w.as_str())
            })
            .count();
        if matched == 0 {
            continue;
        }
        let whole_phrase = words.len() > 1
            && [title.as_str(), description.as_str(), body_text]
                .iter()
                .any(|text| text.contains(&phrase));
        hits.push(Hit {
            skill,
            score: 3 * count(&title)
                + 2 * count(&description)
                + count(body_text)
                + if whole_phrase { 3 } else { 0 },
            passage: best_passage(&body, body_start, &words, &phrase),
        });
    }
    hits.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then_with(|| a.skill.id.cmp(&b.skill.id))
    });
    let total = hits.len();
    hits.truncate(limit);
    Ok(render_search(query, &hits, total))
}

/// The line of `SKILL.md` (below the frontmatter) with the whole phrase, else the first line
/// with the most query words; `None` when no line matches.
fn best_passage(
    text: &str,
    body_start: usize,
    words: &[String],
    phrase: &str,
) -> Option<(usize, String)> {
    let first_body_line = 1 + text.get(..body_start).unwrap_or("").matches('\n').count();
    let mut best: Option<(usize, usize, &str)> = None;
    for (offset, line) in text.get(body_start..).unwrap_or("").lines().enumerate() {
        let lower = line.to_lowercase();
        let score = if lower.contains(phrase) {
            usize::MAX
        } else {
            words.iter().filter(|w| lower.contains(w.as_str())).count()
        };
        if score > 0 && best.is_none_or(|(best_score, _, _)| score > best_score) {
            best = Some((score, first_body_line + offset, line));
            if score == usize::MAX {
                break;
            }
        }
    }
    let (_, line_number, line) = best?;
    Some((line_number, snippet(line, words, phrase)))
}

/// `line` trimmed and, when long, cut to a window around its first match.
fn snippet(line: &str, words: &[String], phrase: &str) -> String {
    let line = line.trim();
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= MAX_SNIPPET_CHARS {
        return line.to_owned();
    }
    let lower = line.to_lowercase();
    let first_match = std::iter::once(phrase)
        .chain(words.iter().map(String::as_str))
        .filter_map(|needle| lower.find(needle))
        .min()
        .unwrap_or(0);
    // Lowercasing rarely changes char counts, so the char offset in `lower` places the window
    // close enough in the original line.
    let match_char = lower.get(..first_match).map_or(0, char_count);
    let start = match_char.saturating_sub(MAX_SNIPPET_CHARS / 3);
    let start = start.min(chars.len().saturating_sub(MAX_SNIPPET_CHARS));
    let end = (start + MAX_SNIPPET_CHARS).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(chars.get(start..end).unwrap_or(&[]).iter());
    if end < chars.len() {
        out.push('…');
    }
    out
}

fn render_search(query: &str, hits: &[Hit<'_>], total: usize) -> ToolSuccess {
    let shown_query = short(query, 80);
    let mut content = String::new();
    if hits.is_empty() {
        content.push_str(&format!(
            "No skills match `{shown_query}`. Call `skill_list` to see every skill you can read."
        ));
    } else {
        content.push_str(&format!("Skills matching `{shown_query}` ({total}):\n"));
        for hit in hits {
            content.push_str(&list_line(hit.skill));
            content.push('\n');
            if let Some((line, text)) = &hit.passage {
                content.push_str(&format!("  {SKILL_MD} line {line}: {text}\n"));
            }
        }
        if total > hits.len() {
            content.push_str(&format!(
                "(Showing the best {} of {total}; use more specific words to narrow it.)\n",
                hits.len()
            ));
        }
        content.push_str("Read a skill with `skill_read` (`skill` = its id).");
    }
    let structured: Vec<Value> = hits
        .iter()
        .map(|hit| {
            json!({
                "id": hit.skill.id,
                "name": hit.skill.name,
                "description": hit.skill.description,
                "score": hit.score,
                "path": SKILL_MD,
                "line": hit.passage.as_ref().map(|(line, _)| *line),
                "snippet": hit.passage.as_ref().map(|(_, text)| text),
            })
        })
        .collect();
    ToolSuccess::new(
        content,
        json!({
            "query": query,
            "total": total,
            "truncated": total > hits.len(),
            "hits": structured,
        }),
    )
}

// ----- skill.read ---------------------------------------------------------------------------

async fn read(args: &Value, env: SkillToolEnv<'_>) -> Result<ToolSuccess, ToolCallError> {
    let args = Args::parse(args, &["skill", "path", "start_char", "max_chars"])?;
    let raw_skill = args.req_str("skill")?;
    let raw_path = args
        .opt_str("path")?
        .map(str::trim)
        .filter(|path| !path.is_empty())
        .unwrap_or(SKILL_MD);
    let (start_char, max_chars) = read_window(&args)?;
    let skill = env.find(raw_skill)?;
    let wanted = raw_path.strip_prefix("./").unwrap_or(raw_path);
    let path = skill
        .files
        .iter()
        .find(|file| file.as_str() == wanted)
        .ok_or_else(|| {
            ToolError::new(
                error_codes::SKILL_FILE_NOT_FOUND,
                format!(
                    "Skill `{}` has no file `{}`. Its files: {}.",
                    skill.id,
                    short(raw_path, 120),
                    file_names(skill.files.iter())
                ),
            )
        })?;

    let remaining = env.budget.remaining(env.policy);
    if remaining == 0 {
        return Err(ToolError::new(
            error_codes::SKILL_READ_BUDGET_EXHAUSTED,
            format!(
                "You have already read {} characters of skills, all you may read for this request. Continue with what you have read.",
                env.policy.max_read_chars_per_run
            ),
        )
        .into());
    }
    let text = env
        .repo
        .read_skill_file(SkillFileRef::new(&skill.scope, &skill.id, path))
        .await
        .map_err(|err| read_failure(err, skill, path))?;

    let total = char_count(&text);
    if start_char > total || (start_char == total && total > 0) {
        return Err(ToolError::invalid_arguments(format!(
            "`start_char` {start_char} is past the end of `{path}` in skill `{}`, which has {total} characters.",
            skill.id
        ))
        .into());
    }
    let per_call = usize::try_from(env.policy.max_read_chars_per_call).unwrap_or(usize::MAX);
    let left = usize::try_from(remaining).unwrap_or(usize::MAX);
    let cap = max_chars.unwrap_or(per_call).min(per_call).min(left);
    let slice: String = text.chars().skip(start_char).take(cap).collect();
    let chars = char_count(&slice);
    env.budget.charge(chars);
    let end_char = start_char + chars;
    let left_after = env.budget.remaining(env.policy);
    let whole = start_char == 0 && end_char == total;

    let window = ReadWindow {
        start_char,
        end_char,
        total,
        left_after,
    };
    let content = read_text(
        skill,
        path,
        &slice,
        &window,
        env.policy.max_read_chars_per_run,
    );
    let structured = json!({
        "skill": skill.id,
        "path": path,
        "startChar": start_char,
        "endChar": end_char,
        "totalChars": total,
        "chars": chars,
        "wholeFile": whole,
        "nextStartChar": (end_char < total).then_some(end_char),
        "readCharsLeft": left_after,
    });
    Ok(ToolSuccess::new(content, structured).with_refs(vec![format!("skill:{}/{path}", skill.id)]))
}

/// `skill.read`'s `start_char` (0 when not given) and `max_chars`, checked.
fn read_window(args: &Args<'_>) -> Result<(usize, Option<usize>), ToolCallError> {
    let start_char = match args.opt_i64("start_char")? {
        Some(start) if start < 0 => {
            return Err(ToolError::invalid_arguments(format!(
                "`start_char` counts from 0 (got {start})."
            ))
            .into());
        }
        Some(start) => usize::try_from(start).unwrap_or(usize::MAX),
        None => 0,
    };
    let max_chars = match args.opt_i64("max_chars")? {
        Some(max) if max < 1 => {
            return Err(ToolError::invalid_arguments(format!(
                "`max_chars` must be at least 1 (got {max})."
            ))
            .into());
        }
        Some(max) => Some(usize::try_from(max).unwrap_or(usize::MAX)),
        None => None,
    };
    Ok((start_char, max_chars))
}

/// Where a `skill.read` slice sits in its file, and the skill reading left after it.
struct ReadWindow {
    start_char: usize,
    end_char: usize,
    total: usize,
    left_after: u64,
}

/// What `skill.read` shows the agent: a header, the slice, where to read on, and the skill's
/// other files when it read `SKILL.md`.
fn read_text(
    skill: &EffectiveSkill,
    path: &SkillFilePath,
    slice: &str,
    window: &ReadWindow,
    max_read_chars_per_run: u32,
) -> String {
    let ReadWindow {
        start_char,
        end_char,
        total,
        left_after,
    } = *window;
    let whole = start_char == 0 && end_char == total;
    let mut content = format!(
        "Skill: {} · File: {path} ({})\nChars: {start_char}-{end_char} of {total} · Skill reading left: {left_after} of {} chars\n\n",
        skill.id,
        if whole {
            "whole file"
        } else {
            "part of the file"
        },
        max_read_chars_per_run,
    );
    if slice.is_empty() {
        content.push_str("(The file is empty.)");
    } else {
        content.push_str(slice);
    }
    if end_char < total {
        if left_after == 0 {
            content.push_str(&format!(
                "\n\n(The file continues at start_char={end_char}, but you have no skill reading left.)"
            ));
        } else {
            content.push_str(&format!(
                "\n\n(The file continues: read on with start_char={end_char}.)"
            ));
        }
    } else if !whole {
        content.push_str("\n\n(This is the end of the file.)");
    }
    let others: Vec<&SkillFilePath> = skill
        .files
        .iter()
        .filter(|file| file.as_str() != SKILL_MD)
        .collect();
    if path.as_str() == SKILL_MD && !others.is_empty() {
        content.push_str(&format!(
            "\n\nOther files in this skill (read them with `path`): {}.",
            file_names(others.into_iter())
        ));
    }
    content
}

/// Maps a storage failure of `skill.read`: a file gone or no longer text is something the
/// agent can work around; anything else (I/O, escaping links) fails fast.
fn read_failure(err: StorageError, skill: &EffectiveSkill, path: &SkillFilePath) -> ToolCallError {
    match err {
        StorageError::NotFound { .. } | StorageError::IsDirectory { .. } => ToolError::new(
            error_codes::SKILL_FILE_NOT_FOUND,
            format!(
                "`{path}` of skill `{}` cannot be found any more. Call `skill_list` to see the skills available now.",
                skill.id
            ),
        )
        .into(),
        StorageError::Corrupt { .. } => ToolError::new(
            error_codes::SKILL_FILE_UNREADABLE,
            format!(
                "`{path}` of skill `{}` is not readable text (it is binary or too large). Read another file of the skill.",
                skill.id
            ),
        )
        .into(),
        StorageError::AlreadyExists { .. }
        | StorageError::GuardFileExists { .. }
        | StorageError::GuardFileMissing { .. }
        | StorageError::GuardShaMismatch { .. }
        | StorageError::NotADirectory { .. }
        | StorageError::SymlinkEscape { .. }
        | StorageError::Locked { .. }
        | StorageError::ReadOnly { .. }
        | StorageError::Domain(_)
        | StorageError::Io { .. }
        | StorageError::Other(_) => ApplicationError::Storage(err).into(),
    }
}

/// `` `a.md`, `b.md` `` (at most [`MAX_NAMED_FILES`], then "and N more").
fn file_names<'f>(files: impl Iterator<Item = &'f SkillFilePath>) -> String {
    let files: Vec<&SkillFilePath> = files.collect();
    let mut names: Vec<String> = files
        .iter()
        .take(MAX_NAMED_FILES)
        .map(|file| format!("`{file}`"))
        .collect();
    if files.len() > MAX_NAMED_FILES {
        names.push(format!("and {} more", files.len() - MAX_NAMED_FILES));
    }
    names.join(", ")
}

/// At most `max` chars of `text`, with `…` when cut.
fn short(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(query: &str) -> Vec<String> {
        query_words(query)
    }

    #[test]
    fn query_words_are_lowercase_and_distinct() {
        assert_eq!(words("  Scene  PACING scene "), ["scene", "pacing"]);
        assert!(words("   ").is_empty());
    }

    #[test]
    fn limits_are_checked() {
        assert_eq!(parse_limit(None, 10, 30), Ok(10));
        assert_eq!(parse_limit(Some(30), 10, 30), Ok(30));
        for bad in [0, -1, 31] {
            assert_eq!(
                parse_limit(Some(bad), 10, 30).unwrap_err().code,
                "tool.invalid_arguments"
            );
        }
    }

    #[test]
    fn passages_prefer_the_whole_phrase_then_most_words() {
        let text =
            "---\nname: x\n---\nintro about scenes\nscene pacing matters\ncut the scene pacing\n";
        let body_start = parse_skill_frontmatter(text).body_start;
        let w = words("scene pacing");
        assert_eq!(
            best_passage(text, body_start, &w, "scene pacing"),
            Some((5, "scene pacing matters".to_owned()))
        );
        let w = words("pacing intro");
        assert_eq!(
            best_passage(text, body_start, &w, "pacing intro"),
            Some((4, "intro about scenes".to_owned()))
        );
        let w = words("name");
        assert_eq!(
            best_passage(text, body_start, &w, "name"),
            None,
            "frontmatter lines are not passages"
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_match() {
        let line = format!("{} NEEDLE {}", "a".repeat(300), "b".repeat(300));
        let cut = snippet(&line, &words("needle"), "needle");
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
        assert!(cut.contains("NEEDLE"));
        assert_eq!(char_count(&cut), MAX_SNIPPET_CHARS + 2);
        let early = format!("NEEDLE {}", "c".repeat(300));
        let cut = snippet(&early, &words("needle"), "needle");
        assert!(cut.starts_with("NEEDLE") && cut.ends_with('…'));
        let late = format!("{} NEEDLE", "d".repeat(300));
        let cut = snippet(&late, &words("needle"), "needle");
        assert!(cut.starts_with('…') && cut.ends_with("NEEDLE"));
        assert_eq!(snippet("  short  ", &words("x"), "x"), "short");
    }

    #[test]
    fn budgets_count_chars_and_saturate() {
        let policy = SkillsSection {
            visible: vec!["*".into()],
            deny: vec![],
            max_read_chars_per_call: 5,
            max_read_chars_per_run: 8,
        };
        let mut budget = SkillReadBudget::new();
        assert_eq!(budget.remaining(&policy), 8);
        budget.charge(5);
        assert_eq!((budget.used_chars(), budget.remaining(&policy)), (5, 3));
        budget.charge(usize::MAX);
        assert_eq!(budget.remaining(&policy), 0);
    }
}

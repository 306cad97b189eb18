//! Checks that a member's Cargo.toml declares every dependency through the workspace
//! (`name.workspace = true` or `name = { workspace = true, ... }`), with a deliberately simple
//! line-based reading of the TOML text.

/// A dependency declared without `workspace = true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManifestIssue {
    /// 1-based line where the dependency is first declared.
    pub line: usize,
    /// The section header, e.g. `dev-dependencies`.
    pub section: String,
    pub dependency: String,
}

impl std::fmt::Display for ManifestIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: `{}` in [{}] is not declared through the workspace (write `{}.workspace = true` and add it to [workspace.dependencies])",
            self.line, self.dependency, self.section, self.dependency
        )
    }
}

const DEPENDENCY_TABLES: &[&str] = &["dependencies", "dev-dependencies", "build-dependencies"];

/// What the current section header means for the lines below it.
enum Section {
    Other,
    /// `[dependencies]`, `[target.'cfg(..)'.dev-dependencies]`, ...: one dependency per key.
    Table(String),
    /// `[dependencies.name]`: the keys belong to one dependency.
    Single(String),
}

/// One dependency seen in the manifest, and whether it opted into the workspace.
struct Declared {
    line: usize,
    section: String,
    name: String,
    workspace: bool,
}

pub(crate) fn check_manifest(text: &str) -> Vec<ManifestIssue> {
    let mut declared: Vec<Declared> = Vec::new();
    let mut section = Section::Other;
    for (index, raw_line) in text.lines().enumerate() {
        let line_number = index + 1;
        let line = strip_comment(raw_line).trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            section = parse_header(line);
            if let Section::Single(header) = &section
                && let Some((table, name)) = split_single(header)
            {
                note(&mut declared, line_number, table, name, false);
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue; // continuation of a multi-line array
        };
        let key: String = key.split_whitespace().collect();
        let value: String = value.split_whitespace().collect();
        match &section {
            Section::Other => {}
            Section::Table(table) => {
                let (name, workspace) = match key.split_once('.') {
                    Some((name, "workspace")) => (name, value == "true"),
                    Some((name, _other_attribute)) => (name, false),
                    None => (key.as_str(), value.contains("workspace=true")),
                };
                note(&mut declared, line_number, table, &unquote(name), workspace);
            }
            Section::Single(header) => {
                if let Some((table, name)) = split_single(header) {
                    let workspace = key == "workspace" && value == "true";
                    note(&mut declared, line_number, table, name, workspace);
                }
            }
        }
    }
    declared
        .into_iter()
        .filter(|dependency| !dependency.workspace)
        .map(|dependency| ManifestIssue {
            line: dependency.line,
            section: dependency.section,
            dependency: dependency.name,
        })
        .collect()
}

/// Records a sighting of `name` in `section`; the first line is kept, `workspace` is sticky.
fn note(declared: &mut Vec<Declared>, line: usize, section: &str, name: &str, workspace: bool) {
    if let Some(existing) = declared
        .iter_mut()
        .find(|d| d.section == section && d.name == name)
    {
        existing.workspace |= workspace;
    } else {
        declared.push(Declared {
            line,
            section: section.to_owned(),
            name: name.to_owned(),
            workspace,
        });
    }
}

fn parse_header(line: &str) -> Section {
    if line.starts_with("[[") {
        return Section::Other; // arrays of tables ([[bin]], [[test]]) never hold dependencies
    }
    let header: String = line
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split_whitespace()
        .collect();
    if header.starts_with("workspace.") {
        return Section::Other;
    }
    for table in DEPENDENCY_TABLES {
        if header == *table || header.ends_with(&format!(".{table}")) {
            return Section::Table(header);
        }
        if header.starts_with(&format!("{table}.")) || header.contains(&format!(".{table}.")) {
            return Section::Single(header);
        }
    }
    Section::Other
}

/// Splits `dependencies.name` / `target.'cfg(x)'.dependencies.name` into table and name.
fn split_single(header: &str) -> Option<(&str, &str)> {
    DEPENDENCY_TABLES.iter().find_map(|table| {
        if let Some(name) = header.strip_prefix(&format!("{table}.")) {
            return Some((header.get(..table.len())?, name));
        }
        let marker = format!(".{table}.");
        let at = header.find(&marker)?;
        let table_end = at + marker.len() - 1;
        Some((header.get(..table_end)?, header.get(table_end + 1..)?))
    })
}

fn unquote(key: &str) -> String {
    key.trim_matches(|c| c == '"' || c == '\'').to_owned()
}

/// Drops a `#` comment, leaving `#` inside quoted strings alone.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        match quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(open) if c == open => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return line.get(..at).unwrap_or(line),
            None => {}
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issues(text: &str) -> Vec<String> {
        check_manifest(text)
            .iter()
            .map(|i| format!("{}:{}:{}", i.line, i.section, i.dependency))
            .collect()
    }

    #[test]
    fn workspace_forms_are_accepted() {
        let text = r#"
[package]
name = "x"
version.workspace = true

[dependencies]
serde.workspace = true
tokio = { workspace = true, features = ["rt"] } # comment with "quotes"
"quoted-name" = { workspace = true }
thiserror . workspace = true

[dev-dependencies]
tokio = { workspace = true, features = ["test-util"] }
insta.workspace = true
insta.features = [
    "json",
]

[dependencies.sha2]
workspace = true
optional = true

[[bin]]
name = "x"
path = "src/main.rs"

[lints]
workspace = true
"#;
        assert_eq!(issues(text), Vec::<String>::new());
    }

    #[test]
    fn versions_paths_and_git_are_violations() {
        let text = r#"
[package]
name = "x"
version = "0.1.0"

[dependencies]
serde = "1.0"
tt-domain = { path = "../tt-domain" }
rand = { version = "0.8", features = ["std"] } # workspace = true in a comment
reqwest.version = "0.12"

[build-dependencies]
cc = { git = "https://example.invalid/cc#main" }

[target.'cfg(unix)'.dev-dependencies]
libc = "0.2"

[dev-dependencies.proptest]
version = "1"
"#;
        assert_eq!(
            issues(text),
            vec![
                "7:dependencies:serde",
                "8:dependencies:tt-domain",
                "9:dependencies:rand",
                "10:dependencies:reqwest",
                "13:build-dependencies:cc",
                "16:target.'cfg(unix)'.dev-dependencies:libc",
                "18:dev-dependencies:proptest",
            ]
        );
    }

    #[test]
    fn workspace_dependency_tables_are_not_member_dependencies() {
        let text = "[workspace.dependencies]\nserde = \"1\"\n";
        assert_eq!(issues(text), Vec::<String>::new());
    }

    #[test]
    fn issue_text_says_how_to_fix_it() {
        let issue = check_manifest("[dependencies]\nfoo = \"1\"\n");
        assert_eq!(
            issue.first().map(ToString::to_string).as_deref(),
            Some(
                "line 2: `foo` in [dependencies] is not declared through the workspace (write `foo.workspace = true` and add it to [workspace.dependencies])"
            )
        );
    }
}

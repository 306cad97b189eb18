//! The crate layering table and dependency policy, checked over `cargo metadata` output:
//! which tt-* crates each member may depend on, and who may use `anyhow` or an HTTP client.

use anyhow::{Context, Result, anyhow};
use serde_json::Value;

use crate::violation::Violation;

/// A workspace member as `cargo metadata --no-deps` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Package {
    pub name: String,
    pub manifest_path: String,
    pub dependencies: Vec<Dependency>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dependency {
    /// The package name (not a `rename`).
    pub name: String,
    pub kind: DependencyKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DependencyKind {
    Normal,
    Dev,
    Build,
}

impl DependencyKind {
    /// Everything except dev-dependencies ends up in the crate's own build graph.
    fn is_shipped(self) -> bool {
        match self {
            Self::Normal | Self::Build => true,
            Self::Dev => false,
        }
    }
}

/// Which tt-* crates a member may depend on through normal (non-dev) dependencies.
#[derive(Debug, Clone, Copy)]
enum Allowed {
    Only(&'static [&'static str]),
    AnyExcept(&'static [&'static str]),
    Anything,
}

const DOMAIN_AND_PORTS: &[&str] = &["tt-domain", "tt-ports"];

/// The layering table of the spec README §2; `None` for a crate the table does not know.
fn allowed_tt_dependencies(package: &str) -> Option<Allowed> {
    match package {
        "tt-domain" => Some(Allowed::Only(&[])),
        "tt-ports" => Some(Allowed::Only(&["tt-domain"])),
        "tt-application" | "tt-testkit" => Some(Allowed::Only(DOMAIN_AND_PORTS)),
        // HTTP provider adapters may share the provider HTTP support crate (which is no adapter,
        // so adapters still never depend on one another).
        provider if provider.starts_with("tt-adapter-provider-") => Some(Allowed::Only(&[
            "tt-domain",
            "tt-ports",
            "tt-provider-http",
        ])),
        adapter if adapter.starts_with("tt-adapter-") => Some(Allowed::Only(DOMAIN_AND_PORTS)),
        "tt-provider-http" => Some(Allowed::Only(DOMAIN_AND_PORTS)),
        "tt-runtime" => Some(Allowed::AnyExcept(&["tt-testkit"])),
        // A driving adapter: the host API over HTTP, built on the runtime's public API only.
        "tt-host-http" => Some(Allowed::Only(&["tt-runtime"])),
        "tt-cli" => Some(Allowed::Only(&["tt-runtime", "tt-host-http"])),
        // A benchmark host: the runtime plus the vocabulary its ports speak.
        "tt-bench" => Some(Allowed::Only(&["tt-runtime", "tt-domain", "tt-ports"])),
        // The embedding example links what a desktop shell links: the runtime, nothing inside it.
        "desktop-shell" => Some(Allowed::Only(&["tt-runtime"])),
        // The Tauri plugin: a driving adapter like tt-host-http, on the runtime's public API;
        // the Tauri example links the runtime and the plugin (not a tt-* name), nothing inside.
        "tauri-plugin-tt-agent" | "tauri-shell" => Some(Allowed::Only(&["tt-runtime"])),
        "tt-e2e" | "xtask" => Some(Allowed::Anything),
        _ => None,
    }
}

const ANYHOW_USERS: &[&str] = &[
    "tt-runtime",
    "tt-cli",
    "tt-bench",
    "xtask",
    "tt-e2e",
    "desktop-shell",
];
/// HTTP clients, and crates that bring one: `rmcp` (the MCP SDK) carries reqwest for its
/// Streamable HTTP transport.
const HTTP_CLIENTS: &[&str] = &["reqwest", "hyper", "ureq", "rmcp"];
/// Libraries emit `tracing` spans and events; only a host chooses where they go, so a
/// subscriber is installed by tt-cli alone (an embedding host brings its own).
const SUBSCRIBER_USERS: &[&str] = &["tt-cli"];

/// The model providers' adapters and their HTTP crate; and the MCP client, whose Streamable
/// HTTP transport is rmcp's own reqwest client (the MCP adapter talks to MCP servers only).
fn may_use_http_client(package: &str) -> bool {
    package.starts_with("tt-adapter-provider-")
        || package == "tt-provider-http"
        || package == "tt-adapter-tools-mcp"
}

/// Reads the workspace members out of `cargo metadata --format-version 1 --no-deps` JSON.
pub(crate) fn parse_metadata(metadata: &Value) -> Result<Vec<Package>> {
    let packages = metadata
        .get("packages")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("cargo metadata has no `packages` array"))?;
    packages.iter().map(parse_package).collect()
}

fn parse_package(package: &Value) -> Result<Package> {
    let name = str_field(package, "name")?;
    let manifest_path = str_field(package, "manifest_path")
        .with_context(|| format!("package `{name}` in cargo metadata"))?;
    let dependencies = package
        .get("dependencies")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("package `{name}` has no `dependencies` array"))?
        .iter()
        .map(parse_dependency)
        .collect::<Result<Vec<_>>>()
        .with_context(|| format!("dependencies of package `{name}`"))?;
    Ok(Package {
        name,
        manifest_path,
        dependencies,
    })
}

fn parse_dependency(dependency: &Value) -> Result<Dependency> {
    let name = str_field(dependency, "name")?;
    let kind = match dependency.get("kind") {
        None | Some(Value::Null) => DependencyKind::Normal,
        Some(Value::String(kind)) if kind == "dev" => DependencyKind::Dev,
        Some(Value::String(kind)) if kind == "build" => DependencyKind::Build,
        Some(other) => return Err(anyhow!("dependency `{name}` has unknown kind {other}")),
    };
    Ok(Dependency { name, kind })
}

fn str_field(object: &Value, key: &str) -> Result<String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("missing string field `{key}`"))
}

/// Checks every package against the layering table and the dependency policy. Violations are
/// located at `location(package)` (the caller decides how to print manifest paths).
pub(crate) fn check(packages: &[Package], location: impl Fn(&Package) -> String) -> Vec<Violation> {
    let mut violations = Vec::new();
    for package in packages {
        let at = location(package);
        let mut report = |rule: &'static str, detail: String| {
            violations.push(Violation::new(at.clone(), rule, detail));
        };
        let allowed = allowed_tt_dependencies(&package.name);
        if allowed.is_none() {
            report(
                "layering",
                format!(
                    "crate `{}` is not in the layering table (xtask/src/layering.rs and spec README §2)",
                    package.name
                ),
            );
        }
        for dependency in &package.dependencies {
            let dep = dependency.name.as_str();
            if let Some(allowed) = allowed
                && dep.starts_with("tt-")
                && dependency.kind.is_shipped()
                && !permits(allowed, dep)
            {
                report(
                    "layering",
                    format!(
                        "`{}` must not depend on `{dep}` (allowed tt-* dependencies: {})",
                        package.name,
                        describe(allowed)
                    ),
                );
            }
            if dep == "anyhow" && !ANYHOW_USERS.contains(&package.name.as_str()) {
                report(
                    "anyhow",
                    format!(
                        "`{}` depends on `anyhow`; only {} may",
                        package.name,
                        ANYHOW_USERS.join(", ")
                    ),
                );
            }
            if dep == "tracing-subscriber"
                && dependency.kind.is_shipped()
                && !SUBSCRIBER_USERS.contains(&package.name.as_str())
            {
                report(
                    "log-subscriber",
                    format!(
                        "`{}` depends on `tracing-subscriber`; only {} may (libraries emit spans, hosts install the subscriber)",
                        package.name,
                        SUBSCRIBER_USERS.join(", ")
                    ),
                );
            }
            if HTTP_CLIENTS.contains(&dep)
                && dependency.kind.is_shipped()
                && !may_use_http_client(&package.name)
            {
                report(
                    "http-client",
                    format!(
                        "`{}` depends on the HTTP client `{dep}`; only tt-adapter-provider-*, tt-provider-http and tt-adapter-tools-mcp may",
                        package.name
                    ),
                );
            }
        }
    }
    violations
}

fn permits(allowed: Allowed, dependency: &str) -> bool {
    match allowed {
        Allowed::Only(list) => list.contains(&dependency),
        Allowed::AnyExcept(list) => !list.contains(&dependency),
        Allowed::Anything => true,
    }
}

fn describe(allowed: Allowed) -> String {
    match allowed {
        Allowed::Only([]) => "none".to_owned(),
        Allowed::Only(list) => list.join(", "),
        Allowed::AnyExcept(list) => format!("any except {}", list.join(", ")),
        Allowed::Anything => "any".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dep(name: &str, kind: Option<&str>) -> Value {
        json!({ "name": name, "kind": kind, "rename": null, "req": "*" })
    }

    fn package(name: &str, dependencies: Vec<Value>) -> Value {
        json!({
            "name": name,
            "manifest_path": format!("/ws/crates/{name}/Cargo.toml"),
            "dependencies": dependencies,
        })
    }

    fn violations(metadata: &Value) -> Vec<String> {
        let packages = parse_metadata(metadata).unwrap();
        check(&packages, |p| p.name.clone())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn provider_adapters_share_the_http_crate_but_not_each_other() {
        let metadata = json!({ "packages": [
            package("tt-adapter-provider-anthropic", vec![
                dep("tt-provider-http", None), dep("tt-adapter-provider-openai", None),
            ]),
            package("tt-provider-http", vec![dep("tt-application", None)]),
        ]});
        assert_eq!(
            violations(&metadata),
            [
                "tt-adapter-provider-anthropic: layering: `tt-adapter-provider-anthropic` must not depend on `tt-adapter-provider-openai` (allowed tt-* dependencies: tt-domain, tt-ports, tt-provider-http)",
                "tt-provider-http: layering: `tt-provider-http` must not depend on `tt-application` (allowed tt-* dependencies: tt-domain, tt-ports)",
            ]
        );
    }

    #[test]
    fn only_the_cli_installs_a_log_subscriber() {
        let metadata = json!({ "packages": [
            package("tt-application", vec![
                dep("tracing", None), dep("tracing-subscriber", None),
            ]),
            package("tt-runtime", vec![dep("tracing-subscriber", Some("dev"))]),
            package("tt-cli", vec![dep("tracing-subscriber", None)]),
        ]});
        assert_eq!(
            violations(&metadata),
            [
                "tt-application: log-subscriber: `tt-application` depends on `tracing-subscriber`; only tt-cli may (libraries emit spans, hosts install the subscriber)",
            ]
        );
    }

    #[test]
    fn a_clean_workspace_has_no_violations() {
        let metadata = json!({ "packages": [
            package("tt-domain", vec![dep("serde", None), dep("proptest", Some("dev"))]),
            package("tt-ports", vec![dep("tt-domain", None)]),
            package("tt-application", vec![
                dep("tt-domain", None), dep("tt-ports", None), dep("tt-testkit", Some("dev")),
            ]),
            package("tt-adapter-provider-openai", vec![
                dep("tt-domain", None), dep("tt-ports", None), dep("reqwest", None),
                dep("tt-provider-http", None),
            ]),
            package("tt-provider-http", vec![
                dep("tt-domain", None), dep("tt-ports", None), dep("reqwest", None),
            ]),
            package("tt-testkit", vec![dep("tt-domain", None), dep("tt-ports", None)]),
            package("tt-runtime", vec![
                dep("tt-application", None), dep("tt-adapter-storage-userdata", None),
                dep("anyhow", None), dep("tt-testkit", Some("dev")),
            ]),
            package("tt-host-http", vec![
                dep("tt-runtime", None), dep("axum", None), dep("reqwest", Some("dev")),
            ]),
            package("tt-cli", vec![
                dep("tt-runtime", None), dep("tt-host-http", None), dep("anyhow", None),
            ]),
            package("tt-bench", vec![
                dep("tt-runtime", None), dep("tt-domain", None), dep("tt-ports", None),
                dep("anyhow", None),
            ]),
            package("tt-e2e", vec![dep("tt-runtime", Some("dev")), dep("anyhow", Some("dev"))]),
            package("xtask", vec![dep("anyhow", None), dep("serde_json", None)]),
        ]});
        assert_eq!(violations(&metadata), Vec::<String>::new());
    }

    #[test]
    fn layering_breaks_are_reported_per_dependency() {
        let metadata = json!({ "packages": [
            package("tt-domain", vec![dep("tt-ports", None)]),
            package("tt-adapter-storage-userdata", vec![
                dep("tt-application", None), dep("tt-adapter-provider-scripted", Some("build")),
            ]),
            package("tt-runtime", vec![dep("tt-testkit", None)]),
            package("tt-cli", vec![dep("tt-runtime", None), dep("tt-domain", None)]),
            package("tt-bench", vec![
                dep("tt-runtime", None), dep("tt-application", None),
                dep("tt-testkit", None), dep("tt-adapter-storage-userdata", None),
            ]),
        ]});
        assert_eq!(
            violations(&metadata),
            vec![
                "tt-domain: layering: `tt-domain` must not depend on `tt-ports` (allowed tt-* dependencies: none)",
                "tt-adapter-storage-userdata: layering: `tt-adapter-storage-userdata` must not depend on `tt-application` (allowed tt-* dependencies: tt-domain, tt-ports)",
                "tt-adapter-storage-userdata: layering: `tt-adapter-storage-userdata` must not depend on `tt-adapter-provider-scripted` (allowed tt-* dependencies: tt-domain, tt-ports)",
                "tt-runtime: layering: `tt-runtime` must not depend on `tt-testkit` (allowed tt-* dependencies: any except tt-testkit)",
                "tt-cli: layering: `tt-cli` must not depend on `tt-domain` (allowed tt-* dependencies: tt-runtime, tt-host-http)",
                "tt-bench: layering: `tt-bench` must not depend on `tt-application` (allowed tt-* dependencies: tt-runtime, tt-domain, tt-ports)",
                "tt-bench: layering: `tt-bench` must not depend on `tt-testkit` (allowed tt-* dependencies: tt-runtime, tt-domain, tt-ports)",
                "tt-bench: layering: `tt-bench` must not depend on `tt-adapter-storage-userdata` (allowed tt-* dependencies: tt-runtime, tt-domain, tt-ports)",
            ]
        );
    }

    #[test]
    fn dev_dependencies_may_cross_layers() {
        let metadata = json!({ "packages": [
            package("tt-ports", vec![dep("tt-domain", None), dep("tt-testkit", Some("dev"))]),
        ]});
        assert_eq!(violations(&metadata), Vec::<String>::new());
    }

    #[test]
    fn anyhow_and_http_clients_are_confined() {
        let metadata = json!({ "packages": [
            package("tt-application", vec![dep("anyhow", Some("dev")), dep("hyper", None)]),
            package("tt-adapter-storage-userdata", vec![dep("ureq", None)]),
            package("tt-testkit", vec![dep("reqwest", Some("dev"))]),
            package("tt-adapter-tools-mcp", vec![dep("rmcp", None)]),
            package("tt-adapter-storage-postgres", vec![dep("rmcp", None)]),
        ]});
        assert_eq!(
            violations(&metadata),
            vec![
                "tt-application: anyhow: `tt-application` depends on `anyhow`; only tt-runtime, tt-cli, tt-bench, xtask, tt-e2e, desktop-shell may",
                "tt-application: http-client: `tt-application` depends on the HTTP client `hyper`; only tt-adapter-provider-*, tt-provider-http and tt-adapter-tools-mcp may",
                "tt-adapter-storage-userdata: http-client: `tt-adapter-storage-userdata` depends on the HTTP client `ureq`; only tt-adapter-provider-*, tt-provider-http and tt-adapter-tools-mcp may",
                "tt-adapter-storage-postgres: http-client: `tt-adapter-storage-postgres` depends on the HTTP client `rmcp`; only tt-adapter-provider-*, tt-provider-http and tt-adapter-tools-mcp may",
            ]
        );
    }

    #[test]
    fn the_http_host_adapter_knows_only_the_runtime() {
        let metadata = json!({ "packages": [
            package("tt-host-http", vec![
                dep("tt-runtime", None), dep("tt-application", None), dep("anyhow", None),
            ]),
        ]});
        assert_eq!(
            violations(&metadata),
            [
                "tt-host-http: layering: `tt-host-http` must not depend on `tt-application` (allowed tt-* dependencies: tt-runtime)",
                "tt-host-http: anyhow: `tt-host-http` depends on `anyhow`; only tt-runtime, tt-cli, tt-bench, xtask, tt-e2e, desktop-shell may",
            ]
        );
    }

    #[test]
    fn unknown_crates_are_reported() {
        let metadata = json!({ "packages": [package("tt-mystery", vec![])] });
        assert_eq!(
            violations(&metadata),
            vec![
                "tt-mystery: layering: crate `tt-mystery` is not in the layering table (xtask/src/layering.rs and spec README §2)"
            ]
        );
    }

    #[test]
    fn malformed_metadata_is_an_error_not_a_panic() {
        assert!(parse_metadata(&json!({})).is_err());
        assert!(parse_metadata(&json!({ "packages": [{ "name": "x" }] })).is_err());
        let bad_kind = json!({ "packages": [package("x", vec![dep("y", Some("weird"))])] });
        assert!(parse_metadata(&bad_kind).is_err());
    }
}

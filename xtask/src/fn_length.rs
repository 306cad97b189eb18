//! Function length: every function of non-test code, with the lines it spans from its `fn` to
//! its closing brace, found by parsing the file (`syn`, with span locations), so strings,
//! comments and macros never confuse the count. A function past the limit passes only when a
//! `// Long: <why>` comment sits at its top (among its doc comments and attributes, or on the
//! first line of its body), or when the shrink-only list in `tidy.rs` names it at a length it
//! has not outgrown.

use syn::visit::Visit;

/// One function as found: its name (`Type::name` inside an impl or trait), the line of its
/// `fn`, how many lines it spans, and whether a `// Long:` comment explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FunctionSpan {
    pub name: String,
    pub line: usize,
    pub lines: usize,
    pub explained: bool,
}

/// The marker that explains a long function, at the start of a `//` comment.
pub(crate) const EXPLAINED_MARKER: &str = "// Long:";

/// Every non-test function of `text` (functions under `#[cfg(test)]` or `#[test]` are left
/// out). A file that does not parse yields nothing: the compiler reports it.
pub(crate) fn functions(text: &str) -> Vec<FunctionSpan> {
    let Ok(file) = syn::parse_file(text) else {
        return Vec::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut finder = Finder {
        lines: &lines,
        owner: Vec::new(),
        found: Vec::new(),
    };
    finder.visit_file(&file);
    finder.found
}

struct Finder<'a> {
    lines: &'a [&'a str],
    /// The impl or trait being visited (its type's last path segment), innermost last.
    owner: Vec<String>,
    found: Vec<FunctionSpan>,
}

impl Finder<'_> {
    fn record(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let line = fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let name = match self.owner.last() {
            Some(owner) => format!("{owner}::{name}"),
            None => name.to_string(),
        };
        let body_line = block.brace_token.span.open().start().line;
        self.found.push(FunctionSpan {
            name,
            line,
            lines: end.saturating_sub(line) + 1,
            explained: self.explained(line, body_line),
        });
    }

    /// A `// Long:` comment among the doc comments, attributes and comments right above the
    /// `fn` line (1-based `line`), or on the line after the body's opening brace.
    fn explained(&self, line: usize, body_line: usize) -> bool {
        let is_marker = |text: &str| text.trim_start().starts_with(EXPLAINED_MARKER);
        let above = self.lines[..line.saturating_sub(1).min(self.lines.len())]
            .iter()
            .rev()
            .take_while(|text| {
                let text = text.trim_start();
                text.starts_with("//") || text.starts_with("#[")
            });
        let mut lines_above = above;
        lines_above.any(|text| is_marker(text))
            || self
                .lines
                .get(body_line)
                .is_some_and(|first_body_line| is_marker(first_body_line))
    }
}

/// `#[test]`, `#[tokio::test]` or `#[cfg(test)]`-like attributes.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path
            .segments
            .last()
            .is_some_and(|last| last.ident == "test")
        {
            return true;
        }
        path.is_ident("cfg")
            && matches!(&attr.meta, syn::Meta::List(list) if list.tokens.to_string() == "test")
    })
}

fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(path) => path
            .path
            .segments
            .last()
            .map_or_else(|| "_".to_owned(), |last| last.ident.to_string()),
        syn::Type::Reference(reference) => type_name(&reference.elem),
        _ => "_".to_owned(),
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test_only(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.record(&item.sig.ident, &item.sig.fn_token, &item.block);
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.owner.push(type_name(&item.self_ty));
        syn::visit::visit_item_impl(self, item);
        self.owner.pop();
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.owner.push(item.ident.to_string());
        syn::visit::visit_item_trait(self, item);
        self.owner.pop();
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.record(&item.sig.ident, &item.sig.fn_token, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.record(&item.sig.ident, &item.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("    let _x{i} = {i};\n"))
            .collect()
    }

    #[test]
    fn spans_count_from_fn_to_the_closing_brace_and_name_the_impl() {
        let text = format!(
            "//! h\nstruct S;\nimpl S {{\n    /// Doc.\n    fn f() {{\n{}    }}\n}}\nfn g() {{}}\n",
            body(3)
        );
        let found = functions(&text);
        assert_eq!(
            found,
            vec![
                FunctionSpan {
                    name: "S::f".into(),
                    line: 5,
                    lines: 5,
                    explained: false
                },
                FunctionSpan {
                    name: "g".into(),
                    line: 11,
                    lines: 1,
                    explained: false
                },
            ]
        );
    }

    #[test]
    fn test_code_is_left_out_and_strings_with_braces_do_not_count() {
        let text = "fn f() {\n    let s = \"}}}\";\n}\n#[cfg(test)]\nmod tests {\n    fn helper() {}\n}\n#[test]\nfn t() {}\n";
        let found = functions(text);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].name.as_str(), found[0].lines), ("f", 3));
    }

    #[test]
    fn a_long_comment_above_or_at_the_top_of_the_body_explains_it() {
        let above = "// Long: one arm per event type.\n#[inline]\nfn f() {\n}\n";
        let inside = "fn f() {\n    // Long: a state table.\n}\n";
        let elsewhere = "// Long: about something else.\n\nfn f() {\n    let x = 1;\n    // Long: too late.\n}\n";
        assert!(functions(above)[0].explained);
        assert!(functions(inside)[0].explained);
        assert!(!functions(elsewhere)[0].explained);
    }
}

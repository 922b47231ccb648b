//! One file's module structure, read from its tokens: child modules (declared `mod x;` or inline `mod x { }`),
//! `use` items expanded into one path per imported name, the names the module defines, and the paths its items
//! refer to (any path of two or more segments, e.g. `crate::a::B`, `super::x`, `child::f`). Items under
//! `#[cfg(test)]` are left out whole, and `#![cfg(test)]` marks the whole module as test-only.

use std::collections::BTreeSet;

use super::lexer::{Spanned, Token};

#[derive(Debug, Default)]
pub struct ModuleSyntax {
    pub children: Vec<ChildModule>,
    pub uses: Vec<UseItem>,
    /// Items the module defines by name (functions, types, traits, constants, statics).
    pub defined: BTreeSet<String>,
    pub references: Vec<PathRef>,
    /// `#![cfg(test)]`: the module only exists in tests.
    pub test_only: bool,
}

#[derive(Debug)]
pub struct ChildModule {
    pub name: String,
    /// `#[path = "..."]`.
    pub path_attribute: Option<String>,
    /// The body of an inline `mod name { ... }`.
    pub inline: Option<ModuleSyntax>,
}

/// One name a `use` item brings in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UseItem {
    pub path: Vec<String>,
    pub binding: Binding,
    pub line: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// The name it is known by here (the last segment, or the `as` alias).
    Name(String),
    /// `path::*`.
    Glob,
    /// `as _`: used for its traits only.
    Hidden,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRef {
    pub segments: Vec<String>,
    pub line: usize,
}

/// The structure of a file's tokens.
pub fn parse(tokens: &[Spanned]) -> ModuleSyntax {
    let mut parser = Parser { tokens, at: 0 };
    parser.module(false)
}

/// Keywords that name the item they start, e.g. `fn name`.
const NAMING_KEYWORDS: &[&str] = &["fn", "struct", "enum", "union", "trait", "type", "const", "static"];
/// Words that may come before an item's keyword without naming it.
const QUALIFIERS: &[&str] = &["pub", "unsafe", "async", "extern", "default", "const", "crate", "mut", "auto"];

struct Parser<'a> {
    tokens: &'a [Spanned],
    at: usize,
}

/// What an item's attributes say.
#[derive(Default)]
struct Attributes {
    cfg_test: bool,
    path: Option<String>,
}

impl<'a> Parser<'a> {
    fn token(&self, ahead: usize) -> Option<&'a Token> {
        self.tokens.get(self.at + ahead).map(|t| &t.token)
    }

    fn line(&self) -> usize {
        self.tokens.get(self.at).or(self.tokens.last()).map_or(0, |t| t.line)
    }

    fn is_punct(&self, ahead: usize, c: char) -> bool {
        self.token(ahead) == Some(&Token::Punct(c))
    }

    fn is_ident(&self, ahead: usize, word: &str) -> bool {
        matches!(self.token(ahead), Some(Token::Ident(w)) if w == word)
    }

    fn ident(&self, ahead: usize) -> Option<&'a str> {
        match self.token(ahead) {
            Some(Token::Ident(word)) => Some(word),
            _ => None,
        }
    }

    /// Items up to the end of the tokens, or up to the `}` closing an inline module when `inline`.
    fn module(&mut self, inline: bool) -> ModuleSyntax {
        let mut module = ModuleSyntax::default();
        while self.at < self.tokens.len() {
            if inline && self.is_punct(0, '}') {
                self.at += 1;
                break;
            }
            self.item(&mut module);
        }
        module
    }

    /// One item: its attributes, then a module, a `use`, or anything else (scanned for paths).
    fn item(&mut self, module: &mut ModuleSyntax) {
        let attributes = self.attributes(module);
        let start = self.at;
        if self.is_ident(0, "pub") {
            self.at += 1;
            if self.is_punct(0, '(') {
                self.skip_group();
            }
        }
        if self.is_ident(0, "mod") {
            if let Some(name) = self.ident(1).map(str::to_string) {
                self.at += 2;
                let inline = if self.is_punct(0, '{') {
                    self.at += 1;
                    Some(self.module(true))
                } else {
                    self.at += usize::from(self.is_punct(0, ';'));
                    None
                };
                if !attributes.cfg_test && !inline.as_ref().is_some_and(|m| m.test_only) {
                    module.children.push(ChildModule { name, path_attribute: attributes.path, inline });
                }
                return;
            }
        }
        if self.is_ident(0, "use") {
            self.at += 1;
            let mut uses = Vec::new();
            self.use_tree(Vec::new(), &mut uses);
            self.at += usize::from(self.is_punct(0, ';'));
            if !attributes.cfg_test {
                module.uses.extend(uses);
            }
            return;
        }
        if let Some(name) = self.defined_name() {
            if !attributes.cfg_test {
                module.defined.insert(name);
            }
        }
        let semicolon_only = self.ends_at_semicolon_only();
        let mut scratch = ModuleSyntax::default();
        let into = if attributes.cfg_test { &mut scratch } else { module };
        self.rest_of_item(semicolon_only, into);
        if self.at == start {
            // Not an item start (a stray token): step over it.
            self.at += 1;
        }
    }

    /// `#[...]` and `#![...]` before an item; inner `cfg(test)` marks the module test-only.
    fn attributes(&mut self, module: &mut ModuleSyntax) -> Attributes {
        let mut attributes = Attributes::default();
        while self.is_punct(0, '#') {
            let inner = self.is_punct(1, '!');
            self.at += 1 + usize::from(inner);
            if !self.is_punct(0, '[') {
                break;
            }
            let body_start = self.at + 1;
            self.skip_group();
            let body = &self.tokens[body_start..self.at.saturating_sub(1)];
            let words: Vec<&Token> = body.iter().map(|t| &t.token).collect();
            let cfg_test = match words.as_slice() {
                [Token::Ident(cfg), Token::Punct('('), Token::Ident(test), Token::Punct(')')] => {
                    cfg == "cfg" && test == "test"
                }
                _ => false,
            };
            if let [Token::Ident(path), Token::Punct('='), Token::Literal(Some(value))] = words.as_slice() {
                if path == "path" {
                    attributes.path = Some(value.clone());
                }
            }
            if inner {
                module.test_only |= cfg_test;
            } else {
                attributes.cfg_test |= cfg_test;
            }
        }
        attributes
    }

    /// From an opening `(`, `[` or `{` past its matching close.
    fn skip_group(&mut self) {
        let mut depth = 0usize;
        while let Some(token) = self.token(0) {
            self.at += 1;
            match token {
                Token::Punct('(' | '[' | '{') => depth += 1,
                Token::Punct(')' | ']' | '}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    /// The name after the item's keyword (`fn name`, `const NAME`, `static mut NAME`), if it names one.
    fn defined_name(&self) -> Option<String> {
        let mut ahead = 0;
        loop {
            match self.token(ahead)? {
                Token::Ident(word) if NAMING_KEYWORDS.contains(&word.as_str()) => {
                    let mut name_at = ahead + 1;
                    if word == "static" && self.is_ident(name_at, "mut") {
                        name_at += 1;
                    }
                    match self.ident(name_at) {
                        // `const fn`, `const unsafe fn`: the name comes later.
                        Some(next) if (word == "const" && QUALIFIERS.contains(&next)) || next == "fn" => {
                            ahead = name_at;
                        }
                        Some("_") | None => return None,
                        Some(name) => return Some(name.to_string()),
                    }
                }
                Token::Ident(word) if QUALIFIERS.contains(&word.as_str()) => ahead += 1,
                Token::Literal(_) => ahead += 1,
                _ => return None,
            }
        }
    }

    /// `const`, `static`, `type` and `let` items end at their `;`, even after a `{ }` group (`const X: S = S {};`).
    fn ends_at_semicolon_only(&self) -> bool {
        let mut ahead = 0;
        while let Some(word) = self.ident(ahead) {
            match word {
                "static" | "type" | "let" => return true,
                "const" => return !matches!(self.ident(ahead + 1), Some("fn" | "unsafe" | "async" | "extern")),
                w if QUALIFIERS.contains(&w) => ahead += 1,
                _ => return false,
            }
        }
        false
    }

    /// The item's remaining tokens up to its end (`;` outside any group, or the `}` closing its body), recording
    /// nested `use` items and paths. Stops before a `}` that closes an enclosing block.
    fn rest_of_item(&mut self, semicolon_only: bool, into: &mut ModuleSyntax) {
        let mut depth = 0usize;
        while let Some(token) = self.token(0) {
            match token {
                Token::Punct('(' | '[' | '{') => {
                    depth += 1;
                    self.at += 1;
                }
                Token::Punct(')' | ']' | '}') => {
                    if depth == 0 {
                        return;
                    }
                    let closes_body = *token == Token::Punct('}');
                    depth -= 1;
                    self.at += 1;
                    if depth == 0 && closes_body && !semicolon_only {
                        return;
                    }
                }
                Token::Punct(';') if depth == 0 => {
                    self.at += 1;
                    return;
                }
                Token::Ident(word) if word == "use" => {
                    self.at += 1;
                    let mut uses = Vec::new();
                    self.use_tree(Vec::new(), &mut uses);
                    into.uses.extend(uses);
                    self.at += usize::from(self.is_punct(0, ';'));
                }
                Token::Ident(_) if self.starts_path() => {
                    let line = self.line();
                    let segments = self.path();
                    into.references.push(PathRef { segments, line });
                }
                _ => self.at += 1,
            }
        }
    }

    /// An identifier followed by `::` and not itself after `::`.
    fn starts_path(&self) -> bool {
        let after_separator = self.at > 0 && self.tokens[self.at - 1].token == Token::PathSep;
        !after_separator && self.token(1) == Some(&Token::PathSep) && matches!(self.token(2), Some(Token::Ident(_)))
    }

    /// `a::b::c`, stopping before a turbofish or anything not a segment.
    fn path(&mut self) -> Vec<String> {
        let mut segments = Vec::new();
        while let Some(word) = self.ident(0) {
            segments.push(word.to_string());
            self.at += 1;
            if self.token(0) == Some(&Token::PathSep) && matches!(self.token(1), Some(Token::Ident(_))) {
                self.at += 1;
            } else {
                break;
            }
        }
        segments
    }

    /// A `use` tree after `prefix`: `a::b`, `a::b as c`, `a::*`, `a::{b, c::d, self}`; one `UseItem` per name.
    /// A leading `::` (an extern crate) is read over and brings nothing in.
    fn use_tree(&mut self, prefix: Vec<String>, out: &mut Vec<UseItem>) {
        let line = self.line();
        let external = prefix.is_empty() && self.token(0) == Some(&Token::PathSep);
        if external {
            self.at += 1;
        }
        let mut segments = prefix;
        let mut produced = Vec::new();
        loop {
            match self.token(0) {
                Some(Token::Ident(word)) => {
                    let word = word.clone();
                    self.at += 1;
                    if self.token(0) == Some(&Token::PathSep) {
                        self.at += 1;
                        segments.push(word);
                        continue;
                    }
                    let binding = if word == "self" {
                        match segments.last() {
                            Some(last) => Binding::Name(last.clone()),
                            None => break,
                        }
                    } else {
                        segments.push(word.clone());
                        Binding::Name(word)
                    };
                    let binding = if self.is_ident(0, "as") {
                        self.at += 1;
                        let alias = self.ident(0).map(str::to_string);
                        self.at += 1;
                        match alias.as_deref() {
                            Some("_") | None => Binding::Hidden,
                            Some(alias) => Binding::Name(alias.to_string()),
                        }
                    } else {
                        binding
                    };
                    produced.push(UseItem { path: segments, binding, line });
                    break;
                }
                Some(Token::Punct('*')) => {
                    self.at += 1;
                    produced.push(UseItem { path: segments, binding: Binding::Glob, line });
                    break;
                }
                Some(Token::Punct('{')) => {
                    self.at += 1;
                    while !self.is_punct(0, '}') && self.at < self.tokens.len() {
                        self.use_tree(segments.clone(), &mut produced);
                        if self.is_punct(0, ',') {
                            self.at += 1;
                        } else if !self.is_punct(0, '}') {
                            break;
                        }
                    }
                    self.at += usize::from(self.is_punct(0, '}'));
                    break;
                }
                _ => break,
            }
        }
        if !external {
            out.extend(produced);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::lexer::tokenize;
    use super::*;

    fn syntax(source: &str) -> ModuleSyntax {
        parse(&tokenize(source))
    }

    fn name(path: &[&str], binding: &str) -> (Vec<String>, Binding) {
        (path.iter().map(|s| s.to_string()).collect(), Binding::Name(binding.into()))
    }

    #[test]
    fn use_trees_expand_into_one_path_per_name() {
        let module =
            syntax("use crate::a::{b, c::d as e, self, f::*, g as _};\npub(crate) use super::h;\nuse ::ext::x;");
        let uses: Vec<(Vec<String>, Binding)> = module.uses.into_iter().map(|u| (u.path, u.binding)).collect();
        assert_eq!(
            uses,
            [
                name(&["crate", "a", "b"], "b"),
                name(&["crate", "a", "c", "d"], "e"),
                name(&["crate", "a"], "a"),
                (vec!["crate".into(), "a".into(), "f".into()], Binding::Glob),
                (vec!["crate".into(), "a".into(), "g".into()], Binding::Hidden),
                name(&["super", "h"], "h"),
            ]
        );
    }

    #[test]
    fn modules_items_and_paths_are_found_and_test_items_left_out() {
        let source = "mod a;\n#[path = \"x.rs\"] pub mod b;\nmod c { use super::a::T; }\n#[cfg(test)] mod tests;\n\
                      #[cfg(test)]\nmod inline_tests { use crate::z::Z; }\n#[cfg(test)] use crate::y::Y;\n\
                      pub const fn k() -> u8 { crate::q::f(); 1 }\nconst X: S = S { v: super::w::V };\n\
                      static mut M: u8 = 0;\nstruct U;\nimpl U { fn g(&self) { use self::a::H; a::b::c::<u8>(); } }";
        let module = syntax(source);
        let children: Vec<(&str, Option<&str>, bool)> = module
            .children
            .iter()
            .map(|c| (c.name.as_str(), c.path_attribute.as_deref(), c.inline.is_some()))
            .collect();
        assert_eq!(children, [("a", None, false), ("b", Some("x.rs"), false), ("c", None, true)]);
        let inline = module.children[2].inline.as_ref().expect("inline body");
        assert_eq!(inline.uses[0].path, ["super", "a", "T"]);
        let defined: Vec<&str> = module.defined.iter().map(String::as_str).collect();
        assert_eq!(defined, ["M", "U", "X", "k"]);
        let paths: Vec<String> = module.references.iter().map(|r| r.segments.join("::")).collect();
        assert_eq!(paths, ["crate::q::f", "super::w::V", "a::b::c"]);
        let uses: Vec<String> = module.uses.iter().map(|u| u.path.join("::")).collect();
        assert_eq!(uses, ["self::a::H"], "the cfg(test) use and module are left out");
    }

    #[test]
    fn an_inner_cfg_test_marks_the_module() {
        assert!(syntax("#![cfg(test)]\nuse crate::a::B;").test_only);
        assert!(!syntax("#![allow(dead_code)]\nuse crate::a::B;").test_only);
    }
}

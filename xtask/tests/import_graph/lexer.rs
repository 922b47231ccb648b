//! Rust source as tokens for the import graph: identifiers (keywords included), `::`, single punctuation and
//! literals, each with its line. Comments are dropped, and literals keep only the text of plain strings (for
//! `#[path = "..."]`), so nothing inside a comment or a string is read as a path.

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    /// `::`.
    PathSep,
    Punct(char),
    /// A string's text (escapes kept as written); other literals carry none.
    Literal(Option<String>),
    Lifetime,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spanned {
    pub token: Token,
    pub line: usize,
}

/// The tokens of `source`.
pub fn tokenize(source: &str) -> Vec<Spanned> {
    let mut lexer = Lexer { chars: source.chars().collect(), at: 0, line: 1, out: Vec::new() };
    lexer.run();
    lexer.out
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    line: usize,
    out: Vec<Spanned>,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn push(&mut self, token: Token, line: usize) {
        self.out.push(Spanned { token, line });
    }

    /// Moves past one character, counting lines.
    fn bump(&mut self) {
        if self.peek(0) == Some('\n') {
            self.line += 1;
        }
        self.at += 1;
    }

    fn run(&mut self) {
        while let Some(c) = self.peek(0) {
            let line = self.line;
            match c {
                c if c.is_whitespace() => self.bump(),
                '/' if self.peek(1) == Some('/') => self.line_comment(),
                '/' if self.peek(1) == Some('*') => self.block_comment(),
                '"' => {
                    let text = self.quoted('"');
                    self.push(Token::Literal(Some(text)), line);
                }
                '\'' => self.quote_or_lifetime(),
                ':' if self.peek(1) == Some(':') => {
                    self.at += 2;
                    self.push(Token::PathSep, line);
                }
                c if c.is_ascii_digit() => {
                    while self.peek(0).is_some_and(is_ident_continue) {
                        self.bump();
                    }
                    self.push(Token::Literal(None), line);
                }
                c if is_ident_start(c) => self.word(),
                c => {
                    self.bump();
                    self.push(Token::Punct(c), line);
                }
            }
        }
    }

    fn line_comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.bump();
        }
    }

    /// `/* ... */`, nested.
    fn block_comment(&mut self) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            if c == '/' && self.peek(1) == Some('*') {
                depth += 1;
                self.at += 2;
            } else if c == '*' && self.peek(1) == Some('/') {
                depth -= 1;
                self.at += 2;
                if depth == 0 {
                    return;
                }
            } else {
                self.bump();
            }
        }
    }

    /// From an opening `quote` to the matching unescaped one; returns the text between.
    fn quoted(&mut self, quote: char) -> String {
        self.bump();
        let mut text = String::new();
        while let Some(c) = self.peek(0) {
            if c == '\\' {
                text.push(c);
                self.bump();
                if let Some(escaped) = self.peek(0) {
                    text.push(escaped);
                    self.bump();
                }
            } else if c == quote {
                self.bump();
                break;
            } else {
                text.push(c);
                self.bump();
            }
        }
        text
    }

    /// `r"..."`, `r#"..."#` and the like: called at the first `#` or `"` after the prefix.
    fn raw_string(&mut self) {
        let mut hashes = 0;
        while self.peek(0) == Some('#') {
            hashes += 1;
            self.bump();
        }
        self.bump();
        while let Some(c) = self.peek(0) {
            self.bump();
            if c == '"' && (0..hashes).all(|i| self.peek(i) == Some('#')) {
                self.at += hashes;
                return;
            }
        }
    }

    /// A char literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime / label (`'a`).
    fn quote_or_lifetime(&mut self) {
        let line = self.line;
        if self.peek(1) == Some('\\') || self.peek(2) == Some('\'') {
            self.quoted('\'');
            self.push(Token::Literal(None), line);
        } else {
            self.bump();
            while self.peek(0).is_some_and(is_ident_continue) {
                self.bump();
            }
            self.push(Token::Lifetime, line);
        }
    }

    /// An identifier, or the prefix of a raw identifier or a string / char literal (`r#x`, `r"..."`, `b'x'`, ...).
    fn word(&mut self) {
        let line = self.line;
        let start = self.at;
        while self.peek(0).is_some_and(is_ident_continue) {
            self.bump();
        }
        let word: String = self.chars[start..self.at].iter().collect();
        let next = self.peek(0);
        match (word.as_str(), next) {
            ("r", Some('#')) if self.peek(1).is_some_and(is_ident_start) => {
                self.bump();
                let start = self.at;
                while self.peek(0).is_some_and(is_ident_continue) {
                    self.bump();
                }
                let raw: String = self.chars[start..self.at].iter().collect();
                self.push(Token::Ident(raw), line);
            }
            ("r" | "br" | "cr", Some('"' | '#')) => {
                self.raw_string();
                self.push(Token::Literal(None), line);
            }
            ("b" | "c", Some('"')) => {
                self.quoted('"');
                self.push(Token::Literal(None), line);
            }
            ("b", Some('\'')) => {
                self.quoted('\'');
                self.push(Token::Literal(None), line);
            }
            _ => self.push(Token::Ident(word), line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(source: &str) -> Vec<String> {
        tokenize(source)
            .into_iter()
            .filter_map(|t| match t.token {
                Token::Ident(name) => Some(name),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn comments_and_literals_hide_their_contents() {
        let source = "// crate::a\n/* crate::b /* nested */ crate::c */ x\n\"crate::d\" r#\"crate::\"e\"# \
                      b\"crate::f\" 'x' '\\'' b'y' y";
        assert_eq!(idents(source), ["x", "y"]);
    }

    #[test]
    fn lifetimes_are_not_chars_and_paths_keep_their_lines() {
        let tokens = tokenize("fn f<'a>(x: &'a str) -> char { 'z' }\nuse crate::m;");
        assert_eq!(tokens.iter().filter(|t| t.token == Token::Lifetime).count(), 2);
        let sep = tokens.iter().find(|t| t.token == Token::PathSep).expect("a ::");
        assert_eq!(sep.line, 2);
        assert_eq!(idents("r#type::x"), ["type", "x"]);
    }

    #[test]
    fn strings_keep_their_text_for_path_attributes() {
        let tokens = tokenize("#[path = \"other.rs\"] mod m;");
        assert!(tokens.iter().any(|t| t.token == Token::Literal(Some("other.rs".into()))));
    }
}

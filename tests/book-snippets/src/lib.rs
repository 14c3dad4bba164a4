//! The book's code, compiled from the book itself: a chapter marks a code block with
//! `<!-- snippet: NAME -->` on the line before it, and a test compiles that block where
//! it names it. The Markdown is the only copy, and it reads whole wherever Markdown is
//! rendered.
//!
//! - `snippet!("chapter.md", "NAME")`, where items go: the block's items, in a module of
//!   their own that sees everything around it (`use super::*`), so each block can show
//!   every `use` line it needs without clashing with another block's; its items are
//!   made `pub(crate)` and brought back out, for the code after it.
//! - `statements!("chapter.md", "NAME")`, inside a function: the block's statements
//!   (with its `use` lines, scoped to the function), whose bindings the code after it
//!   uses.

use proc_macro::{Delimiter, Group, Ident, Literal, Span, TokenStream, TokenTree};

/// The book's chapters, relative to this crate.
const BOOK_SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../book/src");

/// The items of block `NAME` of `book/src/CHAPTER`: `snippet!("sessions.md", "listener")`.
#[proc_macro]
pub fn snippet(input: TokenStream) -> TokenStream {
    or_error(read(input).map(|(name, code)| items(&name, code)))
}

/// The statements of block `NAME` of `book/src/CHAPTER`, inside a function.
#[proc_macro]
pub fn statements(input: TokenStream) -> TokenStream {
    or_error(read(input).map(statements_of))
}

fn or_error(expanded: Result<TokenStream, String>) -> TokenStream {
    expanded.unwrap_or_else(|message| {
        format!("compile_error!({message:?});")
            .parse()
            .unwrap_or_default()
    })
}

/// The snippet's name and code.
fn read(input: TokenStream) -> Result<(String, TokenStream), String> {
    let [chapter, name] = string_arguments(input)?;
    let path = format!("{BOOK_SRC}/{chapter}");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let code = block(&text, &name).map_err(|e| format!("{chapter}: {e}"))?;
    let tokens = code
        .parse::<TokenStream>()
        .map_err(|e| format!("{chapter}, snippet {name}: not Rust: {e}"))?;
    Ok((name, tokens))
}

/// `mod __book_NAME { use super::*; ITEMS (made pub(crate)) } use __book_NAME::*;`
fn items(name: &str, code: TokenStream) -> TokenStream {
    let module: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let module = format!("__book_{module}");
    let mut body: TokenStream = "#![allow(unused_imports)] use super::*;"
        .parse()
        .unwrap_or_default();
    body.extend(visible(code));
    let mut out: TokenStream =
        format!("#[allow(unused_imports, clippy::module_inception)] mod {module}")
            .parse()
            .unwrap_or_default();
    out.extend([TokenTree::Group(Group::new(Delimiter::Brace, body))]);
    out.extend(
        format!("#[allow(unused_imports)] pub use {module}::*;")
            .parse::<TokenStream>()
            .unwrap_or_default(),
    );
    out
}

/// The items of `code`, each without a visibility given `pub(crate)`.
fn visible(code: TokenStream) -> TokenStream {
    const ITEM: [&str; 10] = [
        "struct", "enum", "fn", "async", "const", "static", "type", "trait", "union", "mod",
    ];
    let mut out = Vec::new();
    let mut at_start = true;
    let mut in_struct = false;
    let mut tokens = code.into_iter().peekable();
    while let Some(token) = tokens.next() {
        if let TokenTree::Ident(ident) = &token {
            if ident.to_string() == "struct" {
                in_struct = true;
            }
        }
        if in_struct {
            if let TokenTree::Group(g) = &token {
                if matches!(g.delimiter(), Delimiter::Brace | Delimiter::Parenthesis) {
                    in_struct = false;
                    let mut fields = Group::new(g.delimiter(), visible_fields(g.stream()));
                    fields.set_span(g.span());
                    out.push(TokenTree::Group(fields));
                    at_start = !matches!(tokens.peek(), Some(TokenTree::Punct(p)) if p.as_char() == ';')
                        && g.delimiter() == Delimiter::Brace;
                    continue;
                }
            }
            if matches!(&token, TokenTree::Punct(p) if p.as_char() == ';') {
                in_struct = false;
            }
        }
        match &token {
            // An attribute (doc comments are attributes too) keeps the item's start.
            TokenTree::Punct(p) if p.as_char() == '#' => {
                copy_attribute(token, &mut tokens, &mut out);
                continue;
            }
            TokenTree::Ident(ident) if at_start => {
                let word = ident.to_string();
                if ITEM.contains(&word.as_str()) {
                    out.extend(pub_crate());
                }
                at_start = false;
            }
            TokenTree::Punct(p) if p.as_char() == ';' => {
                out.push(token);
                at_start = true;
                continue;
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                out.push(token);
                // A brace group ends an item unless a `;` follows (`const X: T = T {};`).
                at_start =
                    !matches!(tokens.peek(), Some(TokenTree::Punct(p)) if p.as_char() == ';');
                continue;
            }
            _ => at_start = false,
        }
        out.push(token);
    }
    out.into_iter().collect()
}

/// A struct's fields, each without a visibility given `pub(crate)`: the book's blocks
/// build each other's structs, as code in one file does.
fn visible_fields(fields: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut at_start = true;
    let mut tokens = fields.into_iter();
    while let Some(token) = tokens.next() {
        match &token {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                copy_attribute(token, &mut tokens, &mut out);
                continue;
            }
            TokenTree::Punct(p) if p.as_char() == ',' => {
                out.push(token);
                at_start = true;
                continue;
            }
            TokenTree::Ident(ident) if ident.to_string() == "pub" => at_start = false,
            _ if at_start => {
                out.extend(pub_crate());
                at_start = false;
            }
            _ => {}
        }
        out.push(token);
    }
    out.into_iter().collect()
}

/// Copies an attribute: its `#` and its bracketed group.
fn copy_attribute(
    hash: TokenTree,
    tokens: &mut impl Iterator<Item = TokenTree>,
    out: &mut Vec<TokenTree>,
) {
    out.push(hash);
    out.extend(tokens.next());
}

fn pub_crate() -> [TokenTree; 2] {
    [
        TokenTree::Ident(Ident::new("pub", Span::call_site())),
        TokenTree::Group(Group::new(
            Delimiter::Parenthesis,
            TokenStream::from(TokenTree::Ident(Ident::new("crate", Span::call_site()))),
        )),
    ]
}

/// The snippet's statements, its `use` lines included: inside a function they are
/// scoped to it.
fn statements_of((_, code): (String, TokenStream)) -> TokenStream {
    code
}

/// The two string literals the macro takes.
fn string_arguments(input: TokenStream) -> Result<[String; 2], String> {
    let mut strings = Vec::new();
    for token in input {
        match token {
            TokenTree::Literal(literal) => strings.push(unquote(&literal)?),
            TokenTree::Punct(p) if p.as_char() == ',' => {}
            TokenTree::Group(g) if g.delimiter() == Delimiter::None => {
                strings.extend(string_arguments(g.stream())?);
            }
            other => return Err(format!("snippet!(\"chapter.md\", \"name\"), not {other}")),
        }
    }
    strings
        .try_into()
        .map_err(|_| "snippet! takes two strings: the chapter and the snippet's name".into())
}

fn unquote(literal: &Literal) -> Result<String, String> {
    let text = literal.to_string();
    text.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|t| !t.contains('\\'))
        .map(str::to_string)
        .ok_or_else(|| format!("a plain string literal, not {text}"))
}

/// The code of the block marked `<!-- snippet: NAME -->`, which must be the only one.
fn block(text: &str, name: &str) -> Result<String, String> {
    let marker = format!("<!-- snippet: {name} -->");
    let mut found = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != marker {
            continue;
        }
        if found.is_some() {
            return Err(format!("two code blocks are marked {marker}"));
        }
        let fence = lines
            .next()
            .filter(|l| l.trim_start().starts_with("```"))
            .ok_or_else(|| format!("{marker} is not followed by a code block"))?;
        let indent = fence.len() - fence.trim_start().len();
        let mut code = String::new();
        for line in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                break;
            }
            code.push_str(line.get(indent..).unwrap_or(line.trim_start()));
            code.push('\n');
        }
        found = Some(code);
    }
    found.ok_or_else(|| format!("no code block is marked {marker}"))
}

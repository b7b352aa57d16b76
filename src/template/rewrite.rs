//! Template text rewritten where Jinja2 (Python) means something minijinja does not, before
//! minijinja compiles it. Each rewrite is of the tokens, so strings and `raw` blocks are safe.
//!
//! Ansible's chained undefined under `default` and `is defined`: `cfg.port | default(80)` is 80
//! where `cfg` is not defined at all, and `item.opts.mode is defined` is false where `item` has
//! no `opts`, because Ansible's undefined gives an undefined for any attribute of it. minijinja's
//! strict undefined (which copctl keeps everywhere else: a typo must fail) errors on the first
//! attribute of an undefined. So the attribute chain right before those filters and tests is
//! rewritten into a call that walks it and stops at the first undefined:
//! `__copctl_chain(cfg, 'a', 'port')`. Nothing else changes: `{{ cfg.port }}` alone still fails.
//!
//! Python's `%` on a string literal (`'%02d' % n`, `'%s:%s' % (host, port)`), which minijinja's
//! `%` (numbers only) refuses: the `format` filter, which formats as Python's `%` does
//! (`('%02d' | format(n))`).
//!
//! A datetime minus another (`(now() - (d | to_datetime)).days`), which minijinja's `-`
//! (numbers only) refuses: where a text makes datetimes (`to_datetime`, `now(`), each `a - b`
//! whose operands are plain unary operands becomes `__copctl_sub(a, b)` (clock.rs: Python's
//! datetime and timedelta arithmetic, numbers as `-` has them). A `-` next to a tighter
//! operator (`a * b - c`, `a - b ** c`) is left as it is: minijinja refuses it for datetimes.

use std::borrow::Cow;

use minijinja::machinery::{Token, tokenize};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Rest, Value};

/// The function the rewritten chains call.
pub const CHAIN: &str = "__copctl_chain";

/// The function a rewritten subtraction calls.
pub const SUB: &str = "__copctl_sub";

/// The function a lookup's templated literal argument is rewritten into (see `lookup_terms`).
pub const TERM: &str = "__copctl_term";

/// The function a conditional's templated string constant is rewritten into (`template_consts`).
pub const CONST: &str = "__copctl_const";

/// The function a variable under `default` or `is defined` is looked up by (`var`).
pub const VAR: &str = "__copctl_var";

type Toks<'t> = Vec<(Token<'t>, minijinja::machinery::Span)>;

/// `apply` with minijinja's default delimiters, remembered per text: the same few texts (a
/// step's arguments, its `when`) are rendered for every host, and tokenizing them again for each
/// would be a cost per host.
pub fn apply_default(text: &str, expr: bool) -> Cow<'_, str> {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, Mutex};
    type Seen = HashMap<(bool, Box<str>), Option<Arc<str>>>;
    static SEEN: LazyLock<Mutex<Seen>> = LazyLock::new(Mutex::default);
    if !might_rewrite(text) {
        return Cow::Borrowed(text);
    }
    let key = (expr, Box::<str>::from(text));
    if let Some(done) = SEEN.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return done.as_ref().map_or(Cow::Borrowed(text), |t| Cow::Owned(t.to_string()));
    }
    let out = apply(text, SyntaxConfig::default(), expr);
    // Written for Jinja's own delimiters, and not where a raw block could hold what looks like
    // a macro.
    let out = if !expr && macro_with_include(&out) && !out.contains("raw") {
        match macro_includes(&out) {
            Cow::Borrowed(_) => out,
            Cow::Owned(o) => Cow::Owned(o),
        }
    } else {
        out
    };
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    // Bounded: a run's texts are few; texts made per host (a rendered variable) are not kept long.
    if seen.len() >= 4096 {
        seen.clear();
    }
    seen.insert(key, matches!(out, Cow::Owned(_)).then(|| Arc::from(out.as_ref())));
    out
}

/// Whether either rewrite can apply: a `default`/`defined`/`d(` after an attribute, or a `%`
/// outside `{%`/`%}`.
fn might_rewrite(text: &str) -> bool {
    chains_possible(text)
        || modulo(text)
        || dates_subtracted(text)
        || templated_terms(text)
        || text.contains('+')
        || macro_with_include(text)
}

fn macro_with_include(text: &str) -> bool {
    text.contains("macro") && text.contains("include")
}

/// A macro whose body includes a template (`{% macro m() %}{% include 'x' %}{% endmacro %}`):
/// Jinja2's include sees the template's top-level names (`{% set %}`, `{% import ... as %}`,
/// `{% from ... import %}`) where the macro is called; minijinja's macro encloses only the
/// names its own body reads. A dead read of each such name (`{% if false %}{{ n }}{% endif %}`)
/// at the start of the body makes minijinja enclose them too; it prints nothing.
fn macro_includes(text: &str) -> Cow<'_, str> {
    use std::sync::LazyLock;
    static NAMES: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"\{%-?\s*(?:set\s+([A-Za-z_]\w*)\s*(?:=|-?%\})|import\s+.+?\s+as\s+([A-Za-z_]\w*)|from\s+.+?\s+import\s+(.+?)\s*(?:with\s|without\s|-?%\}))",
        )
        .expect("valid pattern")
    });
    static MACRO: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"(?s)(\{%-?\s*macro\s[^%]*?-?%\})(.*?)\{%-?\s*endmacro").expect("valid pattern")
    });
    let mut names: Vec<&str> = Vec::new();
    for c in NAMES.captures_iter(text) {
        let found: Vec<&str> = match (c.get(1), c.get(2), c.get(3)) {
            (Some(n), _, _) | (_, Some(n), _) => vec![n.as_str()],
            (_, _, Some(list)) => list
                .as_str()
                .split(',')
                .filter_map(|one| one.split_whitespace().last())
                .filter(|n| n.chars().all(|ch| ch.is_alphanumeric() || ch == '_'))
                .collect(),
            _ => vec![],
        };
        for n in found {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    if names.is_empty() {
        return Cow::Borrowed(text);
    }
    let reads: String = names.iter().map(|n| format!("{{{{ {n} }}}}")).collect();
    let mut edits = Vec::new();
    for c in MACRO.captures_iter(text) {
        let (head, body) = (c.get(1).expect("group"), c.get(2).expect("group"));
        if body.as_str().contains("include") {
            edits.push((head.end(), head.end(), format!("{{% if false %}}{reads}{{% endif %}}")));
        }
    }
    edited(text, edits)
}

/// A lookup or query whose arguments may hold a template literal.
fn templated_terms(text: &str) -> bool {
    (text.contains("lookup(") || text.contains("query(") || text.contains("q("))
        && (text.contains("{{") || text.contains("{%"))
}

fn dates_subtracted(text: &str) -> bool {
    text.contains('-') && (text.contains("to_datetime") || text.contains("now("))
}

fn chains_possible(text: &str) -> bool {
    (text.contains("default") || text.contains("defined") || text.contains("d("))
        && (text.contains('.') || text.contains('[') || !text.contains("{%"))
}

/// A `%` that is not part of `{%` or `%}`.
fn modulo(text: &str) -> bool {
    let b = text.as_bytes();
    (0..b.len()).any(|i| b[i] == b'%' && (i == 0 || b[i - 1] != b'{') && b.get(i + 1) != Some(&b'}'))
}

/// `text` (a template, or a bare expression where `expr`) with every rewrite made. Text it
/// cannot tokenize is left as it is, for the compiler to report.
pub fn apply(text: &str, syntax: SyntaxConfig, expr: bool) -> Cow<'_, str> {
    let done = chains(text, syntax.clone(), expr);
    let done = then(done, modulo, |t| percent(t, syntax.clone(), expr));
    let done = then(done, dates_subtracted, |t| minus(t, syntax.clone(), expr));
    let done = then(done, templated_terms, |t| lookup_terms(t, syntax.clone(), expr));
    then(done, |t| t.contains('+'), |t| unary_plus(t, syntax.clone(), expr))
}

/// Jinja2's unary `+` (`[-2.5, +2.5]`), which minijinja's parser lacks: left out, as Python's
/// `+` leaves a number as it is.
fn unary_plus(text: &str, syntax: SyntaxConfig, expr: bool) -> Cow<'_, str> {
    let Some(toks) = tokens(text, syntax, expr) else { return Cow::Borrowed(text) };
    let mut edits = Vec::new();
    for (i, (tok, span)) in toks.iter().enumerate() {
        if !matches!(tok, Token::Plus) {
            continue;
        }
        // Binary where it follows an operand (a name other than an operator word, a literal, a
        // closing bracket); unary anywhere else.
        let unary = match i.checked_sub(1).map(|p| &toks[p].0) {
            None => expr,
            Some(Token::Ident(k)) => matches!(*k, "and" | "or" | "not" | "in" | "is" | "if" | "else"),
            Some(
                Token::Str(_)
                | Token::String(_)
                | Token::Int(_)
                | Token::Int128(_)
                | Token::Float(_)
                | Token::ParenClose
                | Token::BracketClose
                | Token::BraceClose
                | Token::TemplateData(_),
            ) => false,
            Some(_) => true,
        };
        if unary {
            edits.push((span.start_offset as usize, span.end_offset as usize, String::new()));
        }
    }
    edited(text, edits)
}

/// `rewrite` made on `done` where `wanted` says it may apply (a text not copied when unchanged).
fn then<'a>(
    done: Cow<'a, str>,
    wanted: fn(&str) -> bool,
    rewrite: impl for<'b> Fn(&'b str) -> Cow<'b, str>,
) -> Cow<'a, str> {
    if !wanted(&done) {
        return done;
    }
    match done {
        Cow::Borrowed(t) => rewrite(t),
        Cow::Owned(t) => Cow::Owned(rewrite(&t).into_owned()),
    }
}

/// A string literal holding a template.
fn templated_literal(tok: &Token<'_>) -> bool {
    match tok {
        Token::Str(s) => s.contains("{{") || s.contains("{%"),
        Token::String(s) => s.contains("{{") || s.contains("{%"),
        _ => false,
    }
}

/// Every string literal of the expression `text` that holds a template, as `__copctl_const`:
/// ansible-core 2.19 renders a conditional expression's constants (`"dude" == "du{{'de'}}"` is
/// true), where a template's (`{{ ... }}`) it leaves as they are but for a lookup's arguments.
pub fn template_consts(text: &str) -> Cow<'_, str> {
    if !(text.contains("{{") || text.contains("{%")) {
        return Cow::Borrowed(text);
    }
    let Some(toks) = tokens(text, SyntaxConfig::default(), true) else { return Cow::Borrowed(text) };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    // A lookup's arguments are the lookup's terms (`lookup_terms`): rendered where it is called,
    // a failure the lookup's to raise (a plugin may take an undefined one); its name is never
    // rendered.
    let mut in_lookup = vec![false; toks.len()];
    for i in 0..toks.len() {
        if matches!(toks[i].0, Token::Ident("lookup" | "query" | "q"))
            && matches!(toks.get(i + 1).map(|t| &t.0), Some(Token::ParenOpen))
            && let Some(close) = matching(&toks, i + 1)
        {
            in_lookup[i + 2..close].iter_mut().for_each(|x| *x = true);
        }
    }
    for (k, (tok, span)) in toks.iter().enumerate() {
        if templated_literal(tok) && !in_lookup[k] {
            let (start, end) = (span.start_offset as usize, span.end_offset as usize);
            edits.push((start, end, format!("{CONST}({})", &text[start..end])));
        }
    }
    edited(text, edits)
}

/// A lookup's arguments after its name that are string literals holding a template
/// (`lookup('file', '{{ role_path }}/files/key.pub')`, `lookup('pipe', 'echo {{ x }}')`): as
/// `__copctl_term('...')`, which renders them where the lookup is called, as ansible-core
/// renders a lookup's arguments written in the playbook (its name it does not). Values that come
/// from variables are not rewritten: a registered result holding `{{` stays text.
fn lookup_terms(text: &str, syntax: SyntaxConfig, expr: bool) -> Cow<'_, str> {
    let Some(toks) = tokens(text, syntax, expr) else { return Cow::Borrowed(text) };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for i in 0..toks.len() {
        let call = matches!(toks[i].0, Token::Ident("lookup" | "query" | "q"))
            && matches!(toks.get(i + 1).map(|t| &t.0), Some(Token::ParenOpen))
            && !matches!(i.checked_sub(1).map(|b| &toks[b].0), Some(Token::Dot | Token::Pipe));
        if !call {
            continue;
        }
        let Some(close) = matching(&toks, i + 1) else { continue };
        let mut depth = 0usize;
        let mut arg = 0usize;
        for k in i + 2..close {
            match &toks[k].0 {
                Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => depth += 1,
                Token::ParenClose | Token::BracketClose | Token::BraceClose => depth = depth.saturating_sub(1),
                Token::Comma if depth == 0 => arg += 1,
                // Already rewritten (a conditional's constant).
                _ if matches!(toks[k - 1].0, Token::ParenOpen)
                    && matches!(toks[k - 2].0, Token::Ident(TERM | CONST)) => {}
                t if arg > 0 && templated_literal(t) => {
                    let (start, end) = (toks[k].1.start_offset as usize, toks[k].1.end_offset as usize);
                    edits.push((start, end, format!("{TERM}({})", &text[start..end])));
                }
                _ => {}
            }
        }
    }
    edits.sort_by_key(|e| e.0);
    edits.dedup_by_key(|e| e.0);
    edited(text, edits)
}

/// Every binary `a - b` as `__copctl_sub(a, b)`, left to right (`a - b - c` is
/// `sub(sub(a, b), c)`), where neither operand touches a tighter operator.
fn minus(text: &str, syntax: SyntaxConfig, expr: bool) -> Cow<'_, str> {
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    // One subtraction a pass: the next one's left operand may be the call just made.
    for _ in 0..32 {
        let Some(toks) = tokens(&out, syntax.clone(), expr) else { return out };
        let Some(edit) = one_minus(&out, &toks) else { return out };
        let next = edited(&out, vec![edit]).into_owned();
        out = Cow::Owned(next);
    }
    out
}

fn one_minus(text: &str, toks: &Toks<'_>) -> Option<(usize, usize, String)> {
    let tight = |t: Option<&Token<'_>>| {
        matches!(
            t,
            Some(Token::Mul | Token::Div | Token::FloorDiv | Token::Mod | Token::Pow | Token::Minus | Token::Plus)
        )
    };
    for i in 1..toks.len() {
        if !matches!(toks[i].0, Token::Minus) {
            continue;
        }
        // Binary: right after an operand, not a keyword.
        let binary = match &toks[i - 1].0 {
            Token::Ident(k) => !matches!(*k, "and" | "or" | "not" | "in" | "is" | "if" | "else"),
            Token::Str(_) | Token::String(_) | Token::Int(_) | Token::Int128(_) | Token::Float(_) => true,
            Token::ParenClose | Token::BracketClose | Token::BraceClose => true,
            _ => false,
        };
        if !binary {
            continue;
        }
        let Some(start) = operand_start(toks, i - 1) else { continue };
        let Some(end) = operand_end(toks, i + 1) else { continue };
        let tighter_after = matches!(
            toks.get(end + 1).map(|t| &t.0),
            Some(Token::Mul | Token::Div | Token::FloorDiv | Token::Mod | Token::Pow)
        );
        if tight(start.checked_sub(1).map(|b| &toks[b].0)) || tighter_after {
            continue;
        }
        if matches!(toks[i + 1].0, Token::Minus | Token::Plus) {
            continue;
        }
        let left = span_text(text, toks, start, i - 1);
        let right = span_text(text, toks, i + 1, end);
        let (from, to) = (toks[start].1.start_offset as usize, toks[end].1.end_offset as usize);
        return Some((from, to, format!("{SUB}({left}, {right})")));
    }
    None
}

/// The first token of the unary operand (a primary, its attributes, items, calls and filters)
/// that ends at `end`.
fn operand_start(toks: &Toks<'_>, end: usize) -> Option<usize> {
    let mut k = end;
    loop {
        let atom = match toks[k].0 {
            Token::ParenClose | Token::BracketClose | Token::BraceClose => group_open(toks, k)?,
            Token::Ident(_) | Token::Str(_) | Token::String(_) | Token::Int(_) | Token::Int128(_) | Token::Float(_) => {
                k
            }
            _ => return None,
        };
        let Some(prev) = atom.checked_sub(1) else { return Some(atom) };
        match &toks[prev].0 {
            Token::Dot | Token::Pipe if prev >= 1 => k = prev - 1,
            Token::Ident(n)
                if matches!(toks[atom].0, Token::ParenOpen | Token::BracketOpen)
                    && !matches!(*n, "and" | "or" | "not" | "in" | "is" | "if" | "else") =>
            {
                k = prev
            }
            Token::ParenClose | Token::BracketClose | Token::Str(_) | Token::String(_)
                if matches!(toks[atom].0, Token::ParenOpen | Token::BracketOpen) =>
            {
                k = prev
            }
            _ => return Some(atom),
        }
    }
}

/// The opening token of the group closed at `close`.
fn group_open(toks: &Toks<'_>, close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for k in (0..close).rev() {
        match toks[k].0 {
            Token::BracketClose | Token::ParenClose | Token::BraceClose => depth += 1,
            Token::BracketOpen | Token::ParenOpen | Token::BraceOpen if depth == 0 => return Some(k),
            Token::BracketOpen | Token::ParenOpen | Token::BraceOpen => depth -= 1,
            Token::VariableStart | Token::BlockStart => return None,
            _ => {}
        }
    }
    None
}

fn tokens(text: &str, syntax: SyntaxConfig, expr: bool) -> Option<Toks<'_>> {
    tokenize(text, expr, syntax).collect::<Result<Vec<_>, _>>().ok()
}

/// `text` with the spans of `edits` (start, end, replacement; not overlapping) replaced.
fn edited<'a>(text: &'a str, mut edits: Vec<(usize, usize, String)>) -> Cow<'a, str> {
    if edits.is_empty() {
        return Cow::Borrowed(text);
    }
    edits.sort_by_key(|e| e.0);
    let mut out = String::with_capacity(text.len() + 32 * edits.len());
    let mut last = 0;
    for (start, end, call) in edits {
        out.push_str(&text[last..start]);
        out.push_str(&call);
        last = end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

fn span_text<'a>(text: &'a str, toks: &Toks<'_>, from: usize, to: usize) -> &'a str {
    &text[toks[from].1.start_offset as usize..toks[to].1.end_offset as usize]
}

/// Every `'literal' % operand`: the operand ends where Jinja2's unary operand ends (a primary,
/// its attributes, items and calls, and its filters).
fn percent(text: &str, syntax: SyntaxConfig, expr: bool) -> Cow<'_, str> {
    let Some(toks) = tokens(text, syntax, expr) else { return Cow::Borrowed(text) };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for i in 1..toks.len() {
        if !matches!(toks[i].0, Token::Mod) || !matches!(toks[i - 1].0, Token::Str(_) | Token::String(_)) {
            continue;
        }
        let before = i.checked_sub(2).map(|b| &toks[b].0);
        if matches!(before, Some(Token::Mul | Token::Div | Token::FloorDiv | Token::Mod | Token::Pow | Token::Dot)) {
            continue;
        }
        let Some(last) = operand_end(&toks, i + 1) else { continue };
        let (start, end) = (toks[i - 1].1.start_offset as usize, toks[last].1.end_offset as usize);
        if edits.iter().any(|&(s, e, _)| s < end && start < e) {
            continue;
        }
        let literal = span_text(text, &toks, i - 1, i - 1);
        // `% (a, b)`: the tuple's items are the arguments; anything else is one argument.
        let tuple = matches!(toks[i + 1].0, Token::ParenOpen)
            && matching(&toks, i + 1) == Some(last)
            && (last == i + 2 || top_level_comma(&toks, i + 1, last));
        let args = if tuple {
            if last == i + 2 { String::new() } else { span_text(text, &toks, i + 2, last - 1).to_string() }
        } else {
            span_text(text, &toks, i + 1, last).to_string()
        };
        edits.push((start, end, format!("({literal} | format({args}))")));
    }
    edited(text, edits)
}

/// The closing token of the group opened at `open`.
fn matching(toks: &Toks<'_>, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, (t, _)) in toks.iter().enumerate().skip(open) {
        match t {
            Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => depth += 1,
            Token::ParenClose | Token::BracketClose | Token::BraceClose => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
            Token::VariableEnd | Token::BlockEnd => return None,
            _ => {}
        }
    }
    None
}

fn top_level_comma(toks: &Toks<'_>, open: usize, close: usize) -> bool {
    let mut depth = 0usize;
    for (t, _) in &toks[open + 1..close] {
        match t {
            Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => depth += 1,
            Token::ParenClose | Token::BracketClose | Token::BraceClose => depth = depth.saturating_sub(1),
            Token::Comma if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// The last token of the unary operand that starts at `at`.
fn operand_end(toks: &Toks<'_>, at: usize) -> Option<usize> {
    let mut k = at;
    while matches!(toks.get(k)?.0, Token::Minus | Token::Plus) {
        k += 1;
    }
    let mut last = match toks.get(k)?.0 {
        Token::Ident(_) | Token::Str(_) | Token::String(_) | Token::Int(_) | Token::Int128(_) | Token::Float(_) => k,
        Token::ParenOpen | Token::BracketOpen | Token::BraceOpen => matching(toks, k)?,
        _ => return None,
    };
    loop {
        match toks.get(last + 1).map(|t| &t.0) {
            Some(Token::Dot) if matches!(toks.get(last + 2).map(|t| &t.0), Some(Token::Ident(_) | Token::Int(_))) => {
                last += 2
            }
            Some(Token::BracketOpen | Token::ParenOpen) => last = matching(toks, last + 1)?,
            Some(Token::Pipe) if matches!(toks.get(last + 2).map(|t| &t.0), Some(Token::Ident(_))) => {
                last += 2;
                while matches!(toks.get(last + 1).map(|t| &t.0), Some(Token::Dot))
                    && matches!(toks.get(last + 2).map(|t| &t.0), Some(Token::Ident(_)))
                {
                    last += 2;
                }
            }
            _ => return Some(last),
        }
    }
}

/// Jinja's words that are no variable.
fn is_word(n: &str) -> bool {
    matches!(
        n,
        "and" | "or" | "not" | "in" | "is" | "if" | "else" | "true" | "false" | "none" | "True" | "False" | "None"
    )
}

/// The variable `name` where the template is: undefined where its value cannot be made for
/// want of a variable (a lazy variable reading an undefined one); any other failure stays.
pub fn var(state: &minijinja::State, name: &str) -> Result<Value, minijinja::Error> {
    match state.lookup(name) {
        None => Ok(Value::UNDEFINED),
        // minijinja keeps an invalid value's error to itself but for its text.
        Some(v) if v.kind() == minijinja::value::ValueKind::Invalid => {
            let text = v.to_string();
            match text.strip_prefix("<invalid value: ") {
                Some(e) if e.starts_with("undefined value") => Ok(Value::UNDEFINED),
                _ => Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    text.trim_start_matches("<invalid value: ").trim_end_matches('>').to_string(),
                )),
            }
        }
        Some(v) => Ok(v),
    }
}

/// `root`'s attributes and items by `path` (pairs of `'a'`/`'i'` and the name or key), an
/// undefined from the first one missing on.
pub fn walk(root: Value, path: Rest<Value>) -> Value {
    let mut v = root;
    for pair in path.chunks(2) {
        if v.is_undefined() {
            return v;
        }
        let [kind, key] = pair else { return Value::UNDEFINED };
        v = match kind.as_str() {
            Some("a") => key.as_str().and_then(|k| v.get_attr(k).ok()).unwrap_or(Value::UNDEFINED),
            _ => v.get_item(key).unwrap_or(Value::UNDEFINED),
        };
    }
    v
}

/// `text` with every attribute chain that a `default`/`d` filter or a `defined`/`undefined` test
/// is applied to made a chained lookup.
fn chains(text: &str, syntax: SyntaxConfig, expr: bool) -> Cow<'_, str> {
    if !chains_possible(text) {
        return Cow::Borrowed(text);
    }
    let Some(toks) = tokens(text, syntax, expr) else { return Cow::Borrowed(text) };
    let ident = |i: usize| match toks.get(i) {
        Some((Token::Ident(n), _)) => Some(*n),
        _ => None,
    };
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for i in 1..toks.len() {
        let applies = match toks[i].0 {
            Token::Pipe => matches!(ident(i + 1), Some("default" | "d")),
            Token::Ident("is") => {
                let t = if ident(i + 1) == Some("not") { i + 2 } else { i + 1 };
                matches!(ident(t), Some("defined" | "undefined"))
            }
            _ => false,
        };
        if !applies {
            continue;
        }
        // A variable whose value is a template reading an undefined one (`x: "{{ nope }}"`) is
        // undefined to `default` and `is defined`, as Ansible's lazy variables are: looked up by
        // name (`VAR`), not by minijinja's lookup, which fails on the spot. Not in a text with
        // blocks, where a macro encloses only the names its body reads.
        let by_name = !text.contains("{%");
        let named = |k: usize| match &toks[k].0 {
            Token::Ident(n) if by_name && !is_word(n) => format!("{VAR}('{n}')"),
            _ => span_text(text, &toks, k, k).to_string(),
        };
        let Some((root, steps)) = chain_before(&toks, i, text) else {
            let plain = match (&toks[i - 1].0, i.checked_sub(2).map(|b| &toks[b].0)) {
                (Token::Ident(n), before) => {
                    by_name && !is_word(n) && !matches!(before, Some(Token::Dot | Token::Pipe | Token::Ident("is")))
                }
                _ => false,
            };
            let (start, end) = (toks[i - 1].1.start_offset as usize, toks[i - 1].1.end_offset as usize);
            if plain && !edits.iter().any(|&(s, e, _)| s < end && start < e) {
                edits.push((start, end, named(i - 1)));
            }
            continue;
        };
        let (start, end) = (toks[root].1.start_offset as usize, toks[i - 1].1.end_offset as usize);
        if edits.iter().any(|&(s, e, _)| s < end && start < e) {
            continue;
        }
        let mut call = format!("{CHAIN}({}", named(root));
        for step in steps.iter().rev() {
            match step {
                Step::Attr(name) => call.push_str(&format!(", 'a', '{name}'")),
                Step::Item(key) => call.push_str(&format!(", 'i', ({key})")),
            }
        }
        call.push(')');
        edits.push((start, end, call));
    }
    edited(text, edits)
}

enum Step<'a> {
    Attr(&'a str),
    Item(&'a str),
}

/// The variable and its attribute steps (last first) that end right before token `at`: `a.b`,
/// `a['b'].c`, `a.0`. None for a plain variable (strict undefined is already right there), a
/// slice, or a chain on a call or a literal.
fn chain_before<'t>(toks: &Toks<'t>, at: usize, text: &'t str) -> Option<(usize, Vec<Step<'t>>)> {
    let mut steps = Vec::new();
    let mut j = at;
    loop {
        let prev = j.checked_sub(1)?;
        let dotted = prev >= 1 && matches!(toks[prev - 1].0, Token::Dot);
        match &toks[prev].0 {
            Token::Ident(name) if dotted => {
                steps.push(Step::Attr(name));
                j = prev - 1;
            }
            Token::Int(_) if dotted => {
                let s = &toks[prev].1;
                steps.push(Step::Item(&text[s.start_offset as usize..s.end_offset as usize]));
                j = prev - 1;
            }
            Token::Ident(_) => {
                let before = prev.checked_sub(1).map(|b| &toks[b].0);
                let filter_or_test = matches!(before, Some(Token::Pipe | Token::Ident("is")));
                return (!steps.is_empty() && !filter_or_test).then_some((prev, steps));
            }
            Token::BracketClose => {
                let open = matching_open(toks, prev)?;
                if open + 1 >= prev {
                    return None;
                }
                let (from, to) = (toks[open + 1].1.start_offset as usize, toks[prev - 1].1.end_offset as usize);
                steps.push(Step::Item(&text[from..to]));
                j = open;
            }
            _ => return None,
        }
    }
}

/// The `[` that the `]` at `close` closes, None where a slice's `:` is directly inside.
fn matching_open(toks: &Toks<'_>, close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for k in (0..close).rev() {
        match toks[k].0 {
            Token::BracketClose | Token::ParenClose | Token::BraceClose => depth += 1,
            Token::Colon if depth == 0 => return None,
            Token::BracketOpen if depth == 0 => return Some(k),
            Token::BracketOpen | Token::ParenOpen | Token::BraceOpen => depth = depth.checked_sub(1)?,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(t: &str) -> String {
        apply(t, SyntaxConfig::default(), false).into_owned()
    }

    #[test]
    fn a_conditionals_templated_constants_are_rendered_in_place() {
        assert_eq!(
            template_consts(r#""dude" == "du{{'de'}}" and x == 'plain'"#),
            r#""dude" == __copctl_const("du{{'de'}}") and x == 'plain'"#
        );
        assert_eq!(template_consts("a == b"), "a == b");
        // A lookup's arguments are its terms, rendered where it is called (its name never).
        let c =
            template_consts(r#"lookup('{{ "pipe" }}') or lookup('pipe', 'echo {{ x }}') == '{{ x }}'"#).into_owned();
        assert_eq!(c, r#"lookup('{{ "pipe" }}') or lookup('pipe', 'echo {{ x }}') == __copctl_const('{{ x }}')"#);
        assert_eq!(
            apply(&c, SyntaxConfig::default(), true),
            r#"lookup('{{ "pipe" }}') or lookup('pipe', __copctl_term('echo {{ x }}')) == __copctl_const('{{ x }}')"#
        );
    }

    #[test]
    fn a_macro_that_includes_reads_the_templates_top_level_names() {
        let src = "{% set test = 1 %}{% import 'v.j2' as vars with context %}{% from 'm.j2' import a, b as c %}\
                   {% macro m() %}{% include 'x.j2' %}{% endmacro %}{% macro n() %}{{ 1 }}{% endmacro %}";
        assert_eq!(
            apply_default(src, false),
            "{% set test = 1 %}{% import 'v.j2' as vars with context %}{% from 'm.j2' import a, b as c %}\
             {% macro m() %}{% if false %}{{ test }}{{ vars }}{{ a }}{{ c }}{% endif %}{% include 'x.j2' %}{% endmacro %}\
             {% macro n() %}{{ 1 }}{% endmacro %}"
        );
        let env = {
            let mut e = minijinja::Environment::new();
            e.add_template("inc.j2", "{{ vars.x }}/{{ top }}").unwrap();
            e.add_template("v.j2", "{% set x = 'from import' %}").unwrap();
            e
        };
        let t = "{% set top = 'top' %}{% import 'v.j2' as vars %}{% macro m() %}{% include 'inc.j2' %}{% endmacro %}{{ m() }}";
        assert!(env.render_str(t, ()).is_err(), "minijinja alone does not see them");
        assert_eq!(env.render_str(&apply_default(t, false), ()).unwrap(), "from import/top");
        // Not inside a raw block.
        let raw = "{% raw %}{% set x = 1 %}{% macro m() %}{% include 'a' %}{% endmacro %}{% endraw %}";
        assert_eq!(apply_default(raw, false), raw);
    }

    #[test]
    fn a_unary_plus_is_left_out_a_binary_one_stays() {
        assert_eq!(rw("{{ [-2.5, +2.5, 1 + 2.5] }}"), "{{ [-2.5, 2.5, 1 + 2.5] }}");
        assert_eq!(apply("+x + (+1) * y", SyntaxConfig::default(), true), "x + (1) * y");
        assert_eq!(rw("{{ a + b }}{{ 'c' ~ +d if not +e else '+' }}"), "{{ a + b }}{{ 'c' ~ d if not e else '+' }}");
        let t = crate::template::Templates::new(None);
        assert_eq!(
            t.render_str("{{ [1 + 2 * 3 / 4] + [-2.5, +2.5, 1 + 2.5] }}", &minijinja::Value::from(())).unwrap(),
            "[2.5, -2.5, 2.5, 3.5]"
        );
    }

    #[test]
    fn a_lookups_templated_literal_arguments_are_rendered_its_name_and_variables_are_not() {
        assert_eq!(
            rw("{{ lookup('pipe', 'echo {{ \"dude\" }}') }}"),
            "{{ lookup('pipe', __copctl_term('echo {{ \"dude\" }}')) }}"
        );
        assert_eq!(
            apply(
                "query('file', '{{ d }}/a', '{{ d }}/b', rstrip='{{ x }}') | length > 0",
                SyntaxConfig::default(),
                true
            ),
            "query('file', __copctl_term('{{ d }}/a'), __copctl_term('{{ d }}/b'), rstrip=__copctl_term('{{ x }}')) | length > 0"
        );
        // The name (Ansible does not render it), a variable's value, a method called `lookup`,
        // and a literal without a template stay as they are.
        for kept in [
            "{{ lookup('{{ \"pipe\" }}') }}",
            "{{ lookup('pipe', out.stdout) }}",
            "{{ x.lookup('{{ y }}', '{{ z }}') }}",
            "{{ lookup('file', 'plain') ~ '{{' }}",
        ] {
            assert_eq!(rw(kept), kept);
        }
    }

    #[test]
    fn subtractions_where_datetimes_are_made_become_calls_and_keep_precedence() {
        assert_eq!(
            rw("{{ (now() - (d | to_datetime('%Y')).x).days }}"),
            "{{ (__copctl_sub(now(), (d | to_datetime('%Y')).x)).days }}"
        );
        assert_eq!(rw("{{ now().year - 1 - n }}"), "{{ __copctl_sub(__copctl_sub(now().year, 1), n) }}");
        assert_eq!(
            rw("{{ a | to_datetime - b | to_datetime }}"),
            "{{ __copctl_sub(a | to_datetime, b | to_datetime) }}"
        );
        // Next to a tighter operator, or unary: left for minijinja (which refuses datetimes).
        for kept in [
            "{{ 2 * now().year - 1 }}",
            "{{ now().year - 2 ** 3 }}",
            "{{ -now().year - 1 }}",
            "{{ x | to_datetime if a else -1 }}",
        ] {
            assert_eq!(rw(kept), kept);
        }
        // Only where a text makes datetimes.
        assert_eq!(rw("{{ a - b }}"), "{{ a - b }}");
    }

    #[test]
    fn chains_before_default_and_defined_become_lookups_that_stop_at_undefined() {
        assert_eq!(
            rw("{{ cfg.port | default(80) }}"),
            "{{ __copctl_chain(__copctl_var('cfg'), 'a', 'port') | default(80) }}"
        );
        // In a text with blocks the variable itself stays (a macro encloses what its body reads).
        assert_eq!(
            rw("{% if item['opts'].mode is not defined %}x{% endif %}"),
            "{% if __copctl_chain(item, 'i', ('opts'), 'a', 'mode') is not defined %}x{% endif %}"
        );
        assert_eq!(rw("{{ a.0.b|d('z') }}"), "{{ __copctl_chain(__copctl_var('a'), 'i', (0), 'a', 'b')|d('z') }}");
        // A plain variable is looked up by name: one whose value cannot be made is undefined.
        assert_eq!(rw("{{ cfg | default(1) }}"), "{{ __copctl_var('cfg') | default(1) }}");
        assert_eq!(
            apply("x is undefined or none | default(y is defined)", SyntaxConfig::default(), true),
            "__copctl_var('x') is undefined or none | default(__copctl_var('y') is defined)"
        );
        // Left alone: a chain that is printed, a slice, a call's result, a variable in a text
        // with blocks.
        for same in [
            "{{ cfg.port }}",
            "{{ a[1:2].b | default(1) }}",
            "{{ f().x | d(1) }}",
            "{% set a = 1 %}{{ a | default(2) }}",
        ] {
            assert_eq!(rw(same), same);
        }
        assert_eq!(
            apply("x.y is defined and z", SyntaxConfig::default(), true),
            "__copctl_chain(__copctl_var('x'), 'a', 'y') is defined and z"
        );
    }

    #[test]
    fn percent_on_a_literal_becomes_the_format_filter() {
        assert_eq!(rw("{{ '%02d' % n }}"), "{{ ('%02d' | format(n)) }}");
        assert_eq!(rw("{{ 'n%s:%d' % (h.name, p | int) ~ x }}"), "{{ ('n%s:%d' | format(h.name, p | int)) ~ x }}");
        assert_eq!(rw("{{ '%s' % (x) }}"), "{{ ('%s' | format((x))) }}");
        assert_eq!(rw("{{ '%s' % items[0].name | upper }}"), "{{ ('%s' | format(items[0].name | upper)) }}");
        assert_eq!(rw("{{ '%s' % -5 }}"), "{{ ('%s' | format(-5)) }}");
        // Left alone: numbers' modulo, and a literal that is the right operand of a product.
        for same in ["{{ 7 % 2 }}", "{{ n % 2 }}", "{{ 2 * '%d' % n }}", "{% raw %}{{ '%d' % n }}{% endraw %}"] {
            assert_eq!(rw(same), same);
        }
    }
}

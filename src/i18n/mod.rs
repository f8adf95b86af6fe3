//! Languages: the message catalogues of `locales/` compiled into one table per locale
//! (`generate.rs`, run by build.rs), the choice of a request's language, and dates,
//! numbers and plurals per locale (`format.rs`).
//!
//! The catalogues are a compiled table rather than Fluent: every message is a field of
//! `Messages`, so a template naming a key English lacks fails to compile, a lookup
//! costs nothing, and the few plurals and formats the pages need are a page of code.
//!
//! The language of a request is chosen once by the `http::lang` middleware and held
//! for the request's task (`scope`), so every page, error page and mail rendered while
//! answering it speaks it without each call passing it down; the resumed sign-in
//! refines it with its `ui_locales` (`prefer`). Outside a request (commands, the
//! background workers) it is English unless a caller opens a scope.

mod format;

pub use format::civil;

use std::cell::Cell;

include!(concat!(env!("OUT_DIR"), "/messages.rs"));

pub use crate::domain::Locale;

/// Each language's messages.
impl Locale {
    pub fn messages(self) -> &'static Messages {
        match self {
            Locale::En => &EN,
            Locale::De => &DE,
            Locale::Fr => &FR,
            Locale::Es => &ES,
            Locale::It => &IT,
            Locale::Nl => &NL,
            Locale::Pt => &PT,
        }
    }
}

/// `ui_locales`: space-separated tags in order of preference (OpenID Connect Core
/// §3.1.2.1); the first one Tessera speaks.
pub fn from_ui_locales(value: &str) -> Option<Locale> {
    value.split(' ').find_map(Locale::from_tag)
}

/// `Accept-Language` (RFC 9110 §12.5.4): the supported language with the highest
/// weight, the earlier one on a tie; `q=0` means "not this one", `*` is skipped.
pub fn from_accept_language(value: &str) -> Option<Locale> {
    let mut best: Option<(u16, Locale)> = None;
    for item in value.split(',') {
        let mut parts = item.split(';');
        let tag = parts.next().unwrap_or_default().trim();
        let weight = parts
            .find_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
            .map_or(Some(1000), quality);
        let (Some(weight), Some(locale)) = (weight, Locale::from_tag(tag)) else {
            continue;
        };
        if weight > 0 && best.is_none_or(|(w, _)| weight > w) {
            best = Some((weight, locale));
        }
    }
    best.map(|(_, l)| l)
}

/// A `qvalue` in thousandths; `None` when it is not one.
fn quality(text: &str) -> Option<u16> {
    let (int, frac) = text.trim().split_once('.').unwrap_or((text.trim(), ""));
    if frac.len() > 3 || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let whole = match int {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    let thousandths = format!("{frac:0<3}").parse::<u16>().ok()?;
    let q = whole + thousandths;
    (q <= 1000).then_some(q)
}

/// How a request's language was chosen, strongest first: a person's own pick (the
/// picker's cookie) beats the application's `ui_locales`, which beats the browser's
/// `Accept-Language`, which beats the deployment's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Default,
    Browser,
    Application,
    Picked,
}

#[derive(Debug, Clone, Copy)]
struct Chosen {
    locale: Locale,
    source: Source,
}

tokio::task_local! {
    static CURRENT: Cell<Chosen>;
}

/// Runs `fut` with `locale` (chosen by `source`) as the language of what it renders.
pub async fn scope<F: std::future::Future>(locale: Locale, source: Source, fut: F) -> F::Output {
    CURRENT.scope(Cell::new(Chosen { locale, source }), fut).await
}

/// The language of what is being rendered now.
pub fn current() -> Locale {
    CURRENT.try_with(|c| c.get().locale).ok().unwrap_or_default()
}

/// The current language's messages.
pub fn t() -> &'static Messages {
    current().messages()
}

/// The resumed sign-in's `ui_locales` (or a person's pick, `Source::Picked`): taken
/// when it is stronger than what chose the current language.
pub fn prefer(locale: Option<Locale>, source: Source) {
    let Some(locale) = locale else { return };
    let _ = CURRENT.try_with(|c| {
        if source >= c.get().source {
            c.set(Chosen { locale, source });
        }
    });
}

/// One button of the login page's language picker.
#[derive(Debug, Clone, Copy)]
pub struct Choice {
    pub tag: &'static str,
    /// The language's name in itself ("Deutsch").
    pub name: &'static str,
    pub current: bool,
}

/// The language picker's buttons, in `Locale::ALL` order.
pub fn choices() -> Vec<Choice> {
    let now = current();
    Locale::ALL
        .iter()
        .map(|&l| Choice {
            tag: l.tag(),
            name: l.messages().language_name,
            current: l == now,
        })
        .collect()
}

/// The tags of every locale, for discovery's `ui_locales_supported`.
pub use crate::domain::locale::supported;

impl Messages {
    /// `text` with its `{name}` placeholder replaced by `value`.
    pub fn fill(&self, text: &str, name: &str, value: impl std::fmt::Display) -> String {
        text.replace(&format!("{{{name}}}"), &value.to_string())
    }

    /// `text` with two placeholders filled.
    pub fn fill2(
        &self,
        text: &str,
        a: &str,
        a_value: impl std::fmt::Display,
        b: &str,
        b_value: impl std::fmt::Display,
    ) -> String {
        self.fill(&self.fill(text, a, a_value), b, b_value)
    }

    /// `text` as HTML with `{name}` replaced by `value` in `<strong>`: both escaped, so
    /// it is rendered with `|safe`.
    pub fn fill_strong(&self, text: &str, name: &str, value: impl std::fmt::Display) -> String {
        markup(text, "strong", &[(name, &value)])
    }
}

/// `text` as HTML with each `{name}` replaced by its value inside `element` (`strong`,
/// `code`, or with attributes: `code id="secret"`), in one pass, so a value is never
/// searched for placeholders itself; the text and the values are escaped, so the
/// result is rendered with `|safe`. A placeholder without a value stays as it is.
pub fn markup(text: &str, element: &str, values: &[(&str, &dyn std::fmt::Display)]) -> String {
    let closing = element.split(' ').next().unwrap_or(element);
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let found = after
            .find('}')
            .and_then(|end| values.iter().find(|(n, _)| *n == &after[..end]).map(|(_, v)| (end, v)));
        out.push_str(&escape(&rest[..start]));
        match found {
            Some((end, value)) => {
                out.push_str(&format!("<{element}>{}</{closing}>", escape(&value.to_string())));
                rest = &after[end + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(&escape(rest));
    out
}

/// HTML-escapes text for `markup`.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_has_every_english_key_with_the_same_placeholders() {
        assert!(GAPS.is_empty(), "catalogue gaps:\n{}", GAPS.join("\n"));
    }

    #[test]
    fn every_table_knows_its_locale_and_names_itself() {
        for locale in Locale::ALL {
            let t = locale.messages();
            assert_eq!(t.locale, locale);
            assert_eq!(t.lang, locale.tag());
            assert_eq!(Locale::from_tag(t.lang), Some(locale));
        }
        let names: std::collections::HashSet<_> = Locale::ALL.iter().map(|l| l.messages().language_name).collect();
        assert_eq!(names.len(), Locale::ALL.len(), "each language names itself differently");
    }

    #[test]
    fn tags_match_by_primary_subtag() {
        assert_eq!(Locale::from_tag("de-CH"), Some(Locale::De));
        assert_eq!(Locale::from_tag("pt_BR"), Some(Locale::Pt));
        assert_eq!(Locale::from_tag("FR"), Some(Locale::Fr));
        assert_eq!(Locale::from_tag("sv"), None);
        assert_eq!(Locale::from_tag(""), None);
    }

    #[test]
    fn ui_locales_takes_the_first_supported_tag() {
        assert_eq!(from_ui_locales("sv fr-CA de"), Some(Locale::Fr));
        assert_eq!(from_ui_locales("sv fi"), None);
    }

    #[test]
    fn accept_language_takes_the_heaviest_supported_language() {
        assert_eq!(from_accept_language("sv, de;q=0.8, fr;q=0.9"), Some(Locale::Fr));
        assert_eq!(from_accept_language("nl-BE,nl;q=0.9,en;q=0.8"), Some(Locale::Nl));
        assert_eq!(from_accept_language("de;q=0, es;q=0.1"), Some(Locale::Es));
        assert_eq!(from_accept_language("it;q=0.5, pt;q=0.5"), Some(Locale::It));
        assert_eq!(from_accept_language("*, sv"), None);
        assert_eq!(from_accept_language("de;q=2, fr;q=abc, es;q=0.0001"), None);
        assert_eq!(from_accept_language(""), None);
    }

    #[tokio::test]
    async fn a_stronger_source_replaces_the_language_and_a_weaker_one_does_not() {
        scope(Locale::De, Source::Browser, async {
            prefer(Some(Locale::Fr), Source::Application);
            assert_eq!(current(), Locale::Fr);
            prefer(Some(Locale::Es), Source::Browser);
            assert_eq!(current(), Locale::Fr);
            prefer(None, Source::Picked);
            assert_eq!(current(), Locale::Fr);
        })
        .await;
        scope(Locale::It, Source::Picked, async {
            prefer(Some(Locale::Fr), Source::Application);
            assert_eq!(current(), Locale::It);
        })
        .await;
        assert_eq!(current(), Locale::En, "outside a request: English");
    }

    #[test]
    fn fill_strong_escapes_the_text_and_the_value() {
        let t = Locale::En.messages();
        assert_eq!(
            t.fill_strong("to <go> to {client} & on", "client", "<App>"),
            "to &lt;go&gt; to <strong>&lt;App&gt;</strong> &amp; on"
        );
        assert_eq!(t.fill2("{a} and {b}", "a", 1, "b", "two"), "1 and two");
        assert_eq!(
            markup("{a} {b} {c}", r#"code id="x""#, &[("a", &"{b}"), ("b", &2)]),
            r#"<code id="x">{b}</code> <code id="x">2</code> {c}"#,
            "one pass: a value is not searched again"
        );
    }
}
